#!/usr/bin/env bash
# The root filesystems of the container images the node image carries, one tar each for
# `docker import` (images.sh), staged from built binaries instead of pulled:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy: the binary in a
#     distroless/static-like skeleton (passwd, group, CA bundle, /tmp), as upstream's go-runner
#     images, without go-runner; kube-proxy also gets iptables (nft and legacy), nft and conntrack
#     from the Debian rootfs with their libraries, as upstream's distroless-iptables base has them;
#   etcd, coredns, local-path-provisioner: the binary in that skeleton;
#   pause: the static pause binary alone (upstream: FROM scratch);
#   local-path-helper: bash as sh, rm and mkdir with their libraries, as kind's
#     images/local-path-helper/Dockerfile stages them (stage-binary-and-deps.sh);
#   kindnetd: with a kindnetd binary (kindnetd.sh, from KINDNET_SRC), it at /bin/kindnetd on the
#     kube-proxy set of tools, as kind's images/kindnetd/Dockerfile (distroless-iptables); with
#     "standin", kindnetd-standin.sh at /usr/bin/kindnetd with sh, cat, mkdir, mv and sleep.
# Usage: image-rootfs.sh <bin folder> <debian rootfs> <pause folder> <kindnetd binary|standin> <output folder>
# Needs root (chroot into the Debian rootfs to resolve links and libraries).
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: image-rootfs.sh <bin folder> <debian rootfs> <pause folder> <kindnetd binary|standin> <output folder>"
bin=${1:?$usage} deb=${2:?$usage} pause=${3:?$usage} kindnetd=${4:?$usage} output=${5:?$usage}
kubernetes=$(program_dir "$bin" kubernetes)
work=$output.work
rm -rf "$work" "$output.tmp" && mkdir -p "$work" "$output.tmp"
trap 'rm -rf "$work"' EXIT

# distroless/static-like: merged-usr links, passwd/group (root, nobody, nonroot), CA bundle, /tmp.
skeleton() {
  local d=$1
  mkdir -p "$d"/usr/{bin,sbin,lib,lib64} "$d/etc/ssl/certs" "$d/tmp" "$d/usr/local/bin" "$d/var/run"
  chmod 1777 "$d/tmp"
  ln -s usr/bin "$d/bin"; ln -s usr/sbin "$d/sbin"; ln -s usr/lib "$d/lib"; ln -s usr/lib64 "$d/lib64"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > "$d/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' > "$d/etc/group"
  cp "$deb/etc/nsswitch.conf" "$d/etc/"
  cp "$deb/etc/ssl/certs/ca-certificates.crt" "$d/etc/ssl/certs/"
}
# A path of the Debian rootfs as it is there (a link stays a link), and what it resolves to.
stage_path() {
  local d=$1 p=$2 real
  (cd "$deb" && cp -a --parents ".$p" "$d/")
  real=$(chroot "$deb" realpath "$p")
  [ "$real" = "$p" ] || [ -e "$d$real" ] || (cd "$deb" && cp -a --parents ".$real" "$d/")
}
# stage_path, plus the shared libraries of a dynamically linked file (as stage-binary-and-deps.sh).
stage() {
  local d=$1 p=$2 lib
  stage_path "$d" "$p"
  if file -L "$deb$(chroot "$deb" realpath "$p")" | grep -q 'dynamically linked'; then
    for lib in $(chroot "$deb" ldd "$p" | sed -E 's#.* => /#/#' | awk '$1 ~ /^\// {print $1}'); do
      stage_path "$d" "$lib"
    done
  fi
}
# iptables (nft and legacy, with the names distroless-iptables links), nft and conntrack.
iptables_tools() {
  local d=$1 p so t s
  for p in /usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/nft /usr/sbin/conntrack \
    /etc/ethertypes /etc/protocols /etc/services; do
    stage "$d" "$p"
  done
  while read -r so; do stage "$d" "$so"; done \
    < <(cd "$deb" && find usr/lib/x86_64-linux-gnu/xtables -name '*.so' -printf '/%p\n')
  for t in iptables ip6tables; do
    for s in "" -save -restore; do
      ln -sf xtables-nft-multi "$d/usr/sbin/$t$s"
      ln -sf xtables-nft-multi "$d/usr/sbin/$t-nft$s"
      ln -sf xtables-legacy-multi "$d/usr/sbin/$t-legacy$s"
    done
  done
  chroot "$d" /usr/sbin/iptables --version >/dev/null
  chroot "$d" /usr/sbin/nft --version >/dev/null
}

for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  skeleton "$work/$b"
  install -m 0755 "$kubernetes/$b" "$work/$b/usr/local/bin/$b"
done
iptables_tools "$work/kube-proxy"

skeleton "$work/etcd"
install -m 0755 "$(program_dir "$bin" etcd)/etcd" "$work/etcd/usr/local/bin/etcd"
mkdir -p "$work/etcd/var/lib/etcd" "$work/etcd/var/etcd"

skeleton "$work/coredns"
install -m 0755 "$(program_dir "$bin" coredns)/coredns" "$work/coredns/coredns"

mkdir -p "$work/pause"
install -m 0755 "$pause/pause" "$work/pause/pause"

skeleton "$work/local-path-provisioner"
install -m 0755 "$(program_dir "$bin" local-path-provisioner)/local-path-provisioner" \
  "$work/local-path-provisioner/usr/local/bin/local-path-provisioner"

d=$work/local-path-helper
skeleton "$d"
stage "$d" /usr/bin/bash && ln -s bash "$d/usr/bin/sh"
stage "$d" /usr/bin/rm
stage "$d" /usr/bin/mkdir

d=$work/kindnetd
skeleton "$d"
if [ "$kindnetd" = standin ]; then
  stage "$d" /usr/bin/bash && ln -s bash "$d/usr/bin/sh"
  for p in cat mkdir mv sleep; do stage "$d" "/usr/bin/$p"; done
  install -m 0755 "$node_here/kindnetd-standin.sh" "$d/usr/bin/kindnetd"
else
  iptables_tools "$d"
  install -m 0755 "$kindnetd" "$d/usr/bin/kindnetd"
fi

for d in "$work"/*; do
  tar --sort=name --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$d" -cf "$output.tmp/$(basename "$d").tar" .
done
rm -rf "$output" && mv "$output.tmp" "$output"
say "image root filesystems: $output ($(du -sh "$output" | cut -f1): $(cd "$output" && echo *.tar))"
echo "$output"
