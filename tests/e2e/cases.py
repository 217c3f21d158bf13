"""The GPU acceptance cases (TC-03..TC-08) as functions of one tenant's API, not of a live stack.

The live suite (test_acceptance.py) calls them with clients from the deployed stack;
another tier (e.g. a simulation with real API servers and HAMi's scheduler) can call
them with its own. Expectations come from the fit model's plan for the tenant's config
and from the cards the platform registered, never from literals. Every API call has
`_request_timeout`; every wait has a bound and fails with evidence.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from components.config import PlatformConfig, TenantConfig
from components.gpu_devices import GPU_CORES_RESOURCE, GPU_MEMORY_RESOURCE, GPU_RESOURCE
from components.gpu_fit import CARD_INSUFFICIENT_MEMORY
from components.hami_render import HAMI_NAMESPACE, SCHEDULER_NAME
from tests.e2e.support import (
    FILTERING_FAILED,
    HAMI_DEFAULT_LOCK_EXPIRY,
    NODE_LOCK_ANNOTATION,
    REQUEST_TIMEOUT,
    Expected,
    NodeLock,
    card_totals,
    expect,
    gpu_pod,
    lock_age_seconds,
    parse_allocation,
    parse_node_lock,
    planned_cards,
    reason_code,
    recorded_cards,
    wait_for,
)

NAMESPACE = "e2e-hami"
SHARE = {GPU_MEMORY_RESOURCE: 20000, GPU_CORES_RESOURCE: 30}
SHARE_PODS = ("share-1", "share-2", "share-3")
FOURTH_POD = "share-4"
POD_TIMEOUT = 180
# HAMi's default node-lock expiry is 5 minutes; the platform's must make this much faster.
LOCK_BOUND = 90
# HAMi rebuilds the card totals behind its metrics at its 15 s register tick
# (v2.10.0 pkg/scheduler/scheduler.go register -> overviewstatus): three ticks.
METRICS_TIMEOUT = 45
METRICS_PORT = 31993
# Seconds of slack between a lock's age and HAMi's default expiry before TC-08 starts over.
FRESH_MARGIN = 30
EXTENDER_CONTAINER = "vgpu-scheduler-extender"
T = REQUEST_TIMEOUT


@dataclass
class GpuTenant:
    """One tenant as the GPU cases see it: its API, its config and its registered cards."""

    client: Any  # kubernetes.client.ApiClient
    platform: PlatformConfig
    tenant: TenantConfig
    cards: dict[str, list[str]]  # node -> card ids the platform registered (stack output)

    @property
    def name(self) -> str:
        return self.tenant.name

    def core(self) -> Any:
        from kubernetes import client as k8s

        return k8s.CoreV1Api(self.client)

    def plan(self, limits: dict[str, int], count: int) -> Expected:
        return expect(self.platform, self.tenant, limits, count)


def evidence(t: GpuTenant, pods: list[str]) -> str:
    """Events, HAMi annotations of pods and nodes, and the extender's last log lines."""
    api = t.core()
    lines = [f"tenant {t.name}"]
    for name in pods:
        try:
            pod = api.read_namespaced_pod(name, NAMESPACE, _request_timeout=T)
            hami = {k: v for k, v in (pod.metadata.annotations or {}).items() if "hami" in k}
            lines.append(f"pod {name}: phase={pod.status.phase} "
                         f"scheduler={pod.spec.scheduler_name} annotations={hami}")
            events = api.list_namespaced_event(NAMESPACE, field_selector=f"involvedObject.name={name}",
                                               _request_timeout=T)
            lines += [f"  event {e.reason}: {e.message}" for e in events.items]
        except Exception as error:  # evidence is best effort: never hide the real failure
            lines.append(f"pod {name}: {error}")
    try:
        for node in api.list_node(_request_timeout=T).items:
            hami = {k: v for k, v in (node.metadata.annotations or {}).items() if k.startswith("hami.io/")}
            gpu = (node.status.allocatable or {}).get(GPU_RESOURCE)
            lines.append(f"node {node.metadata.name}: {hami} {GPU_RESOURCE}={gpu}")
        for pod in api.list_namespaced_pod(HAMI_NAMESPACE, _request_timeout=T).items:
            if pod.metadata.name.startswith(SCHEDULER_NAME):
                log = api.read_namespaced_pod_log(pod.metadata.name, HAMI_NAMESPACE,
                                                  container=EXTENDER_CONTAINER, tail_lines=40,
                                                  _request_timeout=T)
                lines.append(f"--- {pod.metadata.name} extender log (last 40 lines) ---\n{log}")
    except Exception as error:
        lines.append(f"nodes / scheduler log unavailable: {error}")
    return "\n".join(lines)


def pod_phase(t: GpuTenant, name: str) -> str:
    return t.core().read_namespaced_pod(name, NAMESPACE, _request_timeout=T).status.phase


def pod_annotations(t: GpuTenant, name: str) -> dict[str, str]:
    return t.core().read_namespaced_pod(name, NAMESPACE, _request_timeout=T).metadata.annotations or {}


def create_pods(t: GpuTenant, names: tuple[str, ...] | list[str], limits: dict[str, int]) -> None:
    for name in names:
        t.core().create_namespaced_pod(NAMESPACE, gpu_pod(name, limits), _request_timeout=T)


def wait_running(t: GpuTenant, names: list[str], timeout: float = POD_TIMEOUT) -> None:
    wait_for(f"pods {names} of {t.name} Running",
             lambda: all(pod_phase(t, n) == "Running" for n in names), timeout,
             evidence=lambda: evidence(t, names))


def wait_refused(t: GpuTenant, name: str, code: str) -> str:
    """Wait for HAMi's FilteringFailed event naming `code` on a Pending pod; its message."""
    def refused() -> str | None:
        events = t.core().list_namespaced_event(NAMESPACE, field_selector=f"involvedObject.name={name}",
                                                _request_timeout=T)
        return next((e.message for e in events.items
                     if e.reason == FILTERING_FAILED and code in (e.message or "")), None)

    message = wait_for(f"{FILTERING_FAILED} naming {code} on {name}", refused, POD_TIMEOUT,
                       evidence=lambda: evidence(t, [name]))
    assert pod_phase(t, name) == "Pending", evidence(t, [name])
    return message


def share_one_card(t: GpuTenant) -> Expected:
    """Create the three reference pods and wait until they run (state for TC-03/05/06/08)."""
    expected = t.plan(SHARE, len(SHARE_PODS))
    assert len(expected.placed) == len(SHARE_PODS), "the tenant's config cannot hold the reference pods"
    create_pods(t, SHARE_PODS, SHARE)
    wait_running(t, list(SHARE_PODS))
    return expected


def fill_card(t: GpuTenant) -> str:
    """After share_one_card: a fourth pod that must stay Pending; the reason HAMi gives."""
    (refused,) = t.plan(SHARE, len(SHARE_PODS) + 1).refused
    create_pods(t, [FOURTH_POD], SHARE)
    return wait_refused(t, FOURTH_POD, reason_code(refused.reason))


def tc03_pods_land_where_the_plan_says(t: GpuTenant, expected: Expected) -> None:
    """Each pod's recorded node and cards (hami.io/vgpu-node, vgpu-devices-allocated) match the
    plan as a multiset, and the planned cards are the ones the stack registered."""
    registered = {card for cards in t.cards.values() for card in cards}
    planned = planned_cards(expected.placed)
    assert {card for _, cards in planned for card in cards} <= registered, (planned, t.cards)
    recorded = recorded_cards([pod_annotations(t, name) for name in SHARE_PODS])
    assert recorded == planned, f"{recorded} != {planned}\n{evidence(t, list(SHARE_PODS))}"


def tc04_webhook_sets_the_scheduler(t: GpuTenant) -> None:
    pod = gpu_pod("webhook-check", {GPU_MEMORY_RESOURCE: 1000, GPU_CORES_RESOURCE: 1})
    assert "schedulerName" not in pod["spec"]
    created = t.core().create_namespaced_pod(NAMESPACE, pod, _request_timeout=T)
    try:
        assert created.spec.scheduler_name == SCHEDULER_NAME, evidence(t, ["webhook-check"])
    finally:
        t.core().delete_namespaced_pod("webhook-check", NAMESPACE, grace_period_seconds=0,
                                       _request_timeout=T)


def tc05_accounting(t: GpuTenant, expected: Expected, metrics: Callable[[], str]) -> None:
    """Per pod 20000 MiB / 30 cores as planned; the card's totals in HAMi's metrics (polled)."""
    by_cards = {tuple(p.device_ids): p for p in expected.placed}
    for name in SHARE_PODS:
        (container,) = parse_allocation(pod_annotations(t, name).get("hami.io/vgpu-devices-allocated", ""))
        cards = tuple(a.card for a in container)
        assert cards in by_cards, f"{name} got {cards}, no planned pod has them: {list(by_cards)}"
        placement = by_cards[cards]
        assert [(a.memory_mib, a.cores) for a in container] == \
            [(placement.memory_mib, placement.cores)] * len(container), evidence(t, [name])
    per_card: dict[str, tuple[int, int]] = {}
    for p in expected.placed:
        for card in p.device_ids:
            memory, cores = per_card.get(card, (0, 0))
            per_card[card] = (memory + p.memory_mib, cores + p.cores)
    last: dict[str, tuple[float | None, float | None]] = {}

    def totals_match() -> bool:
        text = metrics()
        last.update({card: card_totals(text, card) for card in per_card})
        return all(last[card] == (float(m), float(c)) for card, (m, c) in per_card.items())

    wait_for(f"HAMi's metrics to show {per_card} (MiB, cores) per card", totals_match,
             METRICS_TIMEOUT, interval=5, evidence=lambda: f"last reported: {last}")


def tc07_oversized_pod_refused_for_memory(t: GpuTenant) -> None:
    assert t.tenant.gpus is not None
    too_big = {GPU_MEMORY_RESOURCE: t.tenant.gpus.model.memory_mib + 1}
    (refused,) = t.plan(too_big, 1).refused
    assert reason_code(refused.reason) == CARD_INSUFFICIENT_MEMORY, refused.reason
    create_pods(t, ["too-big"], too_big)
    wait_refused(t, "too-big", CARD_INSUFFICIENT_MEMORY)


def refill(t: GpuTenant) -> None:
    """Delete A's pods, then place three and a Pending fourth again."""
    for name in (*SHARE_PODS, FOURTH_POD):
        t.core().delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0, _request_timeout=T)
    names = {*SHARE_PODS, FOURTH_POD}
    wait_for(f"{sorted(names)} of {t.name} to be deleted", lambda: not names & {
        p.metadata.name for p in t.core().list_namespaced_pod(NAMESPACE, _request_timeout=T).items},
        POD_TIMEOUT)
    share_one_card(t)
    fill_card(t)


def node_lock(t: GpuTenant, node: str) -> NodeLock | None:
    annotations = t.core().read_node(node, _request_timeout=T).metadata.annotations or {}
    return parse_node_lock(annotations.get(NODE_LOCK_ANNOTATION))


def tc08_freed_slot_is_taken_without_touching_locks(full: GpuTenant, neighbour: GpuTenant) -> float:
    """Tenant B runs its own pods while A is full; freeing one of A's slots lets A's pending pod run
    within LOCK_BOUND, no annotation edited.

    With mock cards nothing releases HAMi's node lock after a bind, so one of A's running pods
    holds it. The freed pod is one that does NOT hold it (deleting the holder would release it:
    "holder not found"), and the pending pod must run while the lock is younger than HAMi's
    default expiry: only the platform's short `--node-lock-timeout` can let it through.
    """
    assert pod_phase(full, FOURTH_POD) == "Pending", evidence(full, [FOURTH_POD])
    share_one_card(neighbour)
    node = pod_annotations(full, SHARE_PODS[0]).get("hami.io/vgpu-node", "")
    lock = node_lock(full, node)
    if lock is not None and lock_age_seconds(lock) > HAMI_DEFAULT_LOCK_EXPIRY - LOCK_BOUND - FRESH_MARGIN:
        # Earlier cases took long: HAMi's default expiry could release this lock during the
        # wait. Start A over so the lock is fresh and only the platform's expiry can explain a run.
        refill(full)
        lock = node_lock(full, node)
    assert lock is not None and lock.namespace == NAMESPACE, \
        f"no node lock of {NAMESPACE} on {node}: {lock}\n{evidence(full, list(SHARE_PODS))}"
    victim = next(name for name in SHARE_PODS if name != lock.pod)
    full.core().delete_namespaced_pod(victim, NAMESPACE, grace_period_seconds=0, _request_timeout=T)
    started = time.monotonic()
    wait_running(full, [FOURTH_POD], timeout=LOCK_BOUND)
    age = lock_age_seconds(lock)
    assert age < HAMI_DEFAULT_LOCK_EXPIRY, (
        f"inconclusive: the lock of {lock.pod} was {age:.0f}s old when {FOURTH_POD} ran, older than "
        f"HAMi's default expiry ({HAMI_DEFAULT_LOCK_EXPIRY}s); run TC-08 alone (-k tc08)")
    return time.monotonic() - started
