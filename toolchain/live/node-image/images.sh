#!/usr/bin/env bash
# The container images the node image carries, as `docker save` archives, made in the engine from
# the root filesystems of image-rootfs.sh (`docker import` with the images' metadata, then `docker
# save`; the imports are removed again): the four Kubernetes server images under the names the
# release tarball gives them (registry.k8s.io/<name>-amd64:<version>, build/lib/release.sh) into
# <output>/kubernetes/, and every image kind's build would pull, under the exact reference it
# asks for, into <output>/offline/<reference with / and : as _>.tar for docker-shim.sh: kubeadm's
# etcd and CoreDNS (`kubeadm config images list`), containerd's sandbox image (kind's
# images/base/files/etc/containerd/config.toml) and kind's kindnetd and local-path images
# (pkg/build/nodeimage/const_cni.go, const_storage.go).
# Usage: images.sh <bin folder> <engine folder> <image rootfs folder> <standin|kindnetd> <output folder>
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: images.sh <bin folder> <engine folder> <image rootfs folder> <standin|kindnetd> <output folder>"
bin=${1:?$usage} engine=${2:?$usage} rootfs=${3:?$usage} cni=${4:?$usage} output=${5:?$usage}
kind=$(module_dir kind sigs.k8s.io/kind)
version=$(kube_version)
kubeadm_images=$("$(program_dir "$bin" kubernetes)/kubeadm" config images list --kubernetes-version "$version")
etcd_ref=$(grep '/etcd:' <<<"$kubeadm_images")
coredns_ref=$(grep '/coredns:' <<<"$kubeadm_images")
pause_ref=$(sed -n 's/^ *sandbox_image = "\(.*\)"/\1/p' "$kind/images/base/files/etc/containerd/config.toml")
kindnetd_ref=$(sed -n 's/^const kindnetdImage = "\(.*\)"/\1/p' "$kind/pkg/build/nodeimage/const_cni.go")
provisioner_ref=$(sed -n 's/^const storageProvisionerImage = "\(.*\)"/\1/p' "$kind/pkg/build/nodeimage/const_storage.go")
helper_ref=$(sed -n 's/^const storageHelperImage = "\(.*\)"/\1/p' "$kind/pkg/build/nodeimage/const_storage.go")
for ref in "$etcd_ref" "$coredns_ref" "$pause_ref" "$kindnetd_ref" "$provisioner_ref" "$helper_ref"; do
  [ -n "$ref" ] || die "an image reference of kind or kubeadm could not be read (kind $(kind_version), $version)"
done

path_env='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
cert_env='ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt'
rm -rf "$output.tmp" && mkdir -p "$output.tmp/kubernetes" "$output.tmp/offline"
# save <rootfs name> <reference> <archive> <docker import --change>...
save() {
  local name=$1 ref=$2 archive=$3 change changes=()
  shift 3
  for change in "$@"; do changes+=(--change "$change"); done
  in_engine "$bin" "$engine" docker import --platform "linux/$arch" "${changes[@]}" "$rootfs/$name.tar" "$ref" >/dev/null
  in_engine "$bin" "$engine" docker save -o "$archive" "$ref"
  in_engine "$bin" "$engine" docker rmi "$ref" >/dev/null
  say "image $ref ($(du -h "$archive" | cut -f1))"
}
offline() { echo "$output.tmp/offline/$(tr '/:' '__' <<<"$1").tar"; }

for b in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
  save "$b" "registry.k8s.io/$b-$arch:$version" "$output.tmp/kubernetes/$b.tar" \
    "$path_env" "$cert_env" "ENTRYPOINT [\"/usr/local/bin/$b\"]"
done
save etcd "$etcd_ref" "$(offline "$etcd_ref")" "$path_env" "$cert_env"
save coredns "$coredns_ref" "$(offline "$coredns_ref")" "$path_env" "$cert_env" \
  'ENTRYPOINT ["/coredns"]' 'EXPOSE 53 53/udp'
save pause "$pause_ref" "$(offline "$pause_ref")" 'ENTRYPOINT ["/pause"]' 'USER 65535:65535'
if [ "$cni" = standin ]; then
  save kindnetd "$kindnetd_ref" "$(offline "$kindnetd_ref")" "$path_env" 'ENTRYPOINT ["/usr/bin/kindnetd"]'
else
  save kindnetd "$kindnetd_ref" "$(offline "$kindnetd_ref")" "$path_env" 'CMD ["/bin/kindnetd"]'
fi
save local-path-provisioner "$provisioner_ref" "$(offline "$provisioner_ref")" "$path_env" "$cert_env" \
  'ENTRYPOINT ["/usr/local/bin/local-path-provisioner"]'
save local-path-helper "$helper_ref" "$(offline "$helper_ref")" "$path_env"
rm -rf "$output" && mv "$output.tmp" "$output"
echo "$output"
