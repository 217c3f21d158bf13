"""A model of the packet path from a tenant's worker to a control plane on the kind node, for the
isolation tests: what a tenant who is root on its worker can send, where it goes, and what the
control plane's NetworkPolicy sees.

The attacker is root on its worker: it can add any address to its interface (forge) and route any
destination through any neighbour on its own segment (relay); it cannot reach a segment it is not
on. What each hop does, with the upstream behaviour it models:

- a worker of tenant X forwards what it receives for someone else (it must, for its pods) and
  kindnetd masquerades every forwarded packet not bound for X's pod CIDR, with no source match,
  to X's worker's address (kind v0.31.0 images/kindnetd/cmd/kindnetd/masq.go);
- this host (every network's gateway) forwards between containers of one bridge only: Docker drops
  what one bridge forwards to another (moby v28.5.2 libnetwork/drivers/bridge/internal/iptabler/
  network.go `setINC`, DOCKER-ISOLATION-STAGE-1/2);
- the kind node answers ARP for every tenant API address on every interface (MetalLB v0.15.3
  internal/layer2/announcer.go: no subnet check); on an interface with rp_filter 1 it drops a
  packet whose source it would not route back out of that interface; kube-proxy drops a source
  outside the Service's loadBalancerSourceRanges before its DNAT (kubernetes v1.35.4
  pkg/proxy/iptables/proxier.go KUBE-FW-*, KUBE-PROXY-FIREWALL), then DNATs the packet to the
  control plane pod, and kube-network-policies judges the source before any masquerade (v0.8.0
  pkg/networkpolicy/controller.go, POSTROUTING at srcnat-5), unless kindnetd is down (it fails
  open: kind v0.31.0 images/kindnetd/cmd/kindnetd/main.go `FailOpen: true`);
- TCP needs the SYN-ACK back: the kind node sends it to the segment whose subnet holds the
  source (or its default route, the platform's network); only a sender there with that address,
  or the hop that masqueraded it, gets it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from tests.netpol_eval import Endpoint, allowed

HOST = "host"
KIND_NODE = "kind-node"
PLATFORM = "platform"


@dataclass
class Segment:
    """One Docker network: its subnet and who is on it at which address."""

    name: str
    subnet: ipaddress.IPv4Network
    members: dict[str, str] = field(default_factory=dict)  # container -> address

    def holds(self, address: str) -> bool:
        return ipaddress.IPv4Address(address) in self.subnet


@dataclass
class Topology:
    segments: dict[str, Segment]
    owner: dict[str, str]                     # worker container -> tenant
    pod_cidrs: dict[str, str]                 # tenant -> its cluster's pod CIDR
    api: dict[str, str]                       # tenant -> its API address
    strict_reverse_path: set[str]             # segments where the kind node has rp_filter 1
    policies: list[dict]
    source_ranges: dict[str, list[str]] = field(default_factory=dict)  # tenant -> its Service's
    policy_engine_running: bool = True

    def segment_of(self, container: str) -> Segment:
        return next(s for s in self.segments.values() if container in s.members)

    def kind_node_route(self, address: str) -> Segment:
        """The segment the kind node sends to `address` on: the one that holds it, else its
        default route (the platform's network)."""
        return next((s for s in self.segments.values() if KIND_NODE in s.members and s.holds(address)),
                    self.segments[PLATFORM])


@dataclass(frozen=True)
class Verdict:
    connected: bool
    reason: str
    seen_as: str | None = None  # the source address the policy judged


def attempt(topology: Topology, attacker: str, target: str, port: int, via: str | None = None,
            forged: str | None = None) -> Verdict:
    """`attacker` (a worker) opens a TCP connection to `target`'s API address, from `forged` (an
    address it added) or its own, routed through `via` (a neighbour) or straight to whoever
    answers for the address on its segment."""
    home = topology.segment_of(attacker)
    source = forged or home.members[attacker]
    destination = topology.api[target]
    hop, masqueraded_by = via, None
    if hop is None:
        hop = KIND_NODE if KIND_NODE in home.members else HOST  # MetalLB answers ARP on every interface
    if hop not in home.members:
        return Verdict(False, f"{hop} is not on {home.name}: no route")
    if hop in topology.owner:  # another worker forwards, and its kindnetd masquerades
        pods = ipaddress.IPv4Network(topology.pod_cidrs[topology.owner[hop]])
        if ipaddress.IPv4Address(destination) in pods:
            return Verdict(False, "bound for the pod network")
        source, masqueraded_by = home.members[hop], hop
        hop = KIND_NODE if KIND_NODE in home.members else HOST
    if hop == HOST:
        out = topology.kind_node_route(destination)
        if out.name != home.name:
            return Verdict(False, f"Docker drops {home.name} -> {out.name} (DOCKER-ISOLATION)")
        hop = KIND_NODE
    if home.name in topology.strict_reverse_path and topology.kind_node_route(source).name != home.name:
        return Verdict(False, f"reverse path: {source} does not route back out of {home.name}")
    ranges = topology.source_ranges.get(target)
    if ranges and not any(ipaddress.IPv4Address(source) in ipaddress.IPv4Network(cidr) for cidr in ranges):
        return Verdict(False, "dropped by the Service's source ranges", source)
    control_plane = Endpoint(target, "10.244.0.20", {"kamaji.clastix.io/name": target})
    if topology.policy_engine_running and not allowed(topology.policies, Endpoint(None, source),
                                                      control_plane, port):
        return Verdict(False, "dropped by the NetworkPolicy", source)
    reply_segment = topology.kind_node_route(source)
    back = masqueraded_by or attacker
    if reply_segment.members.get(back) != source and not (forged and reply_segment is home):
        return Verdict(False, f"the reply to {source} goes to {reply_segment.name}, not to {attacker}",
                       source)
    return Verdict(True, "connected", source)
