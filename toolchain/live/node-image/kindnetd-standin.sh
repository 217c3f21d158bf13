#!/bin/sh
# A STAND-IN for kindnetd, put in the node image when KINDNET_SRC is not set (kindnetd is kind's
# nested module sigs.k8s.io/kind/images/kindnetd, which the Go module proxy does not serve). It
# runs where kind's manifest (kind v0.31.0 pkg/build/nodeimage/const_cni.go) runs kindnetd and
# writes the CNI config kindnetd writes for its node (ptp + host-local for the pod subnet,
# portmap), then runs kindnetd's network-policy controller (/usr/bin/kindnet-network-policies:
# kube-network-policies v0.8.0 with kindnetd's Config, ../images/kindnet-network-policies), so
# NetworkPolicies are judged as kindnetd judges them. Enough for a single node; it adds no routes
# to other nodes' pod subnets and no ip-masq-agent (ptp's ipMasq masquerades instead).
#
# Where the kernel has no nftables `queue` expression (CONFIG_NFT_QUEUE; this project's CI
# machine), the controller cannot program its table (kube-network-policies v0.8.0
# pkg/networkpolicy/controller.go syncNFTablesRules: one transaction, refused whole) and, failing
# open, would judge nothing: real kindnetd does the same there, silently. The stand-in then hands
# the same packets to the same queue through iptables' NFQUEUE target instead (queue_hook below),
# so the controller's own evaluator still decides every verdict. How the hook differs from the
# controller's table:
# - it queues every packet from or to the pod subnet (the controller only those of pods some
#   policy selects, and it accepts the others: the same verdicts), and a pod a policy newly
#   selects is judged at once (under kindnetd, from the controller's next sync of its set);
# - DNS over UDP is accepted, not judged: the controller accepts it in POSTROUTING too and judges
#   it in PREROUTING after DNAT (its workaround for a conntrack race on parallel queries,
#   kube-network-policies issue 12), a place iptables has no table for (mangle PREROUTING runs
#   before DNAT); queueing it here would drop queries the real setup does not;
# - IPv4 only (the live tier's clusters are IPv4); the controller's table covers IPv6 too;
# - the controller ends on TERM here and removes its table (kindnetd traps only SIGINT).
set -eu
subnet=${POD_SUBNET%%,*}
mtu=$(cat /sys/class/net/eth0/mtu 2>/dev/null || echo 1500)
mkdir -p /etc/cni/net.d
cat > /etc/cni/net.d/.10-kindnet.conflist <<CONF
{
  "cniVersion": "0.4.0",
  "name": "kindnet",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "/run/cni-ipam-state",
        "routes": [ { "dst": "0.0.0.0/0" } ],
        "ranges": [ [ { "subnet": "$subnet" } ] ]
      },
      "mtu": $mtu
    },
    {
      "type": "portmap",
      "capabilities": { "portMappings": true }
    }
  ]
}
CONF
mv /etc/cni/net.d/.10-kindnet.conflist /etc/cni/net.d/10-kindnet.conflist
echo "kindnetd STAND-IN (not kindnetd): wrote /etc/cni/net.d/10-kindnet.conflist for $subnet (mtu $mtu)"
# kindnetd's queue number (kind 20ccfc88 images/kindnetd/cmd/kindnetd/main.go, QueueID: 101).
queue=101
hook=KHP-NETPOL-QUEUE
nft_can_queue() {
  nft add table inet khp-queue-probe &&
    nft add chain inet khp-queue-probe probe '{ type filter hook postrouting priority 95; }' &&
    nft add rule inet khp-queue-probe probe queue num "$queue" bypass 2>/dev/null
  status=$?
  nft delete table inet khp-queue-probe 2>/dev/null || true
  return $status
}
queue_hook() {
  # The controller's postrouting chain, rule for rule (srcnat - 5: after DNAT, before SNAT; mangle
  # POSTROUTING is the same place): DNS over UDP, root's own packets (kubelet probes, the API
  # server), then established flows, are not judged; new ones from or to a pod are, fail-open.
  iptables -t mangle -N "$hook"
  iptables -t mangle -A "$hook" -p udp --dport 53 -j ACCEPT
  iptables -t mangle -A "$hook" -m owner --uid-owner 0 -j ACCEPT
  iptables -t mangle -A "$hook" -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
  iptables -t mangle -A "$hook" -s "$subnet" -j NFQUEUE --queue-num "$queue" --queue-bypass
  iptables -t mangle -A "$hook" -d "$subnet" -j NFQUEUE --queue-num "$queue" --queue-bypass
  iptables -t mangle -A POSTROUTING -j "$hook"
}
remove_queue_hook() {
  iptables -t mangle -D POSTROUTING -j "$hook" 2>/dev/null || true
  iptables -t mangle -F "$hook" 2>/dev/null || true
  iptables -t mangle -X "$hook" 2>/dev/null || true
}
remove_queue_hook  # a restarted pod's earlier hook
if nft_can_queue; then
  echo "kindnetd STAND-IN: the kernel queues from nftables: the controller programs its own table"
else
  queue_hook
  echo "kindnetd STAND-IN: no nftables queue in this kernel: packets reach the controller's queue $queue" \
    "through iptables NFQUEUE (mangle POSTROUTING -> $hook)"
fi
echo "kindnetd STAND-IN: running kindnetd's network-policy controller"
/usr/bin/kindnet-network-policies &
policies=$!
trap 'kill "$policies" 2>/dev/null; wait "$policies"; remove_queue_hook; exit 0' TERM INT
# The controller ending ends the pod: a restart the cluster shows, never a node without policies.
wait "$policies"
