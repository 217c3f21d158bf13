#!/usr/bin/env bash
# The pause binary (the sandbox image's only file), compiled from Kubernetes' own source as its
# build/pause/Makefile does: gcc -Os -Wall -Werror -static -DVERSION=v<TAG>, then stripped. TAG is
# that Makefile's (3.10.1 in v1.35.4); the -<git describe> suffix it appends is left out (a module
# zip has no git). Source: build/pause/linux/pause.c of k8s.io/kubernetes from Go's module cache.
# Cached by a hash of pause.c, the flags and gcc's version. The last line printed is its folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
src=$(module_dir kubernetes k8s.io/kubernetes)/build/pause
tag=$(sed -n 's/^TAG ?= *//p' "$src/Makefile")
flags=(-Os -Wall -Werror -static "-DVERSION=v$tag")
key=$({ cat "$src/linux/pause.c"; echo "${flags[*]}"; gcc --version; } | key_of)
out=$node_cache/pause-$key
if [ -x "$out/pause" ]; then
  say "pause $tag cached ($out)"
else
  mkdir -p "$out.tmp"
  gcc "${flags[@]}" -o "$out.tmp/pause" "$src/linux/pause.c"
  strip "$out.tmp/pause"
  rm -rf "$out" && mv "$out.tmp" "$out"
  say "built pause $tag ($("$out/pause" -v 2>&1 | head -n 1))"
fi
echo "$out"
