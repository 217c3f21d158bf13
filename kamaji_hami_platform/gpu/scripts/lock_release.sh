# The node-lock release agent (kamaji_hami_platform/gpu/lock_release.py): from its Deployment's
# environment GPU_NODE_LABEL, FOLLOW_SECONDS and CALL_SECONDS, and HOME (kubectl's cache).
set -u
lock_key='hami\.io/mutex\.lock'
following=$HOME/following
mkdir -p "$following"
follow() {  # $1 node, $2 resourceVersion, $3 lock
  rest=${3#*,}; namespace=${rest%%,*}; pod=${rest#*,}
  end=$(($(date +%s) + FOLLOW_SECONDS))
  while [ "$(date +%s)" -lt "$end" ]; do
    if seen=$(timeout "$CALL_SECONDS" kubectl get pod -n "$namespace" "$pod" --ignore-not-found \
                -o 'jsonpath={.metadata.uid} {.spec.nodeName}' 2>/dev/null); then
      case "$seen" in
        "") release "$1" "$2" "$3" "$namespace/$pod (gone)" "$end"; return ;;
        *" "?*) release "$1" "$2" "$3" "$namespace/$pod" "$end"; return ;;
      esac
    fi
    sleep 0.2
  done
}
# At the resourceVersion read, so that a lock taken since is never removed; when the node was
# written since (HAMi's handshake, a status patch), read it again and go on while it holds the
# same lock.
release() {  # $1 node, $2 resourceVersion, $3 lock, $4 holder, $5 deadline
  version=$2
  while [ "$(date +%s)" -lt "$5" ]; do
    if timeout "$CALL_SECONDS" kubectl annotate node "$1" "hami.io/mutex.lock-" --resource-version="$version" \
         >/dev/null 2>&1; then
      echo "released $1's lock, held by $4"
      return
    fi
    now=$(timeout "$CALL_SECONDS" kubectl get node "$1" \
            -o "jsonpath={.metadata.resourceVersion} {.metadata.annotations.$lock_key}" 2>/dev/null) || now=
    [ "${now#* }" = "$3" ] || return
    version=${now%% *}
    sleep 0.2
  done
}
while true; do
  kubectl get nodes -l "$GPU_NODE_LABEL" --watch \
    -o "jsonpath={.metadata.name} {.metadata.resourceVersion} {.metadata.annotations.$lock_key}{\"\n\"}" |
  while read -r node version lock; do
    case "$lock" in *,*,*) ;; *) continue ;; esac
    key=$(printf '%s' "$node,$lock" | tr -c 'A-Za-z0-9.-' '_')
    if mkdir "$following/$key" 2>/dev/null; then
      (follow "$node" "$version" "$lock"; rmdir "$following/$key") &
    fi
  done
  sleep 1  # the watch ended (the API server closes it in time): watch again
done
