"""A tenant's declared GPU workloads as the live suite deploys and judges them: pure parts.

The planner (kamaji_hami_platform/gpu/workloads.py) takes the workloads in declared order, each
one's replicas in turn, one pod at a time: the live case creates the pods in that order and
creates each only once the one before it runs or is refused, so HAMi sees the sequence the plan
assumed. What HAMi did is judged against the planner: the (node, cards) of every running pod must
be one of the outcomes the plan's node ties allow, every pod the plan places in every branch must
run and every pod it refuses in every branch must be refused, and each workload's running count
must lie in the exported `placed`. Unit-tested in tests/test_e2e_workloads.py.
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
from kamaji_hami_platform.gpu import Placement, Plan, Span, plan_tenant, possible_outcomes
from kamaji_hami_platform.gpu.card_fit import USE_GPU_TYPE
from kamaji_hami_platform.gpu.devices import tenant_devices
from kamaji_hami_platform.gpu.placement import Outcome
from kamaji_hami_platform.gpu.workloads import plan_workloads, workload_request
from tests.e2e.support import recorded_cards

# Every pod of the case carries its workload's name here: cleanup (and the removal of an interrupted
# run's pods) selects on the key, so a team's own pods in the same namespace are never touched.
WORKLOAD_LABEL = "io.kamaji-hami-platform/e2e-workload"
POD_PREFIX = "e2e-"
# Pause sleeps until killed and needs no pull on kindest/node (containerd's preloaded sandbox image).
PAUSE_IMAGE = versions.KIND_NODE_PAUSE_IMAGE
RUNNING = "Running"
REFUSED = "refused"
# HAMi's reason codes are CamelCase words (`CardInsufficientCore`); node names are DNS labels.
_CODE = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b")


@dataclass(frozen=True)
class Replica:
    """One pod of a declared workload: its place in the tenant's sequence (the plan's pod number)."""

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
    """Every replica in the planner's order: workloads as declared, each one's replicas in turn."""
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
    """What the planner says of a tenant's declared workloads: per pod, every outcome, the export."""

    replicas: list[Replica]
    plan: Plan  # one placement per replica, in sequence
    outcomes: frozenset[Outcome]
    exported: dict[str, Any]  # WorkloadPlan.as_output(): what the stack's gpuPlan must be

    def placement(self, replica: Replica) -> Placement:
        return self.plan.placements[replica.position - 1]


def declared_plan(platform: PlatformConfig, tenant: TenantConfig) -> DeclaredPlan:
    """The oracle for one tenant; ValueError when its ties allow too many outcomes to list."""
    cluster = platform.management.name
    sequence = replicas(tenant.gpu_workloads)
    requests = [workload_request(r.workload) for r in sequence]
    outcomes = possible_outcomes(tenant_devices(tenant, cluster), requests,
                                 policy=tenant.hami.gpu_scheduler_policy,
                                 node_policy=tenant.hami.node_scheduler_policy)
    return DeclaredPlan(sequence, plan_tenant(tenant, cluster, requests), frozenset(outcomes),
                        plan_workloads(tenant, cluster).as_output())


def refusal_codes(placement: Placement) -> list[str]:
    """HAMi's reason codes the plan gives for refusing this pod (across nodes and branches)."""
    return sorted(set(_CODE.findall(placement.reason)))


@dataclass(frozen=True)
class Seen:
    """What one replica's pod did: Running on a (node, cards) HAMi recorded, refused (Pending and
    unbound), or another state (its phase, with `bound` when Pending on a node)."""

    replica: Replica
    state: str
    node: str = ""
    cards: tuple[str, ...] = ()


def observed(replica: Replica, phase: str, node_name: str | None, annotations: dict[str, str]) -> Seen:
    """A pod as read from the API: its state, and where HAMi recorded it."""
    if phase == "Pending" and not node_name:
        return Seen(replica, REFUSED)
    ((node, cards),) = recorded_cards([annotations])
    state = phase if phase != "Pending" else "Pending (bound)"
    return Seen(replica, state, node, cards)


def running_counts(seen: list[Seen]) -> dict[str, int]:
    """Running pods per workload (every workload named, 0 included)."""
    counts = {s.replica.workload.name: 0 for s in seen}
    for s in seen:
        counts[s.replica.workload.name] += int(s.state == RUNNING)
    return counts


def span_of(value: int | float | dict[str, Any]) -> Span:
    """An exported count (`3`, or `{min, max}` where a node tie decides) as a Span."""
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


def order_problems(expected: DeclaredPlan, seen: list[Seen]) -> list[str]:
    """Each pod that did other than its place in the sequence says: placed in every branch but not
    Running, refused in every branch but Running, or neither Running nor refused."""
    problems = []
    for s in seen:
        placement = expected.placement(s.replica)
        where = f"{s.replica.pod} (pod {s.replica.position} of the sequence)"
        if s.state not in (RUNNING, REFUSED):
            problems.append(f"{where} is {s.state}, neither Running nor refused")
        elif placement.ok and s.state == REFUSED:
            problems.append(f"{where} was refused; the plan places it on {' or '.join(placement.nodes)}")
        elif not placement.ok and not placement.maybe_refused and s.state == RUNNING:
            problems.append(f"{where} runs on {s.node}; the plan refuses it: {placement.reason}")
    return problems


def recorded_outcome(seen: list[Seen]) -> Outcome:
    """The (node, cards) of every Running pod, as a sorted multiset (the planner's Outcome)."""
    return tuple(sorted((s.node, s.cards) for s in seen if s.state == RUNNING))


def outcome_problems(expected: DeclaredPlan, seen: list[Seen]) -> list[str]:
    """Whether the Running pods' (node, cards) are one of the outcomes the plan's ties allow."""
    recorded = recorded_outcome(seen)
    if recorded in expected.outcomes:
        return []
    return [f"HAMi recorded {list(recorded)}; the plan allows only {sorted(map(list, expected.outcomes))}"]


def judge(expected: DeclaredPlan, seen: list[Seen]) -> list[str]:
    """Every way what HAMi did differs from the plan (empty: it did what the plan says)."""
    if [s.replica for s in seen] != expected.replicas:
        return [f"observed {[s.replica.pod for s in seen]}, the sequence is "
                f"{[r.pod for r in expected.replicas]}"]
    return [*order_problems(expected, seen), *outcome_problems(expected, seen),
            *count_problems(expected.exported, seen)]
