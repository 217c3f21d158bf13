#!/usr/bin/env bash
# Build the kind node image for Kubernetes v1.35.4 from source, with no registry: the Go programs
# of toolchain/live/build.sh, Debian packages (debootstrap), kind's own base image files (from its
# Go module), and kind v0.31.0's `build node-image` behind a docker shim that refuses pulls. Runs
# each step only when its output is missing; each output is cached in
# ~/.cache/kamaji-hami-platform/toolchain/live-node-image/<step>-<key>, the key a hash of what made
# it (versions, build keys, the scripts), and the images go into the running engine given:
#   debootstrap.sh      Debian bookworm rootfs with kind's packages (host network: Debian's mirror)
#   pause.sh            pause from Kubernetes' build/pause/linux/pause.c (gcc -static)
#   kindnetd.sh         kindnetd from KINDNET_SRC, or the single-node stand-in (said loudly)
#   base-rootfs.sh      kind's images/base Dockerfile applied to that rootfs   -> base-<key>.tar
#   import-base.sh      `docker import` as kindest/base:khp-<key>
#   image-rootfs.sh     root filesystems of the node's container images
#   images.sh           those images as `docker save` archives (Kubernetes', and kind's pulls)
#   kubernetes-tarball.sh  kubernetes-server-linux-amd64.tar.gz for `--type file`
#   node-image.sh       kind build node-image -> kindest/node:<version>-khp-<key>[-standin-cni]
# The node image is also kept as a `docker save` archive (node-<key>.tar): an engine without the
# tag (a fresh one, as the live tests start) loads it in seconds instead of building. Then the
# image archives and the server tarball, which it holds, are removed; the Debian rootfs and the
# base rootfs tar stay. Nothing is pruned when a key changes: rm -rf the folder to reclaim it.
# Usage: build.sh <bin folder (toolchain/live/build.sh)> <engine folder (running)>. Needs root.
# The last line printed is the node image's tag.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: build.sh <bin folder> <engine folder>"
bin=${1:?$usage} engine=${2:?$usage}
[ "$(id -u)" = 0 ] || die "the node image build needs root (debootstrap, chroot, the engine)"
step() { local script=$1; shift; bash "$node_here/$script" "$@" | tail -n 1; }
scripts() { (cd "$node_here" && cat "$@" lib.sh); }
engine_has() { in_engine "$bin" "$engine" docker image inspect "$1" >/dev/null 2>&1; }
start=$(date +%s)
version=$(kube_version)
say "node image: Kubernetes $version, kind $(kind_version), into the engine in $engine"
in_engine "$bin" "$engine" true

debian=$(step debootstrap.sh)
pause=$(step pause.sh)
kindnetd=$(step kindnetd.sh)
if [[ $kindnetd == standin:* ]]; then cni=standin suffix=-standin-cni
else cni=kindnetd suffix=""; fi

base_key=$({ basename "$debian"; kind_version
  for program in containerd runc crictl cni-plugins fuse-overlayfs; do program_key "$bin" "$program"; done
  scripts base-rootfs.sh import-base.sh; } | key_of)
images_key=$({ basename "$debian"; basename "$pause"; kind_version
  for program in kubernetes kubelet etcd coredns local-path-provisioner; do program_key "$bin" "$program"; done
  if [ "$cni" = standin ]; then echo "standin $(basename "${kindnetd#standin:}")"
  else basename "$(dirname "$kindnetd")"; fi
  scripts image-rootfs.sh images.sh kubernetes-tarball.sh kindnetd-standin.sh ../images/lib.sh; } | key_of)
node_key=$({ echo "$base_key $images_key"; kind_version; scripts node-image.sh docker-shim.sh
  cat "$(mirror_tls)/ca.crt"; } | key_of)
tag=kindest/node:$version-khp-$node_key$suffix
archive=$node_cache/node-$node_key$suffix.tar

if engine_has "$tag"; then
  say "node image $tag in the engine already"
elif [ -f "$archive" ]; then
  say "loading node image $tag from $archive..."
  in_engine "$bin" "$engine" docker load -q -i "$archive" >&2
else
  base_tar=$node_cache/base-$base_key.tar
  [ -f "$base_tar" ] || step base-rootfs.sh "$bin" "$debian" "$base_tar" >/dev/null
  base=$(step import-base.sh "$bin" "$engine" "$base_tar" "kindest/base:khp-$base_key")
  images=$node_cache/images-$images_key
  if [ ! -d "$images" ]; then
    rootfs=$(step image-rootfs.sh "$bin" "$debian" "$pause" "$kindnetd" "$node_cache/image-rootfs-$images_key")
    step images.sh "$bin" "$engine" "$rootfs" "$cni" "$images" >/dev/null
    rm -rf "$rootfs"  # only images.sh reads it
  fi
  tarball=$node_cache/kubernetes-server-$images_key.tar.gz
  [ -f "$tarball" ] || step kubernetes-tarball.sh "$bin" "$images" "$tarball" >/dev/null
  step node-image.sh "$bin" "$engine" "$base" "$tarball" "$images/offline" "$tag" >/dev/null
  in_engine "$bin" "$engine" docker save -o "$archive.tmp" "$tag"
  mv "$archive.tmp" "$archive"
  rm -rf "$images" "$tarball"  # the archive holds them; the Debian rootfs and base tar are shared
  say "node image kept as $archive ($(du -h "$archive" | cut -f1))"
fi
[ "$cni" != standin ] || say "NOTE: $tag carries the stand-in CNI, not kindnetd (KINDNET_SRC is not set)"
say "node image ready in $(( $(date +%s) - start ))s: $tag"
echo "$tag"
