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
left=$(awk -v root="$(realpath -m "$root")/" 'index($2, root) == 1 {print $2}' /proc/mounts)
if [ -n "$left" ]; then
  echo "live: the engine left mounts under $root:" >&2
  echo "$left" >&2
  exit 1
fi
echo "live: engine stopped" >&2
