set -eu
@bounded_docker@
name=@name@
@lookup@
lookup
# Nothing to drain: the container is gone (destroy removed it first), another stack's, or the
# whole platform goes (@skip_drain_env@=1).
if [ "$running" = absent ] || [ -n "$foreign" ] || [ "${@skip_drain_env@:-}" = 1 ]; then exit 0; fi
status=@api_unreachable@
output="the container is stopped and does not start"
if [ "$running" = false ] && docker start "$name" >/dev/null 2>&1; then
  running=true  # only for kubectl, which needs neither containerd nor the kubelet
fi
if [ "$running" = true ] \
    && printf '%s' "$@kubeconfig_env@" | docker exec -i "$name" sh -c 'umask 077; cat > @kubeconfig@'; then
  output=$(docker exec "$name" bash -c @leave@ bash drain-only 2>&1) && status=0 || status=$?
fi
case "$status" in
  @removed@) printf '%s\n' "$output" | @redact@ ;;
  @drain_failed@)
    printf 'worker %s: the drain failed, so the node (uncordoned again, still registered) and its container are kept:\n%s\n' \
      "$name" "$output" | @redact@ >&2
    echo "Resolve what blocks the eviction (kubectl get pdb -A in the tenant) and run again, or" \
      "remove the worker without a drain: @skip_drain_env@=1 (its pods are deleted with it)." >&2
    exit 1 ;;
  @api_unreachable@) printf 'warning: could not drain node %s of tenant %s (API unreachable): %s\n' \
       "$name" @tenant@ "$output" | @redact@ >&2 ;;
  *) # A docker exec that timed out or failed: whether the node drained is not known.
    printf 'worker %s: the drain did not finish (docker exec status %s), so the node and its container are kept:\n%s\n' \
      "$name" "$status" "$output" | @redact@ >&2
    echo "Check the Docker daemon (@timeout_env@ sets its bound in seconds) and run again, or remove the" \
      "worker without a drain: @skip_drain_env@=1 (its pods are deleted with it)." >&2
    exit 1 ;;
esac
