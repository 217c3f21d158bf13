#!/usr/bin/env bash
# Kubernetes' images at the version toolchain/live/kubernetes/go.mod builds (v1.35.4, the served
# 1.35 line): kube-apiserver, kube-controller-manager, kube-scheduler and kube-proxy, laid out as
# build/server-image/Dockerfile (the binary at /usr/local/bin/<name>; kube-apiserver's
# build/server-image/kube-apiserver/Dockerfile also gets cap_net_bind_service with setcap), and
# kubectl as build/server-image/kubectl/Dockerfile (/bin/kubectl, ENTRYPOINT ["/bin/kubectl"]).
# Upstream's bases (build/common.sh) are go-runner (distroless static with /go-runner as
# ENTRYPOINT) for the static binaries and distroless-iptables for kube-proxy: the skeleton and
# iptables_tools stand in for them. go-runner (k8s.io/release) is not served, so the server
# images have no /go-runner and their ENTRYPOINT is the binary: every pod that runs them (kubeadm's
# static pods, Kamaji's control planes, the platform's kube-proxy) names its command.
# Usage: kubernetes.sh <bin folder>. The last line printed is the output folder.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: kubernetes.sh <bin folder>}
kubernetes=$(program_dir "$bin" kubernetes)
version=$(kube_version)
DEBIAN_ROOTFS=$(debian_rootfs)
key=$({ cat "$0" "$images_here/lib.sh"; basename "$kubernetes"; basename "$DEBIAN_ROOTFS"; } | key_of)
out=$images_cache/kubernetes-$key
if [ -d "$out" ]; then say "Kubernetes $version images cached ($out)"; echo "$out"; exit 0; fi
rm -rf "$out.tmp" "$out.work" && mkdir -p "$out.tmp" "$out.work"
trap 'rm -rf "$out.work"' EXIT
path_env='{"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}'
source_of() { echo "k8s.io/kubernetes@$version build/server-image/$1, build/common.sh (bases), build/lib/release.sh"; }
no_go_runner="no /go-runner (k8s.io/release is not served): ENTRYPOINT is the binary instead"

for name in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  root=$out.work/$name
  skeleton "$root"
  install -m 0755 "$kubernetes/$name" "$root/usr/local/bin/$name"
  base=go-runner dockerfile=Dockerfile
  case $name in
    kube-apiserver) setcap cap_net_bind_service=+ep "$root/usr/local/bin/$name"
      dockerfile=kube-apiserver/Dockerfile ;;
    kube-proxy) iptables_tools "$root"; base=distroless-iptables ;;
  esac
  image_out "$out.tmp" "$name" "$root" "$(jq -n --arg ref "registry.k8s.io/$name:$version" \
    --arg bin "/usr/local/bin/$name" --argjson env "$path_env" --arg source "$(source_of "$dockerfile")" \
    --arg note "base $base stood in for by Debian bookworm files; $no_go_runner" \
    '{ref: $ref, entrypoint: [$bin], env: $env, source: $source, note: $note}')"
done

root=$out.work/kubectl
skeleton "$root"
install -m 0755 "$kubernetes/kubectl" "$root/usr/bin/kubectl"
image_out "$out.tmp" kubectl "$root" "$(jq -n --arg ref "registry.k8s.io/kubectl:$version" \
  --argjson env "$path_env" --arg source "$(source_of kubectl/Dockerfile)" \
  --arg note "base go-runner stood in for by Debian bookworm files" \
  '{ref: $ref, entrypoint: ["/bin/kubectl"], env: $env, source: $source, note: $note}')"

mv "$out.tmp" "$out"
echo "$out"
