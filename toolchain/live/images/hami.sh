#!/usr/bin/env bash
# docker.io/projecthami/hami:v2.10.0, HAMi's one image (scheduler extender and webhook, NVIDIA
# device plugin, vGPU monitor), built from source into a root filesystem (lib.sh's contract).
# The Go module proxy does not serve HAMi, so its source comes from HAMI_SRC: the tree of tag
# v2.10.0, either ../shared/upstream/src/HAMi-v2.10.0.tar.gz unpacked (cmd/, pkg/, go.mod/go.sum,
# charts/: no docker/, lib/ or Makefile) or `git archive v2.10.0` of github.com/Project-HAMi/HAMi;
# its Go sources (cmd/ and pkg/ without tests, go.mod, go.sum) are checked against the tag's.
# Upstream releases the image from docker/Dockerfile.hamimaster (.github/workflows/
# call-release-image.yaml, VERSION=<tag>, DEST_DIR=/usr/local): `make all VERSION=<tag>` in
# golang:1.26.6-bookworm (Makefile, version.mk: CMDS scheduler vGPUmonitor, DEVICES nvidia; go
# build with cgo on, as that image has it, and GO_BUILD_LDFLAGS: -s -w, the version into
# pkg/version and nvinternal/info, the revision (`git rev-parse --short HEAD` of the checkout:
# GITHUB_ACTIONS is not set inside the build) and the build's date) into /k8s-vgpu/bin/ as
# scheduler, vGPUmonitor and nvidia-device-plugin, with docker/entrypoint.sh, docker/vgpu-init.sh,
# lib/ and HAMi-core's libvgpu.so (another image) on nvidia/cuda:13.3.1-base-ubuntu22.04,
# ENTRYPOINT ["/bin/bash", "-c", "entrypoint.sh  $DEST_DIR"] (an exec form: bash expands
# $DEST_DIR, an ARG, to nothing), PATH with /k8s-vgpu/bin first. Here: the same binaries and
# ldflags (the tag commit's time as the date), glibc, bash and busybox (sh, find, md5sum... for
# vgpu-init.sh and the chart's `sh -c`) from the Debian rootfs. The platform runs only
# `scheduler` from it (mock cards: devicePlugin.enabled false, mockDevicePlugin off); the device
# plugin and the monitor load NVIDIA's libnvidia-ml.so.1 at run time (go-nvml's dlopen), which
# NVIDIA's container runtime mounts on a GPU node; libvgpu.so (github.com/Project-HAMi/HAMi-core,
# C against CUDA's headers, the libvgpu submodule) is not built.
# Usage: hami.sh <bin folder>; the last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: hami.sh <bin folder>}
[ -d "$bin" ] || die "$bin is not a folder (toolchain/live/build.sh prints it)"

tag=v2.10.0
revision=4707fb0            # git rev-parse --short HEAD of the depth-1 checkout of v2.10.0 (4707fb02c91c...)
build_date=20260821-06:20:39 # the tag commit's time, as the Makefile's date +"%Y%m%d-%T"
go_key=c89efbb361c51470      # go_sources_key of the tag's tree
# A hash of the files `go build` reads: cmd/ and pkg/ without tests and testdata, go.mod, go.sum.
go_sources_key() {
  (cd "$1" && find cmd pkg go.mod go.sum -type f ! -name '*_test.go' ! -path '*/testdata/*' -print0 \
    | sort -z | xargs -0 sha256sum) | key_of
}
src=$(source_dir HAMI_SRC "HAMi $tag (github.com/Project-HAMi/HAMi; ../shared/upstream/src/HAMi-$tag.tar.gz unpacked)")
[ -f "$src/go.mod" ] && [ -d "$src/cmd/scheduler" ] || die "HAMI_SRC=$src has no go.mod and cmd/scheduler: not HAMi's source"
actual=$(go_sources_key "$src")
[ "$actual" = "$go_key" ] || die "HAMI_SRC=$src is not HAMi $tag (its Go sources hash to $actual, the tag's to" \
  "$go_key): unpack ../shared/upstream/src/HAMi-$tag.tar.gz or git archive $tag"
DEBIAN_ROOTFS=$(debian_rootfs)

pkg=github.com/Project-HAMi/HAMi/pkg
ldflags="-s -w -X $pkg/version.version=$tag -X $pkg/device-plugin/nvidiadevice/nvinternal/info.version=$tag"
ldflags+=" -X $pkg/version.revision=$revision -X $pkg/version.buildDate=$build_date"
program=$(go_source_build hami "$src" 1 "./cmd/scheduler ./cmd/vGPUmonitor ./cmd/device-plugin/nvidia" \
  -trimpath "-ldflags=$ldflags" | tail -n 1)

key=$({ cat "$0" "$images_here/lib.sh" "$node_here/lib.sh"; basename "$program"; basename "$DEBIAN_ROOTFS"; } | key_of)
out=$images_cache/hami-$key
if [ -d "$out" ]; then
  say "HAMi image cached ($out)"
  echo "$out"
  exit 0
fi
work=$out.work
rm -rf "$out.tmp" "$work" && mkdir -p "$out.tmp" "$work"
trap 'rm -rf "$work"' EXIT

d=$work/hami
skeleton "$d"
stage "$d" /usr/bin/bash
busybox_tools "$d"
k=$d/k8s-vgpu
install -D -m 0755 "$program/scheduler" "$k/bin/scheduler"
install -m 0755 "$program/vGPUmonitor" "$k/bin/vGPUmonitor"
install -m 0755 "$program/nvidia" "$k/bin/nvidia-device-plugin"
install -m 0644 "$src/LICENSE" "$k/LICENSE"
# docker/ and lib/ are in a `git archive` of the tag, not in the shared archive.
missing=()
if [ -f "$src/docker/entrypoint.sh" ]; then
  install -m 0755 "$src/docker/entrypoint.sh" "$k/bin/entrypoint.sh"
else
  # docker/entrypoint.sh@v2.10.0 is a license header and `exec "$@"`.
  printf '#!/bin/bash\nexec "$@"\n' > "$k/bin/entrypoint.sh" && chmod 0755 "$k/bin/entrypoint.sh"
  missing+=("docker/entrypoint.sh (written as its one command, exec \"\$@\")")
fi
if [ -f "$src/docker/vgpu-init.sh" ]; then
  install -m 0755 "$src/docker/vgpu-init.sh" "$k/bin/vgpu-init.sh"
else
  missing+=("docker/vgpu-init.sh (the device plugin's postStart hook)")
fi
if [ -d "$src/lib" ]; then
  cp -a "$src/lib" "$k/lib"
else
  mkdir -p "$k/lib/nvidia"
  missing+=("lib/nvidia/ld.so.preload (vgpu-init.sh writes its own)")
fi
for b in scheduler vGPUmonitor nvidia-device-plugin; do
  chroot "$d" "/k8s-vgpu/bin/$b" --help >/dev/null 2>&1 || die "$b does not run in the image"
done
version=$(chroot "$d" /k8s-vgpu/bin/scheduler version 2>&1) || die "scheduler version failed"
grep -q "^version: *$tag\$" <<<"$version" || die "scheduler: not $tag"

note="Go 1.26 of this machine with -trimpath (upstream: golang:1.26.6, no -trimpath); buildDate is the tag"
note+=" commit's time (upstream: the build's clock). Base: lib.sh's skeleton, Debian bookworm's glibc and"
note+=" bash, busybox for sh and the tools vgpu-init.sh uses, instead of nvidia/cuda:13.3.1-base-ubuntu22.04:"
note+=" no CUDA runtime (cudart, cuda-compat), so none of the base's CUDA_VERSION/NVIDIA_REQUIRE_CUDA/NV_*"
note+=" variables; PATH and LD_LIBRARY_PATH are the CUDA base Dockerfile's (gitlab nvidia/container-images/cuda,"
note+=" not read at 13.3.1). Not in the image: /k8s-vgpu/lib/nvidia/libvgpu.so.$tag (HAMi-core, C built"
note+=" against CUDA, from the libvgpu submodule: vGPU isolation inside GPU pods; the platform's mock cards"
note+=" run no device plugin, so nothing copies it)"
[ ${#missing[@]} -eq 0 ] || note+="; not in HAMI_SRC, so not in the image: $(printf '%s; ' "${missing[@]}" | sed 's/; $//')"
image_out "$out.tmp" hami "$d" "$(jq -n --arg tag "$tag" --arg note "$note" '{
  ref: ("docker.io/projecthami/hami:" + $tag),
  entrypoint: ["/bin/bash", "-c", "entrypoint.sh  $DEST_DIR"],
  env: {PATH: "/k8s-vgpu/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        LD_LIBRARY_PATH: "/usr/local/nvidia/lib:/usr/local/nvidia/lib64",
        NVIDIA_DISABLE_REQUIRE: "true", NVIDIA_VISIBLE_DEVICES: "all",
        NVIDIA_DRIVER_CAPABILITIES: "compute,utility"},
  source: ("Project-HAMi/HAMi docker/Dockerfile.hamimaster@" + $tag + " (as .github/workflows/call-release-image.yaml@" + $tag + " builds it), Makefile, Makefile.defs, version.mk@" + $tag + " (CMDS, DEVICES, GO_BUILD_LDFLAGS), docker/entrypoint.sh@" + $tag),
  note: $note
}')"
rm -rf "$out" && mv "$out.tmp" "$out"
say "HAMi image: $out"
echo "$out"
