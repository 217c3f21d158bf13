"""GPU capacity as code: a tenant's declared workloads planned on its cards, as HAMi would place them.

The plan takes the workloads in their declared order, each one's replicas in turn: HAMi places
pods one at a time and each placement changes the next one's options, so the order matters. That
is the order in which a team would create them with `kubectl apply`. Where HAMi's choice between
nodes ties, the counts are ranges (placement.py). A declaration fits when no replica is refused in
any branch. If it does not fit, the smallest change that makes it fit is searched for with the same
planner: N more workers of the tenant's shape, or M more cards per worker.

A namespace's `gpuQuotas` count too, as their enforcers count them: Kubernetes refuses to create a
pod whose `requests.nvidia.com/gpu` would exceed the quota (ResourceQuota admission: every created
pod counts, Pending ones included; k8s.io/apiserver v0.35 admission/plugin/resourcequota/
controller.go), and HAMi refuses on every card a pod whose `limits.nvidia.com/gpumem`/`gpucores`
would exceed what the namespace's placed pods leave (`ResourceQuotaNotFit`, pkg/device/quota.go).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kamaji_hami_platform import names
from kamaji_hami_platform.config import MAX_CARDS_PER_NODE, NODE_POD_CIDR_PREFIX, GpuWorkload, TenantConfig
from kamaji_hami_platform.gpu.card_fit import GpuRequest, QuotaLeft
from kamaji_hami_platform.gpu.devices import GpuDevice, tenant_devices
from kamaji_hami_platform.gpu.placement import Span, capacity, plan_sequence
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
    fix: str = ""
    """The smallest change that makes every replica fit, when one does not."""

    @property
    def fits(self) -> bool:
        return all(w.refused.high == 0 for w in self.workloads)

    def as_output(self) -> dict[str, Any]:
        cards: dict[str, dict[str, Any]] = {}
        for card in self.cards:
            cards.setdefault(card.node, {})[card.card] = card.as_output()
        return {"fits": self.fits, "certain": self.certain, "complete": self.complete,
                "workloads": {w.name: w.as_output() for w in self.workloads}, "cards": cards,
                "fix": self.fix}


def workload_request(workload: GpuWorkload) -> GpuRequest:
    request = GpuRequest.from_limits(workload.limits())
    assert request is not None, workload
    return request


GPU_REQUESTS_QUOTA = "requests.nvidia.com/gpu"
HAMI_MEMORY_QUOTA = "limits.nvidia.com/gpumem"
HAMI_CORES_QUOTA = "limits.nvidia.com/gpucores"


@dataclass
class _Sequence:
    """The replicas in declared order: those the API server admits, and why the others are not."""

    admitted: list[tuple[int, GpuRequest, str]] = field(default_factory=list)  # workload, request, ns
    forbidden: dict[int, list[str]] = field(default_factory=dict)  # workload -> one reason per pod


def _sequence(tenant: TenantConfig) -> _Sequence:
    """Each replica in turn, through the ResourceQuota admission of its namespace's
    requests.nvidia.com/gpu (every created pod counts, placed or Pending)."""
    sequence, used = _Sequence(), dict[str, int]()
    for index, workload in enumerate(tenant.gpu_workloads):
        request = workload_request(workload)
        limit = tenant.gpu_quotas.get(workload.namespace, {}).get(GPU_REQUESTS_QUOTA)
        for _ in range(workload.replicas):
            taken = used.get(workload.namespace, 0)
            if limit is not None and taken + workload.gpu > limit:
                sequence.forbidden.setdefault(index, []).append(
                    f"exceeded quota: {QUOTA_NAME}, requested: {GPU_REQUESTS_QUOTA}={workload.gpu}, "
                    f"used: {GPU_REQUESTS_QUOTA}={taken}, limited: {GPU_REQUESTS_QUOTA}={limit}")
                continue
            used[workload.namespace] = taken + workload.gpu
            sequence.admitted.append((index, request, workload.namespace))
    return sequence


def _hami_quotas(tenant: TenantConfig) -> dict[str, QuotaLeft]:
    """namespace -> HAMi's own quota limits (limits.nvidia.com/gpumem MiB, gpucores %)."""
    return {namespace: QuotaLeft(limits.get(HAMI_MEMORY_QUOTA), limits.get(HAMI_CORES_QUOTA))
            for namespace, limits in tenant.gpu_quotas.items()
            if HAMI_MEMORY_QUOTA in limits or HAMI_CORES_QUOTA in limits}


def _plan(tenant: TenantConfig, cluster: str, sequence: _Sequence) -> Any:
    requests = [request for _, request, _ in sequence.admitted]
    return plan_sequence(tenant_devices(tenant, cluster), requests, policy=tenant.hami.gpu_scheduler_policy,
                         node_policy=tenant.hami.node_scheduler_policy,
                         namespaces=[namespace for _, _, namespace in sequence.admitted],
                         quotas=_hami_quotas(tenant))


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


def _headroom(final: list[dict[str, list[GpuDevice]]], request: GpuRequest, policy: str,
              node_policy: str) -> Span:
    spans = [capacity(state, request, policy=policy, node_policy=node_policy) for state in final]
    return Span(min(s.low for s in spans), max(s.high for s in spans))


def plan_workloads(tenant: TenantConfig, cluster: str) -> WorkloadPlan:
    """The tenant's declared workloads on its configured cards, with HAMi's policies."""
    nodes = tenant_devices(tenant, cluster)
    policy, node_policy = tenant.hami.gpu_scheduler_policy, tenant.hami.node_scheduler_policy
    sequence = _sequence(tenant)
    planned = _plan(tenant, cluster, sequence)
    results = []
    for index, workload in enumerate(tenant.gpu_workloads):
        mine = [p for p, (owner, _, _) in zip(planned.placements, sequence.admitted, strict=True)
                if owner == index]
        certain_placed = sum(1 for p in mine if p.ok)
        maybe = sum(1 for p in mine if p.maybe_refused)
        refusal = next((p for p in mine if not p.ok), None)
        forbidden = sequence.forbidden.get(index, [])
        result = WorkloadResult(
            workload.name, workload.namespace, workload.replicas,
            placed=Span(certain_placed, certain_placed + maybe),
            refused=Span(workload.replicas - certain_placed - maybe, workload.replicas - certain_placed),
            nodes=sorted({node for p in mine for node in p.nodes}),
            reason=forbidden[0] if forbidden else (refusal.reason if refusal else ""),
            kubectl_message=(f"the API server refuses the pod (Forbidden): {forbidden[0]}" if forbidden
                             else refusal.scheduler_message if refusal else ""))
        if planned.final:
            result.headroom = _headroom(planned.final, workload_request(workload), policy, node_policy)
        results.append(result)
    plan = WorkloadPlan(tenant.name, results, _cards_left(nodes, planned.final) if planned.final else [],
                        planned.certain, planned.complete)
    if not plan.fits:
        plan.fix = smallest_fix(tenant, cluster)
    return plan


def _fits(tenant: TenantConfig, cluster: str) -> bool:
    sequence = _sequence(tenant)
    return not sequence.forbidden and _plan(tenant, cluster, sequence).refused.high == 0


def _max_workers(tenant: TenantConfig) -> int:
    """The most workers the tenant's podCidr (a /24 each) and the names allow."""
    prefix = int(tenant.pod_cidr.split("/")[1])
    return min(2 ** max(NODE_POD_CIDR_PREFIX - prefix, 0), names.MAX_WORKERS)


def smallest_fix(tenant: TenantConfig, cluster: str) -> str:
    """The fewest workers to add, and the fewest cards per worker to add, that make every declared
    replica fit, as the planner says; each within what the config allows."""
    assert tenant.gpus is not None
    options = []
    for workers in range(tenant.workers + 1, _max_workers(tenant) + 1):
        if _fits(replace(tenant, workers=workers), cluster):
            options.append(f"{workers - tenant.workers} more worker(s) of this tenant's shape "
                           f"(workers: {workers})")
            break
    for per_worker in range(tenant.gpus.per_worker + 1, MAX_CARDS_PER_NODE + 1):
        if _fits(replace(tenant, gpus=replace(tenant.gpus, per_worker=per_worker)), cluster):
            options.append(f"{per_worker - tenant.gpus.per_worker} more card(s) per worker "
                           f"(gpus.perWorker: {per_worker})")
            break
    if not options:
        quota = sorted({w.namespace for w in tenant.gpu_workloads if w.namespace in tenant.gpu_quotas})
        raise_quota = f"raise gpuQuotas of {', '.join(quota)}, or " if quota else ""
        return (f"no more workers or cards within the config's limits (up to {_max_workers(tenant)} "
                f"workers, {MAX_CARDS_PER_NODE} cards per worker) would do: {raise_quota}"
                "make the workloads smaller")
    return " or ".join(options)


def refusal_message(index: int, tenant: TenantConfig, plan: WorkloadPlan) -> list[str]:
    """One line per workload that does not fit, named by its config path."""
    lines = []
    for position, result in enumerate(plan.workloads):
        if result.refused.high == 0:
            continue
        message = result.kubectl_message or result.reason
        lines.append(f"tenants[{index}].gpuWorkloads[{position}] ({tenant.name}/{result.name}): "
                     f"{result.refused} of {result.replicas} replicas refused by HAMi: {message} "
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
