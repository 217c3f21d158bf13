"""TC-00..TC-08 against a deployed stack (docs/development/live-suite.md).

Expected outcomes come from the fit model's plan for the stack's own config and from
the cards the stack registered (its `gpuCards` output). Each case gets the state it
needs from fixtures (created on first use, shared within the run), so `-k tc05` alone
works and one failing case does not turn the others into 404s. Every API call has a
timeout, every wait has a bound and fails with evidence. The GPU cases live in
`cases.py`, shareable with another tier.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any
from urllib.parse import urlparse

import pytest

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import LOAD_BALANCER, TenantConfig
from kamaji_hami_platform.gpu.card_fit import CARD_INSUFFICIENT_CORE
from kamaji_hami_platform.management.render import control_plane_container
from kamaji_hami_platform.mirror import mirrored
from kamaji_hami_platform.tenant import node_join, own_network
from kamaji_hami_platform.tenant.api_clients import source_ranges
from kamaji_hami_platform.tenant.control_plane import API_PORT, KONNECTIVITY_PORT, api_port
from tests.e2e import cases
from tests.e2e.cases import NAMESPACE, GpuTenant
from tests.e2e.conftest import PLATFORM_KUBECONFIGS, LiveStack
from tests.e2e.suite_namespaces import core, delete_namespace, fresh_namespace
from tests.e2e.support import (
    REQUEST_TIMEOUT,
    host_network_probe,
    kind_node_address,
    probe_pod,
    probe_results,
    root_probe,
    stray_container_probe,
    wait_for,
)

pytestmark = pytest.mark.e2e

T = REQUEST_TIMEOUT
NODE_READY_TIMEOUT = 300
TCP_READY_TIMEOUT = 300
PROBE_TIMEOUT = 180
# A management-cluster namespace with no NetworkPolicy at all: a probe from there is
# refused by the target tenant's ingress policy alone.
UNPOLICED_NAMESPACE = "e2e-unpoliced"


def gpu_tenants(live: LiveStack, namespaces: dict[str, Any]) -> list[GpuTenant]:
    return [GpuTenant(namespaces[t.name], live.platform, t, live.gpu_cards(t.name))
            for t in live.platform.tenants if t.gpus is not None]


@pytest.fixture(scope="module")
def gpu_a(live: LiveStack, namespaces) -> GpuTenant:
    tenants = gpu_tenants(live, namespaces)
    if not tenants:
        pytest.fail("the stack has no GPU tenant: TC-03..TC-08 need one", pytrace=False)
    return tenants[0]


@pytest.fixture(scope="module")
def gpu_b(live: LiveStack, namespaces) -> GpuTenant:
    tenants = gpu_tenants(live, namespaces)
    if len(tenants) < 2:
        pytest.fail("the stack has one GPU tenant: TC-08 needs two", pytrace=False)
    return tenants[1]


@pytest.fixture(scope="module")
def empty_cards(live: LiveStack, namespaces) -> list[GpuTenant]:
    """Every GPU tenant's cards registered and unused: the GPU cases' precondition (TC-00)."""
    tenants = gpu_tenants(live, namespaces)
    for tenant in tenants:
        cases.check_cards_empty_and_registered(tenant)
    return tenants


@pytest.fixture(scope="module")
def shared_card(gpu_a: GpuTenant, empty_cards):
    """Tenant A's three reference pods, Running (TC-03, TC-05, TC-06, TC-08)."""
    return cases.share_one_card(gpu_a)


@pytest.fixture(scope="module")
def full_card(gpu_a: GpuTenant, shared_card) -> str:
    """Tenant A's cards filled as the plan says, and one pod more Pending with HAMi's refusal
    (TC-06, TC-08); the event's message."""
    return cases.fill_cards(gpu_a)


def test_tc00_gpu_cards_registered_and_empty(empty_cards: list[GpuTenant]):
    """Runs first: a GPU case on a card someone else uses would judge that someone."""
    assert empty_cards, "the stack has no GPU tenant"


def control_plane_ready(objects: Any, tenant: TenantConfig, last: dict[str, Any]) -> bool:
    """Whether Kamaji reports the tenant's control plane Ready (its status kept in `last`)."""
    tcp = objects.get_namespaced_custom_object(
        "kamaji.clastix.io", "v1alpha1", tenant.namespace, "tenantcontrolplanes", tenant.name,
        _request_timeout=T)
    last["status"] = tcp.get("status")
    version = ((last["status"] or {}).get("kubernetesResources") or {}).get("version") or {}
    return version.get("status") == "Ready"


def test_tc01_control_planes_ready_kubeconfigs_work_workers_ready(live: LiveStack):
    from kubernetes import client as k8s

    objects = k8s.CustomObjectsApi(live.management)
    for tenant in live.platform.tenants:
        last: dict[str, Any] = {}
        ready = partial(control_plane_ready, objects, tenant, last)
        wait_for(f"TenantControlPlane {tenant.name} Ready", ready, TCP_READY_TIMEOUT,
                 evidence=lambda seen=last: f"last status: {seen.get('status')}")
        expected_nodes = sorted(live.outputs["tenants"][tenant.name]["nodes"])

        def ready_nodes(name: str = tenant.name, wanted: list[str] = expected_nodes) -> list[str] | None:
            nodes = core(live.tenants[name]).list_node(_request_timeout=T).items
            ready = sorted(n.metadata.name for n in nodes
                           if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions))
            return ready if ready == wanted else None

        wait_for(f"workers {expected_nodes} of {tenant.name} Ready", ready_nodes, NODE_READY_TIMEOUT)


def run_probe(client: Any, namespace: str, targets: dict[str, str], port: int = API_PORT) -> dict[str, str]:
    """A pod in `namespace` of the cluster behind `client` tries each target's API port."""
    api = core(client)
    pod = f"isolation-probe-{int(time.time() * 1000) % 10**8}"
    api.create_namespaced_pod(namespace, probe_pod(pod, targets, port), _request_timeout=T)
    try:
        wait_for(f"probe {pod} to finish", lambda: api.read_namespaced_pod(
            pod, namespace, _request_timeout=T).status.phase in ("Succeeded", "Failed"), PROBE_TIMEOUT)
        return probe_results(api.read_namespaced_pod_log(pod, namespace, _request_timeout=T))
    finally:
        api.delete_namespaced_pod(pod, namespace, grace_period_seconds=0, _request_timeout=T)


POLICY_DROP = "closed:timeout"
NO_NEIGHBOUR = "closed:unreachable"
KUBELET_PORT = 10250


def cross_tenant_credentials(live: LiveStack, own: str, other: str) -> str:
    """`own`'s admin credentials (the tenant admins' and the platform's), sent to `other`'s API
    server, are refused: its certificate is not signed by `own`'s CA (and, with verification off,
    its client certificate is not `other`'s)."""
    import yaml
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    verdicts = []
    for output in ("tenantKubeconfigs", PLATFORM_KUBECONFIGS):
        document = yaml.safe_load(live.outputs[output][own])
        for cluster in document["clusters"]:
            cluster["cluster"]["server"] = live.outputs["tenants"][other]["endpoint"]
        for verify in (True, False):
            if not verify:
                for cluster in document["clusters"]:
                    cluster["cluster"].pop("certificate-authority-data", None)
                    cluster["cluster"]["insecure-skip-tls-verify"] = True
            api = k8s.CoreV1Api(k8s_config.new_client_from_config_dict(document))
            try:
                api.list_namespace(_request_timeout=T)
            except Exception as error:  # TLS failure, or 401/403 from the other API server
                verdicts.append(type(error).__name__)
                continue
            pytest.fail(f"{own}'s {output} listed {other}'s namespaces (verify TLS: {verify})",
                        pytrace=False)
    return "refused: " + ", ".join(verdicts)


def endpoint_address(live: LiveStack, tenant: str) -> str:
    """The tenant's API address (its MetalLB address), from the stack's `endpoint` output."""
    return urlparse(live.outputs["tenants"][tenant]["endpoint"]).hostname or ""


def test_tc02_isolation_between_tenants(live: LiveStack, namespaces):
    """Tenant B reaches tenant A's control plane from nowhere B controls, and the other way
    round: not from a pod of B's cluster, not from B's worker's own network, not as root on B's
    worker (routing through A's worker, the kind node or this host, or sending from an address of
    A's network), not from a management namespace; while A's own pod and A's own worker reach it
    (positive controls, or "closed" would prove nothing). "Closed" must be a drop (a timeout), the
    policy's verdict: a refusal would be something else (no endpoint, a reset); routing through the
    other tenant's worker must find no such neighbour (`closed:unreachable`).
    kube-network-policies drops a packet if either side denies it: the probe from a management
    namespace without any policy tests the target's ingress alone."""
    tenants = [t.name for t in live.platform.tenants]
    if len(tenants) < 2:
        pytest.fail("isolation needs at least two tenants in the stack", pytrace=False)
    for name in tenants:
        listed = {n.metadata.name for n in core(live.tenants[name]).list_node(_request_timeout=T).items}
        assert listed == set(live.outputs["tenants"][name]["nodes"]), f"{name} sees {listed}"
    first, second = tenants[0], tenants[1]
    kind = live.platform.management.is_kind
    seen: dict[str, Any] = {"exposure": service_exposure(live, tenants)}
    if not kind:
        # On an existing cluster kube-proxy masquerades what reaches a LoadBalancer or NodePort
        # Service from outside (kubernetes v1.35.4 pkg/proxy/iptables/proxier.go, "masquerade
        # traffic for ... external destinations"; Kamaji's Service keeps externalTrafficPolicy
        # Cluster), so the control plane's policy sees a management node, which apiClientCidrs
        # admits. Before that, a LoadBalancer's source ranges (checked above) keep other tenants'
        # hosts out; NodePort exposure has no such filter, and isolation at the API is its
        # authentication (docs/security-and-isolation.md). The in-cluster probes below still
        # judge the policy itself.
        for own, other in ((first, second), (second, first)):
            seen[f"{own} -> {other}"] = cross_tenant_credentials(live, own, other)
    for own, other in ((first, second), (second, first)) if kind else ():
        mine, theirs = endpoint_address(live, own), endpoint_address(live, other)
        from_pod = run_probe(namespaces[own], NAMESPACE, {"own": mine, "other": theirs})
        assert from_pod.get("own") == "open", f"a pod of {own} cannot reach its own control plane: {from_pod}"
        assert from_pod.get("other") == POLICY_DROP, f"a pod of {own} -> {other}'s control plane: {from_pod}"
        worker = live.outputs["tenants"][own]["nodes"][0]
        for port in (API_PORT, KONNECTIVITY_PORT):
            assert host_network_probe(worker, mine, port) == "open", f"{worker} -> its own {mine}:{port}"
            reached = host_network_probe(worker, theirs, port)
            assert reached == POLICY_DROP, f"{worker} (host network) -> {other}'s {theirs}:{port}: {reached}"
        seen[f"{own} -> {other}"] = {"pod": from_pod, "worker": "dropped",
                                     "root on the worker": root_on_worker_probes(live, own, other)}

    stray = stray_probes(live, tenants[:2]) if kind else "no Docker network on an existing cluster"
    seen["management namespaces"] = management_namespace_probes(live, first, second)
    print(f"[tc02] {seen}; from a stray container: {stray}")


def root_on_worker_probes(live: LiveStack, own: str, other: str) -> dict[str, str]:
    """As root on `own`'s worker (a privileged host-network pod can do as much): send to
    `other`'s API through `other`'s worker and this host, to `other`'s control plane address, the
    kind node's API server and kubelet through `own`'s door (which forwards nothing), and from an
    address of `other`'s network (an unused worker address, its gateway's, sent by the gateway).
    Every one is dropped, but the route through `other`'s worker, which finds no such neighbour on
    `own`'s network. Positive controls: `own`'s API straight to its door, and from a spare address of `own`'s
    network (the door admits its whole network)."""
    management = live.platform.management
    attacker, victim = live.tenant(own), live.tenant(other)
    for tenant in (attacker, victim):
        if not tenant.own_network:
            pytest.fail(f"tenant {tenant.name} is on the shared network (workerNetwork shared): a tenant "
                        "root on its workers can reach the other's control plane there (docs/"
                        "security-and-isolation.md); recreate it on a network of its own", pytrace=False)
    worker = live.outputs["tenants"][own]["nodes"][0]
    mine, theirs = endpoint_address(live, own), endpoint_address(live, other)
    home, away = (own_network.tenant_network(t, management) for t in (attacker, victim))
    kind_node = kind_node_address(control_plane_container(management), management.docker_network)
    their_plane = own_network.control_plane_address(victim, management)
    found: dict[str, str] = {}
    for port in (API_PORT, KONNECTIVITY_PORT):
        for label, address, target_port, mode, via, expected in (
            ("own, through its door", mine, port, "relay", mine, "open"),
            ("own, from a spare address", mine, port, "forged", home.worker_address(attacker.workers),
             "open"),
            # Not on this network: nobody answers for the next hop (`No route to host`), nothing is sent.
            ("via its worker", theirs, port, "relay", node_join.Worker(victim, 0, management).address,
             NO_NEIGHBOUR),
            ("via this host", theirs, port, "relay", str(home.gateway), POLICY_DROP),
            ("its control plane, via the own door", their_plane, port, "relay", mine, POLICY_DROP),
            ("the kind node's API server, via the own door", kind_node, API_PORT, "relay", mine, POLICY_DROP),
            ("the kind node's kubelet, via the own door", kind_node, KUBELET_PORT, "relay", mine,
             POLICY_DROP),
            ("from an unused address of its network", theirs, port, "forged",
             away.worker_address(victim.workers), POLICY_DROP),
            ("from its gateway's address", theirs, port, "forged", str(away.gateway), POLICY_DROP),
        ):
            found[f"{label}:{port}"] = root_probe(worker, address, target_port, mode, via)
            assert found[f"{label}:{port}"] == expected, \
                f"root on {worker} -> {address}:{target_port} {label}: {found}"
    return found


def service_exposure(live: LiveStack, tenants: list[str]) -> dict[str, str]:
    """Each control plane's Service as the isolation relies on it: no node ports behind the
    platform's MetalLB (kube-proxy does not filter node ports by source), and a LoadBalancer's
    source ranges exactly the tenant's API clients (its own network on kind; its hosts and
    apiClientCidrs on an existing cluster)."""
    management = live.platform.management
    api, found = core(live.management), {}
    for name in tenants:
        service = api.read_namespaced_service(name, name, _request_timeout=T)
        ports = [port.node_port for port in service.spec.ports if port.node_port]
        if management.api_exposure == LOAD_BALANCER and management.install_metallb:
            assert not ports, f"{name}'s Service has node ports {ports}: they bypass the source filter"
        if management.api_exposure == LOAD_BALANCER:
            wanted = source_ranges(live.tenant(name), management)
            assert sorted(service.spec.load_balancer_source_ranges or []) == sorted(wanted), name
        ranges = service.spec.load_balancer_source_ranges
        found[name] = f"node ports {ports or 'none'}, source ranges {ranges}"
    return found


def management_namespace_probes(live: LiveStack, first: str, second: str) -> dict[str, Any]:
    """From each tenant's control-plane namespace toward the other tenant (its Service, and on
    kind its LoadBalancer address), and from a management namespace without any policy toward
    both: every one dropped; each namespace reaches its own control plane (the positive control)."""
    api = core(live.management)
    cluster_ips = {name: api.read_namespaced_service(name, name, _request_timeout=T).spec.cluster_ip
                   for name in (first, second)}
    kind = live.platform.management.is_kind
    found: dict[str, Any] = {}
    for own, other in ((first, second), (second, first)):
        targets = {"own": cluster_ips[own], "other": cluster_ips[other]}
        if kind:  # a pod to a LoadBalancer address is masqueraded on an existing cluster (see TC-02)
            targets["other-lb"] = endpoint_address(live, other)
        result = run_probe(live.management, own, targets, api_port(live.tenant(own)))
        assert result.get("own") == "open", f"{own}'s namespace cannot reach its own control plane: {result}"
        for label in set(targets) - {"own"}:
            assert result.get(label) == POLICY_DROP, f"{own}'s namespace -> {other} ({label}): {result}"
        found[own] = result
    fresh_namespace(live.management, UNPOLICED_NAMESPACE)
    try:
        for name in (first, second):
            unpoliced = run_probe(live.management, UNPOLICED_NAMESPACE, {name: cluster_ips[name]},
                                  api_port(live.tenant(name)))
            assert unpoliced.get(name) == POLICY_DROP, \
                f"from a namespace with no policy, {name}'s control plane answered {unpoliced}: " \
                "its ingress does not deny"
            found[f"unpoliced -> {name}"] = unpoliced[name]
    finally:
        delete_namespace(live.management, UNPOLICED_NAMESPACE)
    return found


def stray_probes(live: LiveStack, tenants: list[str]) -> dict[str, str]:
    """A container on the platform's network that is no worker reaches no control plane (a tenant
    API address on the tenant's own network is behind Docker's isolation of the bridges, one on
    the shared network behind the policy); the kind node's own API server (host network, policed
    by nobody) answers it: the positive control that the container's network works at all."""
    management = live.platform.management
    platform_network = management.docker_network
    # The workers' image as the stack pulls it (from its mirror, if it names one): on this host already.
    image = mirrored(versions.kind_node_image(live.platform.tenants[0].kubernetes_version),
                     live.platform.images.mirror)
    kind_api = kind_node_address(control_plane_container(management), platform_network)
    found = {"kind node API": stray_container_probe(platform_network, image, kind_api, API_PORT)}
    assert found["kind node API"] == "open", f"positive control: {found}"
    for tenant in tenants:
        address = endpoint_address(live, tenant)
        for port in (API_PORT, KONNECTIVITY_PORT):
            found[f"{tenant}:{port}"] = stray_container_probe(platform_network, image, address, port)
            assert found[f"{tenant}:{port}"] == POLICY_DROP, f"a stray container -> {tenant}:{port}: {found}"
    return found


def test_tc04_gpu_pod_without_scheduler_name_is_mutated(gpu_a: GpuTenant):
    cases.tc04_webhook_sets_the_scheduler(gpu_a)


def test_tc03_three_pods_share_one_card(gpu_a: GpuTenant, shared_card):
    cases.tc03_pods_land_where_the_plan_says(gpu_a, shared_card)


def test_tc05_accounting(gpu_a: GpuTenant, shared_card):
    cases.tc05_accounting(gpu_a, shared_card)


def test_tc06_one_pod_more_than_the_cards_take_is_refused_for_cores(full_card: str):
    assert CARD_INSUFFICIENT_CORE in full_card, full_card


def test_tc07_more_than_the_card_memory_is_refused(gpu_a: GpuTenant):
    cases.tc07_oversized_pod_refused_for_memory(gpu_a)


def test_tc08_no_lock_stall_and_no_noisy_neighbour(gpu_a: GpuTenant, gpu_b: GpuTenant, full_card):
    seconds = cases.tc08_freed_slot_is_taken_without_touching_locks(gpu_a, gpu_b)
    print(f"[tc08] every node lock released after the binds; the refused pod ran {seconds:.0f}s after a "
          f"slot was freed (bound {cases.lock_bound(gpu_a)}s from hami.nodeLockTimeout "
          f"{gpu_a.tenant.hami.node_lock_timeout}, the release's backstop)")
