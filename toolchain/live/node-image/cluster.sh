#!/usr/bin/env bash
# Create or delete a kind cluster of the locally built node image on the live tier's engine, with
# kind-config.yaml. kind, and everything that reaches the cluster, runs in the engine's network
# namespace (engine-run.sh): the API server's port is published there, and nothing has a route out.
# Usage: cluster.sh <bin folder> <engine folder> create <name> <node image> <kubeconfig>
#        cluster.sh <bin folder> <engine folder> delete <name> <kubeconfig>
# /lib/modules: kind bind-mounts the machine's /lib/modules into every node, read-only (kind
# v0.31.0 pkg/cluster/internal/providers/docker/provision.go), and dockerd creates a missing bind
# source as an empty folder, on the machine. A machine without it (a container, a VM booted from
# a kernel outside its disk, like this project's CI) gets that empty folder from `create`, said
# here, and `delete` removes it again once no kind node is left in the engine and it is still
# empty (marker: <engine folder>/lib-modules.created). Nothing in the node needs a module from it.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: cluster.sh <bin> <engine> create <name> <node image> <kubeconfig> | delete <name> <kubeconfig>"
bin=${1:?$usage} engine=${2:?$usage} action=${3:?$usage} name=${4:?$usage}
marker=$engine/lib-modules.created
kind_nodes() { in_engine "$bin" "$engine" docker ps -aq --filter "label=io.x-k8s.kind.cluster${1:+=$1}"; }

case $action in
  create)
    image=${5:?$usage} kubeconfig=${6:?$usage}
    if [ ! -e /lib/modules ]; then
      say "this machine has no /lib/modules, which kind bind-mounts into its nodes: creating it empty"
      say "  (removed again by \`cluster.sh ... delete\` once no kind node is left)"
      mkdir /lib/modules && touch "$marker"
    fi
    say "kind create cluster $name from $image..."
    start=$(date +%s)
    if ! in_engine "$bin" "$engine" kind create cluster --name "$name" --image "$image" \
        --config "$node_here/kind-config.yaml" --kubeconfig "$kubeconfig" --retain --wait 5m >&2; then
      say "the cluster did not come up; the node's kubelet and containerd said:"
      in_engine "$bin" "$engine" docker exec "$name-control-plane" journalctl --no-pager -n 30 \
        -u kubelet -u containerd 2>&1 | sed 's/^/live:   /' >&2 || true
      exit 1
    fi
    say "cluster $name up in $(( $(date +%s) - start ))s"
    ;;
  delete)
    kubeconfig=${5:?$usage}
    in_engine "$bin" "$engine" kind delete cluster --name "$name" --kubeconfig "$kubeconfig" >&2
    left=$(kind_nodes "$name")
    [ -z "$left" ] || die "kind left containers of $name in the engine: $left"
    if [ -f "$marker" ] && [ -z "$(kind_nodes)" ]; then
      if rmdir /lib/modules 2>/dev/null; then
        say "removed the empty /lib/modules made for kind's bind mount"
      else
        say "/lib/modules is no longer empty: left in place"
      fi
      rm -f "$marker"
    fi
    say "cluster $name deleted"
    ;;
  *) die "$usage" ;;
esac
