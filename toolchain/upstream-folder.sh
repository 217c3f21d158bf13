#!/usr/bin/env bash
# Print the shared upstream folder (CRDs, chart values, source archives the module proxy does not
# serve): KHP_UPSTREAM when set; else ../shared/upstream beside this checkout; else, for a clone
# of a local checkout (a CI clone made elsewhere on the machine), ../shared/upstream beside the
# checkout it was cloned from. Printed even when absent: the caller names what it misses there.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${KHP_UPSTREAM:-}" ]; then
  echo "$KHP_UPSTREAM"; exit 0
fi
beside="$repo/../shared/upstream"
origin=$(git -C "$repo" config --get remote.origin.url 2>/dev/null || true)
if [ ! -d "$beside" ] && [ -n "$origin" ] && [ -d "$origin/../shared/upstream" ]; then
  (cd "$origin/../shared/upstream" && pwd); exit 0
fi
echo "$beside"
