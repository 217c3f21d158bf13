set -u
PATH="${PATH:-}:@path_extra@"; export PATH
umask 077
# $0 the node's name; $1 the CA pin for kubeadm, $2 the CA (base64 PEM), $3 the API endpoint and
# $4 Konnectivity's (host:port), $5 whether the tenant has the Node (present or absent); the
# bootstrap token, the only secret, is the one line on stdin.
node=$0 ca_hash=$1 ca_data=$2 endpoint=$3 konnectivity=$4 node_state=$5
token=""
IFS= read -r token || true
exec </dev/null
case "$token" in
  [a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9].[a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9][a-z0-9]) ;;
  *) echo "host $node: no bootstrap token on stdin" >&2; exit 1 ;;
esac
tmp=$(mktemp -d) || { echo "host $node: cannot create a temporary directory" >&2; exit 1; }
# Nothing written here outlives the session: dash skips the EXIT trap when a signal ends it (a
# dropped SSH session is SIGHUP or, writing to it, SIGPIPE), so each signal exits through it.
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM PIPE
redact() { @redact@; }
marker=@marker@
# The tenant's CA, as PEM without line breaks, as the join sends it and as the node has it.
want=$(printf '%s' "$ca_data" | base64 -d 2>/dev/null | tr -d '\r\n' || true)
# Joined already: this platform's node of this tenant, by its control plane's CA, as this node,
# and the tenant still has the Node: nothing to check or change. First, so that a re-run never
# fails a working node over a prerequisite that changed since its join.
if [ -f @kubelet_config@ ]; then
  have=$(tr -d '\r\n' < @node_ca_cert@ 2>/dev/null || true)
  owner=$(head -n 1 @join_marker@ 2>/dev/null || true)
  joined_as=$(sed -n 's/^node=//p' @join_marker@ 2>/dev/null || true)
  same_ca=""
  [ -n "$want" ] && [ "$want" = "$have" ] && same_ca=1
  if [ -n "$same_ca" ] && [ "$node_state" = present ]; then
    if [ "$owner" = "$marker" ] && [ "$joined_as" = "$node" ]; then
      echo "host $node already joined to tenant @tenant@"; exit 0
    fi
    if [ "$owner" = @legacy_marker@ ]; then
      # Joined by the platform's 0.1.0, whose marker named the tenant only: the CA proves it is
      # this control plane's node; the marker now says whose.
      printf '%s\nnode=%s\nca=%s\n' "$marker" "$node" "$ca_hash" > @join_marker@
      echo "host $node already joined to tenant @tenant@ (its marker now names the stack)"; exit 0
    fi
  fi
  # Only this stack's node of this tenant (its marker, or this control plane's CA under no other
  # stack's marker) is reset and joined again (a replaced control plane, a renamed host, a Node
  # the tenant lost); a node of anything else (another stack's tenant of the same name, another
  # cluster, a mistyped address) is never touched.
  foreign=""
  case "$owner" in
    "$marker") ;;
    @stack_marker_prefix@*) foreign=1 ;;
    *) [ -n "$same_ca" ] || foreign=1 ;;
  esac
  if [ -n "$foreign" ]; then
    echo "host $node is a node of something else (@join_marker@: ${owner:-none}); it is left as it is." \
      "If it should join tenant @tenant@ of this stack, reset it by hand first (kubeadm reset -f)." >&2
    exit 1
  fi
fi
@prerequisites@
@reset_function@
if [ -f @kubelet_config@ ]; then
  echo "host $node was joined to tenant @tenant@ as ${joined_as:-another node}, to another control plane," \
    "or its Node is gone (${node_state}); resetting it to join again"
  reset_host >&2 || exit 1
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
    - "$ca_hash"
nodeRegistration:
  name: $node
EOF
token=""
if ! output=$(kubeadm join --config "$tmp/join.yaml" --node-name "$node" 2>&1); then
  if reset_report=$(reset_host); then
    reset_report="the host was reset, so the next run starts clean"
  fi
  printf 'kubeadm join of host %s failed (%s):\n%s\n' "$node" "$reset_report" "$output" | redact >&2
  exit 1
fi
printf '%s\nnode=%s\nca=%s\n' "$marker" "$node" "$ca_hash" > @join_marker@
# The node must come back after a reboot; kubeadm only warns when the kubelet is not enabled.
if ! systemctl is-enabled --quiet kubelet 2>/dev/null; then
  systemctl enable kubelet >/dev/null 2>&1 && echo "enabled kubelet.service (it starts at boot)"
fi
echo "joined $node to tenant @tenant@"
