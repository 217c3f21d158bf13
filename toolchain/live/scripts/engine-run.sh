#!/usr/bin/env bash
# Run a command where the live tier's engine is: in its network namespace (the only place its
# bridges and kind's node addresses are reachable), with DOCKER_HOST at its socket and the tier's
# binaries first on PATH. Usage: engine-run.sh <bin folder> <engine folder> <command> [args...]
# Whatever needs the registries (pip, go build) runs before, outside: nothing in here gets out.
set -euo pipefail
bin=${1:?usage: engine-run.sh <bin folder> <engine folder> <command> [args...]}
root=${2:?usage: engine-run.sh <bin folder> <engine folder> <command> [args...]}
shift 2
[ $# -gt 0 ] || { echo "usage: engine-run.sh <bin folder> <engine folder> <command> [args...]" >&2; exit 2; }
pid=$(cat "$root/dockerd.pid" 2>/dev/null || true)
if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
  echo "live: the engine is not running (make live-engine)" >&2; exit 1
fi
exec nsenter --net="/proc/$pid/ns/net" env DOCKER_HOST="unix://$root/docker.sock" PATH="$bin:$PATH" "$@"
