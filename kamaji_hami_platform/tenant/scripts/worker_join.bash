set -u
trap 'rm -f @kubeconfig@ @errors@' EXIT
setup_ready="" setup_missing=""
for attempt in $(seq 1 @setup_attempts@); do
  if setup_missing=$( { @setup_gets@; } 2>&1 >/dev/null); then setup_ready=1; break; fi
  sleep @setup_interval@
done
if [ -z "$setup_ready" ]; then
  echo "Kamaji has not set the tenant up for joins within @setup_bound@s: $setup_missing"; exit 1
fi
join=""
for attempt in $(seq 1 30); do
  # Kamaji sets up the bootstrap RBAC a moment after the TCP is Ready.
  if join=$(kubeadm token create --kubeconfig @kubeconfig@ --ttl @token_ttl@ \
      --description "join @node@" --print-join-command 2>@errors@); then break; fi
  last_error=$(cat @errors@); join=""; sleep 2
done
if [ -z "$join" ]; then echo "kubeadm token create failed: $last_error"; exit 1; fi
token=$(printf '%s' "$join" | sed -E 's/.*--token ([^ ]+).*/\1/')
if ! output=$($join --node-name @node@ --ignore-preflight-errors=@ignored_preflight_errors@ 2>&1); then
  kubeadm token delete --kubeconfig @kubeconfig@ "${token%%.*}" >/dev/null 2>&1
  echo "kubeadm join failed: $output"; exit 1
fi
kubeadm token delete --kubeconfig @kubeconfig@ "${token%%.*}" >/dev/null 2>&1 || true
echo "joined @node@"
ready=""
for attempt in $(seq 1 @ready_attempts@); do
  ready=$(kubectl --kubeconfig @kubeconfig@ get node @node@ -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
  [ "$ready" = "True" ] && break
  sleep @ready_interval@
done
if [ "$ready" != "True" ]; then
  conditions=$(kubectl --kubeconfig @kubeconfig@ get node @node@ -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}; {end}' 2>&1 || true)
  kubectl --kubeconfig @kubeconfig@ delete node @node@ --ignore-not-found >/dev/null 2>&1 || true
  echo "node @node@ joined but was not Ready within @ready_bound@s: $conditions"; exit 1
fi
echo "node @node@ is Ready"
