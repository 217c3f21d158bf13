#!/usr/bin/env bash
# docker.io/kindest/kindnetd:v20251212-v0.29.0-alpha-105-g20ccfc88, the tenants' CNI, built from
# source into a root filesystem (lib.sh's contract). The tag is kind's images/Makefile.common.in
# TAG (date, git describe) of kind commit 20ccfc88; the module proxy does not serve kind's nested
# module sigs.k8s.io/kind/images/kindnetd, so its source comes from KINDNET_SRC: kind's
# images/kindnetd at that commit (`git archive 20ccfc88 images/kindnetd` of
# github.com/kubernetes-sigs/kind, unpacked; or that folder of a checkout), checked against the
# tree's hash below. The binary is node-image/kindnetd.sh's (CGO_ENABLED=0 go build ./cmd/kindnetd,
# as images/kindnetd/Dockerfile builds it), laid out as that Dockerfile: /bin/kindnetd on
# registry.k8s.io/build-image/distroless-iptables:v0.7.4 (here lib.sh's iptables_tools: Debian
# bookworm's iptables nft and legacy, nft and conntrack), CMD ["/bin/kindnetd"], root.
# Usage: kindnetd.sh <bin folder>; the last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: kindnetd.sh <bin folder>}
[ -d "$bin" ] || die "$bin is not a folder (toolchain/live/build.sh prints it)"

tag=v20251212-v0.29.0-alpha-105-g20ccfc88
commit=20ccfc88055ce538b79b1685d6a497d35311d7d1
tree_key=be175f45525bc9e6 # source_key of images/kindnetd at 20ccfc88
src=$(source_dir KINDNET_SRC "kind's images/kindnetd at $commit (sigs.k8s.io/kind/images/kindnetd)")
actual=$(source_key "$src")
[ "$actual" = "$tree_key" ] || die "KINDNET_SRC=$src is not kind's images/kindnetd at ${commit:0:8} (its files hash" \
  "to $actual, that tree's to $tree_key): set it to an export of it (git archive ${commit:0:8} images/kindnetd)"
DEBIAN_ROOTFS=$(debian_rootfs)
kindnetd=$(KINDNET_SRC=$src bash "$live_here/node-image/kindnetd.sh" | tail -n 1)
[ -x "$kindnetd" ] || die "node-image/kindnetd.sh built no kindnetd ($kindnetd)"

key=$({ cat "$0" "$images_here/lib.sh" "$node_here/lib.sh"; basename "$(dirname "$kindnetd")"
        basename "$DEBIAN_ROOTFS"; } | key_of)
out=$images_cache/kindnetd-$key
if [ -d "$out" ]; then
  say "kindnetd image cached ($out)"
  echo "$out"
  exit 0
fi
work=$out.work
rm -rf "$out.tmp" "$work" && mkdir -p "$out.tmp" "$work"
trap 'rm -rf "$work"' EXIT

d=$work/kindnetd
skeleton "$d"
iptables_tools "$d"
install -m 0755 "$kindnetd" "$d/usr/bin/kindnetd" # /bin is usr/bin
usage=$(chroot "$d" /bin/kindnetd --help 2>&1) || die "kindnetd does not run in the image"
grep -q -- -logtostderr <<<"$usage" || die "kindnetd --help: not kindnetd's flags"
image_out "$out.tmp" kindnetd "$d" "$(jq -n --arg tag "$tag" --arg commit "$commit" '{
  ref: ("docker.io/kindest/kindnetd:" + $tag),
  cmd: ["/bin/kindnetd"],
  source: ("kubernetes-sigs/kind images/kindnetd/Dockerfile@" + $commit + " (CGO_ENABLED=0 go build ./cmd/kindnetd; FROM registry.k8s.io/build-image/distroless-iptables:v0.7.4; /bin/kindnetd; CMD), images/Makefile.common.in@" + $commit + " (TAG, GO_VERSION from .go-version); kubernetes/release images/build/distroless-iptables variants.yaml and distroless-bookworm/Dockerfile at 3aac602b (v0.7.4)"),
  note: "Go 1.26 of this machine with -trimpath (node-image/kindnetd.sh; upstream: Go 1.25.5 of kind'\''s .go-version, no -trimpath). Base: lib.sh'\''s skeleton and iptables_tools (Debian bookworm iptables 1.8.9 nft and legacy, iptables/ip6tables linked to the nft backend, nft 1.0.6, conntrack) instead of distroless-iptables v0.7.4 (distroless/base-debian12 with bookworm'\''s conntrack, ebtables, ipset, iptables, nftables, kmod, dash as /bin/sh with cat/chmod/grep/ln/rm/sleep/wc, iptables-wrapper choosing legacy or nft by the host'\''s rules, /go-runner): no ebtables, ipset, kmod, shell, iptables-wrapper or go-runner (kindnetd runs only iptables, through go-iptables, and programs nftables and nfqueue over netlink); no /LICENSES (go-licenses)"
}')"
rm -rf "$out" && mv "$out.tmp" "$out"
say "kindnetd image: $out"
echo "$out"
