set -u
PATH="${PATH:-}:@path_extra@"; export PATH
umask 077
# $0 the node's name; $1 the CA pin for kubeadm, $2 the CA (base64 PEM), $3 the API endpoint and
# $4 Konnectivity's (host:port), $5 whether the tenant has the Node (present or absent), $6 the
# tenant API server's time as it stamped this join's token (seconds since the epoch); the
# bootstrap token, the only secret, is the one line on stdin.
node=$0 ca_hash=$1 ca_data=$2 endpoint=$3 konnectivity=$4 node_state=$5 api_time=${6:-}
token=""
IFS= read -r token || true
exec </dev/null
case "$api_time" in
  ''|*[!0-9]*) echo "host $node: no tenant API server time given (a join script of another release?)" >&2; exit 1 ;;
esac
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
# The marker a join writes: whose node, as which node, of which control plane, and this join's id
# (a new one at each join: `<tenant>-<host>` is replaced when it changes, so a rejoined host's
# new Node gets the platform's registration again). Written before anything is printed: a write to
# a session that is gone ends the script.
mark() {
  printf '%s\nnode=%s\nca=%s\njoin=%s\n' "$marker" "$node" "$ca_hash" "$1" > @join_marker@
}
if [ -f @kubelet_config@ ]; then
  have=$(tr -d '\r\n' < @node_ca_cert@ 2>/dev/null || true)
  owner=$(head -n 1 @join_marker@ 2>/dev/null || true)
  joined_as=$(sed -n 's/^node=//p' @join_marker@ 2>/dev/null || true)
  joined_pin=$(sed -n 's/^ca=//p' @join_marker@ 2>/dev/null || true)
  join_id=$(sed -n 's/^join=//p' @join_marker@ 2>/dev/null || true)
  same_ca=""
  [ -n "$want" ] && [ "$want" = "$have" ] && same_ca=1
  # This stack's node of the tenant: its marker; or, joined to this control plane (its CA), a
  # marker of 0.1.0 or none, or one of this tenant whose pin is this control plane's (the stack or
  # project renamed since). Anything else (another stack's tenant of the same name, another
  # cluster, a mistyped address) is refused untouched.
  ours=""
  if [ "$owner" = "$marker" ]; then
    ours=1
  elif [ -n "$same_ca" ]; then
    case "$owner" in
      @stack_marker_prefix@*)
        [ "$joined_pin" = "$ca_hash" ] && [ "${owner##* tenant=}" = @tenant@ ] && ours=1 ;;
      *) ours=1 ;;
    esac
  fi
  if [ -z "$ours" ]; then
    echo "host $node is a node of something else (@join_marker@: ${owner:-none}); it is left as it is." \
      "If it should join tenant @tenant@ of this stack, reset it by hand first (kubeadm reset -f)." >&2
    exit 1
  fi
  # Joined already, to this control plane, as this node (0.1.0 joined every host under its name),
  # and the tenant has the Node: nothing to check or change, but the marker made this stack's.
  # First, so that a re-run never fails a working node over a prerequisite that changed since.
  if [ -n "$same_ca" ] && [ "$node_state" = present ] \
      && { [ "$joined_as" = "$node" ] || [ -z "$joined_as" ]; }; then
    if [ "$owner" = "$marker" ] && [ -n "$join_id" ]; then
      echo "host $node already joined to tenant @tenant@"
      printf 'join: %s\n' "$join_id"; exit 0
    fi
    mark "${join_id:=adopted}"
    echo "host $node already joined to tenant @tenant@ (its marker named ${owner:-nobody}; now this stack)"
    printf 'join: %s\n' "$join_id"; exit 0
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
# The runtime the prerequisites found: with two CRI sockets kubeadm would refuse to guess.
cri_socket=@containerd_socket@
[ "$runtime" = crio ] && cri_socket=@crio_socket@
# The node's address is the one SSH reaches and the control plane admits, when the host has it;
# else the kubelet takes its default route's, which on a host with several networks may be one
# the other nodes do not reach (kindnet routes pod ranges via the nodes' InternalIP).
node_ip=""
if ip -o addr show 2>/dev/null | grep -q " inet @address@/"; then
  node_ip=@address@
else
  echo "note: no interface of the host has @address@; the kubelet chooses the node's IP"
fi
# The token in a 0600 file, not on kubeadm's command line. --node-name may be combined with
# --config (kubeadm v1.35.4 validation.isAllowedFlag) and wins over nodeRegistration.name.
{
  cat <<EOF
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
  criSocket: $cri_socket
@ignore_system_verification@
EOF
  # kubeletExtraArgs: a list of name/value in v1beta4, a map in v1beta3.
  if [ -n "$node_ip" ] && [ "$api" = v1beta4 ]; then
    printf '  kubeletExtraArgs:\n  - name: node-ip\n    value: "%s"\n' "$node_ip"
  elif [ -n "$node_ip" ]; then
    printf '  kubeletExtraArgs:\n    node-ip: "%s"\n' "$node_ip"
  fi
} > "$tmp/join.yaml"
token=""
# What kubeadm join writes past its preflight, which refuses a host where any of them is already
# (kubernetes v1.35.4 cmd/kubeadm/app/preflight/checks.go JoinNodeChecks, FileAvailableCheck):
# the ones there before it ran are not this join's to reset.
kubeadm_files="@node_ca_cert@ @bootstrap_kubelet_config@ @kubelet_config@"
there_before=""
for file in $kubeadm_files; do
  [ -e "$file" ] && there_before="$there_before $file"
done
if ! output=$(kubeadm join --config "$tmp/join.yaml" --node-name "$node" 2>&1); then
  written=""
  [ -n "$there_before" ] || for file in $kubeadm_files; do
    [ -e "$file" ] && written=1
  done
  if [ -n "$written" ]; then
    if reset_report=$(reset_host); then
      reset_report="the host was reset, so the next run starts clean"
    fi
  elif [ -n "$there_before" ]; then
    reset_report="the host had$there_before before kubeadm ran, so nothing was reset: another cluster's join, or one that stopped; if it is not another cluster's, reset it by hand (kubeadm reset -f)"
  else
    reset_report="kubeadm stopped before changing the host"
  fi
  printf 'kubeadm join of host %s failed (%s):\n%s\n' "$node" "$reset_report" "$output" | redact >&2
  exit 1
fi
join_id="$(date -u +%Y%m%dT%H%M%SZ)-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
mark "$join_id"
# The node must come back after a reboot; kubeadm only warns when the kubelet is not enabled.
enabled=""
if ! systemctl is-enabled --quiet kubelet 2>/dev/null; then
  systemctl enable kubelet >/dev/null 2>&1 && enabled="enabled kubelet.service (it starts at boot)"
fi
[ -z "$enabled" ] || echo "$enabled"
echo "joined $node to tenant @tenant@"
printf 'join: %s\n' "$join_id"
