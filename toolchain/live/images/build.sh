#!/usr/bin/env bash
# Build every platform image from source and fill the live tier's mirror with them: the mirror
# (registry.sh), then each family's root filesystems (<family>.sh, cached by what made them), then
# push.sh into the mirror under the platform's mirror rule. Families, in the order they run:
#   kubernetes  kube-apiserver, -controller-manager, -scheduler, kube-proxy, kubectl (v1.35.4)
#   etcd        quay.io/coreos/etcd v3.5.17 and v3.5.6 (kamaji-etcd)
#   coredns     CoreDNS v1.14.2 (the tenants' addon)
#   busybox     the live suite's probes
#   cert-manager  CERT_MANAGER_SRC (its cmd/ modules are not served; VCERT_SRC for a dependency)
#   metallb     from served Go modules, FRR from Debian's package
#   haproxy     docker.io/library/haproxy:3.0.11 from Debian trixie's package (the tenants' door)
#   hami        HAMI_SRC (HAMi v2.10.0 source; ../shared/upstream/src has its archive)
#   kamaji, konnectivity, certgen, kindnetd   KAMAJI_SRC, APISERVER_NETWORK_PROXY_SRC, CERTGEN_SRC,
#               KINDNET_SRC: sources the module proxy does not serve
# then the charts (charts.sh: cert-manager, MetalLB, HAMi with HAMI_SRC) into oci://<mirror>/charts,
# and the kind node image (node-image/build.sh), as kindest/node:<version> and its build tag.
# A family that needs a variable that is not set is not built: it is named with the variable, and
# its images already in the mirror (pushed by an earlier build with the source) are kept. The run
# fails at the end if a family failed; tools/mirror_check.py then names any image still missing.
# Usage: build.sh <bin folder> <engine folder (running)>. The last line printed is the mirror.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: build.sh <bin folder> <engine folder>"
bin=${1:?$usage} engine=${2:?$usage}
[ "$(id -u)" = 0 ] || die "the images build needs root (chroot into the Debian rootfs, the engine)"
families=(kubernetes etcd coredns busybox cert-manager metallb haproxy hami kamaji konnectivity certgen kindnetd)
# KHP_IMAGE_FAMILIES="etcd coredns" builds only those (a developer's shortcut; the default is all).
# shellcheck disable=SC2206 # a list of words
[ -z "${KHP_IMAGE_FAMILIES:-}" ] || families=($KHP_IMAGE_FAMILIES)
# The variable a family's source comes from (none: served modules and Debian packages).
source_variable() {
  case $1 in
    cert-manager) echo CERT_MANAGER_SRC ;; hami) echo HAMI_SRC ;; kamaji) echo KAMAJI_SRC ;; konnectivity) echo APISERVER_NETWORK_PROXY_SRC ;;
    certgen) echo CERTGEN_SRC ;; kindnetd) echo KINDNET_SRC ;;
  esac
}
start=$(date +%s)
mirror=$(bash "$images_here/registry.sh" "$bin" "$engine" | tail -n 1)
failed=() left_out=()
for family in "${families[@]}"; do
  variable=$(source_variable "$family")
  if [ -n "$variable" ] && [ -z "${!variable:-}" ]; then
    say "NOT BUILT: $family needs its source: set $variable (docs/development/live-images.md)"
    left_out+=("$family ($variable)")
    continue
  fi
  say "[$family] building..."
  family_start=$(date +%s)
  if ! folder=$(bash "$images_here/$family.sh" "$bin" | tail -n 1) || [ ! -d "$folder" ]; then
    say "[$family] FAILED"; failed+=("$family"); continue
  fi
  bash "$images_here/push.sh" "$bin" "$engine" "$mirror" "$folder"
  say "[$family] done in $(( $(date +%s) - family_start ))s"
done
# The charts (charts.sh) under the mirror's charts/ path, as the platform pulls them with a mirror.
charts=$(bash "$images_here/charts.sh" "$bin" | tail -n 1)
for chart in "$charts"/*.tgz; do
  in_engine "$bin" "$engine" helm push --ca-file "$(mirror_tls)/ca.crt" "$chart" "oci://$mirror/charts" >/dev/null 2>&1 \
    || die "could not push $(basename "$chart") to oci://$mirror/charts"
  say "pushed oci://$mirror/charts/$(basename "$chart" .tgz)"
done
# The kind node image (node-image/build.sh, cached) under its build tag, and under kind's name for
# its version (it is kind's `build node-image` of that Kubernetes release), with the stand-in CNI
# (KINDNET_SRC is for the tenants' kindnetd image only): the live stack's kind node must enforce
# NetworkPolicies (up reads that back: management/policy_engine.py), and kindnetd cannot on a
# kernel without nftables' queue, where the stand-in feeds the same policy controller through
# iptables. Workers use the image too, but never its CNI: theirs is the tenant's kindnet DaemonSet.
node_image=$(env -u KINDNET_SRC bash "$live_here/node-image/build.sh" "$bin" "$engine" | tail -n 1)
node_tags=("$node_image" "${node_image%%-khp-*}")
for tag in "${node_tags[@]}"; do
  target=$(mirrored_ref "$tag" "$mirror")
  in_engine "$bin" "$engine" docker tag "$node_image" "$target"
  in_engine "$bin" "$engine" docker push -q "$target" >/dev/null
  in_engine "$bin" "$engine" docker rmi "$target" >/dev/null
  say "pushed $target"
done
say "mirror $mirror: $(in_engine "$bin" "$engine" env SSL_CERT_FILE="$(mirror_tls)/ca.crt" crane catalog "$mirror" | wc -l) repositories," \
  "$(du -sh "$toolchain_cache/live-mirror" | cut -f1) on disk; images built in $(( $(date +%s) - start ))s"
[ ${#left_out[@]} -eq 0 ] || say "left out (their images stay as an earlier build pushed them, if it did): ${left_out[*]}"
[ ${#failed[@]} -eq 0 ] || die "failed: ${failed[*]}"
echo "$mirror"
