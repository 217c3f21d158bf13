"""The kind node's side of tenant isolation on a real Linux kernel (marker `ssh`: the tier that runs
as root in namespaces of its own): a replica in network namespaces of the kind node on two
tenants' networks, each tenant's worker, and this host's two bridges, probed with the live
suite's own root-on-the-worker probe (tests/e2e/support.py `ROOT_PROBE`, what TC-02 runs).

What the replica is: the kind node's interface on each tenant network with the reverse-path filter
the platform sets (`net.ipv4.conf.<if>.rp_filter=1`, tenant/own_network.py), tenant A's API
address on the kind node, which answers ARP for it on every interface as MetalLB does; nothing
else. What it is not: no Docker (this host does not forward between the bridges here, which
Docker's isolation rules would drop), no kube-proxy source ranges, no NetworkPolicy; those are
the unit model's (tests/tenant/test_isolation_paths.py) and the live suite's.

Measured here: B's worker, as root, cannot relay through A's worker (not on its segment) nor send
from an address of A's network (the kernel counts the drop as IPReversePathFilter), while A's
worker and a spare address of A's own network connect (the probes work); and the kernel takes the
larger of `all` and the interface's value, so a loose `all` lets the forged SYN through, which is
why the network's create refuses one.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests import tiers
from tests.e2e.support import PROBE_CONNECT_TIMEOUT, ROOT_PROBE

pytestmark = pytest.mark.ssh

API, PORTS = "172.24.0.250", (6443, 8132)
A_WORKER, A_SPARE, A_GATEWAY = "172.24.0.16", "172.24.0.66", "172.24.0.1"
B_WORKER = "172.24.1.16"
TIMEOUT = 120

# Builds the replica in the network namespace `unshare` gave it (this host's stand-in: the two
# bridges, their gateways), then runs each probe "<name> <netns> <address> <port> <mode> <via>"
# from stdin and prints "<name> <exit status> <kind node's reverse-path drops> <its TCP segments in>",
# the counters as they are after the probe.
REPLICA = r"""
set -eu
mount -t tmpfs tmpfs /run 2>/dev/null || true
mkdir -p /run/netns
ip link set lo up
for t in a b; do
  ip link add br-$t type bridge && ip link set br-$t up
done
ip addr add 172.24.0.1/24 dev br-a && ip addr add 172.24.1.1/24 dev br-b
echo 0 > /proc/sys/net/ipv4/ip_forward
attach() {  # attach NETNS INTERFACE BRIDGE ADDRESS/PREFIX
  ip link add "$2" type veth peer name "$1-$2"
  ip link set "$1-$2" master "$3" up
  ip link set "$2" netns "$1"
  ip -n "$1" addr add "$4" dev "$2"
  ip -n "$1" link set "$2" up
}
for ns in kind wa wb; do ip netns add $ns; ip -n $ns link set lo up; done
attach kind eth1 br-a 172.24.0.2/24
attach kind eth2 br-b 172.24.1.2/24
attach wa eth0 br-a 172.24.0.16/24
attach wb eth0 br-b 172.24.1.16/24
ip -n wa route add default via 172.24.0.1
ip -n wb route add default via 172.24.1.1
ip -n kind route add default via 172.24.0.1
ip netns exec kind sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward
  echo "$RP_ALL" > /proc/sys/net/ipv4/conf/all/rp_filter
  echo 1 > /proc/sys/net/ipv4/conf/eth1/rp_filter
  echo 1 > /proc/sys/net/ipv4/conf/eth2/rp_filter'
ip -n kind addr add 172.24.0.250/32 dev lo
ip netns exec kind python3 -c '
import socket, threading
def serve(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("172.24.0.250", port)); s.listen(16)
    while True:
        s.accept()[0].close()
for port in (6443, 8132):
    threading.Thread(target=serve, args=(port,), daemon=True).start()
threading.Event().wait()' &
listener=$!
trap 'kill $listener 2>/dev/null || true' EXIT
for _ in $(seq 50); do ip netns exec kind sh -c 'cat /proc/net/tcp' | grep -q ' 0A ' && break; sleep 0.1; done
# The kind node's counters: packets its reverse-path filter dropped, TCP segments it received.
counters() {
  ip netns exec kind python3 -c '
def table(path, prefix):
    rows = [line.split() for line in open(path) if line.startswith(prefix)]
    return dict(zip(rows[0][1:], rows[1][1:]))
drops = table("/proc/net/netstat", "TcpExt:")["IPReversePathFilter"]
print(drops, table("/proc/net/snmp", "Tcp:")["InSegs"])'
}
# B's root pins the kind node's address on its network for A's API address (a static neighbour:
# the strongest form of sending there), so a forged packet does leave B's worker.
kind_b=$(ip -n kind -o link show eth2 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
ip -n wb neigh replace 172.24.0.250 lladdr "$kind_b" dev eth0 nud permanent
while read -r name ns address port mode via; do
  status=0
  ip netns exec "$ns" bash -c "$PROBE" root-probe "$address" "$port" "$mode" "$via" "$WAIT" \
    >/dev/null 2>&1 || status=$?
  echo "$name $status $(counters)"
done
"""

PROBES = [
    # name, from, to, port, mode, via
    ("a-direct", "wa", API, "{port}", "relay", "172.24.0.2"),
    ("a-spare", "wa", API, "{port}", "forged", A_SPARE),
    ("b-relay-via-a-worker", "wb", API, "{port}", "relay", A_WORKER),
    ("b-forged-a-spare", "wb", API, "{port}", "forged", A_SPARE),
    ("b-forged-a-gateway", "wb", API, "{port}", "forged", A_GATEWAY),
    ("b-via-kind-node", "wb", API, "{port}", "relay", "172.24.1.2"),
]
OPEN, TIMED_OUT = 0, 124


def missing_prerequisite() -> str | None:
    if os.geteuid() != 0:
        return "the kernel replica makes network namespaces, bridges and veths: it needs root"
    for tool in ("unshare", "ip", "python3"):
        if shutil.which(tool) is None:
            return f"the kernel replica needs {tool}"
    return None


def replica(rp_all: int, port: int) -> dict[str, tuple[int, int, int]]:
    """Each probe's exit status, and the kind node's reverse-path drops and TCP segments received
    once it is done."""
    reason = missing_prerequisite()
    if reason:
        tiers.unavailable("ssh", reason)
    probes = "".join(f"{name} {ns} {address} {port} {mode} {via}\n"
                     for name, ns, address, _, mode, via in PROBES)
    result = subprocess.run(["unshare", "--net", "--mount", "--fork", "bash", "-c", REPLICA], input=probes,
                            capture_output=True, text=True, timeout=TIMEOUT, check=False,
                            env={**os.environ, "PROBE": ROOT_PROBE, "RP_ALL": str(rp_all),
                                 "WAIT": str(PROBE_CONNECT_TIMEOUT)})
    assert result.returncode == 0, result.stderr
    found = {}
    for line in result.stdout.splitlines():
        name, *numbers = line.split()
        found[name] = tuple(int(number) for number in numbers)
    assert set(found) == {probe[0] for probe in PROBES}, result.stdout + result.stderr
    return found


def delta(found: dict[str, tuple[int, int, int]], name: str, before: str, column: int) -> int:
    return found[name][column] - found[before][column]


DROPS, SEGMENTS = 1, 2


@pytest.mark.parametrize("port", PORTS)
def test_b_s_root_cannot_relay_or_forge_its_way_to_a_s_api_address(port):
    found = replica(rp_all=1, port=port)
    status = {name: value[0] for name, value in found.items()}
    # The probes work: A's worker connects, also from a spare address of A's own network.
    assert status["a-direct"] == OPEN and status["a-spare"] == OPEN, found
    # No neighbour on B's segment answers for A's worker: nothing reaches the kind node.
    assert status["b-relay-via-a-worker"] == TIMED_OUT, found
    assert delta(found, "b-relay-via-a-worker", "a-spare", SEGMENTS) == 0, found
    # An address of A's network arriving on the kind node's interface on B's network: the kernel
    # drops it before TCP sees it (the SYN and its retries), however B sends it.
    for name, before in (("b-forged-a-spare", "b-relay-via-a-worker"),
                         ("b-forged-a-gateway", "b-forged-a-spare")):
        assert status[name] == TIMED_OUT, found
        assert delta(found, name, before, DROPS) > 0 and delta(found, name, before, SEGMENTS) == 0, found
    # B's own address reaches the kind node: from there on kube-proxy's source ranges and the
    # NetworkPolicy drop it (not in this replica).
    assert status["b-via-kind-node"] == OPEN, found


def test_a_loose_all_undoes_the_interface_s_strict_filter():
    """The kernel uses max(conf/all, conf/<if>) (Linux Documentation/networking/ip-sysctl.rst,
    rp_filter): with all=2 the forged SYN reaches the kind node's TCP (the reply still goes to A's
    network, so no connection), which is why own_network_create.sh refuses a kind node whose `all`
    is above 1."""
    found = replica(rp_all=2, port=PORTS[0])
    assert found["b-forged-a-spare"][0] == TIMED_OUT
    assert delta(found, "b-forged-a-spare", "b-relay-via-a-worker", DROPS) == 0, found
    assert delta(found, "b-forged-a-spare", "b-relay-via-a-worker", SEGMENTS) > 0, found
