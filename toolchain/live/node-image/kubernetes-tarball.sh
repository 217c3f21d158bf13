#!/usr/bin/env bash
# The Kubernetes server tarball `kind build node-image --type file` reads, in the layout of
# upstream's kubernetes-server-linux-amd64.tar.gz as kind uses it (kind v0.31.0
# pkg/build/nodeimage/internal/kube/builder_tarball.go and bits.go): kubernetes/version and
# kubernetes/server/bin/ with kubeadm, kubelet, kubectl and the four server images' archives.
# Usage: kubernetes-tarball.sh <bin folder> <images folder (images.sh)> <output .tar.gz>
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: kubernetes-tarball.sh <bin folder> <images folder> <output .tar.gz>"
bin=${1:?$usage} images=${2:?$usage} output=${3:?$usage}
kubernetes=$(program_dir "$bin" kubernetes)
stage=$output.stage
rm -rf "$stage" && mkdir -p "$stage/kubernetes/server/bin"
trap 'rm -rf "$stage"' EXIT
kube_version > "$stage/kubernetes/version"
install -m 0755 "$kubernetes/kubeadm" "$kubernetes/kubectl" "$(program_dir "$bin" kubelet)/kubelet" \
  "$stage/kubernetes/server/bin/"
for image in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  cp "$images/kubernetes/$image.tar" "$stage/kubernetes/server/bin/"
done
tar --sort=name --numeric-owner --owner=0 --group=0 --mtime=@0 -C "$stage" -cf - kubernetes \
  | gzip -1 > "$output.tmp"
mv "$output.tmp" "$output"
say "Kubernetes server tarball: $output ($(du -h "$output" | cut -f1))"
echo "$output"
