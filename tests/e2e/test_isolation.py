"""TC-02, continued (issue 40): everything else a tenant root could try, in kind mode.

TC-02 (test_acceptance.py) probes the control planes. This module probes what else of the other
tenant and of the platform a root on a tenant's worker (what a privileged host-network pod can
do) might reach: the other tenant's kubelet, a NodePort, HAMi's scheduler-extender port, a pod
and a ClusterIP; the management cluster's API server, kubelet, CoreDNS and kamaji-etcd; each
straight (through this host) and relayed through the tenant's own door; then bursts of
connections, and a restart of the kind node. Every "closed" has a positive control, the same
target open from where it should be, so a target that is simply down cannot pass; and every
verdict is the reason the connect gave (tests/e2e/support.py), never any failure read as a drop.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

import pytest

from kamaji_hami_platform import versions
from kamaji_hami_platform.gpu.render import HAMI_NAMESPACE, HAMI_RELEASE
from kamaji_hami_platform.management.render import KAMAJI_NAMESPACE, control_plane_container
from kamaji_hami_platform.mirror import mirrored
from kamaji_hami_platform.tenant import door, node_join, own_network
from kamaji_hami_platform.tenant.control_plane import API_PORT, KONNECTIVITY_PORT, api_port
from tests.e2e.cases import NAMESPACE
from tests.e2e.conftest import LiveStack
from tests.e2e.suite_namespaces import core
from tests.e2e.support import (
    PROBE_IMAGE,
    REQUEST_TIMEOUT,
    SUBPROCESS_TIMEOUT,
    burst_from_container,
    burst_from_network,
    container_networks,
    host_network_probe,
    kind_node_address,
    local_probe,
    root_probe,
    stray_container_probe,
    wait_for,
)
from tests.e2e.test_acceptance import management_namespace_probes

pytestmark = pytest.mark.e2e

T = REQUEST_TIMEOUT
LISTENER = "isolation-listener"
LISTENER_PORT = 8080
KUBELET_PORT = 10250
CLOSED = ("closed:timeout", "closed:refused", "closed:unreachable")
BURST_CONNECTIONS = 400
RESTART_TIMEOUT = 600
CONTROL_TIMEOUT = 60  # kube-proxy programs a new Service within seconds; a control is awaited, not read once


@dataclass(frozen=True)
class Target:
    label: str
    address: str
    port: int


def listener_manifests() -> tuple[dict[str, Any], dict[str, Any]]:
    """A pod that answers TCP on LISTENER_PORT (busybox's httpd) and its NodePort Service."""
    labels = {"app": LISTENER}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": LISTENER, "labels": labels},
           "spec": {"terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "httpd", "image": PROBE_IMAGE,
                                    "command": ["httpd", "-f", "-p", str(LISTENER_PORT), "-h", "/tmp"],
                                    "ports": [{"containerPort": LISTENER_PORT}]}]}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": LISTENER},
               "spec": {"type": "NodePort", "selector": labels,
                        "ports": [{"port": LISTENER_PORT, "targetPort": LISTENER_PORT}]}}
    return pod, service


@pytest.fixture(scope="module")
def kind_stack(live: LiveStack) -> LiveStack:
    if not live.platform.management.is_kind:
        pytest.skip("kind mode only: on an existing cluster a tenant's workers are its own hosts "
                    "(docs/security-and-isolation.md)")
    if len(live.platform.tenants) < 2:
        pytest.fail("isolation needs at least two tenants in the stack", pytrace=False)
    shared = [t.name for t in live.platform.tenants if not t.own_network]
    if shared:
        pytest.fail(f"tenants {shared} are on the shared network (workerNetwork: shared), with no door: a "
                    "tenant root there can reach another shared tenant (docs/security-and-isolation.md); "
                    "recreate them on networks of their own", pytrace=False)
    return live


def first_worker(live: LiveStack, tenant: str) -> node_join.Worker:
    return node_join.Worker(live.tenant(tenant), 0, live.platform.management)


def hami_targets(api: Any) -> list[Target]:
    """HAMi's Services in the tenant (its scheduler extender, webhook and metrics): each a
    ClusterIP with no node port (the chart's default is NodePort 31998/31993: HAMi v2.10.0
    charts/hami/values.yaml; the platform renders ClusterIP, gpu/render.py), and as targets every
    port at the Service's address and at each endpoint (the scheduler pod's own address)."""
    services = [s for s in api.list_namespaced_service(HAMI_NAMESPACE, _request_timeout=T).items
                if s.metadata.name.startswith(HAMI_RELEASE)]
    assert services, f"no HAMi Service in {HAMI_NAMESPACE}"
    targets = []
    for service in services:
        node_ports = [p.node_port for p in service.spec.ports if p.node_port]
        assert service.spec.type == "ClusterIP" and not node_ports, \
            f"HAMi's {service.metadata.name} is {service.spec.type} with node ports {node_ports}"
        name = service.metadata.name
        targets += [Target(f"{name} ClusterIP", service.spec.cluster_ip, p.port) for p in service.spec.ports]
        endpoints = api.read_namespaced_endpoints(name, HAMI_NAMESPACE, _request_timeout=T)
        for subset in endpoints.subsets or []:
            targets += [Target(f"{name} pod", a.ip, p.port)
                        for a in subset.addresses or [] for p in subset.ports]
    return targets


@pytest.fixture(scope="module")
def tenant_targets(kind_stack: LiveStack, namespaces: dict[str, Any]) -> dict[str, list[Target]]:
    """Per tenant (its first two): its worker's kubelet, a NodePort, a listening pod and its
    ClusterIP, and HAMi's Services and pods; every one awaited open from the tenant's own worker
    (the positive control: the target is up)."""
    live, found = kind_stack, {}
    for tenant in [t.name for t in live.platform.tenants][:2]:
        api = core(namespaces[tenant])
        pod, service = listener_manifests()
        api.create_namespaced_pod(NAMESPACE, pod, _request_timeout=T)
        created = api.create_namespaced_service(NAMESPACE, service, _request_timeout=T)

        def running(a: Any = api) -> Any:
            read = a.read_namespaced_pod(LISTENER, NAMESPACE, _request_timeout=T)
            return read if read.status.phase == "Running" and read.status.pod_ip else None

        listener = wait_for(f"{tenant}'s {LISTENER} Running", running, 180)
        worker = first_worker(live, tenant)
        found[tenant] = [
            Target("kubelet", worker.address, KUBELET_PORT),
            Target("node port", worker.address, created.spec.ports[0].node_port),
            Target("pod", listener.status.pod_ip, LISTENER_PORT),
            Target("ClusterIP", created.spec.cluster_ip, LISTENER_PORT),
            *hami_targets(api),
        ]
        for target in found[tenant]:
            wait_for(f"{target} open from {worker.name}", lambda w=worker.name, t=target:
                     host_network_probe(w, t.address, t.port) == "open", CONTROL_TIMEOUT)
    return found  # the listener goes with the module's namespace (conftest.py `namespaces`)


def pairs(live: LiveStack) -> list[tuple[str, str]]:
    first, second = (t.name for t in live.platform.tenants[:2])
    return [(first, second), (second, first)]


def own_door(live: LiveStack, tenant: str) -> str:
    return door.tenant_address(live.tenant(tenant), live.platform.management)


def network_containers(network: str) -> list[str]:
    result = subprocess.run(["docker", "network", "inspect", "--format",
                             "{{range .Containers}}{{.Name}} {{end}}", network],
                            capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT, check=True)
    return result.stdout.split()


def test_tc02_no_platform_node_on_a_tenant_network(kind_stack: LiveStack):
    """The kind node is on the platform's network alone (no relay between tenants, no management
    service on a tenant network, no restart that can move its address onto one: issue 40's
    findings 2, 4 and 5), and a tenant's network holds its workers and its door, nothing else."""
    live, management = kind_stack, kind_stack.platform.management
    assert container_networks(control_plane_container(management)) == [management.docker_network]
    for tenant in live.platform.tenants:
        name = own_network.network_name(tenant, management)
        wanted = {*tenant.worker_names(), door.container_name(tenant, management)}
        attached = set(network_containers(name))
        assert attached == wanted, f"on {name}: {sorted(attached)}, expected {sorted(wanted)}"


def test_tc02_a_tenant_root_reaches_nothing_of_the_other_tenant(kind_stack: LiveStack,
                                                               tenant_targets: dict[str, list[Target]]):
    """As root on B's worker: A's kubelet, a NodePort of A's, a pod of A's and its ClusterIP,
    HAMi's Services and scheduler pod in A: none answers, straight (through this host) or relayed
    through B's own door (which forwards nothing). Positive controls: each answers A's own worker
    (the fixture), and A's kubelet and NodePort answer this host, which is on A's network as its
    gateway: they take connections from the network, not only from their node."""
    live, seen = kind_stack, {}
    for own, other in pairs(live):
        attacker = first_worker(live, own).name
        for target in tenant_targets[other]:
            if target.label in ("kubelet", "node port"):
                assert local_probe(target.address, target.port) == "open", f"positive control: {target}"
            straight = host_network_probe(attacker, target.address, target.port)
            relayed = root_probe(attacker, target.address, target.port, "relay", own_door(live, own))
            seen[f"{own} -> {other}'s {target.label}:{target.port}"] = {"straight": straight,
                                                                         "via own door": relayed}
            assert straight in CLOSED and relayed in CLOSED, f"{attacker} -> {other}'s {target}: {seen}"
    print(f"[tc02] {seen}")


def management_targets(live: LiveStack) -> tuple[list[Target], list[Target]]:
    """The management cluster's API server and kubelet at the kind node's address (positive
    control: a container on the platform's network reaches them), and CoreDNS's and kamaji-etcd's
    ClusterIPs (positive control: the kind node reaches them; a cluster address answers inside the
    cluster only)."""
    management = live.platform.management
    node = kind_node_address(control_plane_container(management), management.docker_network)
    api = core(live.management)
    dns = api.read_namespaced_service("kube-dns", "kube-system", _request_timeout=T).spec.cluster_ip
    services = api.list_namespaced_service(KAMAJI_NAMESPACE, _request_timeout=T).items
    etcd = [s.spec.cluster_ip for s in services
            if any(p.port == 2379 for p in s.spec.ports) and s.spec.cluster_ip not in (None, "None")]
    assert etcd, f"no kamaji-etcd Service with a cluster address in {KAMAJI_NAMESPACE}"
    return ([Target("API server", node, API_PORT), Target("kubelet", node, KUBELET_PORT)],
            [Target("CoreDNS", dns, 53), Target("kamaji-etcd", etcd[0], 2379)])


def test_tc02_a_tenant_root_reaches_no_management_service(kind_stack: LiveStack):
    """As root on each tenant's worker: the management API server and kubelet, CoreDNS (which
    would list tenant namespaces) and kamaji-etcd, straight and through the tenant's own door: none
    answers. Positive controls as `management_targets` says."""
    live, seen = kind_stack, {}
    management = live.platform.management
    image = worker_image(live)
    node_services, cluster_services = management_targets(live)
    for target in node_services:
        control = stray_container_probe(management.docker_network, image, target.address, target.port)
        assert control == "open", f"positive control, from the platform's network: {target} -> {control}"
    for target in cluster_services:
        control = host_network_probe(control_plane_container(management), target.address, target.port)
        assert control == "open", f"positive control, on the kind node: {target} -> {control}"
    for target in node_services + cluster_services:
        for own, _ in pairs(live):
            attacker = first_worker(live, own).name
            straight = host_network_probe(attacker, target.address, target.port)
            relayed = root_probe(attacker, target.address, target.port, "relay", own_door(live, own))
            seen[f"{own} -> {target.label}"] = {"straight": straight, "via own door": relayed}
            assert straight in CLOSED and relayed in CLOSED, f"{attacker} -> {target}: {seen}"
    print(f"[tc02] {seen}")


def worker_image(live: LiveStack) -> str:
    """The workers' image as the stack pulls it (from its mirror, if any): on this host already."""
    return mirrored(versions.kind_node_image(live.platform.tenants[0].kubernetes_version),
                    live.platform.images.mirror)


def api_answers(live: LiveStack, tenant: str) -> bool:
    """The tenant's API server answers this host, through the tenant's door."""
    try:
        core(live.tenants[tenant]).list_node(_request_timeout=T)
    except Exception:  # not (yet) up: the caller awaits it
        return False
    return True


def test_tc02_a_burst_of_connections_gets_nothing_through(kind_stack: LiveStack):
    """BURST_CONNECTIONS connects started at once: from B's worker to A's API address (Docker's
    rule between bridges judges them), and from a container on the platform's network that is no
    worker to A's control-plane address (kube-proxy's source ranges, which admit A's door alone).
    Every connect times out, silently: not one gets through and none fails for another reason
    (an address not announced would say `No route to host`). Positive controls: A's API answers
    through its door just before, and the same burst at B's own door connects. Neither path goes
    through kube-network-policies' queue, which fails open when full: this shows the two rules
    that keep tenants apart hold under a burst, not that the queue does."""
    live, management = kind_stack, kind_stack.platform.management
    image, seen = worker_image(live), {}
    for own, other in pairs(live):
        attacker = first_worker(live, own).name
        wait_for(f"{other}'s API through its door", lambda o=other: api_answers(live, o), CONTROL_TIMEOUT)
        own_burst = burst_from_container(attacker, own_door(live, own), api_port(live.tenant(own)),
                                         BURST_CONNECTIONS)
        assert own_burst.get("open", 0) > 0, f"positive control: {attacker} at its own door: {own_burst}"
        their_plane = own_network.control_plane_address(live.tenant(other), management)
        for label, verdicts in (
            (f"{own}'s worker -> {other}'s API",
             burst_from_container(attacker, own_door(live, other), api_port(live.tenant(other)),
                                  BURST_CONNECTIONS)),
            (f"platform network -> {other}'s control plane",
             burst_from_network(management.docker_network, image, their_plane, KONNECTIVITY_PORT,
                                BURST_CONNECTIONS)),
        ):
            seen[label] = verdicts
            assert verdicts == {"closed:timeout": BURST_CONNECTIONS}, f"{label}: {verdicts}"
    print(f"[tc02] verdicts of {BURST_CONNECTIONS} connects: {seen}")


def nodes_ready(client: Any) -> bool:
    try:
        nodes = core(client).list_node(_request_timeout=T).items
    except Exception:  # the API server is not back yet
        return False
    return bool(nodes) and all(any(c.type == "Ready" and c.status == "True"
                                   for c in n.status.conditions or []) for n in nodes)


def worker_reaches_its_api(worker: str) -> bool:
    """From inside the worker, with its kubelet's credentials, through the door to the API server."""
    result = subprocess.run(["docker", "exec", worker, "kubectl", "--kubeconfig",
                             "/etc/kubernetes/kubelet.conf", "get", "--raw", "/healthz",
                             "--request-timeout=10s"],
                            capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT, check=False)
    return result.returncode == 0 and result.stdout.strip() == "ok"


def test_tc02_a_restart_of_the_kind_node_keeps_it_off_tenant_networks(kind_stack: LiveStack):
    """`docker restart` of the kind node (kind's entrypoint takes the first address its hostname
    resolves to as the node IP, and moby reconnects networks in map order: issue 40's finding 4).
    With the node on the platform's network alone its address stays; then every management and
    tenant node is Ready again, each worker reaches its own API server (from inside, with its
    kubelet's credentials, through its door), and the isolation that depends on the restarted
    node holds again: the management namespace and stray-container probes of TC-02 (the control
    planes' policies and source ranges). Runs last in `make e2e`: it restarts what the others use."""
    live, management = kind_stack, kind_stack.platform.management
    container = control_plane_container(management)
    before = (container_networks(container), kind_node_address(container, management.docker_network))
    subprocess.run(["docker", "restart", container], capture_output=True, text=True,
                   timeout=SUBPROCESS_TIMEOUT, check=True)
    after = (container_networks(container), kind_node_address(container, management.docker_network))
    assert after == before, f"the kind node's networks and address, before and after: {before}, {after}"
    wait_for("the management cluster's nodes Ready", lambda: nodes_ready(live.management), RESTART_TIMEOUT, 5)
    tenants = [t.name for t in live.platform.tenants]
    for tenant in tenants:
        wait_for(f"{tenant}'s nodes Ready", lambda c=live.tenants[tenant]: nodes_ready(c), RESTART_TIMEOUT, 5)
        worker = first_worker(live, tenant).name
        wait_for(f"{worker} reaching its API server", lambda w=worker: worker_reaches_its_api(w),
                 RESTART_TIMEOUT, 5)
    seen = management_namespace_probes(live, tenants[0], tenants[1])
    for tenant in tenants[:2]:
        address = own_network.control_plane_address(live.tenant(tenant), management)
        stray = stray_container_probe(management.docker_network, worker_image(live), address, API_PORT)
        assert stray == "closed:timeout", f"after the restart, a stray container -> {tenant}: {stray}"
    print(f"[tc02] after the restart: {seen}")
