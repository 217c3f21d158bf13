set -u
PATH="${PATH:-}:@path_extra@"; export PATH
want=${1:-none}
if [ -f @kubelet_config@ ] && [ "$want" != none ]; then
  have=$(tr -d '\r\n' < @node_ca_cert@ 2>/dev/null | sha256sum | cut -d ' ' -f 1)
  if [ "$have" != "$want" ]; then
    echo "the host is joined to another control plane: left as it is"; exit @foreign@
  fi
fi
if command -v kubeadm >/dev/null 2>&1; then
  if ! output=$(kubeadm reset -f 2>&1); then
    printf 'kubeadm reset -f failed: %s\n' "$output"; exit @reset_failed@
  fi
else
  echo "kubeadm is not on the host's PATH: nothing to reset"
fi
rm -f @kindnet_cni_config@ @join_marker@ || exit @reset_failed@
echo "host reset (kubeadm reset -f; @kindnet_cni_config_text@ removed)"
exit @reset@
