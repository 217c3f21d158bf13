set -u
@kubeconfig@
if ! out=$(@kubectl@ get --raw /version 2>&1); then
  echo "cannot reach the management cluster with the stack's kubeconfig: $out" >&2
  exit 1
fi
echo "management cluster reached; Kamaji goes to @kamaji_namespace@"
@cert_manager_check@
