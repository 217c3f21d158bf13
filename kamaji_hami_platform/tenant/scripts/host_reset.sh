set -u
PATH="${PATH:-}:@path_extra@"; export PATH
# $1: the CA pin of the control plane the leave knows (none without it); $2: the digest of its CA
# as 0.1.0's leave compared it (none without it).
want_pin=${1:-none} want_digest=${2:-none}
if [ -f @kubelet_config@ ]; then
  owner=$(head -n 1 @join_marker@ 2>/dev/null || true)
  joined_pin=$(sed -n 's/^ca=//p' @join_marker@ 2>/dev/null || true)
  have_digest=$(tr -d '\r\n' < @node_ca_cert@ 2>/dev/null | sha256sum | cut -d ' ' -f 1)
  if [ "$owner" = @marker@ ] && { [ "$want_pin" = none ] || [ "$joined_pin" = "$want_pin" ]; }; then
    :
  elif [ "$owner" = @legacy_marker@ ] && { [ "$want_digest" = none ] || [ "$have_digest" = "$want_digest" ]; }; then
    :
  else
    echo "the host is not this stack's node of the tenant's control plane (${owner:-no marker}): left as it is"
    exit @foreign@
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
