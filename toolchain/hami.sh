#!/usr/bin/env bash
# Build HAMi v2.10.0's scheduler (extender and mutating webhook in one binary) for the sim tier,
# into a folder of the toolchain cache outside the repository (like toolchain/build.sh), skipping
# it when built. The last line printed is that folder (with `scheduler`); progress goes to stderr.
#
# The Go module proxy does not serve HAMi, so its source is the upstream archive
# HAMi-v2.10.0.tar.gz (a `git archive` of the tag: cmd/, pkg/, charts/hami/, go.mod, go.sum) in
# KHP_UPSTREAM_SRC, default the src folder of the shared upstream folder that
# toolchain/upstream-folder.sh finds (as toolchain/pulumi/build.sh finds its archives). The archive
# is checked against its sha256, and its Go sources against the tag's (go_sources_key, the hash
# toolchain/live/images/hami.sh checks), then built with the served modules its go.sum pins.
# The unpacked source stays in the output folder: the sim harness reads HAMi's chart from it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${KHP_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kamaji-hami-platform/toolchain}
command -v go >/dev/null || { echo "toolchain: Go is not installed (https://go.dev/dl/); the sim tier needs it" >&2; exit 1; }
go_version=$(go env GOVERSION)

TAG=v2.10.0
ARCHIVE=HAMi-$TAG.tar.gz
ARCHIVE_SHA256=a246e24280f76031ca7bc31af5708714e04ee426481568edd1ce84bba77fb9ab
GO_KEY=c89efbb361c51470  # go_sources_key of the tag's tree (toolchain/live/images/hami.sh)

# A hash of the files `go build` reads: cmd/ and pkg/ without tests and testdata, go.mod, go.sum
# (toolchain/live/images/hami.sh's, with the byte order of sort fixed so no locale changes it).
go_sources_key() {
  (cd "$1" && find cmd pkg go.mod go.sum -type f ! -name '*_test.go' ! -path '*/testdata/*' -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}

# The cache key: the pinned archive, this script and Go decide the binary.
key=$({ echo "$ARCHIVE_SHA256"; cat "$0"; echo "$go_version"; } | sha256sum | cut -c1-16)
out=$cache/hami-$key
if [ -f "$out/.built" ]; then
  echo "toolchain: HAMi $TAG scheduler cached ($out)" >&2
  echo "$out"
  exit 0
fi

# Only a cold build needs the archive, checked first.
folder=${KHP_UPSTREAM_SRC:-$("$here/upstream-folder.sh")/src}
archive=$folder/$ARCHIVE
[ -f "$archive" ] || {
  echo "toolchain: $ARCHIVE is not in $folder; set KHP_UPSTREAM_SRC to the folder of the upstream source archives" >&2
  exit 1; }
echo "$ARCHIVE_SHA256  $archive" | sha256sum --check --quiet >&2 || {
  echo "toolchain: $archive is not the archive this build pins (sha256 $ARCHIVE_SHA256)" >&2; exit 1; }
echo "toolchain: building HAMi $TAG's scheduler with $go_version (a cold build takes minutes on 2 cores)..." >&2
start=$(date +%s)
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
tar -xzf "$archive" -C "$out.tmp"
src=$out.tmp/HAMi
actual=$(go_sources_key "$src")
[ "$actual" = "$GO_KEY" ] || {
  echo "toolchain: $archive is not HAMi $TAG (its Go sources hash to $actual, the tag's to $GO_KEY)" >&2
  exit 1; }
# cgo on, as upstream builds it (docker/Dockerfile.hamimaster: golang image, CGO_ENABLED unset);
# -trimpath keeps the cache folder's path out of the binary.
(cd "$src" && CGO_ENABLED=1 go build -trimpath -o "$out.tmp/" ./cmd/scheduler)
touch "$out.tmp/.built" && rm -rf "$out" && mv "$out.tmp" "$out"
echo "toolchain: built HAMi $TAG's scheduler in $(( $(date +%s) - start ))s" >&2
echo "$out"
