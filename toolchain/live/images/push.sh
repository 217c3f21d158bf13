#!/usr/bin/env bash
# Push a family's images (a folder of <id>.tar root filesystems and <id>.json configs, lib.sh)
# into the mirror under the platform's mirror rule (kamaji_hami_platform/mirror.py: the upstream
# reference under <mirror>/<registry>/<path>:<tag>), with crane in the engine's namespace: the
# rootfs as one layer on an empty base, then the config's stop_signal (a Dockerfile's STOPSIGNAL,
# e.g. "SIGUSR1": crane mutate has no flag for it, so the image config is edited with crane edit
# config), entrypoint, cmd, user, workdir, env, ports and linux/amd64, and labels naming the build
# (org.kamaji-hami-platform.build: the family folder, set last) and its upstream source. An image
# whose build label is already the folder's is skipped.
# Usage: push.sh <bin folder> <engine folder> <mirror> <family folder>
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: push.sh <bin folder> <engine folder> <mirror> <family folder>"
bin=${1:?$usage} engine=${2:?$usage} mirror=${3:?$usage} folder=${4:?$usage}
build=$(basename "$folder") label=org.kamaji-hami-platform.build
tls=$(mirror_tls)
crane_() { in_engine "$bin" "$engine" env SSL_CERT_FILE="$tls/ca.crt" crane "$@"; }
# stop_signal TARGET SIGNAL: the image config's StopSignal set (crane mutate keeps it).
stop_signal() {
  local edited
  edited=$(crane_ config "$1" | jq -ce --arg s "$2" '.config.StopSignal = $s') || return 1
  printf '%s' "$edited" | crane_ edit config "$1"
}

for config in "$folder"/*.json; do
  ref=$(jq -r .ref "$config")
  target=$(mirrored_ref "$ref" "$mirror")
  if [ "$(crane_ config "$target" 2>/dev/null | jq -r --arg l "$label" '.config.Labels[$l] // ""')" = "$build" ]; then
    say "in the mirror: $target"; continue
  fi
  # crane's --entrypoint and --cmd are comma-separated lists: an element with a comma cannot pass.
  ! jq -e '[(.entrypoint // [])[], (.cmd // [])[]] | any(contains(","))' "$config" >/dev/null \
    || die "$ref: an entrypoint or cmd element holds a comma, which crane mutate would split"
  # crane's -l is a pflag StringToString: a comma would split the value (said with ; instead).
  flags=(--set-platform linux/amd64 -l "$label=$build"
    -l "org.kamaji-hami-platform.source=$(jq -r .source "$config" | tr ',' ';')")
  mapfile -t -O "${#flags[@]}" flags < <(jq -r '
    (if .entrypoint then "--entrypoint=" + (.entrypoint | join(",")) else empty end),
    (if .cmd then "--cmd=" + (.cmd | join(",")) else empty end),
    (if .user then "--user=" + .user else empty end),
    (if .workdir then "--workdir=" + .workdir else empty end),
    (.env // {} | to_entries[] | "--env=" + .key + "=" + .value),
    (if .ports then "--exposed-ports=" + (.ports | join(",")) else empty end)' "$config")
  # crane logs every blob on stderr: shown only when it fails.
  signal=$(jq -r '.stop_signal // ""' "$config")
  if ! log=$(crane_ append --oci-empty-base -f "${config%.json}.tar" -t "$target" 2>&1 >/dev/null) \
    || { [ -n "$signal" ] && ! log=$(stop_signal "$target" "$signal" 2>&1 >/dev/null); } \
    || ! log=$(crane_ mutate "${flags[@]}" -t "$target" "$target" 2>&1 >/dev/null); then
    echo "$log" >&2; die "could not push $target"
  fi
  say "pushed $target ($(du -h "${config%.json}.tar" | cut -f1))"
done
