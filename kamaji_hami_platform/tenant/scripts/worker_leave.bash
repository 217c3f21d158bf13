set -u
trap 'rm -f @kubeconfig@' EXIT
if ! found=$(@bounded_kubectl@ get node @node@ -o name 2>&1); then
  case "$found" in
    *"(NotFound)"*) echo "node @node@ is not in the tenant"; exit @removed@ ;;
  esac
  echo "$found"; exit @api_unreachable@
fi
if [ "$1" != no-drain ]; then
  if ! out=$(kubectl --kubeconfig @kubeconfig@ drain @node@ --ignore-daemonsets --delete-emptydir-data \
      --force --timeout=@drain_timeout@ 2>&1); then
    # drain cordons first and leaves it so on failure (kubectl pkg/cmd/drain): the node must
    # keep taking pods while it stays, e.g. when the change that replaced it is reverted.
    kubectl --kubeconfig @kubeconfig@ uncordon @node@ >/dev/null 2>&1 || true
    echo "$out"; exit @drain_failed@
  fi
fi
if [ "$1" = drain-only ]; then
  echo "node @node@ drained"; exit @removed@
fi
if ! out=$(@bounded_kubectl@ delete node @node@ --ignore-not-found --timeout=60s 2>&1); then
  echo "$out"; exit @api_unreachable@
fi
echo "node @node@ removed from the tenant"
