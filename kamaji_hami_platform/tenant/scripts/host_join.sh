set -u
PATH="${PATH:-}:@path_extra@"; export PATH
umask 077
tmp=$(mktemp -d) || { echo "host @host@: cannot create a temporary directory" >&2; exit 1; }
kc="$tmp/tenant-admin.conf"
token_id=""
# The token goes in every case: after the join, after a failure, on a signal.
cleanup() {
  if [ -n "$token_id" ]; then
    kubeadm token delete --kubeconfig "$kc" "$token_id" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
redact() { @redact@; }
cat > "$kc"
# The tenant's CA, as PEM without line breaks, from its kubeconfig and from the node.
want=$(sed -n 's/^ *certificate-authority-data: *//p' "$kc" | head -n 1 | base64 -d 2>/dev/null \
  | tr -d '\r\n' || true)
# Joined to this control plane already: nothing to check or change. First, so that a re-run
# (pulumi-command runs create again when an input changes, a rotated kubeconfig say) never
# fails a working node over a prerequisite that changed since its join.
if [ -f @kubelet_config@ ]; then
  have=$(tr -d '\r\n' < @node_ca_cert@ 2>/dev/null || true)
  # No CA data in the kubeconfig: nothing to compare, leave the node as it is.
  if [ -z "$want" ] || [ "$want" = "$have" ]; then
    echo "host @host@ already joined to tenant @tenant@"; exit 0
  fi
  # Only a node this platform joined to this tenant is reset (its control plane was replaced);
  # a node of any other cluster (a mistyped address, a machine in use) is never touched.
  owner=$(cat @join_marker@ 2>/dev/null || echo "not joined by this platform")
  if [ "$owner" != @marker@ ]; then
    echo "host @host@ is a node of another cluster (@join_marker@: $owner); it is left as it is." \
      "If it should join tenant @tenant@, reset it by hand first (kubeadm reset -f)." >&2
    exit 1
  fi
fi
@prerequisites@
@reset_function@
if [ -f @kubelet_config@ ]; then
  echo "host @host@ was joined to another control plane of tenant @tenant@; resetting it"
  reset_host >&2 || exit 1
fi
join="" last_error="" deadline=$(( $(date +%s) + @token_wait@ ))
while [ "$(date +%s)" -lt "$deadline" ]; do
  # Kamaji sets up the bootstrap RBAC a moment after the TCP is Ready. Only stdout is the
  # join command: a warning on stderr must never become part of it. Each call bounded: a tenant
  # API the host cannot reach must not hold the join for the kernel's connect retries.
  if join=$(timeout @token_call_timeout@ kubeadm token create --kubeconfig "$kc" --ttl @token_ttl@ \
      --description "join @host@" --print-join-command 2>"$tmp/err"); then break; fi
  last_error=$(cat "$tmp/err"); join=""; sleep 2
done
if [ -z "$join" ]; then
  printf 'kubeadm token create failed for %ss (can the host reach the tenant API?): %s\n' \
    @token_wait@ "$last_error" | redact >&2
  exit 1
fi
# "kubeadm join <endpoint> --token <token> --discovery-token-ca-cert-hash sha256:<hash> ..."
endpoint="" token="" hashes=""
set -f; set -- $join; set +f
[ "${1:-}" = kubeadm ] && [ "${2:-}" = join ] && endpoint=${3:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --token) token=${2:-} ;;
    --discovery-token-ca-cert-hash) hashes="$hashes    - \"${2:-}\"
" ;;
  esac
  shift
done
token_id=${token%%.*}
if [ -z "$endpoint" ] || [ -z "$token" ] || [ -z "$hashes" ]; then
  # Never join without the CA pinned by its hash.
  printf 'unexpected output of kubeadm token create --print-join-command: %s\n' "$join" | redact >&2
  exit 1
fi
api=v1beta4
[ "$kubeadm_minor" -ge @v1beta4_minor@ ] || api=v1beta3
# The token in a 0600 file, not on kubeadm's command line. --node-name may be combined with
# --config (kubeadm v1.35.4 validation.isAllowedFlag) and wins over nodeRegistration.name.
cat > "$tmp/join.yaml" <<EOF
apiVersion: kubeadm.k8s.io/$api
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: "$endpoint"
    token: "$token"
    caCertHashes:
$hashes
nodeRegistration:
  name: @host@
EOF
if ! output=$(kubeadm join --config "$tmp/join.yaml" --node-name @host@ 2>&1); then
  kubeadm token delete --kubeconfig "$kc" "$token_id" >/dev/null 2>&1 || true
  token_id=""
  if reset_report=$(reset_host); then
    reset_report="the host was reset, so the next run starts clean"
  fi
  printf 'kubeadm join of host %s failed (%s):\n%s\n' @host@ "$reset_report" "$output" | redact >&2
  exit 1
fi
printf '%s\n' @marker@ > @join_marker@
# The node must come back after a reboot; kubeadm only warns when the kubelet is not enabled.
if ! systemctl is-enabled --quiet kubelet 2>/dev/null; then
  systemctl enable kubelet >/dev/null 2>&1 && echo "enabled kubelet.service (it starts at boot)"
fi
echo "joined @host@ to tenant @tenant@"
