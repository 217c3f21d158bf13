#!/usr/bin/env bash
# A busybox root filesystem from Debian's busybox-static package (downloaded, never installed),
# unpacked into a cache keyed by the package's version: the live tier's smallest image, imported
# into its engine with `docker import` (no registry). The last line printed is the rootfs folder:
# bin/busybox and one link per applet, as the upstream busybox image lays them out.
set -euo pipefail
cache=${KHP_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kamaji-hami-platform/toolchain}
package=busybox-static

candidate() { apt-cache policy "$package" | awk '/^ *Candidate:/ && $2 != "(none)" {print $2}'; }
version=$(candidate)
if [ -z "$version" ]; then
  apt-get update -qq >&2
  version=$(candidate)
  [ -n "$version" ] || { echo "live: apt knows no $package candidate" >&2; exit 1; }
fi
out="$cache/live-busybox-rootfs-$(tr ':~' '__' <<<"$version")"
if [ -x "$out/bin/busybox" ]; then
  echo "live: busybox $version cached ($out)" >&2
  echo "$out"
  exit 0
fi
# As root, apt's download sandbox user (_apt) cannot write into the cache: download as root.
apt_options=()
[ "$(id -u)" != 0 ] || apt_options=(-o APT::Sandbox::User=root)
rm -rf "$out.tmp" && mkdir -p "$out.tmp/deb" "$out.tmp/rootfs/bin" "$out.tmp/rootfs/tmp"
(cd "$out.tmp/deb" && apt-get download -qq "${apt_options[@]}" "$package=$version" >&2)
dpkg-deb -x "$out.tmp/deb/"*.deb "$out.tmp/unpacked"
cp "$out.tmp/unpacked/bin/busybox" "$out.tmp/rootfs/bin/busybox"
for applet in $("$out.tmp/rootfs/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$out.tmp/rootfs/bin/$applet"
done
chmod 1777 "$out.tmp/rootfs/tmp"
rm -rf "$out" && mv "$out.tmp/rootfs" "$out" && rm -rf "$out.tmp"
echo "live: busybox $version unpacked ($out)" >&2
echo "$out"
