set -eu
@bounded_docker@
node=@node@
queue=@queue@
# The node's own tools, in its network namespace (kind's base image has nftables and iptables).
# nft prints kindnetd's rule as `queue flags bypass to 101` (1.0.x) or `queue num 101 bypass` (0.9.x).
queued() {
  docker exec "$node" nft list table inet @table@ 2>/dev/null | grep -Eq "queue.* (to|num) $queue( |\$)" && return 0
  docker exec "$node" iptables-save -t mangle 2>/dev/null | grep -Eq -- "-j NFQUEUE --queue-num $queue( |\$)"
}
listened() {
  docker exec "$node" cat /proc/net/netfilter/nfnetlink_queue 2>/dev/null | awk -v q="$queue" '$1 == q {f = 1} END {exit !f}'
}
waited=0
until queued && listened; do
  if [ "$waited" -ge @wait_seconds@ ]; then
    echo "NetworkPolicies are not enforced in the kind cluster: after ${waited}s no netfilter rule of" \
      "node $node hands packets to kindnetd's policy queue $queue, or nothing listens on it." >&2
    echo "kindnetd's log (kubectl -n kube-system logs ds/kindnet) says 'syncing nftables rules ..." \
      "netlink receive: no such file or directory' when this kernel has no nftables queue" \
      "(CONFIG_NFT_QUEUE, module nft_queue); kindnetd then fails open and judges nothing." >&2
    echo "The tenants' isolation would rest on their doors and source ranges alone: run the platform" \
      "on a kernel with nft_queue (docs/operations/troubleshooting.md)." >&2
    exit 1
  fi
  sleep 2
  waited=$((waited + 2))
done
echo "kindnetd judges NetworkPolicies: queue $queue is fed and listened on"
