#!/bin/sh
# A STAND-IN for kindnetd, put in the node image when KINDNET_SRC is not set (kindnetd is kind's
# nested module sigs.k8s.io/kind/images/kindnetd, which the Go module proxy does not serve). It
# runs where kind's manifest (kind v0.31.0 pkg/build/nodeimage/const_cni.go) runs kindnetd and
# only writes the CNI config kindnetd writes for its node (ptp + host-local for the pod subnet,
# portmap), then idles. Enough for a single node; it adds no routes to other nodes' pod subnets,
# no network policy and no ip-masq-agent (ptp's ipMasq masquerades instead).
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
trap 'exit 0' TERM INT
while :; do sleep 3600 & wait $!; done
