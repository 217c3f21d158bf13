#!/usr/bin/env bash
# cert-manager v1.21.2's images the chart runs: quay.io/jetstack/cert-manager-{controller,cainjector,
# webhook,startupapicheck}:v1.21.2, built from source into root filesystems (lib.sh's contract).
# The programs are cert-manager's nested modules cmd/<name> (module paths
# github.com/cert-manager/cert-manager/<name>-binary, each with `replace
# github.com/cert-manager/cert-manager => ../../`): their paths name no folder of the repository, so
# the Go module proxy has no version of them (tag or pseudo-version), and the served
# github.com/cert-manager/cert-manager@v1.21.2 zip leaves cmd/ out (a nested module's folder); their
# main packages import the main module's internal/ packages, so no wrapper module can build them.
# Their source comes from CERT_MANAGER_SRC: the tree of tag v1.21.2 (`git archive v1.21.2` of
# github.com/cert-manager/cert-manager, or a checkout of it). Everything of it but cmd/ (and test/)
# is checked against the served, checksum-database-verified v1.21.2 module zip; cmd/ has no
# published hash to check.
# One dependency of the controller, github.com/Venafi/vcert/v5 v5.13.7, is refused by the module
# proxy here (403 "This module version is not available"): when `go mod download` cannot get it,
# its source comes from VCERT_SRC (`git archive v5.13.7` of github.com/Venafi/vcert), checked
# against the h1: hash cert-manager's go.sum pins and served to the build from a file proxy, so
# the go command verifies it again as the proxy's own zip.
# Built as make/server.mk and make/00_mod.mk build them: `cd cmd/<name> && CGO_ENABLED=0 go build
# -trimpath -ldflags '-w -s -X pkg/util.AppVersion=v1.21.2 -X pkg/util.AppGitCommit=<commit>'`
# (the commit: `git rev-parse HEAD` of a checkout; empty for an export). Laid out as
# hack/containers/Containerfile.<name>: /app/cmd/<name>/<name> (/startupapicheck), ENTRYPOINT that,
# on gcr.io/distroless/static-debian13:nonroot (make/base_images.mk, hack/latest-base-images.sh):
# user 65532, workdir /home/nonroot, PATH and SSL_CERT_FILE (distroless static/static.bzl).
# Usage: cert-manager.sh <bin folder>. The last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: cert-manager.sh <bin folder>}
[ -d "$bin" ] || die "$bin is not a folder (toolchain/live/build.sh prints it)"

version=v1.21.2
module=github.com/cert-manager/cert-manager
programs=(controller cainjector webhook startupapicheck)
vcert=github.com/Venafi/vcert/v5
vcert_version=v5.13.7
vcert_time=2026-06-17T11:42:35Z # the proxy's .info of it (the tag's commit time)
src=$(source_dir CERT_MANAGER_SRC "cert-manager $version's cmd/ modules ($module/<name>-binary)")
for p in "${programs[@]}"; do
  [ -f "$src/cmd/$p/go.mod" ] || die "CERT_MANAGER_SRC=$src has no cmd/$p/go.mod: set it to the tree of $module $version"
done

# The served main module, byte for byte: every file of its zip is in the source folder, unchanged.
served=$(cd / && go mod download -json "$module@$version" | jq -r .Dir)
[ -d "$served" ] || die "no source folder for $module@$version in Go's module cache"
mismatch=$(diff -rq "$served" "$src" | awk -v ok="Only in $src" 'index($0, ok) != 1' || true)
[ -z "$mismatch" ] || die "CERT_MANAGER_SRC=$src is not $module $version (against the served module):" \
  "$(head -n 5 <<<"$mismatch")"

# h1: of a module's files (golang.org/x/mod/sumdb/dirhash Hash1): the sha256 of its sorted
# "<sha256>  <module>@<version>/<file>" lines, base64; .git left out.
module_h1() {
  local dir=$1 prefix=$2 f
  (cd "$dir" && find . -path ./.git -prune -o -type f -print | sed 's#^\./##' | LC_ALL=C sort |
    while IFS= read -r f; do printf '%s  %s\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$prefix/$f"; done) |
    sha256sum | cut -d' ' -f1 | sed 's/../\\x&/g' | { read -r hex; printf '%b' "$hex"; } | base64
}
if ! (cd / && go mod download "$vcert@$vcert_version") >/dev/null 2>&1; then
  vsrc=$(source_dir VCERT_SRC "$vcert@$vcert_version (the proxy here refuses it)")
  want=$(awk -v m="$vcert" -v v="$vcert_version" '$1 == m && $2 == v {print $3}' "$served/go.sum")
  got=h1:$(module_h1 "$vsrc" "$vcert@$vcert_version")
  [ "$got" = "$want" ] || die "VCERT_SRC=$vsrc is not $vcert $vcert_version (its files hash to $got," \
    "cert-manager's go.sum to $want): set it to an export of the tag (git archive $vcert_version)"
  proxy=$toolchain_cache/live-goproxy-vcert-$(key_of <<<"$want")
  at=$proxy/github.com/!venafi/vcert/v5/@v
  if [ ! -f "$at/$vcert_version.zip" ]; then
    rm -rf "$proxy.tmp" && mkdir -p "$proxy.tmp/github.com/!venafi/vcert/v5/@v"
    tmp_at=$proxy.tmp/github.com/!venafi/vcert/v5/@v
    echo "$vcert_version" > "$tmp_at/list"
    jq -cn --arg v "$vcert_version" --arg t "$vcert_time" '{Version: $v, Time: $t}' > "$tmp_at/$vcert_version.info"
    cp "$vsrc/go.mod" "$tmp_at/$vcert_version.mod"
    python3 - "$vsrc" "$vcert@$vcert_version" "$tmp_at/$vcert_version.zip" <<'EOF'
import os, sys, zipfile
src, prefix, out = sys.argv[1:]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for root, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if not (root == src and d == ".git"))
        for f in sorted(files):
            path = os.path.join(root, f)
            z.write(path, prefix + "/" + os.path.relpath(path, src))
EOF
    rm -rf "$proxy" && mv "$proxy.tmp" "$proxy"
  fi
  GOPROXY="file://$proxy,$(go env GOPROXY)"
  export GOPROXY
fi

commit=""
[ ! -e "$src/.git" ] || commit=$(git -C "$src" rev-parse HEAD)
util=$module/pkg/util
ldflags="-w -s -X $util.AppVersion=$version -X $util.AppGitCommit=$commit"
built=()
for p in "${programs[@]}"; do
  built+=("$(go_source_build "cert-manager-$p" "$src/cmd/$p" 0 . -trimpath "-ldflags=$ldflags" | tail -n 1)")
done
DEBIAN_ROOTFS=$(debian_rootfs)

key=$({ cat "$0" "$images_here/lib.sh" "$node_here/lib.sh"; printf '%s\n' "${built[@]}"; basename "$DEBIAN_ROOTFS"; } | key_of)
out=$images_cache/cert-manager-$key
if [ -d "$out" ]; then say "cert-manager images cached ($out)"; echo "$out"; exit 0; fi
work=$out.work
rm -rf "$out.tmp" "$work" && mkdir -p "$out.tmp" "$work"
trap 'rm -rf "$work"' EXIT

note="base is lib.sh's skeleton (Debian bookworm's passwd/group with nonroot 65532, nsswitch.conf, CA bundle, /tmp) with bookworm's tzdata (/usr/share/zoneinfo: renewal windows and cron specs load time zones) and netbase's /etc/services and /etc/protocols, instead of distroless static-debian13 (trixie's); no /licenses, no os-release; Go 1.26 of this machine"
[ -n "$commit" ] || note+="; AppGitCommit empty (CERT_MANAGER_SRC is not a git checkout; upstream: the tag's commit), which only shows in the start-up log line"
note+="; cmd/ is CERT_MANAGER_SRC's, unverifiable against a published hash; $vcert $vcert_version, which the module proxy here refuses, comes from VCERT_SRC when it is not in Go's module cache, verified against cert-manager's go.sum (the same module)"
for i in "${!programs[@]}"; do
  p=${programs[$i]} root=$work/${programs[$i]}
  skeleton "$root"
  stage "$root" /etc/services
  stage "$root" /etc/protocols
  (cd "$DEBIAN_ROOTFS" && cp -a --parents ./usr/share/zoneinfo "$root/")
  path=/app/cmd/$p/$p
  [ "$p" != startupapicheck ] || path=/startupapicheck
  install -D -m 0755 "${built[$i]}/$p-binary" "$root$path"
  image_out "$out.tmp" "cert-manager-$p" "$root" "$(jq -n --arg ref "quay.io/jetstack/cert-manager-$p:$version" \
    --arg path "$path" --arg note "$note" --arg source "$module@$version hack/containers/Containerfile.$p, make/containers.mk, make/base_images.mk, hack/latest-base-images.sh (gcr.io/distroless/static-debian13, nonroot), make/server.mk, make/00_mod.mk (CGO_ENABLED=0, -trimpath, GOLDFLAGS), make/02_mod.mk; GoogleContainerTools/distroless static/static.bzl (nonroot: user 65532, workdir /home/nonroot, PATH, SSL_CERT_FILE)" \
    '{ref: $ref, entrypoint: [$path], user: "65532", workdir: "/home/nonroot",
      env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            SSL_CERT_FILE: "/etc/ssl/certs/ca-certificates.crt"},
      source: $source, note: $note}')"
done
rm -rf "$out" && mv "$out.tmp" "$out"
say "cert-manager images: $out"
echo "$out"
