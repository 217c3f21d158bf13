"""Which flows the tenant NetworkPolicies allow and deny, by a small evaluator (tests/netpol_eval.py).

Addresses as kind's enforcer sees them (before masquerade): a worker by its fixed address on its
tenant's own network, a pod of a tenant cluster by its worker's (kindnetd masquerades what leaves
the pod network), the host by the gateway of the network it comes from. What a tenant root on its
workers can send beyond that is tests/tenant/test_isolation_paths.py.
"""

from __future__ import annotations

import pytest

from kamaji_hami_platform import network
from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.tenant.network_policy import network_policies
from tests.netpol_eval import Endpoint, allowed

pytestmark = pytest.mark.unit


@pytest.fixture
def policies(dev_config):
    platform = parse_config(dev_config)
    return [p for tenant in platform.tenants for p in network_policies(tenant, platform.management)]


NET = network.layout("172.30.0.0/16")  # the dev stack's platform network
OWN_A, OWN_B = (network.tenant_network("172.24.0.0/16", block) for block in (0, 1))  # its tenants'


def tcp_pod(tenant: str, ip: str) -> Endpoint:
    return Endpoint(tenant, ip, {"kamaji.clastix.io/name": tenant})


TCP_A = tcp_pod("tenant-a", "10.244.0.21")
TCP_B = tcp_pod("tenant-b", "10.244.0.22")
# Workers, their pods and this host reach a control plane through their tenant's door only
# (tenant/door.py): what the control plane sees is the door's platform address.
DOOR_A = Endpoint(None, NET.door_address(0))
DOOR_B = Endpoint(None, NET.door_address(1))
WORKER_A = Endpoint(None, OWN_A.worker_address(0))
WORKER_B = Endpoint(None, OWN_B.worker_address(0))  # also every pod of tenant B's cluster
HOST = Endpoint(None, str(OWN_A.gateway))                        # this host, on A's network
HOST_ON_B = Endpoint(None, str(OWN_B.gateway))                   # ... and on B's
HOST_ON_PLATFORM = Endpoint(None, str(NET.gateway))
KIND_NODE_ROOT = Endpoint(None, "172.30.0.2", node_root=True)   # the kubelet's probes, docker exec
KIND_NODE_OTHER = Endpoint(None, "172.30.0.2")                   # a non-root hostNetwork pod
STRAY_CONTAINER = Endpoint(None, "172.30.0.9")                   # anything else on the platform's network
OLD_BLOCK_A = Endpoint(None, NET.worker_address(0, 5))           # A's shared block, not its door
KAMAJI = Endpoint("kamaji-system", "10.244.0.30", {"app.kubernetes.io/name": "kamaji"})
ETCD = Endpoint("kamaji-system", "10.244.0.31", {"app.kubernetes.io/name": "kamaji-etcd"})
COREDNS = Endpoint("kube-system", "10.244.0.3", {"k8s-app": "kube-dns"})
PROBE_A = Endpoint("tenant-a", "10.244.0.40", {"run": "probe"})
PROBE_B = Endpoint("tenant-b", "10.244.0.41", {"run": "probe"})
OTHER_APP = Endpoint("default", "10.244.0.50", {"app": "web"})


@pytest.mark.parametrize(("source", "destination", "port", "protocol"), [
    (DOOR_A, TCP_A, 6443, "TCP"),             # kubelet, kubeadm join, A's pods, the host: A's door
    (DOOR_A, TCP_A, 8132, "TCP"),             # konnectivity agent
    (KIND_NODE_ROOT, TCP_A, 10257, "TCP"),    # the kubelet's probes of controller-manager
    (KAMAJI, TCP_A, 6443, "TCP"),             # Kamaji controller
    (TCP_A, ETCD, 2379, "TCP"),               # datastore
    (TCP_A, COREDNS, 53, "UDP"),              # DNS
    (PROBE_A, TCP_A, 6443, "TCP"),            # in-namespace tooling reaches its own plane
    (DOOR_B, TCP_B, 6443, "TCP"),             # ... and B's own door B's
])
def test_flows_a_control_plane_needs_are_allowed(policies, source, destination, port, protocol):
    assert allowed(policies, source, destination, port, protocol)


@pytest.mark.parametrize(("source", "destination", "port"), [
    (DOOR_B, TCP_A, 6443),      # tenant B's door: B's nodes, every pod of B's cluster
    (DOOR_B, TCP_A, 8132),
    (DOOR_A, TCP_B, 6443),      # ... in either direction
    (WORKER_A, TCP_A, 6443),    # A's own workers, not through A's door (not on the platform's network)
    (WORKER_B, TCP_A, 6443),
    (HOST, TCP_A, 6443),        # this host on A's network, not through A's door
    (TCP_B, TCP_A, 6443),       # another tenant's control plane
    (PROBE_B, TCP_A, 6443),     # any pod in another tenant's namespace
    (PROBE_A, TCP_B, 6443),
    (OTHER_APP, TCP_A, 6443),   # unrelated management workloads
    (KIND_NODE_OTHER, TCP_A, 6443),  # non-root processes of the kind node
    (STRAY_CONTAINER, TCP_A, 6443),  # any other container on the platform's network
    (HOST_ON_B, TCP_A, 6443),        # B's network's gateway address (claimed by B: see the paths test)
    (HOST_ON_PLATFORM, TCP_A, 6443),  # the platform network's: A's API is on A's network
    (OLD_BLOCK_A, TCP_A, 6443),      # A's block on the shared network is no longer A's
    (DOOR_A, TCP_A, 2379),      # only the API and tunnel ports are open
    (TCP_A, KAMAJI, 8443),      # control plane egress only to the datastore and DNS
    (TCP_A, Endpoint(None, "1.1.1.1"), 443),
    (PROBE_A, ETCD, 2379),      # tooling in the namespace cannot reach the datastore
])
def test_everything_else_is_denied(policies, source, destination, port):
    assert not allowed(policies, source, destination, port)


def test_default_deny_selects_every_pod_in_both_directions(dev_config):
    platform = parse_config(dev_config)
    deny = network_policies(platform.tenants[0], platform.management)[0]
    assert deny["metadata"] == {"name": "default-deny", "namespace": "tenant-a"}
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def test_a_tenant_on_the_shared_network_admits_its_block_and_the_gateway_as_before(dev_config):
    """A tenant created by 0.1.0 (workerNetwork shared) keeps exactly the policy it had."""
    dev_config["tenants"][0]["workerNetwork"] = "shared"
    platform = parse_config(dev_config)
    ingress = network_policies(platform.tenants[0], platform.management)[1]["spec"]["ingress"][0]["from"]
    assert [peer["ipBlock"]["cidr"] for peer in ingress if "ipBlock" in peer] == ["172.30.64.0/25",
                                                                                  "172.30.0.1/32"]


def test_evaluator_is_not_vacuous():
    assert allowed([], PROBE_B, TCP_A, 6443), "without policies everything flows"
