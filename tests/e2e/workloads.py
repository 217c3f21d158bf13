"""A tenant's declared GPU workloads as the live suite deploys and judges them: pure parts.

The planner (kamaji_hami_platform/gpu/workloads.py) has every replica created together, as
controllers create them, and HAMi placing them in any order. The live case does the same: it
creates every pod at once, then waits until each runs or is refused. Each pod is judged on its
own against the planner's outcomes: a running pod's node must be one its workload may take, its
cards on that node, and each card charged the MiB and cores the plan charges; a refused pod's
workload must be one the plan may refuse, for a reason the plan gives (HAMi's, kube-scheduler's,
or the API server's at creation); and together the pods must leave the cards in one of the states
the walk over every order ends in (up to swapping identical nodes), with each workload's counts the
export's. Unit-tested in tests/e2e/unit/test_workloads.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import (
    WEBHOOK_EXCLUDED_NAMESPACES,
    GpuWorkloadConfig,
    PlatformConfig,
    TenantConfig,
)
from kamaji_hami_platform.gpu import GpuDevice, Span
from kamaji_hami_platform.gpu.card_fit import FULL_CARD_CORES, USE_GPU_TYPE
from kamaji_hami_platform.gpu.orders import OrderPlan, plan_any_order
from kamaji_hami_platform.gpu.placement import _Planner
from kamaji_hami_platform.gpu.workloads import (
    Hardware,
    _hami_quotas,
    admit,
    batches_of,
    plan_workloads,
    tenant_hardware,
    workload_request,
)
from tests.e2e.support import ALLOCATED_ANNOTATION, VGPU_NODE_ANNOTATION, Allocation, parse_allocation

# Every pod of the case carries its workload's name here: cleanup (and the removal of an interrupted
# run's pods) selects on the key, so a team's own pods in the same namespace are never touched.
WORKLOAD_LABEL = "io.kamaji-hami-platform/e2e-workload"
POD_PREFIX = "e2e-"
# Pause sleeps until killed and needs no pull on kindest/node (containerd's preloaded sandbox image).
PAUSE_IMAGE = versions.KIND_NODE_PAUSE_IMAGE
RUNNING = "Running"
REFUSED = "refused"
REFUSED_AT_CREATION = "refused at creation"
# HAMi's reason codes are CamelCase words (`CardInsufficientCore`); node names are DNS labels.
_CODE = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b")


@dataclass(frozen=True)
class Replica:
    """One pod of a declared workload: its number within the workload, and within the tenant."""

    workload: GpuWorkloadConfig
    number: int  # 1-based, within its workload
    position: int  # 1-based, within the tenant's declared sequence

    @property
    def pod(self) -> str:
        return f"{POD_PREFIX}{self.workload.name}-{self.number}"

    @property
    def namespace(self) -> str:
        return self.workload.namespace


def replicas(workloads: tuple[GpuWorkloadConfig, ...]) -> list[Replica]:
    """Every replica, workloads as declared, each one's replicas in turn (all created at once)."""
    sequence = [(w, n) for w in workloads for n in range(1, w.replicas + 1)]
    return [Replica(w, n, position) for position, (w, n) in enumerate(sequence, start=1)]


def namespaces(workloads: tuple[GpuWorkloadConfig, ...]) -> list[str]:
    """The namespaces the workloads run in, first use first."""
    return list(dict.fromkeys(w.namespace for w in workloads))


def bypassing_namespaces(workloads: tuple[GpuWorkloadConfig, ...]) -> list[str]:
    """Namespaces HAMi's webhook never sees: pods there keep the default scheduler, so HAMi would
    not place them and the plan would describe nothing that happens."""
    return [ns for ns in namespaces(workloads) if ns in WEBHOOK_EXCLUDED_NAMESPACES]


def replica_pod(replica: Replica, image: str = PAUSE_IMAGE) -> dict[str, Any]:
    """The pod of one replica: the workload's limits (what the planner planned), its card type as
    HAMi's annotation, no schedulerName (HAMi's webhook must set it), labelled with the workload."""
    workload = replica.workload
    metadata: dict[str, Any] = {"name": replica.pod, "namespace": replica.namespace,
                                "labels": {WORKLOAD_LABEL: workload.name}}
    if workload.type:
        metadata["annotations"] = {USE_GPU_TYPE: workload.type}
    container = {"name": "main", "image": image, "imagePullPolicy": "IfNotPresent",
                 "resources": {"limits": {k: str(v) for k, v in workload.limits().items()}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "containers": [container]}}


@dataclass(frozen=True)
class DeclaredPlan:
    """What the planner says of a tenant's declared workloads: per workload its batch, what the
    walk over every order met, every end state, and the export."""

    replicas: list[Replica]
    walk: OrderPlan
    planner: _Planner
    batch_of: dict[str, int]  # workload name -> batch
    creation_refusals: dict[str, str]  # workload name -> the API server's refusal ("" none)
    created: dict[str, int]  # workload name -> how many of its pods the API server creates
    exported: dict[str, Any]  # WorkloadPlan.as_output(): what the stack's gpuPlan must be

    def charge(self, workload: GpuWorkloadConfig) -> tuple[int, int]:
        """MiB and cores HAMi records per card for one pod of the workload."""
        request = workload_request(workload)
        first = self.planner.base[self.planner.names[0]][0]
        return request.memory_on(first), min(request.coresreq, FULL_CARD_CORES)

    def nodes(self, workload: GpuWorkloadConfig) -> set[str]:
        return {node for node, _ in self.walk.outcomes[self.batch_of[workload.name]].options}

    def reasons(self, workload: GpuWorkloadConfig) -> list[str]:
        return list(self.walk.outcomes[self.batch_of[workload.name]].refusals)


def declared_plan(platform: PlatformConfig, tenant: TenantConfig) -> DeclaredPlan:
    """The oracle for one tenant: the walk over every order to its every end; ValueError when there
    are too many to follow (a live run could not be judged)."""
    cluster = platform.management.name
    hardware: Hardware = tenant_hardware(tenant, cluster)
    admission = admit(tenant)
    batches, owner = batches_of(tenant, admission)
    walk = plan_any_order(hardware.nodes, batches, policy=tenant.hami.gpu_scheduler_policy,
                          node_policy=tenant.hami.node_scheduler_policy, quotas=_hami_quotas(tenant),
                          pod_room=hardware.pod_room, every_end=True, floating=hardware.floating)
    if not walk.complete:
        raise ValueError(f"more than {walk.states} states over the orders HAMi may take")
    planner = walk.planner
    assert planner is not None
    names = [w.name for w in tenant.gpu_workloads]
    return DeclaredPlan(replicas(tenant.gpu_workloads), walk, planner, dict(zip(names, owner, strict=True)),
                        dict(zip(names, admission.refusals, strict=True)),
                        dict(zip(names, admission.created, strict=True)),
                        plan_workloads(tenant, cluster).as_output())


def refusal_codes(reasons: list[str]) -> list[str]:
    """HAMi's (and kube-scheduler's) reason codes in the plan's refusals."""
    codes = {code for reason in reasons for code in _CODE.findall(reason)}
    if any("Too many pods" in reason for reason in reasons):
        codes.add("Too many pods")
    return sorted(codes)


@dataclass(frozen=True)
class Seen:
    """What one replica's pod did: Running with the cards HAMi recorded (each with its MiB and
    cores), refused by the scheduler (Pending and unbound), refused at creation (with the API
    server's message), or another state (its phase, with `bound` when Pending on a node)."""

    replica: Replica
    state: str
    node: str = ""
    cards: tuple[Allocation, ...] = ()
    message: str = ""


def observed(replica: Replica, phase: str, node_name: str | None, annotations: dict[str, str]) -> Seen:
    """A pod as read from the API: its state, and where and how much HAMi recorded for it."""
    if phase == "Pending" and not node_name:
        return Seen(replica, REFUSED)
    containers = parse_allocation(annotations.get(ALLOCATED_ANNOTATION, ""))
    state = phase if phase != "Pending" else "Pending (bound)"
    return Seen(replica, state, annotations.get(VGPU_NODE_ANNOTATION, ""),
                tuple(containers[0]) if containers else ())


def refused_at_creation(replica: Replica, message: str) -> Seen:
    return Seen(replica, REFUSED_AT_CREATION, message=message)


def running_counts(seen: list[Seen]) -> dict[str, int]:
    """Running pods per workload (every workload named, 0 included)."""
    counts = {s.replica.workload.name: 0 for s in seen}
    for s in seen:
        counts[s.replica.workload.name] += int(s.state == RUNNING)
    return counts


def span_of(value: int | float | dict[str, Any]) -> Span:
    """An exported count (`3`, or `{min, max}` where the order or a node tie decides) as a Span."""
    if isinstance(value, dict):
        return Span(int(value["min"]), int(value["max"]))
    return Span(int(value), int(value))


def count_problems(exported: dict[str, Any], seen: list[Seen]) -> list[str]:
    """Each workload whose running count is not the exported plan's `placed`."""
    counts = running_counts(seen)
    problems = []
    for name, planned in exported["workloads"].items():
        placed = span_of(planned["placed"])
        if not placed.low <= counts.get(name, 0) <= placed.high:
            problems.append(f"workload {name}: {counts.get(name, 0)} of {planned['replicas']} Running, "
                            f"the plan places {placed}")
    return problems


def pod_problems(expected: DeclaredPlan, seen: Seen) -> list[str]:
    """What one pod did that the plan does not allow for a pod of its workload."""
    workload, where = seen.replica.workload, seen.replica.pod
    if seen.state == RUNNING:
        return _running_problems(expected, seen)
    if seen.state == REFUSED_AT_CREATION:
        planned = expected.creation_refusals[workload.name]
        if not planned:
            return [f"{where} was refused at creation ({seen.message}); the plan creates every "
                    f"{workload.name} pod"]
        return [] if _same_refusal(planned, seen.message) else [
            f"{where} was refused at creation with {seen.message!r}; the plan says {planned!r}"]
    if seen.state == REFUSED:
        if not expected.reasons(workload):
            return [f"{where} was refused; the plan places every {workload.name} pod it creates"]
        return []
    return [f"{where} is {seen.state}, neither Running nor refused"]


def _same_refusal(planned: str, message: str) -> bool:
    """The API server names the pod where the plan says `<pod>`; the rest must match."""
    head, _, tail = planned.partition('"<pod>"')
    return message.startswith(head) and tail in message if tail else planned in message


def _running_problems(expected: DeclaredPlan, seen: Seen) -> list[str]:
    workload, where = seen.replica.workload, seen.replica.pod
    problems = []
    if seen.node not in expected.nodes(workload):
        problems.append(f"{where} runs on {seen.node}; its workload's pods may go only to "
                        f"{sorted(expected.nodes(workload))}")
    on_node = {d.id for d in expected.planner.base.get(seen.node, [])}
    request = workload_request(workload)
    if len(seen.cards) != request.nums or any(c.card not in on_node for c in seen.cards):
        problems.append(f"{where} holds cards {[c.card for c in seen.cards]}; it asks {request.nums} of "
                        f"{seen.node}'s")
    memory, cores = expected.charge(workload)
    for card in seen.cards:
        if (card.memory_mib, card.cores) != (memory, cores):
            problems.append(f"{where} is charged {card.memory_mib} MiB and {card.cores} % cores on "
                            f"{card.card}; the plan charges {memory} MiB and {cores} %")
    return problems


def observed_usage(expected: DeclaredPlan, seen: list[Seen]
                   ) -> tuple[dict[str, list[GpuDevice]], dict[str, int]]:
    """The cards' usage the Running pods leave (each node's cards as the planner writes them), and
    the GPU pods Running on each node."""
    planner = expected.planner
    usage: dict[str, list[list[int]]] = {name: [[0, 0, 0] for _ in planner.base[name]]
                                         for name in planner.names}
    pods = dict.fromkeys(planner.names, 0)
    for s in seen:
        if s.state != RUNNING or s.node not in usage:
            continue
        pods[s.node] += 1
        index = {d.id: i for i, d in enumerate(planner.base[s.node])}
        for card in s.cards:
            if card.card in index:
                entry = usage[s.node][index[card.card]]
                entry[0], entry[1], entry[2] = entry[0] + 1, entry[1] + card.memory_mib, entry[2] + card.cores
    devices = {name: planner.devices(planner.class_of[name], tuple(tuple(card) for card in usage[name]), name)
               for name in planner.names}
    return devices, pods


def state_problems(expected: DeclaredPlan, seen: list[Seen]) -> list[str]:
    """Whether the cards are left as one of the walk's ends leaves them, with its counts."""
    devices, pods = observed_usage(expected, seen)
    counts = running_counts(seen)
    placed = tuple(sum(counts[w.name] for w in {r.workload for r in expected.replicas}
                       if expected.batch_of[w.name] == batch) for batch in range(len(expected.walk.outcomes)))
    if expected.walk.reaches(devices, pods, placed):
        return []
    return [f"the cards are left as no order HAMi may take leaves them: per batch {placed} Running, "
            f"{len(expected.walk.finals)} possible ends"]


def judge(expected: DeclaredPlan, seen: list[Seen]) -> list[str]:
    """Every way what HAMi did differs from the plan (empty: it did what the plan says)."""
    if [s.replica for s in seen] != expected.replicas:
        return [f"observed {[s.replica.pod for s in seen]}, the replicas are "
                f"{[r.pod for r in expected.replicas]}"]
    return [*(problem for s in seen for problem in pod_problems(expected, s)),
            *state_problems(expected, seen), *count_problems(expected.exported, seen)]
