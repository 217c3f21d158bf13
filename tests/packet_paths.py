"""A model of the packet path from a tenant's worker to a control plane on the kind node, for the
isolation tests: what a tenant who is root on its worker can send, where it goes, and what the
control plane's NetworkPolicy sees. Fast, and only as good as its hops: the live tier runs the
door's hops on a real engine (tests/live/test_door.py), and where the two meet they must agree.

The attacker is root on its worker: it can add any address to its interface (forge) and route any
destination through any neighbour on its own segment (relay); it cannot reach a segment it is not
on. What each hop does, with the upstream behaviour it models:

- a worker of tenant X forwards what it receives for someone else (it must, for its pods) and
  kindnetd masquerades every forwarded packet not bound for X's pod CIDR, with no source match,
  to X's worker's address (kind v0.31.0 images/kindnetd/cmd/kindnetd/masq.go);
- this host (every network's gateway) forwards between containers of one bridge only: Docker drops
  what one bridge forwards to another (moby v28.5.2 libnetwork/drivers/bridge/internal/iptabler/
  network.go `setINC`, DOCKER-ISOLATION-STAGE-1/2);
- a tenant's door (tenant/door.py), on its tenant's segment and the platform's: with forwarding
  off it takes only what is addressed to itself (anything else is dropped: Linux net/ipv4/route.c
  `ip_error`); with rp_filter 1 it drops a source it would not route back out of the interface the
  packet came in on; HAProxy listens on its tenant address only, on the ports it forwards, and
  closes a connection from outside the tenant's network; what it accepts it opens anew from its
  platform address to its control plane. Each of these is read from what the platform renders
  (the door's container arguments and HAProxy configuration);
- the kind node, on the platform's segment (and, in builds before the door, on every tenant
  segment: read from the network's create script), answers ARP for every MetalLB address on every
  interface (MetalLB v0.15.3 internal/layer2/announcer.go: no subnet check); on an interface with
  rp_filter 1 it drops a source it would not route back out of that interface; kube-proxy drops a
  source outside the Service's loadBalancerSourceRanges before its DNAT (kubernetes v1.35.4
  pkg/proxy/iptables/proxier.go KUBE-FW-*, KUBE-PROXY-FIREWALL), then DNATs the packet to the
  control plane pod, and kube-network-policies judges the source before any masquerade (v0.8.0
  pkg/networkpolicy/controller.go, POSTROUTING at srcnat-5), unless kindnetd is down (it fails
  open: kind v0.31.0 images/kindnetd/cmd/kindnetd/main.go `FailOpen: true`);
- TCP needs the SYN-ACK back: whoever answered sends it to the segment whose subnet holds the
  source (or its default route, the platform's network); only a sender there with that address,
  or the hop that masqueraded it, gets it.

Not modelled: Docker's raw PREROUTING rule that drops a packet for a container reached from
another bridge (moby v28.5.2; it holds only while br_netfilter passes bridged packets to
iptables): the model judges the door as if it were absent, as the live test does once.
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

    def answering(self, address: str) -> str | None:
        return next((member for member, have in self.members.items() if have == address), None)


@dataclass(frozen=True)
class Door:
    """A tenant's door, as rendered: where it is, what it listens on, whom it admits, whether it
    forwards and filters by reverse path."""

    name: str
    tenant_segment: str
    listens: tuple[str, tuple[int, ...]]  # its tenant address, the ports it forwards
    admits: ipaddress.IPv4Network          # HAProxy's `src` condition
    forwards: bool
    strict_reverse_path: bool


@dataclass
class Topology:
    segments: dict[str, Segment]
    owner: dict[str, str]                     # worker container -> tenant
    pod_cidrs: dict[str, str]                 # tenant -> its cluster's pod CIDR
    api: dict[str, str]                       # tenant -> the API address its workers use
    strict_reverse_path: set[str]             # segments where the kind node has rp_filter 1
    policies: list[dict]
    source_ranges: dict[str, list[str]] = field(default_factory=dict)  # tenant -> its Service's
    doors: dict[str, Door] = field(default_factory=dict)               # tenant -> its door
    control_plane_address: dict[str, str] = field(default_factory=dict)  # tenant -> its Service's
    policy_engine_running: bool = True

    def segment_of(self, container: str) -> Segment:
        return next(s for s in self.segments.values() if container in s.members)

    def route(self, node: str, address: str) -> Segment:
        """The segment `node` sends to `address` on: the one of its segments that holds it, else its
        default route (the platform's network)."""
        return next((s for s in self.segments.values() if node in s.members and s.holds(address)),
                    self.segments[PLATFORM])

    def door_named(self, name: str) -> Door | None:
        return next((door for door in self.doors.values() if door.name == name), None)


@dataclass(frozen=True)
class Verdict:
    connected: bool
    reason: str
    seen_as: str | None = None  # the source address the policy judged


def attempt(topology: Topology, attacker: str, target: str, port: int, via: str | None = None,
            forged: str | None = None, destination: str | None = None) -> Verdict:
    """`attacker` opens a TCP connection to `target`'s API address (or `destination`), from `forged`
    (an address it added) or its own, routed through `via` (a neighbour) or straight to whoever
    answers for the address on its segment."""
    home = topology.segment_of(attacker)
    source = forged or home.members[attacker]
    destination = destination or topology.api[target]
    hop, masqueraded_by = via or _answering(topology, home, destination), None
    if hop not in home.members:
        return Verdict(False, f"{hop} is not on {home.name}: no route")
    if hop in topology.owner:  # another worker forwards, and its kindnetd masquerades
        pods = ipaddress.IPv4Network(topology.pod_cidrs[topology.owner[hop]])
        if ipaddress.IPv4Address(destination) in pods:
            return Verdict(False, "bound for the pod network")
        source, masqueraded_by = home.members[hop], hop
        hop = _answering(topology, home, destination)
    if hop == HOST:
        out = topology.route(HOST, destination)
        if out.name != home.name:
            return Verdict(False, f"Docker drops {home.name} -> {out.name} (DOCKER-ISOLATION)")
        hop = _answering(topology, out, destination)
        if hop == HOST:
            return Verdict(False, f"nothing on {out.name} answers for {destination}")
    door = topology.door_named(hop)
    if door is not None:
        return _through_door(topology, door, home, source, destination, port, target,
                             masqueraded_by or attacker, bool(forged))
    return _at_kind_node(topology, home, source, port, target, masqueraded_by or attacker, bool(forged),
                         attacker)


def _answering(topology: Topology, segment: Segment, address: str) -> str:
    """Who takes a packet for `address` on `segment`: the member with that address, else the kind
    node (MetalLB answers ARP for its addresses on every interface), else this host (the gateway)."""
    member = segment.answering(address)
    if member is not None:
        return member
    if KIND_NODE in segment.members and address in topology.control_plane_address.values():
        return KIND_NODE
    if KIND_NODE in segment.members and address in topology.api.values():
        return KIND_NODE
    return HOST


def _through_door(topology: Topology, door: Door, home: Segment, source: str, destination: str, port: int,
                  target: str, back: str, forged: bool) -> Verdict:
    own_addresses = {s.members[door.name] for s in topology.segments.values() if door.name in s.members}
    if destination not in own_addresses:
        if not door.forwards:
            return Verdict(False, f"the door {door.name} does not forward")
        # A door that forwarded would hand the packet on, unchanged, to the platform's network.
        onward = topology.segments[PLATFORM]
        if _answering(topology, onward, destination) != KIND_NODE:
            return Verdict(False, f"nothing on {onward.name} answers for {destination}")
        return _at_kind_node(topology, onward, source, port, target, back, forged, back)
    if door.strict_reverse_path and topology.route(door.name, source).name != home.name:
        return Verdict(False, f"reverse path: {source} does not route back out of the door's "
                              f"{home.name} side")
    listen_address, ports = door.listens
    if destination != listen_address or port not in ports:
        return Verdict(False, f"refused: the door listens on {listen_address} ports {list(ports)} only")
    if ipaddress.IPv4Address(source) not in door.admits:
        return Verdict(False, f"the door closes it: {source} is outside {door.admits}")
    reply = topology.route(door.name, source)
    if reply.members.get(back) != source and not (forged and reply is home):
        return Verdict(False, f"the reply to {source} goes to {reply.name}, not to {back}", source)
    served = next(tenant for tenant, have in topology.doors.items() if have is door)
    if served != target:
        return Verdict(False, f"the door forwards to {served}'s control plane only")
    platform_address = topology.segments[PLATFORM].members[door.name]
    return _judged(topology, platform_address, port, target)


def _at_kind_node(topology: Topology, home: Segment, source: str, port: int, target: str, back: str,
                  forged: bool, attacker: str) -> Verdict:
    if home.name in topology.strict_reverse_path and topology.route(KIND_NODE, source).name != home.name:
        return Verdict(False, f"reverse path: {source} does not route back out of {home.name}")
    verdict = _judged(topology, source, port, target)
    if not verdict.connected:
        return verdict
    reply = topology.route(KIND_NODE, source)
    if reply.members.get(back) != source and not (forged and reply is home):
        return Verdict(False, f"the reply to {source} goes to {reply.name}, not to {attacker}", source)
    return verdict


def _judged(topology: Topology, source: str, port: int, target: str) -> Verdict:
    """kube-proxy's source ranges, then the control plane's NetworkPolicy, on `source`."""
    ranges = topology.source_ranges.get(target)
    if ranges and not any(ipaddress.IPv4Address(source) in ipaddress.IPv4Network(cidr) for cidr in ranges):
        return Verdict(False, "dropped by the Service's source ranges", source)
    control_plane = Endpoint(target, "10.244.0.20", {"kamaji.clastix.io/name": target})
    if topology.policy_engine_running and not allowed(topology.policies, Endpoint(None, source),
                                                      control_plane, port):
        return Verdict(False, "dropped by the NetworkPolicy", source)
    return Verdict(True, "connected", source)
