#!/usr/bin/env bash
# Point a kind cluster's nodes at the tier's mirror, as kind's local-registry guide does
# (site/static/examples/kind-with-registry.sh, kind v0.31.0): kind's node image reads containerd's
# registry hosts from /etc/containerd/certs.d (config_path, kind >= v0.27), so each node gets
# /etc/containerd/certs.d/<mirror>/hosts.toml that sends pulls of "<mirror>/..." to the mirror at
# docker0's address over TLS (node-image/lib.sh mirror_hosts_toml; the node image built here
# carries the same file, this writes it into nodes of any image). A pod's image
# "localhost:5001/registry.k8s.io/x:v1" (the platform's images.mirror rule) is then pulled from the
# mirror. Usage: nodes.sh <bin folder> <engine folder> <cluster name>
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: nodes.sh <bin folder> <engine folder> <cluster name>"
bin=${1:?$usage} engine=${2:?$usage} cluster=${3:?$usage}
mirror=localhost:$mirror_port
docker_() { in_engine "$bin" "$engine" docker "$@"; }

nodes=$(in_engine "$bin" "$engine" kind get nodes --name "$cluster")
[ -n "$nodes" ] || die "kind cluster $cluster has no nodes"
for node in $nodes; do
  docker_ exec "$node" mkdir -p "/etc/containerd/certs.d/$mirror"
  mirror_hosts_toml | docker_ exec -i "$node" cp /dev/stdin "/etc/containerd/certs.d/$mirror/hosts.toml"
  docker_ exec -i "$node" cp /dev/stdin "$mirror_hosts_dir/ca.crt" < "$(mirror_tls)/ca.crt"
  say "node $node pulls $mirror/... from https://$mirror_address:$mirror_port"
done
