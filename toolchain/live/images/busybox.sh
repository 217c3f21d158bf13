#!/usr/bin/env bash
# busybox for the live suite's probes (docker.io/library/busybox:1.36.1): Debian's busybox-static
# (toolchain/live/scripts/busybox-rootfs.sh; bookworm serves 1.35.0, the nearest to the pin), laid
# out as docker-library/busybox's image: /bin/busybox with one link per applet, /etc/passwd and
# /etc/group with root and nobody, /root, /home, /tmp (1777), CMD ["sh"].
# Usage: busybox.sh <bin folder>. The last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
: "${1:?usage: busybox.sh <bin folder>}"
rootfs=$(bash "$live_here/scripts/busybox-rootfs.sh" | tail -n 1)
key=$({ cat "$0" "$images_here/lib.sh"; basename "$rootfs"; } | key_of)
out=$images_cache/busybox-$key
if [ -d "$out" ]; then say "busybox image cached ($out)"; echo "$out"; exit 0; fi
rm -rf "$out.tmp" "$out.work" && mkdir -p "$out.tmp" "$out.work"
trap 'rm -rf "$out.work"' EXIT
root=$out.work/root
cp -a "$rootfs" "$root"
mkdir -p "$root/etc" "$root/root" "$root/home" && chmod 0700 "$root/root"
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/home:/bin/false' > "$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'nobody:x:65534:' > "$root/etc/group"
# Its banner read whole, not through head: a closed pipe would fail the substitution (pipefail).
banner=$("$root/bin/busybox" --help 2>&1 || true)
version=$(awk 'NR == 1 {print $2}' <<<"$banner")
image_out "$out.tmp" busybox "$root" "$(jq -n --arg note "busybox $version from Debian's busybox-static instead of 1.36.1 (Debian bookworm serves no 1.36)" \
  --arg source "docker-library/busybox (stable/glibc layout); Debian busybox-static" \
  '{ref: "docker.io/library/busybox:1.36.1", cmd: ["sh"], env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
    source: $source, note: $note}')"
mv "$out.tmp" "$out"
echo "$out"
