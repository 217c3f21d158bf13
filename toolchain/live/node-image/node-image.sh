#!/usr/bin/env bash
# `kind build node-image --type file` (kind v0.31.0) from the Kubernetes server tarball, on the
# base image, in the engine's namespace (engine-run.sh), with docker-shim.sh first on PATH as
# `docker` for this command only, so that kind's pulls come from the engine and the offline
# archives and never from a registry. The shim's decisions are printed after the build.
# Usage: node-image.sh <bin folder> <engine folder> <base image> <kubernetes tarball> <offline folder> <node image tag>
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: node-image.sh <bin folder> <engine folder> <base image> <kubernetes tarball> <offline folder> <tag>"
bin=${1:?$usage} engine=${2:?$usage} base=${3:?$usage} tarball=${4:?$usage} offline=${5:?$usage} tag=${6:?$usage}
shim=$(mktemp -d)
trap 'rm -rf "$shim"' EXIT
# A `docker` that runs the shim with bash (whatever mode the checkout gave the file).
printf '#!/usr/bin/env bash\nexec bash %q "$@"\n' "$node_here/docker-shim.sh" > "$shim/docker"
chmod 0755 "$shim/docker"
: > "$shim/decisions.log"

# kind v0.31.0 extracts the tarball into os.TempDir()/k8s-tar-extract-* and never removes it
# (pkg/build/nodeimage/internal/kube/builder_tarball.go: about 535 MB a build): TMPDIR puts it in
# the shim's folder, which the trap removes.
mkdir "$shim/tmp"

say "kind build node-image $tag on $base (docker-shim.sh as docker)..."
status=0
in_engine "$bin" "$engine" env PATH="$shim:$bin:$PATH" TMPDIR="$shim/tmp" KHP_REAL_DOCKER="$bin/docker" \
  KHP_OFFLINE_IMAGES="$offline" KHP_SHIM_LOG="$shim/decisions.log" \
  kind build node-image --type file --base-image "$base" --image "$tag" --arch "$arch" "$tarball" \
  > "$shim/kind.log" 2>&1 || status=$?
sed 's/^/live: /' "$shim/decisions.log" >&2
if ! grep -q '^docker-shim: pull ' "$shim/decisions.log"; then
  say "kind never ran the docker shim (its docker pull of the base image was not seen)"
  [ "$status" != 0 ] || status=1
fi
if [ "$status" != 0 ]; then
  grep -v 'elapsed:\|resolving  ' "$shim/kind.log" | tail -n 40 | sed 's/^/live: kind: /' >&2
  die "kind build node-image failed ($status)"
fi
# A layer of the tier's own on kind's build (docker commit keeps the image's config), for every node
# of this image, the platform's kind node and its workers alike:
# - the tier's mirror: a hosts.toml for localhost:5001 and the mirror's CA (lib.sh);
# - containerd's restrict_oom_score_adj = true, which kind-config.yaml sets for the tier's own
#   clusters: without CAP_SYS_RESOURCE (scripts/runtime.sh drops it where the machine lacks it)
#   runc in the node cannot lower a pod's oom_score_adj ("nsexec: failed to update
#   /proc/self/oom_score_adj: Permission denied") and no pod starts; the platform renders no
#   containerd patch for its nodes, so the image carries it. kind's entrypoint sets the same key of
#   the same file for rootless nodes (kind v0.31.0 images/base/files/usr/local/bin/entrypoint).
mkdir -p "$shim/certs.d/localhost:$mirror_port"
mirror_hosts_toml > "$shim/certs.d/localhost:$mirror_port/hosts.toml"
cp "$(mirror_tls)/ca.crt" "$shim/certs.d/localhost:$mirror_port/ca.crt"
container=$(in_engine "$bin" "$engine" docker create "$tag")
# shellcheck disable=SC2064 # the container's ID, known now
trap "rm -rf '$shim'; in_engine '$bin' '$engine' docker rm -v '$container' >/dev/null 2>&1 || true" EXIT
in_engine "$bin" "$engine" docker cp "$shim/certs.d/." "$container:/etc/containerd/certs.d/" >&2
in_engine "$bin" "$engine" docker cp "$container:/etc/containerd/config.toml" "$shim/config.toml"
grep -q '^ *restrict_oom_score_adj = false$' "$shim/config.toml" \
  || die "kind's containerd config has no 'restrict_oom_score_adj = false' line to turn on"
sed -i 's/^\( *restrict_oom_score_adj = \)false$/\1true/' "$shim/config.toml"
in_engine "$bin" "$engine" docker cp "$shim/config.toml" "$container:/etc/containerd/config.toml"
in_engine "$bin" "$engine" docker commit -m "the live tier's layer (node-image.sh)" "$container" "$tag" >/dev/null
say "node image $tag built ($(in_engine "$bin" "$engine" docker image inspect -f '{{.Size}}' "$tag" \
  | awk '{printf "%.0f MB", $1 / 1e6}'))"
echo "$tag"
