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
#     "standin:<folder>", kindnetd-standin.sh at /usr/bin/kindnetd with sh, cat, mkdir, mv and
#     sleep, the folder's kindnet-network-policies (kindnetd's policy controller) beside it, and
#     the kube-proxy set of tools (its queue hook where the kernel has no nftables queue).
# Usage: image-rootfs.sh <bin folder> <debian rootfs> <pause folder> <kindnetd binary|standin:<folder>> <output folder>
# Needs root (chroot into the Debian rootfs to resolve links and libraries).
set -euo pipefail
# The skeleton, stage and iptables_tools of the platform images' lib.sh (which sources lib.sh).
# shellcheck source=../images/lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../images/lib.sh"
usage="usage: image-rootfs.sh <bin folder> <debian rootfs> <pause folder> <kindnetd binary|standin:<folder>> <output folder>"
bin=${1:?$usage} deb=${2:?$usage} pause=${3:?$usage} kindnetd=${4:?$usage} output=${5:?$usage}
DEBIAN_ROOTFS=$deb
kubernetes=$(program_dir "$bin" kubernetes)
work=$output.work
rm -rf "$work" "$output.tmp" && mkdir -p "$work" "$output.tmp"
trap 'rm -rf "$work"' EXIT

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
if [[ $kindnetd == standin:* ]]; then
  stage "$d" /usr/bin/bash && ln -s bash "$d/usr/bin/sh"
  for p in cat mkdir mv sleep; do stage "$d" "/usr/bin/$p"; done
  install -m 0755 "$node_here/kindnetd-standin.sh" "$d/usr/bin/kindnetd"
  install -m 0755 "${kindnetd#standin:}/kindnet-network-policies" "$d/usr/bin/kindnet-network-policies"
  iptables_tools "$d"  # nft to probe the kernel, iptables for the queue hook (kindnetd-standin.sh)
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
