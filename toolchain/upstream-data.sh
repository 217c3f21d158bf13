#!/usr/bin/env bash
# Upstream data files the engine tier reads and no registry serves (Kamaji's TenantControlPlane CRD
# at the pinned tag), copied from the shared upstream folder (toolchain/upstream-folder.sh: KHP_UPSTREAM,
# or ../shared/upstream beside the checkout or the checkout it was cloned from) into the toolchain cache once, checked by sha256, so a
# clean clone reuses them. Never copied into the repository. The last line printed is the folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${KHP_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kamaji-hami-platform/toolchain}
upstream=$("$here/upstream-folder.sh")

# file in the upstream folder, its sha256 (clastix/kamaji charts/kamaji/crds at tag 26.8.2-edge)
files=(
  "kamaji/crd-tenantcontrolplanes.yaml be598e72e4410c46795759f712dd60ebb2691f6bbdc22147ac3b4dc3a3370140"
)

out="$cache/upstream-data-$(printf '%s\n' "${files[@]}" | sha256sum | cut -c1-16)"
if [ -f "$out/.copied" ]; then
  echo "toolchain: upstream data cached ($out)" >&2
else
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  for entry in "${files[@]}"; do
    read -r file sum <<<"$entry"
    [ -f "$upstream/$file" ] || {
      echo "toolchain: $file is not in $upstream; set KHP_UPSTREAM to the shared upstream folder" >&2; exit 1; }
    echo "$sum  $upstream/$file" | sha256sum --check --quiet >&2 || {
      echo "toolchain: $upstream/$file is not the pinned file (sha256 $sum)" >&2; exit 1; }
    mkdir -p "$out.tmp/$(dirname "$file")" && cp "$upstream/$file" "$out.tmp/$file"
  done
  touch "$out.tmp/.copied" && rm -rf "$out" && mv "$out.tmp" "$out"
fi
echo "$out"
