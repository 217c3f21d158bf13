#!/usr/bin/env bash
# docker.io/liangjw/kube-webhook-certgen:v1.1.1, the image of HAMi 2.10.0's certgen jobs on
# Kubernetes >= 1.22 (charts/hami values.yaml scheduler.patch.imageNew; templates/scheduler/
# job-patch/job-createSecret.yaml runs `create --cert-name --key-name --host --namespace
# --secret-name`, job-patchWebhook.yaml `patch --webhook-name --namespace --patch-validating=false
# --secret-name`, both as a non-root runAsUser), built from source into a root filesystem (lib.sh's
# contract). liangjw's repository publishes no source: the tag is ingress-nginx's
# kube-webhook-certgen v1.1.1 (registry.k8s.io/ingress-nginx/kube-webhook-certgen:v1.1.1), built
# from kubernetes/ingress-nginx images/kube-webhook-certgen/rootfs as of commit 54523641a
# ("add missing tests and fix regression", 2021-10-12), which d74fa2f53 ("Update
# ingress-nginx/kube-webhook-certgen image to latest v1.1.1") put in the chart with no later change
# to that folder. Its module, github.com/jet/kube-webhook-certgen, is not served by the Go module
# proxy under that source, so it comes from CERTGEN_SRC: that folder's tree (`git archive
# d74fa2f538a00d16db6cc75446748f48155752e4:images/kube-webhook-certgen/rootfs`), checked against
# its hash. As rootfs/Dockerfile builds it: CGO_ENABLED=0 go build (no ldflags: it reports version
# 0.0.1-dev), the binary at /kube-webhook-certgen as the entrypoint on gcr.io/distroless/
# static:nonroot, USER 65532:65532, WORKDIR /.
# Usage: certgen.sh <bin folder>; the last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: certgen.sh <bin folder>}
[ -d "$bin" ] || die "$bin is not a folder (toolchain/live/build.sh prints it)"

commit=d74fa2f538a00d16db6cc75446748f48155752e4
tree_key=33e08bb8d345a214 # source_key of images/kube-webhook-certgen/rootfs at $commit
src=$(source_dir CERTGEN_SRC "kube-webhook-certgen v1.1.1 (kubernetes/ingress-nginx images/kube-webhook-certgen/rootfs)")
actual=$(source_key "$src")
[ "$actual" = "$tree_key" ] || die "CERTGEN_SRC=$src is not kube-webhook-certgen v1.1.1 (its files hash to" \
  "$actual, ingress-nginx $commit images/kube-webhook-certgen/rootfs to $tree_key): set it to an export" \
  "of that folder (git archive $commit:images/kube-webhook-certgen/rootfs)"
DEBIAN_ROOTFS=$(debian_rootfs)

# -a of upstream's command only forces a full rebuild: the same binary.
program=$(go_source_build kube-webhook-certgen "$src" 0 .)

key=$({ cat "$0" "$images_here/lib.sh" "$node_here/lib.sh"; basename "$program"; basename "$DEBIAN_ROOTFS"; } | key_of)
out=$images_cache/certgen-$key
if [ -d "$out" ]; then
  say "kube-webhook-certgen image cached ($out)"
  echo "$out"
  exit 0
fi
work=$out.work
rm -rf "$out.tmp" "$work" && mkdir -p "$out.tmp" "$work"
trap 'rm -rf "$work"' EXIT

d=$work/kube-webhook-certgen
skeleton "$d"
install -m 0755 "$program/kube-webhook-certgen" "$d/kube-webhook-certgen"
image_out "$out.tmp" kube-webhook-certgen "$d" "$(jq -n --arg commit "$commit" '{
  ref: "docker.io/liangjw/kube-webhook-certgen:v1.1.1",
  entrypoint: ["/kube-webhook-certgen"],
  user: "65532:65532",
  workdir: "/",
  env: {PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        SSL_CERT_FILE: "/etc/ssl/certs/ca-certificates.crt"},
  source: ("kubernetes/ingress-nginx images/kube-webhook-certgen/rootfs/Dockerfile@" + $commit + " (go build, base gcr.io/distroless/static:nonroot, USER 65532:65532, WORKDIR /, ENTRYPOINT), images/kube-webhook-certgen/Makefile and cloudbuild.yaml@" + $commit + "; HAMi v2.10.0 charts/hami/templates/scheduler/job-patch/job-createSecret.yaml, job-patchWebhook.yaml (the args run)"),
  note: "liangjw/kube-webhook-certgen has no published source: built from ingress-nginx'\''s kube-webhook-certgen v1.1.1 (the same name and tag; tree of commit 54523641a, unchanged at d74fa2f53 which pinned v1.1.1), taken to be what liangjw mirrors (not checked against its digest: no registry); the create and patch flags HAMi passes exist in it. Go 1.26 of this machine instead of golang:1.16, with the 2021 go.sum unchanged; base is lib.sh'\''s skeleton (Debian passwd/group with nonroot 65532, nsswitch.conf, CA bundle, /tmp) instead of distroless/static: no tzdata"
}')"
rm -rf "$out" && mv "$out.tmp" "$out"
say "kube-webhook-certgen image: $out"
echo "$out"
