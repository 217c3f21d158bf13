#!/usr/bin/env bash
# `docker` for `kind build node-image` only (node-image.sh links it as docker first on PATH):
# no image comes from a registry, whatever kind asks.
#  - `docker pull REF` (kind pulls the base image unconditionally: kind v0.31.0
#    pkg/build/nodeimage/buildcontext.go createBuildContainer, internal/container/docker/pull.go)
#    succeeds only when REF is already in the engine, without contacting anything; else it fails.
#  - `docker exec ... ctr --namespace=k8s.io content fetch --platform=P REF` (imageimporter.go
#    Pull, for every image the node needs that the Kubernetes tarball does not carry:
#    buildcontext.go prePullImagesAndWriteManifests) imports
#    $KHP_OFFLINE_IMAGES/<REF with / and : as _>.tar into the build container's containerd
#    instead, with the command kind's own LoadCommand uses; no archive, no image: it fails.
#  - `docker run` and `docker create` get --pull=never; push, login, search and image pull/push
#    are refused; anything else goes to the real docker CLI ($KHP_REAL_DOCKER) unchanged.
# Every decision is appended to $KHP_SHIM_LOG. The engine's namespace has no route out anyway.
set -euo pipefail
real=${KHP_REAL_DOCKER:?docker-shim.sh: KHP_REAL_DOCKER is not set}
offline=${KHP_OFFLINE_IMAGES:?docker-shim.sh: KHP_OFFLINE_IMAGES is not set}
log=${KHP_SHIM_LOG:-/dev/null}
note() { echo "docker-shim: $*" >> "$log"; echo "docker-shim: $*" >&2; }

command=${1:-}
[ "$command" != image ] || command="image ${2:-}"
case $command in
  pull|"image pull")
    ref=${*: -1}
    if "$real" image inspect "$ref" >/dev/null 2>&1; then
      note "pull $ref: in the engine already; nothing pulled"
      exit 0
    fi
    note "pull $ref: refused (not built locally)"
    exit 1 ;;
  push|"image push"|login|search)
    note "$command: refused"
    exit 1 ;;
  run|create)
    exec "$real" "$1" --pull=never "${@:2}" ;;
  exec)
    args=("$@")
    for ((i = 1; i + 4 < ${#args[@]}; i++)); do
      if [ "${args[i]}" = ctr ] && [ "${args[i+1]}" = --namespace=k8s.io ] \
        && [ "${args[i+2]}" = content ] && [ "${args[i+3]}" = fetch ]; then
        ref=${args[${#args[@]}-1]}
        archive=$offline/$(tr '/:' '__' <<<"$ref").tar
        if [ ! -f "$archive" ]; then
          note "ctr content fetch $ref: refused (no archive $archive)"
          exit 1
        fi
        note "ctr content fetch $ref: imported from $archive instead"
        # `docker exec [options] <container> ctr ...`: everything before ctr, with -i for stdin.
        exec "$real" exec -i "${args[@]:1:i-1}" ctr --namespace=k8s.io images import \
          --all-platforms --no-unpack --digests - < "$archive"
      fi
    done ;;
esac
exec "$real" "$@"
