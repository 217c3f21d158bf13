# shellcheck shell=bash disable=SC2034 # its variables are used by the scripts that source it
# Shared by toolchain/live/node-image/*.sh (sourced, never run): where the node image's pieces
# are cached, the versions it is built for, and small helpers. Every script prints its progress
# to stderr as `live: ...` lines and its result (a path, a tag) as its last stdout line.
# A failing command substitution stops the script (as set -e does outside them).
shopt -s inherit_errexit
node_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
live_here=$(dirname "$node_here")
toolchain_cache=${KHP_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kamaji-hami-platform/toolchain}
# Every cached piece, each in a file or folder named after a hash of what made it (<step>-<key>).
node_cache=$toolchain_cache/live-node-image
arch=amd64
# The tier's mirror (images/registry.sh): "localhost:5001" to the engine and to the stack's
# images.mirror, over TLS (images/mirror-tls.sh); every container of the engine reaches it at the
# engine's docker0 address, which engine-start.sh pins (--bip), through a containerd hosts.toml for
# localhost:5001 with the mirror's CA beside it, which the node image carries (node-image.sh), so
# the platform's kind node and its workers pull from it.
mirror_port=5001
mirror_address=172.17.0.1
mirror_hosts_dir=/etc/containerd/certs.d/localhost:$mirror_port
mirror_tls() { bash "$live_here/images/mirror-tls.sh" | tail -n 1; }
mirror_hosts_toml() {
  printf 'server = "https://localhost:%s"\n\n[host."https://%s:%s"]\n  capabilities = ["pull", "resolve"]\n  ca = "%s/ca.crt"\n' \
    "$mirror_port" "$mirror_address" "$mirror_port" "$mirror_hosts_dir"
}

say() { echo "live: $*" >&2; }
die() { say "$*"; exit 1; }
# A cache key: the first 16 hex digits of the sha256 of stdin.
key_of() { sha256sum | cut -c1-16; }

# The version a wrapper module (toolchain/live/<program>/go.mod) requires of a module.
required_version() {
  awk -v m="$2" '$1 == "require" && $2 == m {print $3; exit} $1 == m && $2 ~ /^v/ {print $2; exit}' \
    "$live_here/$1/go.mod"
}
# A module's unpacked source in Go's module cache (downloaded first when missing, outside any
# namespace): kind's images/base files and Kubernetes' build/pause are read from there, never
# copied into the repository.
module_dir() {
  local dir
  dir=$(cd "$live_here/$1" && go mod download -json "$2@$(required_version "$1" "$2")" | jq -r .Dir)
  [ -d "$dir" ] || die "no source folder for $2 in Go's module cache"
  echo "$dir"
}
kind_version() { required_version kind sigs.k8s.io/kind; }
kube_version() { required_version kubernetes k8s.io/kubernetes; }

# The key of a program built by toolchain/live/build.sh: its cache folder's name carries the hash
# of its go.mod, go.sum, flags and Go version.
program_dir() {
  local dir
  dir=$(readlink -f "$1/programs/$2" || true)
  [ -d "$dir" ] || die "$1/programs/$2 is missing: run toolchain/live/build.sh first"
  echo "$dir"
}
program_key() { local dir; dir=$(program_dir "$1" "$2"); basename "$dir"; }

# docker (or anything else) where the engine is: toolchain/live/scripts/engine-run.sh.
in_engine() { bash "$live_here/scripts/engine-run.sh" "$@"; }
