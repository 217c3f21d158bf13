#!/usr/bin/env bash
# Point a kind cluster's nodes at the tier's mirror, as kind's local-registry guide does
# (site/static/examples/kind-with-registry.sh, kind v0.31.0): kind's node image already reads
# containerd's registry hosts from /etc/containerd/certs.d (config_path, kind >= v0.27), so each
# node gets /etc/containerd/certs.d/<mirror>/hosts.toml that sends pulls of "<mirror>/..." to
# http://khp-mirror:5000 (the registry container's name on kind's network), and the registry
# container is connected to that network. A pod's image "localhost:5001/registry.k8s.io/x:v1"
# (the platform's images.mirror rule) is then pulled from the mirror, over the engine's bridge.
# Usage: nodes.sh <bin folder> <engine folder> <cluster name> [<mirror>=localhost:5001]
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: nodes.sh <bin folder> <engine folder> <cluster name> [<mirror>]"
bin=${1:?$usage} engine=${2:?$usage} cluster=${3:?$usage} mirror=${4:-localhost:5001}
registry=khp-mirror network=kind
docker_() { in_engine "$bin" "$engine" docker "$@"; }

if [ "$(docker_ inspect -f "{{json .NetworkSettings.Networks.$network}}" "$registry")" = null ]; then
  docker_ network connect "$network" "$registry"
fi
nodes=$(in_engine "$bin" "$engine" kind get nodes --name "$cluster")
[ -n "$nodes" ] || die "kind cluster $cluster has no nodes"
for node in $nodes; do
  docker_ exec "$node" mkdir -p "/etc/containerd/certs.d/$mirror"
  printf '[host."http://%s:5000"]\n' "$registry" \
    | docker_ exec -i "$node" cp /dev/stdin "/etc/containerd/certs.d/$mirror/hosts.toml"
  say "node $node pulls $mirror/... from http://$registry:5000"
done
