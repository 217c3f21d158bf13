#!/usr/bin/env bash
# Build the live tier's engine and tools from their Go modules (toolchain/live/<program>/:
# go.mod/go.sum with `tool` directives, nothing of upstream's source) into a version-keyed cache
# outside the repository; skips what is already built. The last line printed is a folder with
# every binary and the engine's runtime wrapper (for PATH):
#   dockerd, docker-proxy (moby v28.5.2: Docker >= 27 for endpoint sysctls), containerd and its
#   runc shim (v2.4.2), runc (v1.5.3, with seccomp from Debian's libseccomp), the docker CLI
#   (v28.5.2), kind (the platform's pinned KIND_CLI_VERSION), distribution's registry (v3.1.2: the
#   tier's mirror) and go-containerregistry's crane (v0.22.1: copies images into a mirror).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${KHP_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kamaji-hami-platform/toolchain}
command -v go >/dev/null || { echo "live: Go is not installed (https://go.dev/dl/); the live tier needs it" >&2; exit 1; }
bash "$here/scripts/debian-packages.sh"
go_version=$(go env GOVERSION)

# moby and the docker CLI have no go.mod (their modules are +incompatible): each wrapper go.mod
# carries the require and exclude blocks of the tag's vendor.mod. dockerd refuses to run with
# its version unset ("library-import"), which moby's hack/make.sh sets with -X.
moby_version=$(cd "$here/dockerd" && go list -m -f '{{.Version}}' github.com/docker/docker | sed 's/^v//; s/+incompatible$//')
build_flags() {
  case $1 in
    dockerd) echo "-ldflags=-X=github.com/docker/docker/dockerversion.Version=$moby_version" ;;
    # runc's Makefile: BUILDTAGS seccomp, urfave_cli_no_docs; cgo links libseccomp.
    runc) echo "-tags=seccomp,urfave_cli_no_docs" ;;
    *) echo "-trimpath" ;;
  esac
}
cgo() { [ "$1" = runc ] && echo 1 || echo 0; }

built_dir() {
  local key
  key=$(cd "$here/$1" && { cat go.mod go.sum; build_flags "$1"; cgo "$1"; echo "$go_version"; } | sha256sum | cut -c1-16)
  echo "$cache/live-$1-$key"
}

bin="$cache/live-bin"
rm -rf "$bin" && mkdir -p "$bin"
for program in dockerd containerd runc docker-cli kind registry crane; do
  out=$(built_dir "$program")
  if [ -f "$out/.built" ]; then
    echo "live: $program cached ($out)" >&2
  else
    echo "live: building $program with $go_version (cold: up to 2 minutes on 2 cores)..." >&2
    start=$(date +%s)
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    (cd "$here/$program" && CGO_ENABLED=$(cgo "$program") go build "$(build_flags "$program")" -o "$out.tmp/" tool)
    touch "$out.tmp/.built" && rm -rf "$out" && mv "$out.tmp" "$out"
    echo "live: built $program in $(( $(date +%s) - start ))s" >&2
  fi
  for tool in "$out"/*; do ln -s "$tool" "$bin/"; done
done
ln -s "$here/scripts/runtime.sh" "$bin/khp-runc"
echo "$bin"
