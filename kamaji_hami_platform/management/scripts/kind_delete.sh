set -eu
@list_clusters@
if printf '%s\n' "$clusters" | grep -qx @cluster@; then
  kind delete cluster --name @cluster@ --kubeconfig @kubeconfig@
else
  echo 'kind cluster @cluster@ is already gone'
fi
rm -f @kubeconfig@
