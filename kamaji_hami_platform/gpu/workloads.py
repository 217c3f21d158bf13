"""GPU capacity as code: a tenant's declared workloads planned on its cards, as HAMi would place them.

Workloads are planned in their declared order, one replica at a time, because each placement
changes the next one's options; a namespace's `gpuQuotas` count as their enforcers count them.
When a declaration does not fit, the same planner finds the smallest fix: more workers of the
tenant's shape, or more cards per worker.

Upstream: k8s.io/apiserver v0.35 admission/plugin/resourcequota/controller.go (every created pod
counts); Project-HAMi/HAMi v2.10.0 pkg/device/quota.go (`ResourceQuotaNotFit`).
Rationale: docs/gpu-capacity.md (order, quotas, the fix).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kamaji_hami_platform import names
from kamaji_hami_platform.config import (
    MAX_CARDS_PER_NODE,
    NODE_POD_CIDR_PREFIX,
    QUOTA_KEYS,
    GpuWorkloadConfig,
    TenantConfig,
)
from kamaji_hami_platform.gpu.card_fit import GpuRequest, QuotaLeft
from kamaji_hami_platform.gpu.devices import GpuDevice, tenant_devices
from kamaji_hami_platform.gpu.placement import CountQuota, Plan, Span, plan_sequence
from kamaji_hami_platform.gpu.render import QUOTA_NAME


@dataclass
class WorkloadResult:
    """One declared workload in the plan."""

    name: str
    namespace: str
    replicas: int
    placed: Span
    refused: Span
    nodes: list[str]
    """Every node HAMi may put one of its pods on."""
    reason: str = ""
    """Why a replica is refused: each node's reason (HAMi's `<n>/<m> <Code>`)."""
    kubectl_message: str = ""
    """kube-scheduler's first sentence, as `kubectl describe pod` shows it."""
    headroom: Span = field(default_factory=lambda: Span(0, 0))
    """How many more replicas would fit after every declared one."""

    def as_output(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "replicas": self.replicas, "placed": self.placed.as_output(),
                "refused": self.refused.as_output(), "nodes": self.nodes, "reason": self.reason,
                "kubectlMessage": self.kubectl_message, "headroom": self.headroom.as_output()}


@dataclass(frozen=True)
class CardLeft:
    """What one card has left after the declared workloads: a range where a node tie decides."""

    node: str
    card: str
    memory_mib: Span
    cores: Span
    slots: Span

    def as_output(self) -> dict[str, Any]:
        return {"memoryMiB": self.memory_mib.as_output(), "cores": self.cores.as_output(),
                "slots": self.slots.as_output()}


@dataclass
class WorkloadPlan:
    """A tenant's declared workloads on its cards."""

    tenant: str
    workloads: list[WorkloadResult]
    cards: list[CardLeft]
    certain: bool
    complete: bool
    fits: bool = True
    """No replica refused in any branch HAMi's ties allow, and every branch followed."""
    fix: str = ""
    """The smallest change that makes every replica fit, when one does not."""

    def as_output(self) -> dict[str, Any]:
        cards: dict[str, dict[str, Any]] = {}
        for card in self.cards:
            cards.setdefault(card.node, {})[card.card] = card.as_output()
        return {"fits": self.fits, "certain": self.certain, "complete": self.complete,
                "workloads": {w.name: w.as_output() for w in self.workloads}, "cards": cards,
                "fix": self.fix}


def workload_request(workload: GpuWorkloadConfig) -> GpuRequest:
    request = GpuRequest.from_limits(workload.limits())
    assert request is not None, workload
    return request


# The quota keys as the config accepts them (config/rules.py QUOTA_KEYS): HAMi's two, then
# Kubernetes' count of cards.
HAMI_MEMORY_QUOTA, HAMI_CORES_QUOTA, GPU_REQUESTS_QUOTA = QUOTA_KEYS


Replica = tuple[int, GpuRequest, str]  # workload index, request, namespace


def _replicas(tenant: TenantConfig) -> list[Replica]:
    """Every replica in declared order, each workload's in turn."""
    return [(index, workload_request(w), w.namespace) for index, w in enumerate(tenant.gpu_workloads)
            for _ in range(w.replicas)]


def _counts(tenant: TenantConfig) -> dict[str, CountQuota]:
    """namespace -> Kubernetes' quota on the cards its pods request."""
    return {namespace: CountQuota(QUOTA_NAME, limits[GPU_REQUESTS_QUOTA])
            for namespace, limits in tenant.gpu_quotas.items() if GPU_REQUESTS_QUOTA in limits}


def _hami_quotas(tenant: TenantConfig) -> dict[str, QuotaLeft]:
    """namespace -> HAMi's own quota limits (limits.nvidia.com/gpumem MiB, gpucores %)."""
    return {namespace: QuotaLeft(limits.get(HAMI_MEMORY_QUOTA), limits.get(HAMI_CORES_QUOTA))
            for namespace, limits in tenant.gpu_quotas.items()
            if HAMI_MEMORY_QUOTA in limits or HAMI_CORES_QUOTA in limits}


def _plan(tenant: TenantConfig, cluster: str, replicas: list[Replica], quotas: bool = True) -> Plan:
    """The replicas created and placed in turn; `quotas=False`: as if the namespaces had none."""
    return plan_sequence(tenant_devices(tenant, cluster), [request for _, request, _ in replicas],
                         policy=tenant.hami.gpu_scheduler_policy,
                         node_policy=tenant.hami.node_scheduler_policy,
                         namespaces=[namespace for _, _, namespace in replicas],
                         quotas=_hami_quotas(tenant) if quotas else None,
                         counts=_counts(tenant) if quotas else None)


def _interchangeable(nodes: dict[str, list[GpuDevice]]) -> dict[str, list[str]]:
    """node -> the nodes with the same cards and usage (the planner merges their branches)."""
    def shape(devices: list[GpuDevice]) -> tuple:
        return tuple((d.count, d.devmem, d.devcore, d.type, d.numa, d.mode, d.health, d.used, d.usedmem,
                      d.usedcores) for d in devices)
    groups: dict[tuple, list[str]] = {}
    for name, devices in nodes.items():
        groups.setdefault(shape(devices), []).append(name)
    return {name: members for members in groups.values() for name in members}


def _cards_left(nodes: dict[str, list[GpuDevice]], final: list[dict[str, list[GpuDevice]]]) -> list[CardLeft]:
    """Per card, what is left over every branch, and over the nodes a branch could have swapped."""
    peers = _interchangeable(nodes)
    cards = []
    for node, devices in nodes.items():
        for position, device in enumerate(devices):
            seen = [state[peer][position] for state in final for peer in peers[node]]
            memory = [d.devmem - d.usedmem for d in seen]
            cores = [d.devcore - d.usedcores for d in seen]
            slots = [d.count - d.used for d in seen]
            cards.append(CardLeft(node, device.id, Span(min(memory), max(memory)),
                                  Span(min(cores), max(cores)), Span(min(slots), max(slots))))
    return cards


def _headroom(tenant: TenantConfig, cluster: str, replicas: list[Replica], planned: Plan,
              workload: int) -> Span:
    """How many more replicas of one workload would fit after all declared ones: the declared
    sequence with more of that workload appended, quotas and all. Exact where the declared plan is
    certain, else bounds over the branches."""
    declared = tenant.gpu_workloads[workload]
    more: Replica = (workload, workload_request(declared), declared.namespace)
    nodes = tenant_devices(tenant, cluster)
    room = sum(d.count for devices in nodes.values() for d in devices) + 1
    extended = _plan(tenant, cluster, [*replicas, *[more] * room])
    return Span(max(0, extended.placed.low - planned.placed.high),
                max(0, extended.placed.high - planned.placed.low))


def _fits_plan(plan: Plan) -> bool:
    """No replica refused in any branch, and every branch followed (else a refusal may hide)."""
    return plan.complete and plan.refused.high == 0


def plan_workloads(tenant: TenantConfig, cluster: str) -> WorkloadPlan:
    """The tenant's declared workloads on its configured cards, with HAMi's policies and the
    namespaces' quotas."""
    nodes = tenant_devices(tenant, cluster)
    replicas = _replicas(tenant)
    planned = _plan(tenant, cluster, replicas)
    results = []
    for index, workload in enumerate(tenant.gpu_workloads):
        mine = [p for p, (owner, _, _) in zip(planned.placements, replicas, strict=True) if owner == index]
        certain_placed = sum(1 for p in mine if p.ok)
        maybe = sum(1 for p in mine if p.maybe_refused)
        refusal = next((p for p in mine if not p.ok), None)
        results.append(WorkloadResult(
            workload.name, workload.namespace, workload.replicas,
            placed=Span(certain_placed, certain_placed + maybe),
            refused=Span(workload.replicas - certain_placed - maybe, workload.replicas - certain_placed),
            nodes=sorted({node for p in mine for node in p.nodes}),
            reason=refusal.reason if refusal else "",
            kubectl_message=refusal.scheduler_message if refusal else "",
            headroom=_headroom(tenant, cluster, replicas, planned, index)))
    plan = WorkloadPlan(tenant.name, results, _cards_left(nodes, planned.final) if planned.final else [],
                        planned.certain, planned.complete, fits=_fits_plan(planned))
    if not plan.fits:
        plan.fix = smallest_fix(tenant, cluster)
    return plan


def _fits(tenant: TenantConfig, cluster: str, quotas: bool = True) -> bool:
    return _fits_plan(_plan(tenant, cluster, _replicas(tenant), quotas))


def _max_workers(tenant: TenantConfig) -> int:
    """The most workers the tenant's podCidr (a /24 each) and the names allow."""
    prefix = int(tenant.pod_cidr.split("/")[1])
    return min(2 ** max(NODE_POD_CIDR_PREFIX - prefix, 0), names.MAX_WORKERS)


def _shape(tenant: TenantConfig, workers: int, per_worker: int) -> TenantConfig:
    assert tenant.gpus is not None
    return replace(tenant, workers=workers, gpus=replace(tenant.gpus, per_worker=per_worker))


def smallest_fix(tenant: TenantConfig, cluster: str) -> str:
    """The fewest workers to add, and the fewest cards per worker to add, that make every declared
    replica fit, as the planner says, within what the config allows; if neither alone does, the
    smallest combination (fewest cards in all); if the namespaces' quotas alone refuse, that."""
    assert tenant.gpus is not None
    workers, cards = tenant.workers, tenant.gpus.per_worker
    largest = _shape(tenant, _max_workers(tenant), MAX_CARDS_PER_NODE)
    if not _fits(largest, cluster):  # more of both is never worse: nothing smaller will do
        if tenant.gpu_quotas and _fits(largest, cluster, quotas=False):
            quota = sorted({w.namespace for w in tenant.gpu_workloads if w.namespace in tenant.gpu_quotas})
            return f"the quotas refuse what the cards could hold: raise gpuQuotas of {', '.join(quota)}"
        return (f"no more workers or cards within the config's limits (up to {_max_workers(tenant)} "
                f"workers, {MAX_CARDS_PER_NODE} cards per worker) would do: make the workloads smaller")
    options = []
    more_workers = next((w for w in range(workers + 1, _max_workers(tenant) + 1)
                         if _fits(_shape(tenant, w, cards), cluster)), None)
    if more_workers is not None:
        options.append(f"{more_workers - workers} more worker(s) of this tenant's shape "
                       f"(workers: {more_workers})")
    more_cards = next((c for c in range(cards + 1, MAX_CARDS_PER_NODE + 1)
                       if _fits(_shape(tenant, workers, c), cluster)), None)
    if more_cards is not None:
        options.append(f"{more_cards - cards} more card(s) per worker (gpus.perWorker: {more_cards})")
    if options:
        return " or ".join(options)
    both = sorted((w * c, w, c) for w in range(workers + 1, _max_workers(tenant) + 1)
                  for c in range(cards + 1, MAX_CARDS_PER_NODE + 1))
    w, c = next((w, c) for _, w, c in both if _fits(_shape(tenant, w, c), cluster))
    return (f"{w - workers} more worker(s) and {c - cards} more card(s) per worker "
            f"(workers: {w}, gpus.perWorker: {c})")


def refusal_message(index: int, tenant: TenantConfig, plan: WorkloadPlan) -> list[str]:
    """One line per workload that does not fit, named by its config path."""
    lines = []
    for position, result in enumerate(plan.workloads):
        if result.refused.high == 0:
            continue
        message = result.kubectl_message or result.reason
        lines.append(f"tenants[{index}].gpuWorkloads[{position}] ({tenant.name}/{result.name}): "
                     f"{result.refused} of {result.replicas} replicas refused: {message} "
                     f"Smallest change that fits: {plan.fix}.")
    return lines


__all__ = ["CardLeft", "WorkloadPlan", "WorkloadResult", "plan_workloads",
           "refusal_message", "smallest_fix"]


def plan_declared_workloads(platform: Any) -> tuple[dict[str, WorkloadPlan], list[str]]:
    """Every tenant's declared workloads planned (tenants without any are left out), and a line per
    workload that does not fit."""
    plans: dict[str, WorkloadPlan] = {}
    problems: list[str] = []
    for index, tenant in enumerate(platform.tenants):
        if not tenant.gpu_workloads:
            continue
        plans[tenant.name] = plan = plan_workloads(tenant, platform.management.name)
        problems += refusal_message(index, tenant, plan)
    return plans, problems
