# On this host (Pulumi's), as the tenant's admin: mint a bootstrap token that lives minutes, send
# the host only the endpoint, the token and the CA (over SSH, the token on stdin), delete the token.
main() {
set -u
@tenant_kubectl@
node=@node@
ca_hash=${@ca_hash_env@:-}
token_id="" expiration="" join=""
fail() { printf 'host %s: %s\n' "$node" "$1" | redact >&2; exit 1; }
# The token goes in every case: after the join, after a failure, on a signal.
cleanup() {
  # A join still running (a signal, a refused request) is stopped.
  [ -z "$join" ] || kill "$join" 2>/dev/null
  if [ -n "$token_id" ] && ! k -n kube-system delete secret "bootstrap-token-$token_id" \
      --ignore-not-found >/dev/null 2>&1; then
    printf 'warning: host %s: bootstrap token %s could not be deleted; it expires by itself at %s\n' \
      "$node" "$token_id" "$expiration" >&2
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM PIPE
# What the tenant says of the Node: a joined host whose Node is gone must join again.
if found=$(k get node "$node" -o name 2>&1); then
  node_state=present
else
  case "$found" in
    *"(NotFound)"*) node_state=absent ;;
    *) fail "the tenant API does not answer this host ($found): check that Pulumi's host is in management.apiClientCidrs" ;;
  esac
fi
command -v openssl >/dev/null \
  || fail "openssl is not installed on Pulumi's host: the join reads the kubelet's certificate request with it"
ca_data=$(sed -n 's/^ *certificate-authority-data: *//p' "$kc" | head -n 1)
server=$(sed -n 's/^ *server: *//p' "$kc" | head -n 1)
endpoint=${server#https://}
[ -n "$ca_data" ] && [ -n "$endpoint" ] && [ -n "$ca_hash" ] \
  || fail "no server or CA data in the tenant's kubeconfig, or no CA pin (\$@ca_hash_env@)"
konnectivity="${endpoint%:*}:@konnectivity_port@"
# Lowercase letters and digits, as a bootstrap token is ([a-z0-9]{6}.[a-z0-9]{16}).
token_id=$(LC_ALL=C tr -dc 'a-z0-9' < /dev/urandom | head -c 6)
token_secret=$(LC_ALL=C tr -dc 'a-z0-9' < /dev/urandom | head -c 16)
expiration=$(date -u -d "+@token_minutes@ minutes" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null \
  || date -u -v+@token_minutes@M +%Y-%m-%dT%H:%M:%SZ)
# The token's expiry is this host's clock's; the API server's stamp on the Secret says how far
# that clock is from the tenant's (a clock behind makes a token that has expired already, one
# ahead a token that lives longer than minutes).
sent=$(date -u +%s)
# Its stderr apart: a warning kubectl prints must not read as the stamp.
if ! out=$(k create -f - -o 'jsonpath={.metadata.creationTimestamp}' 2>"$tmp/token.err" <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: bootstrap-token-$token_id
  namespace: kube-system
type: bootstrap.kubernetes.io/token
stringData:
  token-id: "$token_id"
  token-secret: "$token_secret"
  expiration: "$expiration"
  usage-bootstrap-authentication: "true"
  usage-bootstrap-signing: "true"
  auth-extra-groups: "@bootstrap_group@"
  description: "kamaji-hami-platform: join of host $node"
EOF
); then
  token_id=""
  fail "cannot create a bootstrap token in the tenant: $(cat "$tmp/token.err")"
fi
answered=$(date -u +%s)
stamped=$(date -u -d "$out" +%s 2>/dev/null || date -j -u -f %Y-%m-%dT%H:%M:%SZ "$out" +%s 2>/dev/null) \
  || fail "the tenant API server stamped the bootstrap token '$out', not a time"
# The stamp is whole seconds, truncated: within [sent - 1, answered] when the clocks agree.
if [ "$stamped" -lt $(( sent - 1 - @clock_skew_seconds@ )) ]; then
  fail "this host's clock is $(( sent - stamped ))s ahead of the tenant API server's (at most @clock_skew_seconds@s): the bootstrap token would live longer than @token_minutes@ minutes; set this host's clock right (NTP) and run again"
elif [ "$stamped" -gt $(( answered + @clock_skew_seconds@ )) ]; then
  fail "this host's clock is $(( stamped - answered ))s behind the tenant API server's (at most @clock_skew_seconds@s): the bootstrap token would expire before the join; set this host's clock right (NTP) and run again"
fi
@ssh_dir_env@="$tmp"; export @ssh_dir_env@
@key_files@
# Quoted heredoc: the command reads as sshd receives it; its arguments, none secret, follow.
remote=$(cat <<'KHP_REMOTE'
@remote@
KHP_REMOTE
)
remote="$remote $(printf '%q ' "$ca_hash" "$ca_data" "$endpoint" "$konnectivity" "$node_state" "$stamped")"
@csr_approval@
status=0
# SHELL: ssh runs a ProxyCommand with $SHELL; the options are written for /bin/sh. In the
# background, so the kubelet's certificate request is judged here while the host joins: a
# subshell that stops the session when told (TERM; timeout passes it on to ssh) and is never
# killed by a signal itself; it exits with the session's status (143 when told to stop).
(
  session=""
  trap '[ -z "$session" ] || kill "$session" 2>/dev/null' TERM
  printf '%s.%s\n' "$token_id" "$token_secret" \
    | SHELL=/bin/sh timeout @join_timeout@ @ssh@ "$remote" &
  session=$!
  wait "$session"
) > "$tmp/join.out" 2>&1 &
join=$!
while kill -0 "$join" 2>/dev/null; do
  judge_csrs || fail "a certificate request made with this join's token, $csr_refused, is not for this host's kubelet (signer @kubelet_signer@, CN=system:node:$node, O=@nodes_group@): it was denied and the SSH session closed, so no certificate and no token remain; on the host, kubeadm gives up within its TLS bootstrap timeout (5 minutes) and the host's script then resets what it wrote. A host, or whoever answers at @where@, that asks for another identity is not to be trusted"
  sleep @csr_poll_seconds@
done
wait "$join" || status=$?
join=""
out=$(cat "$tmp/join.out")
case "$status" in
  0) printf '%s\n' "$out" | redact ;;
  @ssh_failed@) fail "the SSH session to @where@ failed (no answer, a host key other than the pinned one, or a dropped connection): $out" ;;
  @timed_out@) fail "the join did not finish within @join_timeout@s: $out" ;;
  *) fail "the join failed: $out" ;;
esac
}
main "$@" < /dev/null
