#!/usr/bin/env bash
# The Debian packages the live tier's engine needs on the machine that runs it: runc links
# libseccomp (built with pkg-config and gcc), dockerd programs its bridges with iptables, the
# runtime wrapper edits OCI bundles with jq, and the engine's network namespace is made with
# util-linux's unshare/nsenter and read back with iproute2. The kind node image
# (toolchain/live/node-image/) bootstraps its Debian rootfs with debootstrap, compiles pause
# statically with gcc and libc6-dev (libc.a), strips it (binutils) and tells dynamically linked
# files by `file`. Installs what is missing (as root, like the ssh tier's toolchain/openssh.sh,
# from Debian's own mirror), else names it.
set -euo pipefail
packages=(libseccomp-dev pkg-config gcc libc6-dev iptables jq util-linux iproute2 debootstrap binutils file)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "live: missing Debian packages: ${missing[*]} (apt-get install ${missing[*]}, as root)" >&2
  exit 1
fi
echo "live: installing ${missing[*]} from Debian's packages..." >&2
apt-get install -qq -y --no-install-recommends "${missing[@]}" >&2 \
  || { apt-get update -qq >&2 && apt-get install -qq -y --no-install-recommends "${missing[@]}" >&2; }
