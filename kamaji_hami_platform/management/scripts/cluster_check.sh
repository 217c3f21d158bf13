set -u
@kubeconfig@
if ! out=$(@kubectl@ get --raw /version 2>&1); then
  echo "cannot reach the management cluster with the stack's kubeconfig: $out" >&2
  exit 1
fi
echo "management cluster reached; Kamaji goes to @kamaji_namespace@"
# Everything the cluster lacks is listed at once, each with its fix; what cannot be told from the
# cluster's objects is a warning (a line `warning: ...`, which the component reports).
missing=""
lacks() { missing="$missing
  - $*"; }
warn() { echo "warning: $*"; }
@checks@
if [ -n "$missing" ]; then
  echo "the management cluster lacks what the platform needs (nothing was installed):$missing" >&2
  exit 1
fi
echo "the management cluster has what the platform needs"
