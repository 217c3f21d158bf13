#!/usr/bin/env bash
# The ssh tier's sshd: Debian's openssh-server unpacked into a cache outside the repository,
# never installed (installing it would start a daemon on the machine and add a privilege
# separation user). Keyed by the package's candidate version, like toolchain/build.sh keys its
# Go builds; skips what is already unpacked. The last line printed is the unpacked root: sshd
# is <root>/usr/sbin/sshd and runs with LD_LIBRARY_PATH=<root>/usr/lib/x86_64-linux-gnu (libwrap).
set -euo pipefail
cache=${KHP_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kamaji-hami-platform/toolchain}
for tool in apt-get apt-cache dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "toolchain: $tool is missing; the ssh tier needs a Debian-based host" >&2; exit 1; }
done
packages=(openssh-server libwrap0)

# package=version of each package, one a line (one apt-cache call: it takes a second).
candidates() {
  local listed
  listed=$(apt-cache policy "${packages[@]}" | awk '/^[^ ]/ {name=$1; sub(":$", "", name)}
    /^ *Candidate:/ && $2 != "(none)" {print name "=" $2}')
  [ "$(wc -l <<<"$listed")" -eq "${#packages[@]}" ] && [ -n "$listed" ] && echo "$listed"
}
# As root, apt's download sandbox user (_apt) cannot write into the cache: download as root.
apt_options=()
[ "$(id -u)" != 0 ] || apt_options=(-o APT::Sandbox::User=root)

# An image whose package lists were never fetched knows no candidate: fetch them once.
if ! pinned=$(candidates); then
  apt-get update -qq >&2
  pinned=$(candidates) || { echo "toolchain: apt knows no openssh-server/libwrap0 candidate" >&2; exit 1; }
fi
key=$(printf '%s\n' "$pinned" | sha256sum | cut -c1-16)
out="$cache/openssh-server-$(sed -n 's/^openssh-server=//p' <<<"$pinned" | tr ':~' '__')-$key"
if [ -x "$out/usr/sbin/sshd" ]; then
  echo "toolchain: openssh-server cached ($out)" >&2
else
  rm -rf "$out.tmp" && mkdir -p "$out.tmp/debs"
  # shellcheck disable=SC2046 # one argument per package=version
  if ! (cd "$out.tmp/debs" && apt-get download -qq "${apt_options[@]}" $(cat <<<"$pinned") >&2); then
    # A stale list names a version the mirror no longer has.
    apt-get update -qq >&2
    pinned=$(candidates)
    # shellcheck disable=SC2046
    (cd "$out.tmp/debs" && apt-get download -qq "${apt_options[@]}" $(cat <<<"$pinned") >&2)
  fi
  for deb in "$out.tmp"/debs/*.deb; do dpkg-deb -x "$deb" "$out.tmp"; done
  rm -rf "$out.tmp/debs" && rm -rf "$out" && mv "$out.tmp" "$out"
  echo "toolchain: unpacked $(tr '\n' ' ' <<<"$pinned")into $out" >&2
fi
echo "$out"
