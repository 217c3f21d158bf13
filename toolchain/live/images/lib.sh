# shellcheck shell=bash disable=SC2034 # its variables are used by the scripts that source it
# Shared by toolchain/live/images/*.sh (sourced, never run): the platform's images, built from
# source into root filesystems and pushed into the tier's mirror (build.sh). On top of the node
# image's lib.sh (caches, versions, say/die/key_of, program_dir, module_dir, in_engine):
#   debian_rootfs           the Debian bookworm rootfs of node-image/debootstrap.sh (cached), where
#                           dynamically linked tools and their libraries are staged from;
#   skeleton DIR            a distroless/static-like root (merged /usr, passwd and group with root,
#                           nobody and nonroot, nsswitch.conf, the CA bundle, /tmp);
#   stage DIR PATH          a path of the Debian rootfs, its link target and its shared libraries;
#   iptables_tools DIR      iptables (nft and legacy), nft and conntrack, as distroless-iptables;
#   busybox_tools DIR       Debian's static busybox at /bin/busybox, one link per applet (a shell);
#   image_out DIR ID CONFIG the image ID of a family's output folder: DIR's tree as ID.tar (sorted,
#                           owner 0, mtime 0: the same tree gives the same layer) and CONFIG, a JSON
#                           object, as ID.json (fields below).
# An image's JSON: {"ref": upstream name:tag, "entrypoint": [..], "cmd": [..], "user": "65532",
#   "workdir": "/", "env": {"K": "V"}, "ports": ["9402/tcp"], "source": "the upstream file that
#   sets these (Dockerfile, ko config, Makefile), cited", "note": "how it differs, if it does"};
#   only ref and source are required.
# A family script (<family>.sh <bin folder>) builds its images into
# $images_cache/<family>-<key>/ (key: a hash of everything that made them), skips that when the
# folder exists, and prints the folder as its last line.
# shellcheck source-path=SCRIPTDIR source=../node-image/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../node-image/lib.sh"
images_here=$live_here/images
images_cache=$toolchain_cache/live-images
# A step that fails says which, instead of ending the script in silence (set -e, inherit_errexit).
trap 'say "failed (exit $?) at line $LINENO of $(basename "$0"): $BASH_COMMAND"' ERR

debian_rootfs() { bash "$live_here/node-image/debootstrap.sh" | tail -n 1; }

skeleton() {
  local d=$1 deb
  deb=${DEBIAN_ROOTFS:?DEBIAN_ROOTFS=\$(debian_rootfs) first}
  mkdir -p "$d"/usr/{bin,sbin,lib,lib64} "$d/etc/ssl/certs" "$d/tmp" "$d/usr/local/bin" "$d/var/run"
  chmod 1777 "$d/tmp"
  ln -s usr/bin "$d/bin"; ln -s usr/sbin "$d/sbin"; ln -s usr/lib "$d/lib"; ln -s usr/lib64 "$d/lib64"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > "$d/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' > "$d/etc/group"
  mkdir -p "$d/home/nonroot" && chown 65532:65532 "$d/home/nonroot"
  cp "$deb/etc/nsswitch.conf" "$d/etc/"
  cp "$deb/etc/ssl/certs/ca-certificates.crt" "$d/etc/ssl/certs/"
}
stage_path() {
  local d=$1 p=$2 real deb=${DEBIAN_ROOTFS:?}
  (cd "$deb" && cp -a --parents ".$p" "$d/")
  real=$(chroot "$deb" realpath "$p")
  [ "$real" = "$p" ] || [ -e "$d$real" ] || (cd "$deb" && cp -a --parents ".$real" "$d/")
}
stage() {
  local d=$1 p=$2 lib deb=${DEBIAN_ROOTFS:?}
  stage_path "$d" "$p"
  # grep -q on a here-string, not a pipe: under pipefail a writer cut short by grep fails the test.
  if grep -q 'dynamically linked' <<<"$(file -L "$deb$(chroot "$deb" realpath "$p")")"; then
    for lib in $(chroot "$deb" ldd "$p" | sed -E 's#.* => /#/#' | awk '$1 ~ /^\// {print $1}'); do
      stage_path "$d" "$lib"
    done
  fi
}
iptables_tools() {
  local d=$1 p so t s deb=${DEBIAN_ROOTFS:?}
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
busybox_tools() {
  local d=$1 busybox applet
  busybox=$(bash "$live_here/scripts/busybox-rootfs.sh" | tail -n 1)
  mkdir -p "$d/usr/bin"
  [ -e "$d/bin" ] || ln -s usr/bin "$d/bin"
  install -m 0755 "$busybox/bin/busybox" "$d/usr/bin/busybox"
  for applet in $("$d/usr/bin/busybox" --list); do
    [ "$applet" = busybox ] || [ -e "$d/usr/bin/$applet" ] || ln -s busybox "$d/usr/bin/$applet"
  done
}
image_out() {
  local out=$1 id=$2 dir=$3 config=$4
  jq -e 'has("ref") and has("source")' <<<"$config" >/dev/null || die "image $id: its config needs ref and source"
  tar --sort=name --numeric-owner --mtime=@0 --xattrs --xattrs-include=security.capability -C "$dir" -cf "$out/$id.tar" .
  jq . <<<"$config" > "$out/$id.json"
  say "image $(jq -r .ref <<<"$config") staged ($(du -h "$out/$id.tar" | cut -f1))"
}

# go_module_build DIR CGO FLAGS...: `go build tool` of a wrapper module of ours (DIR: go.mod and
# go.sum with `tool` directives, nothing of upstream's source), or, where DIR has no `tool`
# directive, `go build .` of its wrapper main (main.go of ours, upstream only as modules), cached in
# $toolchain_cache/live-<name of DIR>-<hash of go.mod, go.sum, *.go, flags, cgo, Go version>/; the
# last line printed is that folder (one binary per tool or main package, named after it).
go_module_build() {
  local dir=$1 cgo=$2 key out start target=.
  shift 2
  grep -q '^tool' "$dir/go.mod" && target=tool
  key=$(cd "$dir" && { cat go.mod go.sum; find . -maxdepth 1 -name '*.go' -print0 | sort -z | xargs -0r cat
    echo "$*"; echo "$cgo"; go env GOVERSION; } | key_of)
  out=$toolchain_cache/live-$(basename "$dir")-$key
  if [ -f "$out/.built" ]; then
    say "$(basename "$dir") cached ($out)"
  else
    say "building $(basename "$dir") from its Go modules (cold: minutes on 2 cores)..."
    start=$(date +%s)
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    (cd "$dir" && CGO_ENABLED=$cgo go build "$@" -o "$out.tmp/" "$target")
    touch "$out.tmp/.built" && rm -rf "$out" && mv "$out.tmp" "$out"
    say "built $(basename "$dir") in $(( $(date +%s) - start ))s"
  fi
  echo "$out"
}
# source_dir VARIABLE WHAT: the folder a variable names (a checkout or unpacked archive of an
# upstream not served as a module), or one clear error naming the variable; never the repository.
source_dir() {
  local var=$1 what=$2 dir
  dir=${!var:-}
  [ -n "$dir" ] || die "$what is not served by the Go module proxy: set $var to its source folder"
  [ -d "$dir" ] || die "$var=$dir is not a folder"
  (cd "$dir" && pwd)
}
# source_key DIR: a hash of every file of a source folder (.git left out).
source_key() {
  (cd "$1" && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum) | key_of
}
# go_source_build NAME SRC CGO PACKAGES FLAGS...: `go build` of PACKAGES (space-separated, e.g.
# "./cmd/a ./cmd/b") in a source folder, its dependencies from the module proxy, cached in
# $toolchain_cache/live-NAME-<hash of the source, packages, flags, cgo, Go version>/; prints it.
go_source_build() {
  local name=$1 src=$2 cgo=$3 packages=$4 key out start
  shift 4
  key=$({ source_key "$src"; echo "$packages $* $cgo"; go env GOVERSION; } | key_of)
  out=$toolchain_cache/live-$name-$key
  if [ -f "$out/.built" ]; then
    say "$name cached ($out)"
  else
    say "building $name from $src (cold: minutes on 2 cores)..."
    start=$(date +%s)
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    # shellcheck disable=SC2086 # packages is a list
    (cd "$src" && CGO_ENABLED=$cgo go build "$@" -o "$out.tmp/" $packages)
    touch "$out.tmp/.built" && rm -rf "$out" && mv "$out.tmp" "$out"
    say "built $name in $(( $(date +%s) - start ))s"
  fi
  echo "$out"
}
# mirrored_ref REF MIRROR: where the platform pulls REF from with images.mirror: MIRROR, by the one
# rule of kamaji_hami_platform/mirror.py (asked, not restated; it imports nothing outside stdlib).
mirrored_ref() {
  PYTHONPATH=$(dirname "$(dirname "$live_here")") python3 -c \
    'import sys; from kamaji_hami_platform.mirror import mirrored; print(mirrored(sys.argv[1], sys.argv[2]))' "$1" "$2"
}
