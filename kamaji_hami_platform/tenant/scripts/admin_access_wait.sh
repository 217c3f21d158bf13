set -u
@access@
answer=""
for attempt in $(seq 1 @attempts@); do
  answer=$(@kubectl@ auth can-i '*' '*' --all-namespaces 2>&1 \
    || true)
  if [ "$answer" = "yes" ]; then
    echo "tenant @tenant@: the admin kubeconfig is authorized"
    exit 0
  fi
  sleep @interval@
done
echo "tenant @tenant@: the admin kubeconfig was not authorized within @bound@s" \
  "(last answer: $answer)." >&2
echo "Kamaji binds group kubeadm:cluster-admins to cluster-admin after the control plane is Ready;" \
  "check: @check@" >&2
exit 1
