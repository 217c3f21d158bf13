#!/usr/bin/env bash
# HAProxy 3.0.11 (docker.io/library/haproxy:3.0.11), the image the platform's per-tenant door runs
# (TCP mode, its haproxy.cfg copied in before start). Upstream's image is docker-library/haproxy's
# 3.0/Dockerfile and 3.0/docker-entrypoint.sh at 2ff3f8bcd0304645bd56e5c6118fa8989f8bba00 ("Update
# to Debian Trixie", the last commit of 3.0.11; 3.0.12 followed): debian:trixie-slim with
# ca-certificates; group and user haproxy 99 (useradd --system, home /var/lib/haproxy, not created;
# /var/lib/haproxy made and owned by them); ENV HAPROXY_VERSION 3.0.11 (and the tarball's URL and
# SHA256); haproxy built from haproxy.org's tarball (TARGET=linux-glibc USE_GETADDRINFO USE_LUA
# USE_OPENSSL USE_PCRE2 USE_PCRE2_JIT USE_PROMEX) and installed by `make install-bin` as
# /usr/local/sbin/haproxy; examples/errorfiles as /usr/local/etc/haproxy/errors (no haproxy.cfg);
# STOPSIGNAL SIGUSR1; /usr/local/bin/docker-entrypoint.sh, ENTRYPOINT ["docker-entrypoint.sh"];
# USER haproxy; WORKDIR /var/lib/haproxy; CMD ["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"].
# Stood in for by Debian trixie's haproxy package (3.0.11-1+deb13u5 from trixie-security when
# written: Debian's build of 3.0.11 with Debian's patches and security fixes) and the closure of its
# Depends from trixie (apt.sh, an apt folder of this family's own), less what only a booted system's
# maintainer scripts use (init-system-helpers, adduser, lsb-base: virtual in trixie), unpacked
# (dpkg-deb, no maintainer scripts) on lib.sh's skeleton with Debian bookworm's static busybox as
# /bin/sh and the other tools (the entrypoint is a /bin/sh script), then laid out as upstream's:
# Debian's /usr/sbin/haproxy moved to /usr/local/sbin, /etc/haproxy/errors (the same errorfiles) to
# /usr/local/etc/haproxy/errors, the rest of what Debian adds for a booted system removed.
# Usage: haproxy.sh <bin folder>. The last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: haproxy.sh <bin folder>}
[ -d "$bin" ] || die "$bin is not a folder (toolchain/live/build.sh prints it)"

version=3.0.11
upstream=2ff3f8bcd0304645bd56e5c6118fa8989f8bba00
DEBIAN_ROOTFS=$(debian_rootfs)
busybox=$(bash "$live_here/scripts/busybox-rootfs.sh" | tail -n 1)

# shellcheck source=apt.sh source-path=SCRIPTDIR
. "$images_here/apt.sh"
apt_suite=trixie
apt_roots=(haproxy)
apt_skip=" init-system-helpers adduser lsb-base "
apt_dir=$toolchain_cache/live-haproxy-apt-$apt_suite
# Debian's haproxy must be of the upstream version the tag names (stable keeps it, with fixes).
debian_version() {
  local v
  v=$(awk -F= '$1 == "haproxy" {print $2}' <<<"$apt_pinned")
  [[ $v == "$version"-* ]] || die "Debian $apt_suite's haproxy is ${v:-missing}, not $version-*: the image would not be haproxy:$version"
  echo "$v"
}
apt_pin
debian_version >/dev/null

family_key() {
  { cat "$0" "$images_here/lib.sh" "$node_here/lib.sh" "$images_here/apt.sh"; basename "$DEBIAN_ROOTFS"
    basename "$busybox"; echo "$apt_pinned"; } | key_of
}
out=$images_cache/haproxy-$(family_key)
if [ -d "$out" ]; then say "HAProxy image cached ($out)"; echo "$out"; exit 0; fi
work=$out.work
rm -rf "$work" && mkdir -p "$work/debs"
trap 'rm -rf "$work"' EXIT
apt_download "$work/debs"
debian=$(debian_version)
# A refresh may have moved the pins: their folder may be there already.
out=$images_cache/haproxy-$(family_key)
if [ -d "$out" ]; then say "HAProxy image cached ($out)"; echo "$out"; exit 0; fi
rm -rf "$out.tmp" && mkdir -p "$out.tmp"

d=$work/haproxy
skeleton "$d"
for deb in "$work/debs/"*.deb; do
  dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$d"
done
# Upstream's paths (`make install-bin` under /usr/local; the errorfiles Debian ships are
# examples/errorfiles); Debian's init script, unit, tmpfiles, logrotate, rsyslog and defaults, its
# example haproxy.cfg, halog and the chroot's /var/lib/haproxy/dev left out, as upstream has none.
mkdir -p "$d/usr/local/sbin" "$d/usr/local/etc/haproxy"
mv "$d/usr/sbin/haproxy" "$d/usr/local/sbin/haproxy"
mv "$d/etc/haproxy/errors" "$d/usr/local/etc/haproxy/errors"
rm -rf "$d/etc/haproxy" "$d/etc/default/haproxy" "$d/etc/init.d/haproxy" "$d/etc/logrotate.d/haproxy" \
  "$d/etc/rsyslog.d/49-haproxy.conf" "$d/usr/lib/systemd/system/haproxy.service" \
  "$d/usr/lib/tmpfiles.d/haproxy.conf" "$d/usr/sbin/halog" "$d/var/lib/haproxy/dev" \
  "$d"/usr/share/{doc,man,info,lintian,bug}
for folder in etc/default etc/init.d etc/logrotate.d etc/rsyslog.d usr/lib/systemd/system usr/lib/systemd \
  usr/lib/tmpfiles.d; do
  [ ! -d "$d/$folder" ] || rmdir --ignore-fail-on-non-empty "$d/$folder"
done
busybox_tools "$d"
# The user and group as upstream's groupadd/useradd make them (trixie's useradd: shell /bin/sh).
echo 'haproxy:x:99:99::/var/lib/haproxy:/bin/sh' >> "$d/etc/passwd"
echo 'haproxy:x:99:' >> "$d/etc/group"
mkdir -p "$d/var/lib/haproxy" && chown 99:99 "$d/var/lib/haproxy"
# docker-library/haproxy 3.0/docker-entrypoint.sh at 2ff3f8bc (the same since), as it is.
cat > "$d/usr/local/bin/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
set -e

# first arg is `-f` or `--some-option`
if [ "${1#-}" != "$1" ]; then
	set -- haproxy "$@"
fi

if [ "$1" = 'haproxy' ]; then
	shift # "haproxy"
	# if the user wants "haproxy", let's add a couple useful flags
	#   -W  -- "master-worker mode" (similar to the old "haproxy-systemd-wrapper"; allows for reload via "SIGUSR2")
	#   -db -- disables background mode
	set -- haproxy -W -db "$@"
fi

exec "$@"
EOF
chmod 0755 "$d/usr/local/bin/docker-entrypoint.sh"
# Upstream's smoke test (haproxy -v), through the entrypoint as the image runs it.
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ran=$(env -i PATH=$path chroot "$d" docker-entrypoint.sh haproxy -v 2>&1) || die "haproxy: $ran"
grep -q "^HAProxy version $version-" <<<"$ran" || die "haproxy: not $version: $ran"
image_out "$out.tmp" haproxy "$d" "$(jq -n --arg ref "docker.io/library/haproxy:$version" --arg version "$version" \
  --arg path "$path" \
  --arg source "docker-library/haproxy@$upstream 3.0/Dockerfile, 3.0/docker-entrypoint.sh; Debian $apt_suite haproxy $debian" \
  --arg note "HAProxy $version is Debian $apt_suite's haproxy $debian (Debian's build of $version with Debian's patches and fixes, linked to jemalloc, OpenTracing and $apt_suite's OpenSSL, Lua 5.4 and PCRE2) with its $apt_suite libraries, instead of upstream's build from haproxy.org's tarball on debian:trixie-slim; laid out as upstream's (/usr/local/sbin/haproxy, /usr/local/etc/haproxy/errors, user haproxy 99, the same entrypoint, cmd, workdir and stop signal), on lib.sh's skeleton (bookworm's CA bundle and nsswitch.conf) with Debian bookworm's static busybox as /bin/sh and the other tools instead of trixie-slim's dash and coreutils; no HAPROXY_URL or HAPROXY_SHA256 (no tarball was built); no maintainer scripts run; packages left out of the closure: $(xargs <<<"$apt_skip")" \
  '{ref: $ref, entrypoint: ["docker-entrypoint.sh"], cmd: ["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"],
    user: "haproxy", workdir: "/var/lib/haproxy", stop_signal: "SIGUSR1",
    env: {PATH: $path, HAPROXY_VERSION: $version}, source: $source, note: $note}')"
rm -rf "$out" && mv "$out.tmp" "$out"
say "HAProxy image: $out"
echo "$out"
