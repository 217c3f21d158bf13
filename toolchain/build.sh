#!/usr/bin/env bash
# Build the simulation tier's upstream programs from their Go modules (toolchain/sim/*:
# go.mod/go.sum and, where a module has no installable main, a few-line wrapper) into a
# version-keyed cache outside the repository, so a fresh clone (CI) reuses them. Skips what
# is already built. The last line printed is a folder with every binary (for PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${KHP_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kamaji-hami-platform/toolchain}
command -v go >/dev/null || { echo "toolchain: Go is not installed (https://go.dev/dl/); the sim tier needs it" >&2; exit 1; }
go_version=$(go env GOVERSION)

# The cache folder of a module: its name and a hash of everything that decides its binaries.
built_dir() {
  local key
  key=$(cd "$1" && { cat go.mod go.sum; cat ./*.go 2>/dev/null || true; echo "$go_version"; } | sha256sum | cut -c1-16)
  echo "$cache/$(basename "$1")-$key"
}

bin="$cache/bin"
rm -rf "$bin" && mkdir -p "$bin"
for module in "$here"/sim/*/; do
  name=$(basename "$module")
  out=$(built_dir "$module")
  if [ -f "$out/.built" ]; then
    echo "toolchain: $name cached ($out)" >&2
  else
    echo "toolchain: building $name with $go_version (a cold build takes minutes on 2 cores)..." >&2
    start=$(date +%s)
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    (cd "$module" && { [ ! -f main.go ] || go build -o "$out.tmp/$name" .; } \
       && { [ -z "$(go list tool 2>/dev/null)" ] || go build -o "$out.tmp/" tool; })
    touch "$out.tmp/.built" && rm -rf "$out" && mv "$out.tmp" "$out"
    echo "toolchain: built $name in $(( $(date +%s) - start ))s" >&2
  fi
  for tool in "$out"/*; do ln -s "$tool" "$bin/"; done
done
echo "$bin"
