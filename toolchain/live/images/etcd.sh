#!/usr/bin/env bash
# etcd's release images of the versions kamaji-etcd's chart runs: quay.io/coreos/etcd:v3.5.17 (the
# datastore) and v3.5.6 (its setup jobs, which run shell scripts in it), each built from the served
# modules go.etcd.io/etcd/{server,etcdctl,etcdutl}/v3 at that tag (images/etcd-<version>/go.mod),
# static as etcd's scripts/build_lib.sh builds them (CGO_ENABLED=0; its only -X, the git SHA, has
# no value in a module zip), and laid out as each tag's Dockerfile-release.amd64: etcd, etcdctl
# and etcdutl in /usr/local/bin, /var/etcd and /var/lib/etcd, EXPOSE 2379 2380,
# CMD ["/usr/local/bin/etcd"]. v3.5.17's base is distroless static (the skeleton); v3.5.6's is
# debian:bullseye, with a shell: busybox's applets stand in for its userland, and bookworm's bash
# for its bash.
# Usage: etcd.sh <bin folder>. The last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
: "${1:?usage: etcd.sh <bin folder>}"
versions=(v3.5.17 v3.5.6)
DEBIAN_ROOTFS=$(debian_rootfs)
built=()
for version in "${versions[@]}"; do
  built+=("$(go_module_build "$images_here/etcd-$version" 0 -trimpath | tail -n 1)")
done
key=$({ cat "$0" "$images_here/lib.sh"; printf '%s\n' "${built[@]}"; basename "$DEBIAN_ROOTFS"
  bash "$live_here/scripts/busybox-rootfs.sh" 2>/dev/null | tail -n 1; } | key_of)
out=$images_cache/etcd-$key
if [ -d "$out" ]; then say "etcd images cached ($out)"; echo "$out"; exit 0; fi
rm -rf "$out.tmp" "$out.work" && mkdir -p "$out.tmp" "$out.work"
trap 'rm -rf "$out.work"' EXIT

for i in "${!versions[@]}"; do
  version=${versions[$i]} programs=${built[$i]} root=$out.work/${versions[$i]}
  skeleton "$root"
  install -m 0755 "$programs/server" "$root/usr/local/bin/etcd"
  install -m 0755 "$programs/etcdctl" "$programs/etcdutl" "$root/usr/local/bin/"
  mkdir -p "$root/var/etcd" "$root/var/lib/etcd"
  note="" workdir=/var/lib/etcd/
  if [ "$version" = v3.5.6 ]; then
    busybox_tools "$root"
    # bullseye's bash too: kamaji-etcd v0.15.0's setup job runs `bash -c` in this image (charts/kamaji-etcd/
    # templates/etcd_job_preinstall_2.yaml), and busybox has no bash applet. Bookworm's, with its
    # libraries: bullseye's is not in the Debian rootfs.
    stage "$root" /usr/bin/bash
    echo 'hosts: files mdns4_minimal [NOTFOUND=return] dns mdns4' >> "$root/etc/nsswitch.conf"
    banner=$("$root/usr/bin/busybox" --help 2>&1 || true)  # whole: no pipe to close early
    note="base debian:bullseye-20220328 stood in for by busybox $(awk 'NR == 1 {print $2}' <<<"$banner") (Debian's busybox-static), Debian bookworm's bash and CA bundle"
    workdir=/
  fi
  grep -q "etcd Version: ${version#v}" <<<"$("$root/usr/local/bin/etcd" --version)" || die "etcd $version: wrong version"
  image_out "$out.tmp" "etcd-$version" "$root" "$(jq -n --arg ref "quay.io/coreos/etcd:$version" \
    --arg workdir "$workdir" --arg note "$note" \
    --arg source "go.etcd.io/etcd/v3@$version Dockerfile-release.amd64, scripts/build_lib.sh" \
    '{ref: $ref, cmd: ["/usr/local/bin/etcd"], workdir: $workdir, ports: ["2379/tcp", "2380/tcp"],
      env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      source: $source} + (if $note == "" then {} else {note: $note} end)')"
done
mv "$out.tmp" "$out"
echo "$out"
