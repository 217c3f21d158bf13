set -u
PATH="${PATH:-}:@path_extra@"; export PATH
# $0: the node's name; $1: the CA pin of the control plane the leave knows (none without it);
# $2: the digest of its CA as 0.1.0's leave compared it (none without it).
node=$0 want_pin=${1:-none} want_digest=${2:-none}
left() { echo "$1: left as it is"; exit @foreign@; }
@reach_function@
owner=$(head -n 1 @join_marker@ 2>/dev/null || true)
joined_as=$(sed -n 's/^node=//p' @join_marker@ 2>/dev/null || true)
joined_pin=$(sed -n 's/^ca=//p' @join_marker@ 2>/dev/null || true)
have_digest=$(tr -d '\r\n' < @node_ca_cert@ 2>/dev/null | sha256sum | cut -d ' ' -f 1)
# This stack's node of the control plane the leave knows: this stack's marker naming this node
# (or, the stack renamed since, this tenant's with this control plane's pin); a host joined again
# meanwhile under another name (a renamed host, swapped addresses) is that node's now. Without
# such a marker nothing changes, kubelet.conf or not: a host mid-join of another stack, a machine
# repurposed as another installer's node.
mine=""
if [ "$joined_as" = "$node" ]; then
  if [ "$owner" = @marker@ ]; then
    { [ "$want_pin" = none ] || [ "$joined_pin" = "$want_pin" ]; } && mine=1
  elif [ "$want_pin" != none ] && [ "$joined_pin" = "$want_pin" ] && [ "${owner##* tenant=}" = @tenant@ ]; then
    mine=1
  fi
elif [ "$owner" = @legacy_marker@ ] && [ -f @kubelet_config@ ]; then
  { [ "$want_digest" = none ] || [ "$have_digest" = "$want_digest" ]; } && mine=1
fi
[ -n "$mine" ] || left "the host is not this stack's node of the tenant's control plane (${owner:-no marker})"
# Marked, but kubeadm's kubelet credentials are gone: the join's own guards, since whatever set up
# or runs a kubelet here since is not this stack's.
if [ ! -f @kubelet_config@ ]; then
  [ -f @kubelet_node_config@ ] && left "the host has no @kubelet_config@ but a kubelet set up (@kubelet_node_config@)"
  reach 127.0.0.1 @kubelet_port@ && left "the host has no @kubelet_config@ but something listens on the kubelet's port @kubelet_port@"
fi
if command -v kubeadm >/dev/null 2>&1; then
  if ! output=$(kubeadm reset -f 2>&1); then
    printf 'kubeadm reset -f failed: %s\n' "$output"; exit @reset_failed@
  fi
else
  echo "kubeadm is not on the host's PATH: nothing to reset"
fi
rm -f @kindnet_cni_config@ @join_marker@ || exit @reset_failed@
# kubeadm reset stops the kubelet and leaves it enabled: without its config it would restart in a
# loop at every boot. Disabled too, as it was before a join enabled it.
disabled=""
if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled --quiet kubelet 2>/dev/null; then
  systemctl disable kubelet >/dev/null 2>&1 && disabled="; kubelet.service disabled"
fi
echo "host reset (kubeadm reset -f; @kindnet_cni_config_text@ removed$disabled)"
exit @reset@
