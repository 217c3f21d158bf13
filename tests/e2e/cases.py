"""The GPU acceptance cases (TC-03..TC-08) as functions of one tenant's API, not of a live stack.

The live suite (test_acceptance.py) calls them with clients from the deployed stack;
another tier (e.g. a simulation with real API servers and HAMi's scheduler) can call
them with its own. Expectations come from the fit model's plan for the tenant's config
and from the cards the platform registered, never from literals. Every API call has
`_request_timeout`; every wait has a bound and fails with evidence.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from kamaji_hami_platform.config import PlatformConfig, TenantConfig
from kamaji_hami_platform.gpu import GpuRequest, Span, capacity
from kamaji_hami_platform.gpu.card_fit import CARD_INSUFFICIENT_MEMORY
from kamaji_hami_platform.gpu.devices import (
    GPU_CORES_RESOURCE,
    GPU_MEMORY_RESOURCE,
    GPU_RESOURCE,
    NODE_REGISTER_ANNOTATION,
    GpuDevice,
    parse_node_register_annotation,
    tenant_devices,
)
from kamaji_hami_platform.gpu.render import HAMI_NAMESPACE, SCHEDULER_NAME
from tests.e2e.support import (
    ALLOCATED_ANNOTATION,
    FILTERING_FAILED,
    NODE_LOCK_ANNOTATION,
    REQUEST_TIMEOUT,
    VGPU_NODE_ANNOTATION,
    Expected,
    NodeLock,
    card_totals,
    expect,
    explains,
    gpu_pod,
    parse_allocation,
    parse_node_lock,
    reason_code,
    recorded_cards,
    wait_for,
)

NAMESPACE = "e2e-hami"
SHARE = {GPU_MEMORY_RESOURCE: 20000, GPU_CORES_RESOURCE: 30}
SHARE_PODS = ("share-1", "share-2", "share-3")
REFUSED_POD = "share-refused"
POD_TIMEOUT = 180
# kube-scheduler retries an unschedulable pod after at most podMaxBackoffSeconds, default 10
# (kubernetes v1.35 pkg/scheduler/apis/config/v1/defaults.go): a refusal must outlive one retry.
SCHEDULER_BACKOFF = 10
# TC-08: a freed slot is taken within the platform's lock expiry, one scheduler back-off and this
# slack (the scheduler's own retry, the bind, the kubelet starting the container).
LOCK_SLACK = 75
# HAMi rebuilds the card totals behind its metrics at its 15 s register tick
# (v2.10.0 pkg/scheduler/scheduler.go register -> overviewstatus): three ticks.
METRICS_TIMEOUT = 45
METRICS_PORT = 31993
# TC-08: how soon mock mode's release frees a bound pod's node lock (a watch event, then a pod read
# and an annotate: about a second; the slack is for a loaded machine).
LOCK_RELEASE_TIMEOUT = 30
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

    def devices(self) -> dict[str, list[GpuDevice]]:
        """node -> the cards the config gives it (what HAMi must have registered)."""
        return tenant_devices(self.tenant, self.platform.management.name)

    def metrics(self) -> str:
        """HAMi's scheduler metrics, through the API server's service proxy."""
        return self.core().connect_get_namespaced_service_proxy_with_path(
            f"{SCHEDULER_NAME}:{METRICS_PORT}", HAMI_NAMESPACE, "metrics", _request_timeout=T)


def pod_evidence(t: GpuTenant, pods: list[str], namespace: str = NAMESPACE) -> list[str]:
    """Phase, node, scheduler, HAMi annotations and events of each pod (best effort)."""
    api = t.core()
    lines = []
    for name in pods:
        try:
            pod = api.read_namespaced_pod(name, namespace, _request_timeout=T)
            hami = {k: v for k, v in (pod.metadata.annotations or {}).items() if "hami" in k}
            lines.append(f"pod {namespace}/{name} (uid {pod.metadata.uid}): phase={pod.status.phase} "
                         f"node={pod.spec.node_name} scheduler={pod.spec.scheduler_name} annotations={hami}")
            events = api.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}",
                                               _request_timeout=T)
            lines += [f"  event {e.reason} (pod uid {e.involved_object.uid}): {e.message}"
                      for e in events.items]
        except Exception as error:  # evidence is best effort: never hide the real failure
            lines.append(f"pod {namespace}/{name}: {error}")
    return lines


def cluster_evidence(t: GpuTenant) -> list[str]:
    """Each node's HAMi annotations and GPU allocatable, and the extender's last log lines."""
    api = t.core()
    lines = []
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
    return lines


def evidence(t: GpuTenant, pods: list[str], namespace: str = NAMESPACE) -> str:
    """Events, HAMi annotations of pods and nodes, and the extender's last log lines."""
    return "\n".join([f"tenant {t.name}", *pod_evidence(t, pods, namespace), *cluster_evidence(t)])


def read_pod(t: GpuTenant, name: str, namespace: str = NAMESPACE) -> Any:
    return t.core().read_namespaced_pod(name, namespace, _request_timeout=T)


def pod_phase(t: GpuTenant, name: str) -> str:
    return read_pod(t, name).status.phase


def pod_annotations(t: GpuTenant, name: str) -> dict[str, str]:
    return read_pod(t, name).metadata.annotations or {}


def create_pods(t: GpuTenant, names: tuple[str, ...] | list[str], limits: dict[str, int]) -> None:
    for name in names:
        t.core().create_namespaced_pod(NAMESPACE, gpu_pod(name, limits), _request_timeout=T)


def wait_running(t: GpuTenant, names: list[str], timeout: float = POD_TIMEOUT) -> None:
    wait_for(f"pods {names} of {t.name} Running",
             lambda: all(pod_phase(t, n) == "Running" for n in names), timeout,
             evidence=lambda: evidence(t, names))


def wait_refused(t: GpuTenant, name: str, code: str | Collection[str], namespace: str = NAMESPACE,
                 hold: bool = True) -> str:
    """Wait for HAMi's FilteringFailed event naming `code` (or one of several codes) on this very
    pod (matched by UID: a pod of the same name created earlier has events of its own), then, with
    `hold`, require the pod to stay Pending and unbound across one scheduler back-off; the event's
    message. Without `hold` the caller holds several pods at once (`hold_refused`)."""
    codes = (code,) if isinstance(code, str) else tuple(code)
    uid = read_pod(t, name, namespace).metadata.uid

    def refused() -> str | None:
        events = t.core().list_namespaced_event(namespace, field_selector=f"involvedObject.uid={uid}",
                                                _request_timeout=T)
        return next((e.message for e in events.items
                     if e.reason == FILTERING_FAILED and any(c in (e.message or "") for c in codes)), None)

    message = wait_for(f"{FILTERING_FAILED} naming {' or '.join(codes)} on {name} (uid {uid})", refused,
                       POD_TIMEOUT, evidence=lambda: evidence(t, [name], namespace=namespace))
    if hold:
        hold_refused(t, [name], namespace)
    return message


def hold_refused(t: GpuTenant, names: list[str], namespace: str = NAMESPACE) -> None:
    """Refused pods stay Pending and unbound across one scheduler back-off (one wait for all)."""
    time.sleep(SCHEDULER_BACKOFF + 2)
    for name in names:
        pod = read_pod(t, name, namespace)
        assert pod.status.phase == "Pending" and not pod.spec.node_name, \
            f"{name} was refused, then scheduled within one back-off\n{evidence(t, [name], namespace)}"


def check_cards_empty_and_registered(t: GpuTenant) -> None:
    """The GPU cases' precondition: every card of the config registered on its node as HAMi reads
    it (`hami.io/node-nvidia-register`, and `nvidia.com/gpu` allocatable = the node's task
    slots), the stack's `gpuCards` output the same cards, no pod holding a card
    (`hami.io/vgpu-node`), and HAMi's metrics at 0 for every card. A case run on a card someone
    else uses would judge that someone, not the platform."""
    devices = t.devices()
    assert {node: [d.id for d in cards] for node, cards in devices.items()} == t.cards, \
        f"the stack's gpuCards output {t.cards} is not what its config gives: {devices}"

    def registered() -> list[str] | None:
        problems = []
        for node, cards in devices.items():
            found = t.core().read_node(node, _request_timeout=T)
            listed = parse_node_register_annotation(
                (found.metadata.annotations or {}).get(NODE_REGISTER_ANNOTATION, "[]"))
            if [d.id for d in listed] != [d.id for d in cards]:
                problems.append(f"{node}: {NODE_REGISTER_ANNOTATION} lists {[d.id for d in listed]}")
            slots = str(sum(d.count for d in cards))
            allocatable = (found.status.allocatable or {}).get(GPU_RESOURCE)
            if allocatable != slots:
                problems.append(f"{node}: {GPU_RESOURCE} allocatable {allocatable}, not {slots}")
        return None if problems else ["registered"]

    wait_for(f"the cards of {t.name} registered", registered, POD_TIMEOUT,
             evidence=lambda: evidence(t, []))
    holders = [f"{p.metadata.namespace}/{p.metadata.name}"
               for p in t.core().list_pod_for_all_namespaces(_request_timeout=T).items
               if VGPU_NODE_ANNOTATION in (p.metadata.annotations or {})
               and p.status.phase not in ("Succeeded", "Failed")]
    assert not holders, f"pods of {t.name} hold GPU shares before the cases start: {holders}"
    cards = [d.id for node_cards in devices.values() for d in node_cards]
    last: dict[str, Any] = {}

    def metrics_at_zero() -> bool:
        text = t.metrics()
        last.update({card: card_totals(text, card) for card in cards})
        return all(last[card] == (0.0, 0.0) for card in cards)

    wait_for(f"HAMi's metrics at 0 MiB / 0 cores on every card of {t.name}", metrics_at_zero,
             METRICS_TIMEOUT, interval=5, evidence=lambda: f"last reported (MiB, cores): {last}")


def share_one_card(t: GpuTenant) -> Expected:
    """Create the three reference pods and wait until they run (state for TC-03/05/06/08)."""
    expected = t.plan(SHARE, len(SHARE_PODS))
    assert len(expected.placed) == len(SHARE_PODS), (
        f"the config of {t.name} cannot hold three {SHARE} pods in every order HAMi may choose: "
        f"{expected.plan.placements}")
    create_pods(t, SHARE_PODS, SHARE)
    wait_running(t, list(SHARE_PODS))
    return expected


def fill_pods(t: GpuTenant) -> list[str]:
    """The reference pods and as many more as the tenant's cards take (the planner's count)."""
    request = GpuRequest.from_limits(SHARE)
    assert request is not None
    fitting = capacity(t.devices(), request, policy=t.tenant.hami.gpu_scheduler_policy,
                       node_policy=t.tenant.hami.node_scheduler_policy)
    assert fitting.certain, (
        f"how many {SHARE} pods {t.name} takes depends on HAMi's node ties ({fitting}): "
        "no count of pods is sure to fill it")
    return [f"share-{i}" for i in range(1, fitting.low + 1)]


def fill_cards(t: GpuTenant) -> str:
    """After share_one_card: fill every card as the plan says, then one pod more, which must stay
    Pending with the reason the plan gives; HAMi's message."""
    pods = fill_pods(t)
    expected = t.plan(SHARE, len(pods) + 1)
    refused = expected.plan.placements[-1]
    assert not refused.ok and not refused.maybe_refused, f"the plan does not refuse pod {len(pods) + 1}"
    extra = pods[len(SHARE_PODS):]
    create_pods(t, extra, SHARE)
    wait_running(t, pods)
    create_pods(t, [REFUSED_POD], SHARE)
    return wait_refused(t, REFUSED_POD, refusal_code(refused.reason))


def refusal_code(reason: str) -> str:
    """The code HAMi's event names: `1/1 CardInsufficientCore` or, across nodes,
    `n1: 1/1 CardInsufficientCore; n2: ...` (the first node's, all nodes being full alike)."""
    return reason_code(reason.split("; ")[0])


def recorded_outcome(t: GpuTenant, expected: Expected, pods: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """(node, cards) HAMi recorded for `pods`; fails unless it is an outcome the plan allows."""
    recorded = recorded_cards([pod_annotations(t, name) for name in pods])
    assert explains(expected, recorded), (
        f"HAMi recorded {recorded}; the plan allows only {sorted(expected.outcomes)}\n{evidence(t, pods)}")
    return recorded


def tc03_pods_land_where_the_plan_says(t: GpuTenant, expected: Expected) -> None:
    """The three reference pods share one card, as the plan says: each pod's recorded node and
    cards (hami.io/vgpu-node, vgpu-devices-allocated) are one of the plan's outcomes (any of
    several where HAMi's node choice ties), all on the same card, the card one the stack
    registered; and each pod runs on the node HAMi recorded for it."""
    assert expected.plan.cards_used == Span(1, 1), (
        f"the config of {t.name} does not put three {SHARE} pods on one card (cards in use: "
        f"{expected.plan.cards_used}; gpuSchedulerPolicy {t.tenant.hami.gpu_scheduler_policy}): "
        "TC-03 proves card sharing, give the tenant a config that shares")
    recorded = recorded_outcome(t, expected, list(SHARE_PODS))
    assert len({cards for _, cards in recorded}) == 1, f"the pods do not share one card: {recorded}"
    registered = {card for cards in t.cards.values() for card in cards}
    assert set(recorded[0][1]) <= registered, (recorded, t.cards)
    for name in SHARE_PODS:
        pod = read_pod(t, name)
        hami_node = (pod.metadata.annotations or {}).get(VGPU_NODE_ANNOTATION)
        assert pod.spec.node_name == hami_node, \
            f"{name} runs on {pod.spec.node_name}, HAMi recorded {hami_node}\n{evidence(t, [name])}"


def tc04_webhook_sets_the_scheduler(t: GpuTenant) -> None:
    pod = gpu_pod("webhook-check", {GPU_MEMORY_RESOURCE: 1000, GPU_CORES_RESOURCE: 1})
    assert "schedulerName" not in pod["spec"]
    created = t.core().create_namespaced_pod(NAMESPACE, pod, _request_timeout=T)
    try:
        assert created.spec.scheduler_name == SCHEDULER_NAME, evidence(t, ["webhook-check"])
    finally:
        t.core().delete_namespaced_pod("webhook-check", NAMESPACE, grace_period_seconds=0,
                                       _request_timeout=T)


def tc05_accounting(t: GpuTenant, expected: Expected) -> None:
    """Each pod is charged the planned memory and cores on each of its cards, and HAMi's metrics
    show per card the sum of what its pods were charged (polled)."""
    recorded_outcome(t, expected, list(SHARE_PODS))
    share = (expected.placed[0].memory_mib, expected.placed[0].cores)
    per_card: dict[str, tuple[int, int]] = {}
    for name in SHARE_PODS:
        (container,) = parse_allocation(pod_annotations(t, name).get(ALLOCATED_ANNOTATION, ""))
        assert [(a.memory_mib, a.cores) for a in container] == [share] * len(container), \
            f"{name} was charged {container}, the plan says {share} per card\n{evidence(t, [name])}"
        for allocation in container:
            memory, cores = per_card.get(allocation.card, (0, 0))
            per_card[allocation.card] = (memory + share[0], cores + share[1])
    last: dict[str, tuple[float | None, float | None]] = {}

    def totals_match() -> bool:
        text = t.metrics()
        last.update({card: card_totals(text, card) for card in per_card})
        return all(last[card] == (float(m), float(c)) for card, (m, c) in per_card.items())

    wait_for(f"HAMi's metrics to show {per_card} (MiB, cores) per card", totals_match,
             METRICS_TIMEOUT, interval=5, evidence=lambda: f"last reported: {last}")


def tc07_oversized_pod_refused_for_memory(t: GpuTenant) -> None:
    assert t.tenant.gpus is not None
    too_big = {GPU_MEMORY_RESOURCE: t.tenant.gpus.model.memory_mib + 1}
    (refused,) = t.plan(too_big, 1).refused
    assert refusal_code(refused.reason) == CARD_INSUFFICIENT_MEMORY, refused.reason
    create_pods(t, ["too-big"], too_big)
    wait_refused(t, "too-big", CARD_INSUFFICIENT_MEMORY)


def delete_pods(t: GpuTenant, names: list[str]) -> None:
    for name in names:
        t.core().delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0, _request_timeout=T)
    wait_for(f"{sorted(names)} of {t.name} to be deleted", lambda: not set(names) & {
        p.metadata.name for p in t.core().list_namespaced_pod(NAMESPACE, _request_timeout=T).items},
        POD_TIMEOUT)


def node_lock(t: GpuTenant, node: str) -> NodeLock | None:
    annotations = t.core().read_node(node, _request_timeout=T).metadata.annotations or {}
    return parse_node_lock(annotations.get(NODE_LOCK_ANNOTATION))


def lock_bound(t: GpuTenant) -> int:
    """How soon a freed slot must be taken: the tenant's HAMi node-lock expiry (the backstop of the
    release, should a lock stay), one scheduler back-off and slack."""
    return t.tenant.hami.node_lock_timeout_seconds + SCHEDULER_BACKOFF + LOCK_SLACK


def extender_args(t: GpuTenant) -> list[str]:
    """The command line HAMi's scheduler extender runs with (the chart's Deployment, as deployed:
    HAMi v2.10.0 charts/hami/templates/scheduler/deployment.yaml puts every flag in `command`)."""
    from kubernetes import client as k8s

    deployment = k8s.AppsV1Api(t.client).read_namespaced_deployment(SCHEDULER_NAME, HAMI_NAMESPACE,
                                                                    _request_timeout=T)
    containers = {c.name: c for c in deployment.spec.template.spec.containers}
    extender = containers[EXTENDER_CONTAINER]
    return [*(extender.command or []), *(extender.args or [])]


def locks_of(t: GpuTenant, pods: list[str]) -> dict[str, NodeLock]:
    """node -> the HAMi node lock that names one of `pods`, on the nodes they run on."""
    on_node = {name: pod_annotations(t, name).get(VGPU_NODE_ANNOTATION, "") for name in pods}
    found = {}
    for node in sorted(set(on_node.values()) - {""}):
        lock = node_lock(t, node)
        if lock is not None and lock.namespace == NAMESPACE and lock.pod in on_node:
            found[node] = lock
    return found


def tc08_freed_slot_is_taken_without_touching_locks(full: GpuTenant, neighbour: GpuTenant) -> float:
    """Tenant B runs its own pods while A is full; every lock HAMi took to bind A's pods is released
    (mock mode's release, gpu/lock_release.py: HAMi itself never releases one after a bind, and an
    expired lock stays on the node until the next bind there); then freeing one of A's slots lets
    A's refused pod run within lock_bound(A), no annotation edited by the suite. The release's
    backstop, HAMi's `--node-lock-timeout`, is read from the extender's arguments: with every lock
    released, the run itself cannot show it.
    """
    bound = lock_bound(full)
    backstop = f"--node-lock-timeout={full.tenant.hami.node_lock_timeout}"
    assert backstop in extender_args(full), f"HAMi's extender runs without {backstop}: {extender_args(full)}"
    assert pod_phase(full, REFUSED_POD) == "Pending", evidence(full, [REFUSED_POD])
    share_one_card(neighbour)
    pods = fill_pods(full)
    wait_for(f"the node locks of {full.name}'s pods released after their binds",
             lambda: not locks_of(full, pods), LOCK_RELEASE_TIMEOUT, evidence=lambda: evidence(full, pods))
    victim = pods[0]
    full.core().delete_namespaced_pod(victim, NAMESPACE, grace_period_seconds=0, _request_timeout=T)
    started = time.monotonic()
    wait_running(full, [REFUSED_POD], timeout=bound)
    return time.monotonic() - started
