#!/usr/bin/env bash
# CoreDNS v1.14.2, the tenants' CoreDNS (Kamaji's addon), built from the served module
# (images/coredns-v1.14.2/go.mod) as its Makefile builds it (CGO_ENABLED=0, -s -w; the -X of the
# git commit has no value in a module zip) and laid out as its Dockerfile: /coredns with
# cap_net_bind_service (setcap), on distroless static nonroot (the skeleton), USER nonroot:nonroot,
# WORKDIR /, EXPOSE 53 53/udp, ENTRYPOINT ["/coredns"].
# Usage: coredns.sh <bin folder>. The last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
: "${1:?usage: coredns.sh <bin folder>}"
version=v1.14.2
DEBIAN_ROOTFS=$(debian_rootfs)
built=$(go_module_build "$images_here/coredns-$version" 0 -trimpath "-ldflags=-s -w" | tail -n 1)
key=$({ cat "$0" "$images_here/lib.sh"; basename "$built"; basename "$DEBIAN_ROOTFS"; } | key_of)
out=$images_cache/coredns-$key
if [ -d "$out" ]; then say "CoreDNS image cached ($out)"; echo "$out"; exit 0; fi
rm -rf "$out.tmp" "$out.work" && mkdir -p "$out.tmp" "$out.work/root"
trap 'rm -rf "$out.work"' EXIT
root=$out.work/root
skeleton "$root"
install -m 0755 "$built/coredns" "$root/coredns"
setcap cap_net_bind_service=+ep "$root/coredns"
grep -q "CoreDNS-${version#v}" <<<"$("$root/coredns" -version)" || die "coredns: not $version"
image_out "$out.tmp" coredns "$root" "$(jq -n --arg ref "registry.k8s.io/coredns/coredns:$version" \
  --arg source "github.com/coredns/coredns@$version Dockerfile, Makefile" \
  '{ref: $ref, entrypoint: ["/coredns"], user: "nonroot:nonroot", workdir: "/",
    ports: ["53/tcp", "53/udp"], source: $source}')"
mv "$out.tmp" "$out"
echo "$out"
