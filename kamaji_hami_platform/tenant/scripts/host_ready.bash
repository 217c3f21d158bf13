set -u
@tenant_kubectl@
node=@node@
deadline=$(( $(date +%s) + @bound@ ))
ready=""
while :; do
  ready=$(k get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
  [ "$ready" = True ] && break
  [ "$(date +%s)" -lt "$deadline" ] || break
  sleep @interval@
done
if [ "$ready" != True ]; then
  conditions=$(k get node "$node" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}; {end}' 2>&1 || true)
  printf 'host %s joined tenant %s but its node was not Ready within %ss: %s\n' \
    "$node" @tenant@ @bound@ "$conditions" | redact >&2
  echo "Look at the kubelet on the host: journalctl -u kubelet" >&2
  exit 1
fi
kubelet=$(k get node "$node" -o jsonpath='{.status.nodeInfo.kubeletVersion}' 2>/dev/null || true)
echo "node $node is Ready (kubelet ${kubelet:-of unknown version})"
