set -u
@access@
# Each try is bounded (@try_bound@).
# Tries start until @bound@s have passed: the wait ends within @bound@s and one try.
# A try the tenant API did not answer is told apart from an answer ("no", or an error it sent).
end=$(( $(date +%s) + @bound@ ))
tries=0 unanswered=0 answer=""
while :; do
  tries=$((tries + 1))
  answer=$(@kubectl@ auth can-i '*' '*' --all-namespaces 2>&1)
  status=$?
  if printf '%s\n' "$answer" | grep -qx yes; then
    echo "tenant @tenant@: the admin kubeconfig is authorized"
    exit 0
  fi
  reached=yes
  # kubectl's own words for a request that got no answer (kubectl v0.35 pkg/cmd/util/helpers.go
  # StandardErrorMessage), or the whole call cut off.
  case "$answer" in
    *"Unable to connect to the server"*|*"was refused"*) reached=no ;;
  esac
  if [ "$status" -eq @timed_out@ ]; then
    reached=no answer="no answer within @call_timeout@s"
  fi
  [ "$reached" = yes ] || unanswered=$((unanswered + 1))
  [ "$(date +%s)" -lt "$end" ] || break
  sleep @interval@
done
if [ "$reached" = no ]; then
  echo "tenant @tenant@: the tenant API did not answer within @bound@s ($unanswered of $tries tries" \
    "unanswered; last: $answer)." >&2
  echo "@network@" >&2
  exit 1
fi
echo "tenant @tenant@: the admin kubeconfig was not authorized within @bound@s" \
  "(last answer: $answer)." >&2
echo "Kamaji binds group kubeadm:cluster-admins to cluster-admin after the control plane is Ready;" \
  "check: @check@" >&2
exit 1
