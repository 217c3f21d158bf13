#!/usr/bin/env bash
# The kind base image in the engine: `docker import` of base-rootfs.sh's tar with the metadata
# of the final stage of kind v0.31.0's images/base/Dockerfile (ENV container=docker, STOPSIGNAL
# SIGRTMIN+3, its ENTRYPOINT) and the PATH it inherits from debian:bookworm-slim. Skipped when
# the tag (named after the tar's inputs) is there already.
# Usage: import-base.sh <bin folder> <engine folder> <base rootfs tar> <tag>
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: import-base.sh <bin folder> <engine folder> <base rootfs tar> <tag>"
bin=${1:?$usage} engine=${2:?$usage} tarball=${3:?$usage} tag=${4:?$usage}
if in_engine "$bin" "$engine" docker image inspect "$tag" >/dev/null 2>&1; then
  say "base image $tag in the engine already"
else
  in_engine "$bin" "$engine" docker import --platform "linux/$arch" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV container=docker' \
    --change 'STOPSIGNAL SIGRTMIN+3' \
    --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    "$tarball" "$tag" >/dev/null
  say "base image $tag imported"
fi
echo "$tag"
