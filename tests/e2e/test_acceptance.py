"""TC-01..TC-08 against a deployed stack (design §5).

Expected outcomes come from the fit model's plan for the stack's own config.
The cases run in file order and share one namespace per tenant, created fresh
and deleted at the end; every wait has a timeout and fails with evidence.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from components.gpu_devices import GPU_CORES_RESOURCE, GPU_MEMORY_RESOURCE
from components.hami_render import SCHEDULER_NAME as HAMI_SCHEDULER
from components.tenantcontrolplane import API_PORT
from tests.e2e.conftest import LiveStack
from tests.e2e.support import (
    ALLOCATED_ANNOTATION,
    FILTERING_FAILED,
    Expected,
    expect,
    gpu_pod,
    metric_values,
    parse_allocation,
    probe_pod,
    probe_results,
    reason_code,
    wait_for,
)

pytestmark = pytest.mark.e2e

NAMESPACE = "e2e-hami"
SHARE = {GPU_MEMORY_RESOURCE: 20000, GPU_CORES_RESOURCE: 30}
NODE_READY_TIMEOUT = 300
POD_TIMEOUT = 180
# HAMi's default node-lock expiry is 5 minutes; the platform's must make this much faster.
LOCK_BOUND = 90
# Three of HAMi's 15 s register ticks.
METRICS_TIMEOUT = 45


def core(client: Any) -> Any:
    from kubernetes import client as k8s

    return k8s.CoreV1Api(client)


def pod_phase(client: Any, name: str) -> str:
    return core(client).read_namespaced_pod(name, NAMESPACE).status.phase


def evidence(client: Any, pods: list[str]) -> str:
    """Events, HAMi annotations of pods and nodes, and the extender's last log lines."""
    api = core(client)
    lines = []
    for name in pods:
        try:
            pod = api.read_namespaced_pod(name, NAMESPACE)
            hami = {k: v for k, v in (pod.metadata.annotations or {}).items() if "hami" in k}
            lines.append(f"pod {name}: phase={pod.status.phase} "
                         f"scheduler={pod.spec.scheduler_name} annotations={hami}")
        except Exception as error:
            lines.append(f"pod {name}: {error}")
        events = api.list_namespaced_event(NAMESPACE, field_selector=f"involvedObject.name={name}")
        lines += [f"  event {e.reason}: {e.message}" for e in events.items]
    for node in api.list_node().items:
        hami = {k: v for k, v in (node.metadata.annotations or {}).items() if k.startswith("hami.io/")}
        lines.append(f"node {node.metadata.name}: {hami} gpu={node.status.allocatable.get('nvidia.com/gpu')}")
    schedulers = [p for p in api.list_namespaced_pod("kube-system").items
                  if p.metadata.name.startswith(HAMI_SCHEDULER)]
    for pod in schedulers:
        try:
            log = api.read_namespaced_pod_log(pod.metadata.name, "kube-system",
                                              container="vgpu-scheduler-extender", tail_lines=40)
            lines.append(f"--- {pod.metadata.name} extender log (last 40 lines) ---\n{log}")
        except Exception as error:
            lines.append(f"scheduler log unavailable: {error}")
    return "\n".join(lines)


def create_pods(client: Any, pods: dict[str, dict[str, int]]) -> None:
    for name, limits in pods.items():
        core(client).create_namespaced_pod(NAMESPACE, gpu_pod(name, limits))


def wait_running(client: Any, names: list[str], timeout: float = POD_TIMEOUT) -> None:
    wait_for(f"pods {names} Running", lambda: all(pod_phase(client, n) == "Running" for n in names),
             timeout, evidence=lambda: evidence(client, names))


def wait_refused(client: Any, name: str, code: str) -> str:
    """Wait for HAMi's FilteringFailed event naming `code` on a Pending pod."""
    def refused() -> str | None:
        events = core(client).list_namespaced_event(NAMESPACE, field_selector=f"involvedObject.name={name}")
        for event in events.items:
            if event.reason == FILTERING_FAILED and code in (event.message or ""):
                return event.message
        return None

    message = wait_for(f"{FILTERING_FAILED} naming {code} on {name}", refused, POD_TIMEOUT,
                       evidence=lambda: evidence(client, [name]))
    assert pod_phase(client, name) == "Pending", evidence(client, [name])
    return message


@pytest.fixture(scope="module")
def namespaces(live: LiveStack) -> Iterator[dict[str, Any]]:
    """A fresh test namespace in every tenant; deleted (and awaited) afterwards."""
    from kubernetes.client.exceptions import ApiException

    def delete(client: Any) -> None:
        try:
            core(client).delete_namespace(NAMESPACE)
        except ApiException as error:
            if error.status != 404:
                raise

    def gone(client: Any) -> bool:
        try:
            core(client).read_namespace(NAMESPACE)
        except ApiException as error:
            return error.status == 404
        return False

    for client in live.tenants.values():
        delete(client)
        wait_for(f"leftover namespace {NAMESPACE} to go", lambda c=client: gone(c), 120)
        core(client).create_namespace({"metadata": {"name": NAMESPACE}})
    yield live.tenants
    for client in live.tenants.values():
        delete(client)
    for client in live.tenants.values():
        wait_for(f"namespace {NAMESPACE} to be deleted", lambda c=client: gone(c), 180)


def first_gpu_tenant(live: LiveStack) -> str:
    return next(t.name for t in live.platform.tenants if t.gpus is not None)


def plan_for(live: LiveStack, tenant: str, limits: dict[str, int], count: int) -> Expected:
    return expect(live.platform, live.tenant(tenant), limits, count)


def test_tc01_control_planes_ready_kubeconfigs_work_workers_ready(live: LiveStack):
    from kubernetes import client as k8s

    objects = k8s.CustomObjectsApi(live.management)
    for tenant in live.platform.tenants:
        tcp = objects.get_namespaced_custom_object(
            "kamaji.clastix.io", "v1alpha1", tenant.namespace, "tenantcontrolplanes", tenant.name)
        assert tcp["status"]["kubernetesResources"]["version"]["status"] == "Ready", tcp.get("status")
        expected_nodes = sorted(live.outputs["tenants"][tenant.name]["nodes"])

        def ready_nodes(name: str = tenant.name, wanted: list[str] = expected_nodes) -> list[str] | None:
            nodes = core(live.tenants[name]).list_node().items
            ready = sorted(n.metadata.name for n in nodes
                           if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions))
            return ready if ready == wanted else None

        wait_for(f"workers {expected_nodes} of {tenant.name} Ready", ready_nodes, NODE_READY_TIMEOUT,
                 evidence=lambda name=tenant.name: evidence(live.tenants[name], []))


def test_tc02_isolation_between_tenants(live: LiveStack):
    tenants = [t.name for t in live.platform.tenants]
    if len(tenants) < 2:
        pytest.skip("isolation needs at least two tenants in the stack")
    for name in tenants:
        listed = {n.metadata.name for n in core(live.tenants[name]).list_node().items}
        assert listed == set(live.outputs["tenants"][name]["nodes"]), f"{name} sees {listed}"

    own, other = tenants[0], tenants[1]
    api = core(live.management)
    own_ip = api.read_namespaced_service(own, own).spec.cluster_ip
    other_service = api.read_namespaced_service(other, other)
    targets = {"own": own_ip, "other": other_service.spec.cluster_ip}
    ingress = other_service.status.load_balancer.ingress or []
    if ingress:
        targets["other-lb"] = ingress[0].ip
    pod = f"isolation-probe-{int(time.time())}"
    api.create_namespaced_pod(own, probe_pod(pod, targets, API_PORT))
    try:
        wait_for(f"probe {pod} to finish", lambda: api.read_namespaced_pod(pod, own).status.phase
                 in ("Succeeded", "Failed"), POD_TIMEOUT)
        results = probe_results(api.read_namespaced_pod_log(pod, own))
    finally:
        api.delete_namespaced_pod(pod, own)
    assert results.get("own") == "open", f"the probe cannot reach its own control plane: {results}"
    assert results.get("other") == "closed", f"{own} reached {other}'s control plane: {results}"
    if "other-lb" in targets:
        assert results.get("other-lb") == "closed", f"{own} reached {other} via its LB: {results}"


def test_tc04_gpu_pod_without_scheduler_name_is_mutated(live: LiveStack, namespaces):
    client = namespaces[first_gpu_tenant(live)]
    pod = gpu_pod("webhook-check", {GPU_MEMORY_RESOURCE: 1000, GPU_CORES_RESOURCE: 1})
    assert "schedulerName" not in pod["spec"]
    created = core(client).create_namespaced_pod(NAMESPACE, pod)
    try:
        assert created.spec.scheduler_name == HAMI_SCHEDULER, evidence(client, ["webhook-check"])
    finally:
        core(client).delete_namespaced_pod("webhook-check", NAMESPACE, grace_period_seconds=0)
        wait_for("webhook-check to be deleted", lambda: not [
            p for p in core(client).list_namespaced_pod(NAMESPACE).items
            if p.metadata.name == "webhook-check"], 60)


def test_tc03_three_pods_share_one_card(live: LiveStack, namespaces):
    tenant = first_gpu_tenant(live)
    client = namespaces[tenant]
    expected = plan_for(live, tenant, SHARE, 3)
    assert len(expected.placed) == 3, "the stack's config cannot hold the reference scenario"
    create_pods(client, {f"share-{i}": SHARE for i in (1, 2, 3)})
    wait_running(client, ["share-1", "share-2", "share-3"])
    for placement, name in zip(expected.placed, ("share-1", "share-2", "share-3"), strict=True):
        annotations = core(client).read_namespaced_pod(name, NAMESPACE).metadata.annotations or {}
        (container,) = parse_allocation(annotations[ALLOCATED_ANNOTATION])
        assert [a.card for a in container] == placement.device_ids, evidence(client, [name])


def test_tc05_accounting(live: LiveStack, namespaces):
    tenant = first_gpu_tenant(live)
    client = namespaces[tenant]
    expected = plan_for(live, tenant, SHARE, 3).placed
    card = expected[0].device_ids[0]
    allocations = []
    for name in ("share-1", "share-2", "share-3"):
        annotations = core(client).read_namespaced_pod(name, NAMESPACE).metadata.annotations or {}
        (container,) = parse_allocation(annotations[ALLOCATED_ANNOTATION])
        allocations += container
    for allocation, placement in zip(allocations, expected, strict=True):
        assert (allocation.memory_mib, allocation.cores) == (placement.memory_mib, placement.cores)
    memory = sum(p.memory_mib for p in expected)
    cores = sum(p.cores for p in expected)
    assert (sum(a.memory_mib for a in allocations), sum(a.cores for a in allocations)) == (memory, cores)

    # HAMi rebuilds the card totals behind these metrics at its 15 s register tick
    # (v2.10.0 pkg/scheduler/scheduler.go register -> overviewstatus): poll, never read once.
    samples: dict[str, list[tuple[str, float]]] = {}

    def totals_match() -> bool:
        metrics = core(client).connect_get_namespaced_service_proxy_with_path(
            f"{HAMI_SCHEDULER}:31993", "kube-system", "metrics")
        samples["memory"] = metric_values(metrics, "memory_allocated", card)
        samples["cores"] = metric_values(metrics, "core_allocated", card)
        return (any(value in (memory, memory * 2**20) for _, value in samples["memory"])
                and any(value in (cores, cores / 100) for _, value in samples["cores"]))

    wait_for(f"HAMi's metrics to show {memory} MiB / {cores} cores on {card}", totals_match,
             METRICS_TIMEOUT, interval=5, evidence=lambda: f"last samples: {samples}")


def test_tc06_fourth_pod_is_refused_for_cores(live: LiveStack, namespaces):
    tenant = first_gpu_tenant(live)
    client = namespaces[tenant]
    expected = plan_for(live, tenant, SHARE, 4)
    (refused,) = expected.refused
    create_pods(client, {"share-4": SHARE})
    message = wait_refused(client, "share-4", reason_code(refused.reason))
    assert reason_code(refused.reason) == "CardInsufficientCore", refused.reason
    assert "CardInsufficientCore" in message


def test_tc07_more_than_the_card_memory_is_refused(live: LiveStack, namespaces):
    tenant = live.tenant(first_gpu_tenant(live))
    too_big = {GPU_MEMORY_RESOURCE: tenant.gpus.model.memory_mib + 1}
    (refused,) = plan_for(live, tenant.name, too_big, 1).refused
    assert reason_code(refused.reason) == "CardInsufficientMemory"
    create_pods(namespaces[tenant.name], {"too-big": too_big})
    wait_refused(namespaces[tenant.name], "too-big", "CardInsufficientMemory")


def test_tc08_no_lock_stall_and_no_noisy_neighbour(live: LiveStack, namespaces):
    gpu_tenants = [t.name for t in live.platform.tenants if t.gpus is not None]
    if len(gpu_tenants) < 2:
        pytest.skip("needs two GPU tenants")
    full, neighbour = gpu_tenants[0], gpu_tenants[1]
    assert pod_phase(namespaces[full], "share-4") == "Pending"

    expected = plan_for(live, neighbour, SHARE, 3)
    assert len(expected.placed) == 3
    create_pods(namespaces[neighbour], {f"share-{i}": SHARE for i in (1, 2, 3)})
    wait_running(namespaces[neighbour], ["share-1", "share-2", "share-3"])

    core(namespaces[full]).delete_namespaced_pod("share-1", NAMESPACE, grace_period_seconds=0)
    started = time.monotonic()
    wait_running(namespaces[full], ["share-4"], timeout=LOCK_BOUND)
    print(f"[tc08] pending pod ran {time.monotonic() - started:.0f}s after a slot was freed "
          f"(bound {LOCK_BOUND}s; HAMi's default lock expiry is 300s)")
