#!/usr/bin/env bash
# registry.k8s.io/kas-network-proxy/proxy-server:v0.35.0 and proxy-agent:v0.35.0, Konnectivity
# (apiserver-network-proxy), which Kamaji runs for a tenant of Kubernetes 1.35 (the server beside
# its API server with command /proxy-server, the agent in the tenant with /proxy-agent: clastix/kamaji
# 26.8.2-edge internal/builders/controlplane/konnectivity_server.go, internal/resources/konnectivity/
# agent.go), built from source into root filesystems (lib.sh's contract). The Go module proxy does
# not serve sigs.k8s.io/apiserver-network-proxy v0.35.0, so its source comes from
# APISERVER_NETWORK_PROXY_SRC: the tree of tag v0.35.0 (`git archive v0.35.0` of
# github.com/kubernetes-sigs/apiserver-network-proxy, or a checkout), checked against its hash.
# As artifacts/images/{server,agent}-build.Dockerfile build them (Makefile docker-build/proxy-*):
# CGO_ENABLED=0 go build -mod=vendor -ldflags '-extldflags "-static"' of cmd/server and cmd/agent
# (its vendor/ folder: no download), each binary at / as the entrypoint on
# gcr.io/distroless/static-debian12:nonroot (the Makefile's BASEIMAGE: user 65532), WORKDIR /.
# Usage: konnectivity.sh <bin folder>; the last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: konnectivity.sh <bin folder>}
[ -d "$bin" ] || die "$bin is not a folder (toolchain/live/build.sh prints it)"

tag=v0.35.0
tree_key=3916ef19c7eaf2fc # source_key of the tag's tree
src=$(source_dir APISERVER_NETWORK_PROXY_SRC "sigs.k8s.io/apiserver-network-proxy $tag")
actual=$(source_key "$src")
[ "$actual" = "$tree_key" ] || die "APISERVER_NETWORK_PROXY_SRC=$src is not apiserver-network-proxy $tag (its" \
  "files hash to $actual, the tag's to $tree_key): set it to an export of the tag (git archive $tag)"
DEBIAN_ROOTFS=$(debian_rootfs)

# -a and -v of upstream's command only force a full rebuild and list packages: same binaries.
program=$(go_source_build konnectivity "$src" 0 "./cmd/server ./cmd/agent" -mod=vendor \
  '-ldflags=-extldflags "-static"')

key=$({ cat "$0" "$images_here/lib.sh" "$node_here/lib.sh"; basename "$program"; basename "$DEBIAN_ROOTFS"; } | key_of)
out=$images_cache/konnectivity-$key
if [ -d "$out" ]; then
  say "konnectivity images cached ($out)"
  echo "$out"
  exit 0
fi
work=$out.work
rm -rf "$out.tmp" "$work" && mkdir -p "$out.tmp" "$work"
trap 'rm -rf "$work"' EXIT

for role in server agent; do
  d=$work/proxy-$role
  skeleton "$d"
  install -m 0755 "$program/$role" "$d/proxy-$role"
  image_out "$out.tmp" "proxy-$role" "$d" "$(jq -n --arg role "$role" --arg tag "$tag" '{
    ref: ("registry.k8s.io/kas-network-proxy/proxy-" + $role + ":" + $tag),
    entrypoint: ["/proxy-" + $role],
    user: "65532",
    workdir: "/",
    env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
          SSL_CERT_FILE: "/etc/ssl/certs/ca-certificates.crt"},
    source: ("kubernetes-sigs/apiserver-network-proxy artifacts/images/" + $role + "-build.Dockerfile@" + $tag + " (build command, WORKDIR /, ENTRYPOINT), Makefile@" + $tag + " (docker-build/proxy-" + $role + ", BASEIMAGE gcr.io/distroless/static-debian12:nonroot: user 65532, GO_VERSION 1.26.2)"),
    note: "Go 1.26 of this machine instead of golang:1.26.2; base is lib.sh'\''s skeleton (Debian passwd/group with nonroot 65532, nsswitch.conf, CA bundle, /tmp) instead of distroless/static-debian12: no tzdata, no /usr/share/doc licences"
  }')"
done
rm -rf "$out" && mv "$out.tmp" "$out"
say "konnectivity images: $out"
echo "$out"
