# NetworkPolicy: tenant isolation rests on the CNI enforcing it, and no API says whether it does.
# The DaemonSet of a CNI known to enforce it says so; flannel alone, or kind's kindnet without
# NetworkPolicy access (before kind v0.24.0), says it does not; any other CNI cannot be told
# (management/existing.py).
if ! daemonsets=$(@kubectl@ get daemonsets --all-namespaces -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}' 2>&1); then
  warn "cannot tell whether the CNI enforces NetworkPolicy: listing DaemonSets failed ($daemonsets). @confirm@"
else
  enforcing="" kindnet="" flannel=""
  for daemonset in $daemonsets; do
    case "${daemonset#*/}" in
      @enforcing@) enforcing="$enforcing $daemonset" ;;
      @kindnet@) kindnet=$daemonset ;;
      @flannel@*) flannel="$flannel $daemonset" ;;
    esac
  done
  if [ -n "$enforcing" ]; then
    echo "NetworkPolicy: the CNI of DaemonSet$enforcing enforces it (by default; its settings are not read)"
  elif [ -n "$kindnet" ]; then
    if ! rules=$(@kubectl@ get clusterrole @kindnet@ -o jsonpath='{.rules[*].resources}' 2>&1); then
      warn "cannot tell whether kindnet ($kindnet) enforces NetworkPolicy: reading its ClusterRole failed ($rules). @confirm@"
    else
      case "$rules" in
        *networkpolicies*) echo "NetworkPolicy: kindnet ($kindnet) enforces it (it watches NetworkPolicies, kind v0.24.0 or newer)" ;;
        *) lacks "a CNI that enforces NetworkPolicy: kindnet ($kindnet) has no access to NetworkPolicies, so it" \
             "cannot enforce them (kind before v0.24.0); tenant isolation depends on it." \
             "Fix: a cluster made by kind v0.24.0 or newer, or a CNI that enforces NetworkPolicy (@known@)" ;;
      esac
    fi
  elif [ -n "$flannel" ]; then
    lacks "a CNI that enforces NetworkPolicy: flannel (DaemonSet$flannel) does not, and no CNI known to" \
      "enforce it runs beside it; tenant isolation depends on it. Fix: add a policy engine (Calico with" \
      "flannel, as Canal) or use a CNI that enforces NetworkPolicy (@known@)"
  else
    warn "cannot tell whether the CNI enforces NetworkPolicy: no DaemonSet of a CNI this check knows" \
      "(@known@; flannel). @confirm@"
  fi
fi
