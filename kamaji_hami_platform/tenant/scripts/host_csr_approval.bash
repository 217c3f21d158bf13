# The kubelet's client certificate is approved here, by the tenant's admin, and nowhere else: the
# join's token is in a group that nothing auto-approves (tenant/host_join_access.py). Of the
# certificate requests that the token's user ($token_id) makes, only those for this host's
# kubelet are approved: the kubelet signer, the subject system:node:$node in system:nodes (a
# kubelet restarted before its certificate came asks again, with a new key: client-go
# util/certificate/certificate_manager.go; that grants nothing more). Any other identity is
# denied, and the join stops. The requester is the API server's record (spec.username), which a
# client cannot set.
csr_approved="" csr_refused=""
# One line per pending request of this token: name, signer, the PEM request (base64).
token_csrs() {
  k get csr -o go-template='{{range .items}}{{if and (eq .spec.username "system:bootstrap:'"$token_id"'") (not .status.conditions)}}{{.metadata.name}} {{.spec.signerName}} {{.spec.request}}{{"\n"}}{{end}}{{end}}'
}
# The request's subject, as RFC 2253 prints it (CN first); empty when it is not a request.
csr_subject() {
  printf '%s' "$1" | base64 -d 2>/dev/null \
    | openssl req -noout -subject -nameopt RFC2253 2>/dev/null | sed 's/^subject= *//'
}
# Judges each pending request once. Fails (1) after denying one, which it names in $csr_refused;
# an API that does not answer for a moment is asked again at the next round.
judge_csrs() {
  local csrs name signer request subject
  csrs=$(token_csrs) || return 0
  while read -r name signer request; do
    [ -n "$name" ] || continue
    subject=$(csr_subject "$request")
    if [ "$signer" = @kubelet_signer@ ] && [ "$subject" = "CN=system:node:$node,O=@nodes_group@" ]; then
      k certificate approve "$name" >/dev/null || return 0
      csr_approved="${csr_approved:+$csr_approved }$name"
      printf 'host %s: approved certificate request %s (%s)\n' "$node" "$name" "$subject"
    else
      k certificate deny "$name" >/dev/null 2>&1
      csr_refused="$name (signer $signer, subject ${subject:-unreadable})"
      return 1
    fi
  done <<EOS
$csrs
EOS
}
