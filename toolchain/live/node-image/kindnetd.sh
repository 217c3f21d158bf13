#!/usr/bin/env bash
# kindnetd, kind's CNI daemon, for the node image. The Go module proxy does not serve it (it is
# kind's nested module sigs.k8s.io/kind/images/kindnetd, and sigs.k8s.io/kindnet in its own
# repository), so the project takes its source from the environment: KINDNET_SRC, a checkout of
# github.com/kubernetes-sigs/kindnet or of kind's images/kindnetd (both have cmd/kindnetd). Set,
# kindnetd is built from it as kind's images/kindnetd/Dockerfile builds it (CGO_ENABLED=0 go build
# ./cmd/kindnetd; its dependencies come from the module proxy), cached by a hash of the source and
# the Go version, and the last line printed is the binary. Not set, it says so, builds kindnetd's
# network-policy controller from its served module (../images/kindnet-network-policies: the
# controller of sigs.k8s.io/kube-network-policies v0.8.0 with kindnetd's own Config) and prints
# "standin:<its folder>": the node image then carries kindnetd-standin.sh, which runs that
# controller, and its tag says -standin-cni.
set -euo pipefail
# shellcheck source=../images/lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../images/lib.sh"
if [ -z "${KINDNET_SRC:-}" ]; then
  say "KINDNET_SRC is not set: the node image carries a single-node stand-in CNI, not kindnetd"
  say "  (toolchain/live/node-image/kindnetd-standin.sh writes kindnet's CNI config for its node and"
  say "  runs kindnetd's network-policy controller; no routes to other nodes' pods, no masquerade"
  say "  agent); its tag ends in -standin-cni."
  say "  Set KINDNET_SRC to a checkout of github.com/kubernetes-sigs/kindnet or of kind's images/kindnetd."
  policies=$(go_module_build "$images_here/kindnet-network-policies" 0 -trimpath "-ldflags=-s -w" | tail -n 1)
  echo "standin:$policies"
  exit 0
fi
src=$(cd "$KINDNET_SRC" && pwd)
[ -f "$src/go.mod" ] && [ -d "$src/cmd/kindnetd" ] \
  || die "KINDNET_SRC=$KINDNET_SRC has no go.mod and cmd/kindnetd: not a kindnet or kind images/kindnetd checkout"
flags=(-trimpath)
key=$({ cd "$src" && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum
        echo "${flags[*]}"; go env GOVERSION; } | key_of)
out=$node_cache/kindnetd-$key
if [ -x "$out/kindnetd" ]; then
  say "kindnetd from $src cached ($out)"
else
  say "building kindnetd from $src ($(cd "$src" && go list -m))..."
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  (cd "$src" && CGO_ENABLED=0 go build "${flags[@]}" -o "$out.tmp/kindnetd" ./cmd/kindnetd 2>&1) \
    | sed 's/^/live: go: /' >&2
  rm -rf "$out" && mv "$out.tmp" "$out"
fi
echo "$out/kindnetd"
