#!/usr/bin/env bash
# The Debian bookworm root filesystem of the kind base image: debootstrap's minbase with the
# packages kind v0.31.0's images/base/Dockerfile installs (its `clean-install` line, one group
# a line below), upgraded from bookworm-updates and bookworm-security as debian:bookworm-slim
# is, then cleaned as images/base/files/usr/local/bin/clean-install cleans. It stands in for
# `FROM debian:bookworm-slim` + that install (no registry). Needs root and Debian's mirror, so it
# runs outside the engine's namespace. Cached by a hash of the package list and their candidate
# versions (apt-cache policy, like toolchain/openssh.sh): a new Debian point release or security
# update of one of them builds a new rootfs; so does a change to bootstrap() below. The last line
# printed is the rootfs folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || die "debootstrap needs root"
suite=bookworm
mirror=http://deb.debian.org/debian
security=http://deb.debian.org/debian-security
packages=(
  systemd
  conntrack iptables nftables iproute2 ethtool util-linux mount kmod
  libseccomp2 pigz fuse-overlayfs
  nfs-common open-iscsi
  bash ca-certificates curl jq procps
)

# package=version of each package, one a line; fails when apt knows no candidate for one.
candidates() {
  local listed
  listed=$(apt-cache policy "${packages[@]}" | awk '/^[^ ]/ {name=$1; sub(":$", "", name)}
    /^ *Candidate:/ && $2 != "(none)" {print name "=" $2}')
  [ -n "$listed" ] && [ "$(wc -l <<<"$listed")" -eq "${#packages[@]}" ] && echo "$listed"
}
if ! pinned=$(candidates); then
  apt-get update -qq >&2
  pinned=$(candidates) || die "apt knows no candidate for one of: ${packages[*]}"
fi
# What it does, the key's third part (declare -f: the code, not its comments).
bootstrap() {
  debootstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" "$suite" "$1" "$mirror"
  printf 'deb %s %s main\n' "$mirror" "$suite" "$mirror" "$suite-updates" "$security" "$suite-security" \
    > "$1/etc/apt/sources.list"
  chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c 'apt-get update -qq && apt-get -y -qq --no-install-recommends upgrade && apt-get clean \
      && rm -rf /var/lib/apt/lists/*'
  # images/base/files/usr/local/bin/clean-install's cleanup
  rm -rf "$1"/var/cache/debconf/* "$1"/var/log/* "$1"/tmp/* "$1"/var/tmp/* "$1"/usr/share/doc/* \
    "$1"/usr/share/doc-base/* "$1"/usr/share/man/* "$1"/usr/share/local/*
}
key=$({ echo "$suite $mirror $security"; echo "$pinned"; declare -f bootstrap; } | key_of)
out=$node_cache/bookworm-$key
if [ -x "$out/usr/bin/systemd" ] || [ -x "$out/lib/systemd/systemd" ]; then
  say "Debian $suite rootfs cached ($out)"
  echo "$out"
  exit 0
fi

say "debootstrap: Debian $suite with kind's packages into $out (cold: about 2 minutes)..."
start=$(date +%s)
mkdir -p "$node_cache"
rm -rf "$out.tmp"
if ! bootstrap "$out.tmp" > "$out.log" 2>&1; then
  tail -n 20 "$out.log" | sed 's/^/live: debootstrap: /' >&2
  die "debootstrap failed (log: $out.log)"
fi
printf '%s\n' "$pinned" > "$out.tmp/.khp-candidates"
rm -rf "$out" && mv "$out.tmp" "$out"
say "debootstrap done in $(( $(date +%s) - start ))s ($(du -sh "$out" | cut -f1))"
echo "$out"
