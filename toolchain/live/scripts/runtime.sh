#!/usr/bin/env bash
# The live engine's OCI runtime: runc, minus CAP_SYS_RESOURCE. Some machines (this project's CI
# among them) run with a capability bounding set without it, and runc then fails every
# privileged container ("unable to apply caps: operation not permitted"); kind's nodes are
# privileged. dockerd registers this file as its default runtime (toolchain/live/scripts/
# engine-start.sh); it drops the capability from the bundle's config.json (`create`, `run`) and
# from the --process file (`exec`), where the machine lacks it, then runs the runc beside it.
set -euo pipefail
runc="$(dirname "$0")/runc"
capability=CAP_SYS_RESOURCE

# Bit 24 of the bounding set (linux/capability.h); when present, nothing needs removing.
bounding=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
if (( (16#$bounding >> 24) & 1 )); then
  exec "$runc" "$@"
fi

bundle="" process=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --bundle|-b) bundle=${args[i+1]:-} ;;
    --bundle=*) bundle=${args[i]#--bundle=} ;;
    --process|-p) process=${args[i+1]:-} ;;
    --process=*) process=${args[i]#--process=} ;;
  esac
done

# Every capability list (bounding, effective, permitted, inheritable, ambient) loses it.
without_capability() {
  jq --arg cap "$capability" '(.. | objects | select(has("bounding")))
    |= with_entries(if (.value | type) == "array" then .value |= map(select(. != $cap)) else . end)' \
    "$1" >"$1.khp-tmp" && mv "$1.khp-tmp" "$1"
}
[ -z "$bundle" ] || [ ! -f "$bundle/config.json" ] || without_capability "$bundle/config.json"
[ -z "$process" ] || [ ! -f "$process" ] || without_capability "$process"
exec "$runc" "$@"
