#!/usr/bin/env bash
# Read back that the live tier's engine has no way off the machine: in its network namespace the
# only links are loopback, the engine's bridges and their veth ends, and no route leads
# anywhere but those bridges' own subnets (no default route). Never sends a packet to check.
# Usage: engine-check.sh <engine folder>
set -euo pipefail
root=${1:?usage: engine-check.sh <engine folder>}
pid=$(cat "$root/dockerd.pid" 2>/dev/null || true)
if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
  echo "live: the engine is not running (make live-engine)" >&2; exit 1
fi
in_namespace() { nsenter --net="/proc/$pid/ns/net" "$@"; }

if [ "$(readlink /proc/$$/ns/net)" = "$(readlink "/proc/$pid/ns/net")" ]; then
  echo "live: the engine shares this machine's network namespace" >&2; exit 1
fi
bad_links=$(in_namespace ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print $2}' \
  | grep -Ev '^(lo|docker0|br-[0-9a-f]+|veth[0-9a-f]+)$' || true)
# Every route is on those links (a bridge's subnet, a veth's link-local); none has a gateway.
bad_routes=$(in_namespace ip -o route show table all \
  | grep -Ev '^(local|broadcast|multicast|anycast) ' \
  | grep -Ev ' dev (lo|docker0|br-[0-9a-f]+|veth[0-9a-f]+)( |$)' || true)
bad_routes+=$(in_namespace ip -o route show table all | grep -E '^default| via ' || true)
bad_routes+=$(in_namespace ip -o -6 route show table all | grep -E '^default| via ' || true)
if [ -n "$bad_links$bad_routes" ]; then
  echo "live: the engine's namespace has a way out:" >&2
  printf '%s\n' "$bad_links" "$bad_routes" | sed '/^$/d' >&2
  exit 1
fi
echo "live: engine namespace read back: $(in_namespace ip -o route show | wc -l) route(s), all to its bridges, no default route" >&2
