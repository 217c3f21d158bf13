#!/usr/bin/env bash
# Start the live tier's own Docker engine: dockerd from toolchain/live/build.sh, in a folder of
# its own (data, exec root, socket, pidfile, log) and in a network namespace of its own with
# only `lo` up. Its bridges and containers work inside that namespace and nothing in it has a
# route beyond the machine (engine-check.sh reads that back). It never touches a Docker the
# user runs: its socket, data and exec roots are in the tier's folder. Usage:
#   engine-start.sh <bin folder> <engine folder>      (prints the engine's DOCKER_HOST)
# Needs root (a network namespace, dockerd). Starting a running engine again is a no-op.
set -euo pipefail
bin=${1:?usage: engine-start.sh <bin folder> <engine folder>}
root=${2:?usage: engine-start.sh <bin folder> <engine folder>}
[ "$(id -u)" = 0 ] || { echo "live: the engine needs root (a network namespace and dockerd)" >&2; exit 1; }
mkdir -p "$root/data" "$root/exec"
socket="$root/docker.sock" pidfile="$root/dockerd.pid"

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "live: engine already running (pid $(cat "$pidfile"))" >&2
  echo "unix://$socket"
  exit 0
fi
rm -f "$pidfile" "$socket"

# --bip: docker0's address is where every container reaches the mirror (node-image/lib.sh
# mirror_address), pinned rather than left to the daemon's choice.
# setsid: the engine outlives this script and the make that ran it; engine-stop.sh ends it.
# shellcheck disable=SC2016 # expanded by the inner bash, inside the namespace
setsid unshare --net --fork -- env PATH="$bin:$PATH" bash -c '
  ip link set lo up
  exec dockerd --data-root "$1/data" --exec-root "$1/exec" --host "unix://$1/docker.sock" \
    --pidfile "$1/dockerd.pid" --add-runtime "khp-runc=$2/khp-runc" --default-runtime khp-runc \
    --bip 172.17.0.1/16
' engine "$root" "$bin" </dev/null >"$root/dockerd.log" 2>&1 &

echo "live: starting the engine in $root (log: $root/dockerd.log)..." >&2
for _ in $(seq 60); do
  if [ -S "$socket" ] && DOCKER_HOST="unix://$socket" "$bin/docker" info >/dev/null 2>&1; then
    echo "live: engine up (pid $(cat "$pidfile"), $("$bin/docker" -H "unix://$socket" version -f '{{.Server.Version}}'))" >&2
    echo "unix://$socket"
    exit 0
  fi
  sleep 1
done
echo "live: the engine did not answer within 60 s; the end of $root/dockerd.log:" >&2
tail -n 20 "$root/dockerd.log" >&2
exit 1
