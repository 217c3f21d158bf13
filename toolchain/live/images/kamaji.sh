#!/usr/bin/env bash
# docker.io/clastix/kamaji:26.8.2-edge, the Kamaji controller, built from source into a root
# filesystem (lib.sh's contract), and clastix/kubectl for the kamaji-etcd it installs (below).
# The Go module proxy does not serve Kamaji's edge tags, so its source comes from KAMAJI_SRC: the
# tree of tag 26.8.2-edge (`git archive 26.8.2-edge` of github.com/clastix/kamaji, or a checkout
# of it), checked against that tree's hash below.
# Upstream releases the image with goreleaser's ko pipe (.goreleaser.yaml `kos`, run by
# .github/workflows/release.yml; goreleaser internal/pipe/ko/ko.go): ko builds the root package
# with the `kamaji` build's env (CGO_ENABLED=0), flags (-trimpath) and ldflags (the -X of
# internal.GitCommit/GitTag/GitDirty/BuildTime/GitRepo), on cgr.dev/chainguard/static (its
# default base: user 65532), the binary at /ko-app/kamaji as the entrypoint, PATH extended with
# /ko-app and KO_DATA_PATH=/var/run/ko (ko pkg/build/gobuild.go). The stamped values are the
# tag's: commit, tag, a clean tree, the repository's URL, and as BuildTime the tag commit's time
# (goreleaser stamps the build's clock: not reproducible). GitTag matters: it names the default
# --migrate-image (docker.io/clastix/kamaji:<GitTag>, cmd/manager/cmd.go).
# With it, docker.io/clastix/kubectl:v1.35, the image the kamaji-etcd chart's jobs run (v0.15.0, the
# one Kamaji's Chart.lock pins: charts/kamaji-etcd/templates/etcd_job_preinstall_1.yaml runs
# `/bin/sh -c` with kubectl get/create secret, `&>/dev/null` and echo; etcd_job_preinstall_2.yaml
# `sh -c kubectl rollout status`; etcd_job_postdelete.yaml `kubectl delete secret`; runAsUser and
# runAsGroup 1000). Upstream (github.com/clastix/kubectl Dockerfile at v1.35.1, the newest v1.35.x
# tag, which .github/workflows/docker-ci.yml also pushes as v<major>.<minor>) is alpine:3.21.2 with
# ca-certificates and curl, kubectl downloaded to /usr/local/bin/kubectl, a nonroot user and group
# 1000, USER nonroot and ENTRYPOINT ["kubectl"]. Here: the skeleton with alpine's users, Debian's
# static busybox as /bin/sh and its applets (alpine's /bin/sh is busybox too), and the kubectl
# toolchain/live/build.sh built from Kubernetes v1.35.4, the 1.35 line the module proxy serves.
# Usage: kamaji.sh <bin folder>; the last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: kamaji.sh <bin folder>}
[ -d "$bin" ] || die "$bin is not a folder (toolchain/live/build.sh prints it)"

tag=26.8.2-edge
commit=ddbabd87ed0e8d7c319414383e153c46f21733a9
commit_time=2026-08-03T06:32:56Z # git log -1 --format=%ct 26.8.2-edge, in UTC
tree_key=f802f28e3b5cf912         # source_key of the tag's tree
src=$(source_dir KAMAJI_SRC "github.com/clastix/kamaji $tag")
actual=$(source_key "$src")
[ "$actual" = "$tree_key" ] || die "KAMAJI_SRC=$src is not clastix/kamaji $tag (its files hash to $actual," \
  "the tag's to $tree_key): set it to an export of the tag (git archive $tag)"
DEBIAN_ROOTFS=$(debian_rootfs)
kubernetes=$(program_dir "$bin" kubernetes)
busybox=$(bash "$live_here/scripts/busybox-rootfs.sh" | tail -n 1)

internal=github.com/clastix/kamaji/internal
ldflags="-X $internal.GitCommit=$commit -X $internal.GitTag=$tag -X $internal.GitDirty="
ldflags+=" -X $internal.BuildTime=$commit_time -X $internal.GitRepo=https://github.com/clastix/kamaji"
program=$(go_source_build kamaji "$src" 0 . -trimpath "-ldflags=$ldflags")

key=$({ cat "$0" "$images_here/lib.sh" "$node_here/lib.sh"; basename "$program"; basename "$DEBIAN_ROOTFS"
        basename "$kubernetes"; basename "$busybox"; } | key_of)
out=$images_cache/kamaji-$key
if [ -d "$out" ]; then
  say "kamaji images cached ($out)"
  echo "$out"
  exit 0
fi
work=$out.work
rm -rf "$out.tmp" "$work" && mkdir -p "$out.tmp" "$work"
trap 'rm -rf "$work"' EXIT

d=$work/kamaji
skeleton "$d"
install -D -m 0755 "$program/kamaji" "$d/ko-app/kamaji"
mkdir -p "$d/var/run/ko"
image_out "$out.tmp" kamaji "$d" "$(jq -n --arg tag "$tag" '{
  ref: ("docker.io/clastix/kamaji:" + $tag),
  entrypoint: ["/ko-app/kamaji"],
  user: "65532",
  workdir: "/",
  env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/ko-app",
        SSL_CERT_FILE: "/etc/ssl/certs/ca-certificates.crt", KO_DATA_PATH: "/var/run/ko"},
  source: ("clastix/kamaji .goreleaser.yaml@" + $tag + " (builds.kamaji: cgo off, -trimpath, the ldflags; kos: ko, bare), .github/workflows/release.yml@" + $tag + ", Makefile@" + $tag + " (LD_FLAGS); goreleaser internal/pipe/ko/ko.go (base cgr.dev/chainguard/static: user 65532); ko pkg/build/gobuild.go (entrypoint /ko-app/<name>, /ko-app added to PATH, KO_DATA_PATH /var/run/ko)"),
  note: "Go 1.26 of this machine, not the release runner'\''s; BuildTime is the tag commit'\''s time (upstream: the build'\''s clock), GitRepo https://github.com/clastix/kamaji (goreleaser: the checkout'\''s origin URL); base is lib.sh'\''s skeleton (Debian passwd/group with nonroot 65532, nsswitch.conf, CA bundle, /tmp) instead of chainguard/static: no tzdata (Kamaji loads no time zone), no SBOM"
}')"

d=$work/clastix-kubectl
skeleton "$d"
busybox_tools "$d"
# alpine's root (shell /bin/sh) and nobody, and the Dockerfile's `addgroup -g 1000 -S nonroot &&
# adduser -u 1000 -D -S -G nonroot nonroot` (a system user: no password, /sbin/nologin).
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/:/sbin/nologin' \
  'nonroot:x:1000:1000::/home/nonroot:/sbin/nologin' > "$d/etc/passwd"
printf '%s\n' 'root:x:0:root' 'nobody:x:65534:' 'nonroot:x:1000:' > "$d/etc/group"
chown 1000:1000 "$d/home/nonroot"
mkdir -p "$d/root" && chmod 0700 "$d/root"
install -m 0755 "$kubernetes/kubectl" "$d/usr/local/bin/kubectl"
chroot "$d" /usr/local/bin/kubectl version --client >/dev/null # the Dockerfile's check
image_out "$out.tmp" clastix-kubectl "$d" "$(jq -n '{
  ref: "docker.io/clastix/kubectl:v1.35",
  entrypoint: ["kubectl"],
  user: "nonroot",
  workdir: "/",
  env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
  source: "clastix/kubectl Dockerfile@v1.35.1 (alpine:3.21.2, /usr/local/bin/kubectl, user nonroot 1000:1000, ENTRYPOINT [\"kubectl\"]), .github/workflows/docker-ci.yml@v1.35.1 (tag v<major>.<minor>); clastix/kamaji-etcd charts/kamaji-etcd/templates/etcd_job_*.yaml@v0.15.0 (the commands run)",
  note: "kubectl is Kubernetes v1.35.4 built from source by toolchain/live/build.sh (the 1.35 line the Go module proxy serves), not v1.35.1 from dl.k8s.io; no alpine: Debian bookworm'\''s static busybox gives /bin/sh and the applets (alpine'\''s are busybox too), the CA bundle is Debian'\''s; no curl and no apk (the chart'\''s jobs use neither)"
}')"
rm -rf "$out" && mv "$out.tmp" "$out"
say "kamaji images: $out"
echo "$out"
