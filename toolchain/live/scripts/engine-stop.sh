#!/usr/bin/env bash
# Stop the live tier's engine (engine-start.sh) and check it left nothing mounted under its
# folder. Usage: engine-stop.sh <engine folder>. Stopping a stopped engine is a no-op.
set -euo pipefail
root=${1:?usage: engine-stop.sh <engine folder>}
pidfile="$root/dockerd.pid"

if [ -f "$pidfile" ] && pid=$(cat "$pidfile") && kill -0 "$pid" 2>/dev/null; then
  echo "live: stopping the engine (pid $pid)..." >&2
  kill -TERM "$pid"
  # dockerd stops its containers first (10 s each by default) and then containerd.
  for _ in $(seq 120); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "live: the engine did not stop within 120 s (pid $pid; log: $root/dockerd.log)" >&2
    exit 1
  fi
fi
rm -f "$pidfile"
# A host-network container (the tier's mirror, images/registry.sh) runs in dockerd's own network
# namespace, which libnetwork bind-mounts at exec/netns/default and never unmounts: it destroys a
# sandbox's namespace only when the sandbox is not that default one (moby v28.5.2
# libnetwork/sandbox.go `!sb.config.useDefaultSandBox`). With dockerd gone, that mount is ours to
# remove; any other mount left is still a failure.
default_netns="$(realpath -m "$root")/exec/netns/default"
if awk -v m="$default_netns" '$2 == m {found = 1} END {exit !found}' /proc/mounts; then
  umount "$default_netns" && rm -f "$default_netns"
fi
left=$(awk -v root="$(realpath -m "$root")/" 'index($2, root) == 1 {print $2}' /proc/mounts)
if [ -n "$left" ]; then
  echo "live: the engine left mounts under $root:" >&2
  echo "$left" >&2
  exit 1
fi
echo "live: engine stopped" >&2
