main() {
set -u
@tenant_kubectl@
node=@node@
warn() { printf 'warning: host %s: %s\n' "$node" "$1" | redact >&2; }
if [ -z "${@kubeconfig_env@:-}" ]; then
  warn "no tenant kubeconfig: the node is not removed from tenant @tenant@"
elif ! found=$(k get node "$node" -o name 2>&1); then
  case "$found" in
    *"(NotFound)"*) echo "node $node is not in tenant @tenant@" ;;
    *) warn "could not remove the node from tenant @tenant@ (API unreachable?): $found" ;;
  esac
else
  drain=1
  [ "${@skip_drain_env@:-}" = 1 ] && drain=""
  ready=$(k get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' \
    2>/dev/null || true)
  if [ -n "$drain" ] && [ "$ready" != True ]; then
    # A node whose kubelet does not report (a dead host) never confirms an eviction: kubectl
    # drain would wait out its timeout and fail, and with it the destroy.
    warn "the node is not Ready (Ready=${ready:-unknown}): not drained, its pods go with it"
    drain=""
  fi
  if [ -n "$drain" ]; then
    # --force deletes pods no controller recreates, --delete-emptydir-data their emptyDirs:
    # both would go with the node anyway. --skip-wait-for-delete-timeout: a pod that stops
    # answering while it terminates does not hold the drain (kubectl pkg/drain filters.go).
    if ! out=$(timeout @drain_bound@ kubectl --kubeconfig "$kc" --request-timeout=@request_timeout@ \
        drain "$node" --ignore-daemonsets --delete-emptydir-data --force \
        --skip-wait-for-delete-timeout=@skip_wait_for_delete@ \
        --timeout=@drain_timeout@s 2>&1); then
      # drain cordons first and leaves it so on failure: the node must keep taking pods.
      k uncordon "$node" >/dev/null 2>&1 || true
      printf 'host %s: the drain failed, so the node stays and the host is not reset:\n%s\n' \
        "$node" "$out" | redact >&2
      echo "Resolve what blocks the eviction (kubectl get pdb -A in the tenant) and run again, or" \
        "remove the host without a drain: @skip_drain_env@=1 (its pods are deleted with it)." >&2
      exit 1
    fi
  fi
  if out=$(k delete node "$node" --ignore-not-found --timeout=60s 2>&1); then
    echo "node $node removed from tenant @tenant@"
  else
    warn "could not delete the node from tenant @tenant@: $out"
  fi
fi
# The host: kubeadm reset over SSH, only if it is still this stack's node of this control plane.
ca=$(sed -n 's/^ *certificate-authority-data: *//p' "$kc" | head -n 1 | base64 -d 2>/dev/null \
  | tr -d '\r\n' || true)
ca_digest=none
[ -z "$ca" ] || ca_digest=$(printf '%s' "$ca" | sha256sum | cut -d ' ' -f 1)
ca_pin=${@ca_hash_env@:-none}
@ssh_dir_env@="$tmp"; export @ssh_dir_env@
@key_files@
# Quoted heredoc: the command reads as sshd receives it; its arguments, the CA's pin and digest.
remote=$(cat <<'KHP_REMOTE'
@remote@
KHP_REMOTE
)
remote="$remote $(printf '%q %q' "$ca_pin" "$ca_digest")"
# SHELL: ssh runs a ProxyCommand with $SHELL; the options are written for /bin/sh.
status=0
out=$(SHELL=/bin/sh timeout @reset_timeout@ @ssh@ "$remote" \
  2>&1 </dev/null) || status=$?
case "$status" in
  @reset@) printf '%s\n' "$out" | redact ;;
  @foreign@) warn "$out" ;;
  @ssh_failed@) warn "could not reach @where@ over SSH ($out); the host was not reset. \
Run by hand: "@manual@ ;;
  @timed_out@) warn "the reset over SSH did not finish within @reset_timeout@s. \
Check the host, or run by hand: "@manual@ ;;
  *) warn "the reset failed ($out). Run by hand: "@manual@ ;;
esac
exit 0
}
main "$@" < /dev/null
