"""GPU capacity as code: a tenant's declared workloads planned on its cards, as HAMi would place them.

Every replica of every declared workload is created together, as their controllers and one
`kubectl apply` create them, and HAMi then places them in whichever order kube-scheduler's queue
gives, with failed binds and creation in any order too (`kamaji_hami_platform.gpu.orders`): the
verdict holds for every path. The ResourceQuota on `requests.nvidia.com/gpu` counts each created
pod, Pending ones too; HAMi's webhook counts what HAMi has allocated when a pod is created. Each
worker takes as many GPU pods as its kubelet allows besides the platform's own (`node_pods`). When
a declaration does not fit, the smallest fix: the quotas to raise, the workers or cards to add (a
hardware change for worker hosts), or both.

Upstream: k8s.io/apiserver v0.35 admission/plugin/resourcequota/controller.go (every created pod
counts); Project-HAMi/HAMi v2.10.0 pkg/device/quota.go (`ResourceQuotaNotFit`; `Used` grows when
HAMi allocates, `AddUsage`), pkg/scheduler/webhook.go `fitResourceQuota`.
Rationale: docs/gpu-capacity.md (order, quotas, the fix).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kamaji_hami_platform import names
from kamaji_hami_platform.config import (
    MAX_CARDS_PER_NODE,
    NODE_POD_CIDR_PREFIX,
    QUOTA_KEYS,
    GpuWorkloadConfig,
    TenantConfig,
)
from kamaji_hami_platform.gpu.card_fit import FULL_CARD_CORES, GpuRequest, QuotaLeft
from kamaji_hami_platform.gpu.devices import GpuDevice, mock_devices, tenant_devices
from kamaji_hami_platform.gpu.node_pods import floating_pods, gpu_pod_room
from kamaji_hami_platform.gpu.orders import (
    DOES_NOT_FIT,
    FITS,
    UNKNOWN,
    Batch,
    OrderPlan,
    never_refused,
    plan_any_order,
    quotas_refuse,
)
from kamaji_hami_platform.gpu.placement import (
    WEBHOOK_DENIED,
    CountQuota,
    Filler,
    Span,
    _quota_left,
    _webhook_admits,
    count_refusal,
)
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
    verdict: str = FITS
    """`fits` (no replica refused in any order or node tie HAMi may take), `does not fit` (one is,
    in an order that can happen), or `unknown` (the planner could show neither: `why`)."""
    fix: str = ""
    """The smallest change that makes every replica fit, when one does not."""
    why: str = ""
    """Why the verdict is `unknown`."""

    @property
    def fits(self) -> bool:
        return self.verdict == FITS

    def as_output(self) -> dict[str, Any]:
        cards: dict[str, dict[str, Any]] = {}
        for card in self.cards:
            cards.setdefault(card.node, {})[card.card] = card.as_output()
        return {"fits": self.fits, "verdict": self.verdict, "certain": self.certain,
                "complete": self.complete, "workloads": {w.name: w.as_output() for w in self.workloads},
                "cards": cards, "fix": self.fix, "why": self.why}


def workload_request(workload: GpuWorkloadConfig) -> GpuRequest:
    request = GpuRequest.from_limits(workload.limits())
    assert request is not None, workload
    return request


# The quota keys as the config accepts them (config/rules.py QUOTA_KEYS): HAMi's two, then
# Kubernetes' count of cards.
HAMI_MEMORY_QUOTA, HAMI_CORES_QUOTA, GPU_REQUESTS_QUOTA = QUOTA_KEYS


def _counts(tenant: TenantConfig) -> dict[str, CountQuota]:
    """namespace -> Kubernetes' quota on the cards its pods request."""
    return {namespace: CountQuota(QUOTA_NAME, limits[GPU_REQUESTS_QUOTA])
            for namespace, limits in tenant.gpu_quotas.items() if GPU_REQUESTS_QUOTA in limits}


def _hami_quotas(tenant: TenantConfig) -> dict[str, QuotaLeft]:
    """namespace -> HAMi's own quota limits (limits.nvidia.com/gpumem MiB, gpucores %)."""
    return {namespace: QuotaLeft(limits.get(HAMI_MEMORY_QUOTA), limits.get(HAMI_CORES_QUOTA))
            for namespace, limits in tenant.gpu_quotas.items()
            if HAMI_MEMORY_QUOTA in limits or HAMI_CORES_QUOTA in limits}


@dataclass(frozen=True)
class Hardware:
    """The GPU nodes a plan runs on: a tenant's own, or a larger shape the fix tries."""

    nodes: dict[str, list[GpuDevice]]
    pod_room: dict[str, int]
    floating: int = 0
    """The platform's pods kube-scheduler may have put on any of the nodes."""


def tenant_hardware(tenant: TenantConfig, cluster: str, workers: int | None = None,
                    per_worker: int | None = None) -> Hardware:
    """The tenant's workers and cards, or `workers` of them with `per_worker` cards each (new
    workers named after the tenant's, new hosts `<tenant>-new-host-<i>`)."""
    if workers is None and per_worker is None:
        nodes = tenant_devices(tenant, cluster)
    else:
        assert tenant.gpus is not None
        names_ = tenant.worker_names()
        count = len(names_) if workers is None else workers
        if tenant.on_hosts:
            names_ += [f"{tenant.name}-new-host-{i}" for i in range(count - len(names_))]
        else:
            names_ = [names.worker_name(tenant.name, i) for i in range(count)]
        cards = tenant.gpus.per_worker if per_worker is None else per_worker
        nodes = {node: mock_devices(tenant.gpus.model, cards, cluster, tenant.name, node)
                 for node in names_[:count]}
    room = gpu_pod_room(tenant)
    return Hardware(nodes, {node: room for node in nodes}, sum(floating_pods(tenant).values()))


@dataclass
class Admission:
    """The replicas created at once, in declared order: per workload how many the API server
    created, and why it refused the rest ("" when it refused none)."""

    created: list[int]
    refusals: list[str]


def admit(tenant: TenantConfig, quotas: bool = True) -> Admission:
    """Creation in declared order, before HAMi places any (one order the walk follows, and the
    one the live suite creates pods in): HAMi's webhook sees no pod of the namespace placed, so it
    denies only a pod over its quota on its own (pkg/scheduler/webhook.go fitResourceQuota); then
    the ResourceQuota on requests.nvidia.com/gpu counts every created pod in turn."""
    hami, counts = (_hami_quotas(tenant), _counts(tenant)) if quotas else ({}, {})
    taken: dict[str, int] = {}
    created, refusals = [], []
    for workload in tenant.gpu_workloads:
        request, namespace = workload_request(workload), workload.namespace
        if not _webhook_admits(request, _quota_left(hami, (), namespace)):
            created.append(0)
            refusals.append(WEBHOOK_DENIED)
            continue
        count = counts.get(namespace)
        admitted = workload.replicas
        if count is not None:
            used = taken.get(namespace, 0)
            admitted = min(workload.replicas, max(0, (count.limit - used) // request.nums))
            taken[namespace] = used + admitted * request.nums
        created.append(admitted)
        refusals.append("" if count is None or admitted == workload.replicas
                        else count_refusal(count, request, taken[namespace]))
    return Admission(created, refusals)


def batches_of(tenant: TenantConfig, admission: Admission) -> tuple[list[Batch], list[int]]:
    """Identical created pods merged into batches (one request in one namespace): the batches, and
    each workload's batch."""
    keys: dict[tuple[GpuRequest, str], int] = {}
    counts: list[int] = []
    owner = []
    for workload, created in zip(tenant.gpu_workloads, admission.created, strict=True):
        key = (workload_request(workload), workload.namespace)
        if key not in keys:
            keys[key] = len(counts)
            counts.append(0)
        counts[keys[key]] += created
        owner.append(keys[key])
    batches = [Batch(request, namespace, counts[index]) for (request, namespace), index in keys.items()]
    return batches, owner


def _plan_orders(tenant: TenantConfig, hardware: Hardware, batches: list[Batch], quotas: bool = True,
                 stop_at_refusal: bool = False, counted: bool = False) -> OrderPlan:
    """The walk over every path; `counted`: the batches are the pods asked for, and the walk admits
    them under the ResourceQuota on requests.nvidia.com/gpu too (else they are the ones created)."""
    return plan_any_order(hardware.nodes, batches, policy=tenant.hami.gpu_scheduler_policy,
                          node_policy=tenant.hami.node_scheduler_policy,
                          quotas=_hami_quotas(tenant) if quotas else None,
                          counts=_counts(tenant) if quotas and counted else None, pod_room=hardware.pod_room,
                          stop_at_refusal=stop_at_refusal, floating=hardware.floating)


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
    # Interchangeable nodes see the same cards: their spans are computed once per class
    # (99 identical workers x 12 cards: once per position, not 99 times each).
    by_class: dict[tuple[int, int], tuple[Span, Span, Span]] = {}
    cards = []
    for node, devices in nodes.items():
        for position, device in enumerate(devices):
            key = (id(peers[node]), position)
            if key not in by_class:
                by_class[key] = _left_over(final, peers[node], position)
            cards.append(CardLeft(node, device.id, *by_class[key]))
    return cards


def _left_over(final: list[dict[str, list[GpuDevice]]], peers: list[str],
               position: int) -> tuple[Span, Span, Span]:
    """Memory, compute and task slots left on one card position over every end and peer node."""
    seen = [state[peer][position] for state in final for peer in peers]
    memory = [d.devmem - d.usedmem for d in seen]
    cores = [d.devcore - d.usedcores for d in seen]
    slots = [d.count - d.used for d in seen]
    return Span(min(memory), max(memory)), Span(min(cores), max(cores)), Span(min(slots), max(slots))


def _placed(planned: OrderPlan, batches: list[Batch], owner: list[int], created: list[int],
            workload: int) -> Span:
    """A workload's placed pods: its share of its batch's, which may be any of the batch's
    identical pods (which of them HAMi takes first is the queue's choice)."""
    batch = owner[workload]
    others = batches[batch].count - created[workload]
    if not planned.finals:
        return Span(created[workload], created[workload])
    lows, highs = [], []
    for _, _, placed, _ in planned.finals:
        lows.append(max(0, placed[batch] - others))
        highs.append(min(created[workload], placed[batch]))
    return Span(min(lows), max(highs))


# The ends a headroom is counted from: past them, its low end is what the bound guarantees.
HEADROOM_ENDS = 4


def _headroom(tenant: TenantConfig, hardware: Hardware, planned: OrderPlan, batches: list[Batch],
              workload: int) -> Span:
    """How many more replicas of one workload would fit after all declared ones, created later:
    from the ends the plan reached, one more at a time as HAMi places them (webhook and
    ResourceQuota included). From more than HEADROOM_ENDS ends, or when the plan could not follow
    every order, the low end is what the bound guarantees in all of them, the high end what the
    first HEADROOM_ENDS reached."""
    declared = tenant.gpu_workloads[workload]
    request, namespace = workload_request(declared), declared.namespace
    planner = planned.planner
    assert planner is not None
    quotas = _hami_quotas(tenant)
    count = _counts(tenant).get(namespace)
    created_cards = sum(b.count * b.request.nums for b in batches if b.namespace == namespace)
    by_count = None if count is None else max(0, (count.limit - created_cards) // request.nums)
    filler = Filler(planner, request)
    ends = list(dict.fromkeys((b[0], b[3]) for b in planned.finals))
    found = []
    for state, used in ends[:HEADROOM_ENDS]:
        span = filler.more(state, _quota_left(quotas, used, namespace))
        found += [span.low, span.high]
    if not found:
        return Span(0, 0)
    low, high = min(found), max(found)
    if not planned.complete or len(ends) > HEADROOM_ENDS:
        low = _guaranteed_more(tenant, hardware, batches, request, namespace, high)
    if by_count is not None:
        low, high = min(low, by_count), min(high, by_count)
    return Span(low, high)


def _guaranteed_more(tenant: TenantConfig, hardware: Hardware, batches: list[Batch], request: GpuRequest,
                     namespace: str, most: int) -> int:
    """The most extra pods (up to `most`) the bound shows no order can refuse."""
    def proven(extra: int) -> bool:
        more = [*batches, Batch(request, namespace, extra)]
        policy = tenant.hami.gpu_scheduler_policy
        return not quotas_refuse(hardware.nodes, more, _hami_quotas(tenant)) and all(
            never_refused(hardware.nodes, more, i, policy, hardware.pod_room, hardware.floating)
            for i in range(len(more)))
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if proven(middle) else (low, middle - 1)
    return low


def _certain(planned: OrderPlan) -> bool:
    """One end in every order and tie (up to naming identical nodes), each batch on one node."""
    return planned.complete and len({(b[0], b[2]) for b in planned.finals}) == 1 and all(
        len({node for node, _ in outcome.options}) <= 1 for outcome in planned.outcomes)


def plan_workloads(tenant: TenantConfig, cluster: str) -> WorkloadPlan:
    """The tenant's declared workloads on its configured cards, with HAMi's policies, the
    namespaces' quotas and the kubelet's pod limit."""
    hardware = tenant_hardware(tenant, cluster)
    # Every replica asked for: the walk creates them in any order (which ones a quota refuses at
    # creation is an order too), and the declared order is one of those.
    asked = [workload.replicas for workload in tenant.gpu_workloads]
    batches, owner = batches_of(tenant, Admission(asked, [""] * len(asked)))
    planned = _plan_orders(tenant, hardware, batches, counted=True)
    results = []
    for index, workload in enumerate(tenant.gpu_workloads):
        outcome = planned.outcomes[owner[index]]
        placed = _placed(planned, batches, owner, asked, index)
        reasons = [r for r in outcome.refusals if r]
        messages = [m for _, m in outcome.refusals.values() if m]
        results.append(WorkloadResult(
            workload.name, workload.namespace, workload.replicas, placed=placed,
            refused=Span(workload.replicas - placed.high, workload.replicas - placed.low),
            nodes=sorted({node for node, _ in outcome.options}),
            reason=" | ".join(reasons), kubectl_message=" | ".join(messages),
            headroom=_headroom(tenant, hardware, planned, batches, index)))
    verdict = DOES_NOT_FIT if any(admit(tenant).refusals) else planned.verdict
    final = planned.final_nodes
    plan = WorkloadPlan(tenant.name, results, _cards_left(hardware.nodes, final) if final else [],
                        _certain(planned), planned.complete, verdict=verdict,
                        why=planned.why if verdict == UNKNOWN else "")
    if verdict == DOES_NOT_FIT:
        plan.fix = smallest_fix(tenant, cluster)
    return plan


def _fits(tenant: TenantConfig, hardware: Hardware, quotas: bool = True) -> bool:
    """Every replica fits in every order (shown, not merely not refuted)."""
    admission = admit(tenant, quotas)
    if any(admission.refusals):
        return False
    batches, _ = batches_of(tenant, admission)
    return _plan_orders(tenant, hardware, batches, quotas, stop_at_refusal=True).verdict == FITS


def _max_workers(tenant: TenantConfig) -> int:
    """The most workers the tenant's podCidr (a /24 each) and the names allow."""
    prefix = int(tenant.pod_cidr.split("/")[1])
    return min(2 ** max(NODE_POD_CIDR_PREFIX - prefix, 0), names.MAX_WORKERS)


def _smallest(low: int, high: int, fits: Any) -> int | None:
    """The smallest value in [low, high] that fits, by bisection, which assumes that more workers
    or more cards never make HAMi refuse what fewer took (not proven for every order). `high` is
    checked first and the answer is always one shown to fit; were the assumption wrong somewhere,
    a smaller value could fit too."""
    if low > high or not fits(high):
        return None
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle + 1, high)
    return low


def quota_shortfall(tenant: TenantConfig) -> list[str]:
    """Each namespace quota the declared workloads need more of: `<namespace> <key> >= <total>`."""
    assert tenant.gpus is not None
    card = mock_devices(tenant.gpus.model, 1, "", tenant.name, "")[0]
    needed: dict[str, dict[str, int]] = {}
    for workload in tenant.gpu_workloads:
        request = workload_request(workload)
        cards = workload.replicas * request.nums
        totals = needed.setdefault(workload.namespace, {})
        for key, amount in ((HAMI_MEMORY_QUOTA, request.memory_on(card) * cards),
                            (HAMI_CORES_QUOTA, min(request.coresreq, FULL_CARD_CORES) * cards),
                            (GPU_REQUESTS_QUOTA, cards)):
            totals[key] = totals.get(key, 0) + amount
    short = []
    for namespace, limits in sorted(tenant.gpu_quotas.items()):
        for key, limit in limits.items():
            total = needed.get(namespace, {}).get(key, 0)
            if total > limit:
                short.append(f"{namespace} {key} to at least {total} (now {limit})")
    return short


def smallest_fix(tenant: TenantConfig, cluster: str) -> str:
    """What makes every declared replica fit: the quotas to raise, when they are short, and the
    fewest workers (or cards per worker) to add, within what the config allows, found with the
    quotas out of the way; for worker hosts, adding either is a hardware change."""
    assert tenant.gpus is not None
    parts = []
    if short := quota_shortfall(tenant):
        parts.append("raise gpuQuotas: " + "; ".join(short))
    if not _fits(tenant, tenant_hardware(tenant, cluster), quotas=False):
        parts.append(_hardware_fix(tenant, cluster))
    if not parts:  # the quotas are not short and the cards hold it all: only the order refuses
        parts.append(_hardware_fix(tenant, cluster))
    return " and ".join(parts)


def _hardware_fix(tenant: TenantConfig, cluster: str) -> str:
    assert tenant.gpus is not None
    workers, cards, most = len(tenant.worker_names()), tenant.gpus.per_worker, _max_workers(tenant)

    def fits(w: int, c: int) -> bool:
        return _fits(tenant, tenant_hardware(tenant, cluster, w, c), quotas=False)

    options = []
    more_workers = _smallest(workers + 1, most, lambda w: fits(w, cards))
    if more_workers is not None:
        options.append(_more_workers(tenant, more_workers - workers, more_workers))
    more_cards = _smallest(cards + 1, MAX_CARDS_PER_NODE, lambda c: fits(workers, c))
    if more_cards is not None:
        options.append(_more_cards(tenant, more_cards))
    if options:
        return " or ".join(options)
    both = []
    for c in range(cards + 1, MAX_CARDS_PER_NODE + 1):
        w = _smallest(workers + 1, most, lambda w, c=c: fits(w, c))
        if w is not None:
            both.append((w * c, w, c))
    if not both:
        return (f"no more workers or cards within the config's limits (up to {most} workers, "
                f"{MAX_CARDS_PER_NODE} cards per worker) would do: make the workloads smaller")
    _, w, c = min(both)
    return f"{_more_workers(tenant, w - workers, w)} with {_more_cards(tenant, c)}"


def _more_workers(tenant: TenantConfig, more: int, total: int) -> str:
    if tenant.on_hosts:
        return (f"{more} more GPU host(s) like this tenant's (a hardware change: {total} hosts, each "
                f"added to its hosts)")
    return f"{more} more worker(s) of this tenant's shape (workers: {total})"


def _more_cards(tenant: TenantConfig, per_worker: int) -> str:
    assert tenant.gpus is not None
    more = per_worker - tenant.gpus.per_worker
    if tenant.on_hosts:
        return (f"{more} more card(s) per host (a hardware change: hosts with {per_worker} cards, then "
                f"gpus.perWorker: {per_worker})")
    return f"{more} more card(s) per worker (gpus.perWorker: {per_worker})"


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


def undecided_message(index: int, tenant: TenantConfig, plan: WorkloadPlan) -> str:
    """The line for a tenant whose plan has no verdict: neither fits nor refused, and why."""
    return (f"tenants[{index}].gpuWorkloads ({tenant.name}): the planner could not decide whether they "
            f"fit: {plan.why}. Nothing is refused for it; `kamaji-hami-plan workloads` shows the orders "
            "it followed")


def verdict_of(plans: list[WorkloadPlan]) -> str:
    """One verdict for several plans: any that does not fit decides, then any unknown."""
    verdicts = {plan.verdict for plan in plans}
    return DOES_NOT_FIT if DOES_NOT_FIT in verdicts else UNKNOWN if UNKNOWN in verdicts else FITS


__all__ = ["DOES_NOT_FIT", "FITS", "UNKNOWN", "CardLeft", "WorkloadPlan", "WorkloadResult", "admit",
           "plan_workloads", "quota_shortfall", "refusal_message", "smallest_fix", "tenant_hardware",
           "undecided_message", "verdict_of"]


def plan_declared_workloads(platform: Any) -> tuple[dict[str, WorkloadPlan], list[str]]:
    """Every tenant's declared workloads planned (tenants without any are left out), and a line per
    workload that does not fit (a tenant whose verdict is unknown: `undecided_tenants`)."""
    plans: dict[str, WorkloadPlan] = {}
    problems: list[str] = []
    for index, tenant in enumerate(platform.tenants):
        if not tenant.gpu_workloads:
            continue
        plans[tenant.name] = plan = plan_workloads(tenant, platform.management.name)
        problems += refusal_message(index, tenant, plan)
    return plans, problems


def undecided_tenants(platform: Any, plans: dict[str, WorkloadPlan]) -> list[str]:
    """A line per tenant whose plan is neither `fits` nor `does not fit`."""
    return [undecided_message(index, tenant, plans[tenant.name])
            for index, tenant in enumerate(platform.tenants)
            if tenant.name in plans and plans[tenant.name].verdict == UNKNOWN]
