#!/usr/bin/env bash
# MetalLB v0.15.3's images the chart runs (charts/metallb/values.yaml, speaker.frr.enabled true):
# quay.io/metallb/controller:v0.15.3, quay.io/metallb/speaker:v0.15.3 and quay.io/frrouting/frr:10.4.1,
# built into root filesystems (lib.sh's contract).
# controller and speaker: the served module go.universe.tf/metallb@v0.15.3 (images/metallb-v0.15.3/
# go.mod: controller, speaker, frr-tools/metrics, frr-tools/cp-tool), built as controller/Dockerfile
# and speaker/Dockerfile build them: CGO_ENABLED=0, -ldflags "-X internal/version.gitCommit=$GIT_COMMIT
# -X internal/version.gitBranch=$GIT_BRANCH". The release workflow (.github/workflows/publish.yaml)
# passes its build-args as "GIT_BRANCH: ..." lines, which are no KEY=VALUE: the released images keep
# the Dockerfiles' defaults, dev and dev, and so do these. Laid out as the Dockerfiles: /controller;
# /speaker, /cp-tool, /frr-metrics and /frr-reloader.sh (the chart's cp-reloader and cp-metrics init
# containers copy the last two into volumes the FRR containers run them from); ENTRYPOINT the
# program, on gcr.io/distroless/static:latest (user 0, workdir /, PATH and SSL_CERT_FILE).
# frr: FRR is C and no Go module; FRR's release image is docker/alpine/Dockerfile of its tag
# (doc/developer/frr-release-procedure.rst): Alpine with FRR's apk (alpine/APKBUILD.in: depends
# json-c c-ares iproute2 python3 bash; daemons in /usr/lib/frr; user frr 100, group frr 101, as the
# chart's cp-frr-files runs), tini, /usr/lib/frr/docker-start, ENTRYPOINT ["/sbin/tini", "--"],
# CMD ["/usr/lib/frr/docker-start"]. Stood in for by Debian's nearest FRR: trixie's frr and
# frr-pythontools (10.3; bookworm has 8.4), with the closure of their Depends from trixie (not the
# bookworm rootfs: they need trixie's libc), less packages of a booted system (skipped below),
# unpacked (dpkg-deb, no maintainer scripts) beside Debian bookworm's static busybox as /bin/sh and
# the other tools (busybox ash, as Alpine's /bin/sh: the chart's frr command uses [[ ]]); Debian's
# busybox lacks flock (frr-reloader.sh) and install (frrcommon.sh), which util-linux and coreutils
# of trixie bring, as Alpine's busybox does. Trixie's package lists live in an apt folder of their
# own (apt.sh; this machine's sources are left alone), refreshed when they are missing or a pinned
# version has gone.
# Usage: metallb.sh <bin folder>. The last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: metallb.sh <bin folder>}
[ -d "$bin" ] || die "$bin is not a folder (toolchain/live/build.sh prints it)"

version=v0.15.3
frr_tag=10.4.1
v=go.universe.tf/metallb/internal/version
built=$(go_module_build "$images_here/metallb-$version" 0 "-ldflags=-X $v.gitCommit=dev -X $v.gitBranch=dev" | tail -n 1)
source_tree=$(module_dir "images/metallb-$version" go.universe.tf/metallb)
DEBIAN_ROOTFS=$(debian_rootfs)
busybox=$(bash "$live_here/scripts/busybox-rootfs.sh" | tail -n 1)

# Trixie's FRR: the Depends closure (first alternatives) of these packages, less the skipped ones
# (logrotate and lsof: a booted system's; debconf, dpkg, base-files, debianutils, adduser and
# libcap2-bin: install-time helpers of bash, python3-minimal, iproute2, frr and tzdata), by apt.sh.
# shellcheck source=apt.sh source-path=SCRIPTDIR
. "$images_here/apt.sh"
apt_suite=trixie
apt_roots=(frr frr-pythontools tini bash python3 coreutils util-linux)
apt_skip=" debconf debconf-2.0 dpkg logrotate lsof base-files debianutils adduser libcap2-bin "
apt_dir=$toolchain_cache/live-frr-apt-$apt_suite
apt_pin

family_key() {
  { cat "$0" "$images_here/lib.sh" "$node_here/lib.sh" "$images_here/apt.sh"; basename "$built"
    basename "$DEBIAN_ROOTFS"; basename "$busybox"; echo "$apt_pinned"; } | key_of
}
out=$images_cache/metallb-$(family_key)
if [ -d "$out" ]; then say "MetalLB images cached ($out)"; echo "$out"; exit 0; fi
work=$out.work
rm -rf "$work" && mkdir -p "$work/debs"
trap 'rm -rf "$work"' EXIT
apt_download "$work/debs"
# A refresh may have moved the pins: their folder may be there already.
out=$images_cache/metallb-$(family_key)
if [ -d "$out" ]; then say "MetalLB images cached ($out)"; echo "$out"; exit 0; fi
rm -rf "$out.tmp" && mkdir -p "$out.tmp"

go_env='{PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", SSL_CERT_FILE: "/etc/ssl/certs/ca-certificates.crt"}'
go_note="base is lib.sh's skeleton (Debian bookworm's passwd/group, nsswitch.conf, CA bundle, /tmp) instead of distroless static (no tzdata, netbase, os-release: MetalLB loads none); no /LICENSE; Go 1.26 of this machine instead of golang:1.25.3"

d=$work/controller
skeleton "$d"
install -m 0755 "$built/controller" "$d/controller"
image_out "$out.tmp" metallb-controller "$d" "$(jq -n --arg ref "quay.io/metallb/controller:$version" \
  --arg note "$go_note" --arg source "go.universe.tf/metallb@$version controller/Dockerfile, .github/workflows/publish.yaml, tasks.py; GoogleContainerTools/distroless static/static.bzl (root: user 0, workdir /, PATH, SSL_CERT_FILE)" \
  "{ref: \$ref, entrypoint: [\"/controller\"], user: \"0\", workdir: \"/\", env: $go_env, source: \$source, note: \$note}")"

d=$work/speaker
skeleton "$d"
install -m 0755 "$built/speaker" "$d/speaker"
install -m 0755 "$built/cp-tool" "$d/cp-tool"
install -m 0755 "$built/metrics" "$d/frr-metrics"
install -m 0755 "$source_tree/frr-tools/reloader/frr-reloader.sh" "$d/frr-reloader.sh"
image_out "$out.tmp" metallb-speaker "$d" "$(jq -n --arg ref "quay.io/metallb/speaker:$version" \
  --arg note "$go_note" --arg source "go.universe.tf/metallb@$version speaker/Dockerfile, frr-tools/, charts/metallb/templates/speaker.yaml, .github/workflows/publish.yaml; GoogleContainerTools/distroless static/static.bzl (root: user 0, workdir /, PATH, SSL_CERT_FILE)" \
  "{ref: \$ref, entrypoint: [\"/speaker\"], user: \"0\", workdir: \"/\", env: $go_env, source: \$source, note: \$note}")"

d=$work/frr
skeleton "$d"
for deb in "$work/debs/"*.deb; do
  dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$d"
done
rm -rf "$d"/usr/share/{doc,man,info,lintian,bug} "$d"/etc/{logrotate.d,rsyslog.d}
busybox_tools "$d"
# Alpine's layout: /var/run is /run; tini at /sbin/tini; FRR's user and groups as its apk's
# pre-install makes them on Alpine (frr 100, frr 101, frrvty 102), owning its folders.
rmdir "$d/var/run" && ln -s ../run "$d/var/run"
ln -s ../bin/tini "$d/usr/sbin/tini"
echo 'frr:x:100:101:frr:/var/run/frr:/sbin/nologin' >> "$d/etc/passwd"
printf '%s\n' 'frr:x:101:frr' 'frrvty:x:102:frr' >> "$d/etc/group"
# /etc/shadow as Alpine's (PAM's pam_unix account check of vtysh reads it): no passwords.
awk -F: '{print $1 ":" ($1 == "root" ? "*" : "!") "::0:::::"}' "$d/etc/passwd" > "$d/etc/shadow"
chmod 0640 "$d/etc/shadow"
mkdir -p "$d/run/frr" "$d/var/lib/frr" "$d/var/log/frr" "$d/var/tmp/frr"
chown -R 100:101 "$d/etc/frr" "$d/run/frr" "$d/var/lib/frr" "$d/var/log/frr" "$d/var/tmp/frr"
# Debian's vtysh authenticates through PAM (/etc/pam.d/frr; Linux-PAM reads /etc/pam.d/other too,
# which includes common-*): libpam-runtime's postinst (pam-auth-update, not run here) writes
# /etc/pam.d/common-* from /usr/share/pam/common-* with the profiles of /usr/share/pam-configs on
# by default (unix alone). pam_common renders them so; it is checked against what pam-auth-update
# wrote in the bookworm rootfs, whose unix profile is trixie's.
pam_common() {
  local from=$1 to=$2 t
  for t in "$from"/usr/share/pam/common-*; do
    case $t in *.md5sums) continue ;; esac
    awk '$0 == "$auth_primary" {print "auth\t[success=1 default=ignore]\tpam_unix.so nullok"; next}
      $0 == "$account_primary" {print "account\t[success=1 new_authtok_reqd=done default=ignore]\tpam_unix.so "; next}
      $0 == "$password_primary" {print "password\t[success=1 default=ignore]\tpam_unix.so obscure yescrypt"; next}
      $0 ~ /^\$session(_nonint)?_primary$/ {print "session\t[default=1]\t\t\tpam_permit.so"; next}
      $0 ~ /^\$session(_nonint)?_additional$/ {print "session\trequired\tpam_unix.so "; next}
      /^\$[a-z_]+_additional$/ {next}
      {print}' "$t" > "$to/$(basename "$t")"
  done
}
mkdir -p "$work/pam"
pam_common "$DEBIAN_ROOTFS" "$work/pam"
for t in "$work/pam/"*; do
  cmp -s "$t" "$DEBIAN_ROOTFS/etc/pam.d/$(basename "$t")" || die "pam: $(basename "$t") is not what pam-auth-update writes"
done
cmp -s "$d/usr/share/pam-configs/unix" "$DEBIAN_ROOTFS/usr/share/pam-configs/unix" || die "pam: $apt_suite's unix profile changed"
pam_common "$d" "$d/etc/pam.d"
# FRR's docker/alpine/docker-start of the tag: LSB log functions when /lib/lsb/init-functions is
# missing, FRR's frrcommon.sh, then watchfrr with the daemons /etc/frr/daemons enables.
cat > "$d/usr/lib/frr/docker-start" <<'EOF'
#!/bin/bash

if [ -r "/lib/lsb/init-functions" ]; then
        . /lib/lsb/init-functions
else
        log_success_msg() {
                echo "$@"
        }
        log_warning_msg() {
                echo "$@" >&2
        }
        log_failure_msg() {
                echo "$@" >&2
        }
fi

source /usr/lib/frr/frrcommon.sh
/usr/lib/frr/watchfrr $(daemon_list)
EOF
chmod 0755 "$d/usr/lib/frr/docker-start"
frr_version=$(awk -F= '$1 == "frr" {print $2}' <<<"$apt_pinned")
grep -q "zebra version ${frr_version%%-*}" <<<"$(chroot "$d" /usr/lib/frr/zebra --version)" || die "frr: zebra does not run"
chroot "$d" /usr/bin/python3 -c 'import argparse, logging, re, subprocess' || die "frr: python3 does not run"
chroot "$d" /usr/bin/vtysh --help >/dev/null || die "frr: vtysh does not run"
image_out "$out.tmp" frr "$d" "$(jq -n --arg ref "quay.io/frrouting/frr:$frr_tag" --arg frr "$frr_version" \
  --arg source "FRRouting/frr@frr-$frr_tag docker/alpine/Dockerfile, docker/alpine/docker-start, alpine/APKBUILD.in, alpine/frr.pre-install, doc/developer/frr-release-procedure.rst; go.universe.tf/metallb@$version charts/metallb/templates/speaker.yaml" \
  --arg note "FRR $frr_tag stood in for by Debian $apt_suite's frr and frr-pythontools $frr_version (the nearest FRR Debian serves; bookworm has 8.4) with their $apt_suite libraries, python3, bash, iproute2, tini, coreutils and util-linux (flock, install: Debian's busybox lacks them), on Debian bookworm's static busybox instead of Alpine 3.20 and FRR's own apk: Debian's build puts FRR's sockets in /run/frr (/var/run is a link to it, as on Alpine), and uses the same /usr/lib/frr, /etc/frr, /usr/bin/vtysh and users; docker-start written out as FRR's; no maintainer scripts run (/etc/pam.d/common-* rendered as libpam-runtime's pam-auth-update writes them: Debian's vtysh uses PAM, Alpine's does not); packages left out of the closure: $(xargs <<<"$apt_skip")" \
  '{ref: $ref, entrypoint: ["/sbin/tini", "--"], cmd: ["/usr/lib/frr/docker-start"], workdir: "/",
    env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
    source: $source, note: $note}')"
rm -rf "$out" && mv "$out.tmp" "$out"
say "MetalLB images: $out"
echo "$out"
