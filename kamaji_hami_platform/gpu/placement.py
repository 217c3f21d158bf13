"""The capacity planner: HAMi 2.10.0's node choice over a sequence of pods, ties included.

HAMi picks among nodes of equal score in whatever order its goroutines finish, so the planner
follows every tied choice (up to MAX_BRANCHES distinct branches) and gives counts as ranges.

Upstream (Project-HAMi/HAMi v2.10.0; kubernetes v1.35):
- pkg/scheduler/score.go `calcScoreWithOptions`, `recordFilteringFailures`
- pkg/scheduler/scheduler.go `Filter`; pkg/scheduler/policy/node_policy.go `ComputeDefaultScore`,
  `NodeScoreList.Less`
- charts/hami/templates/_helpers.tpl `hami-vgpu.scheduler.managedResources` (`ignoredByScheduler`)
- kubernetes pkg/scheduler/framework/types.go `FitError.Error`

Rationale: docs/design/gpu-fit-model.md.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kamaji_hami_platform.gpu.card_fit import (
    FULL_CARD_CORES,
    HAMI_SCORE_WEIGHT,
    GpuRequest,
    QuotaLeft,
    charge,
    f32,
    fit,
)
from kamaji_hami_platform.gpu.devices import GpuDevice

DEFAULT_GPU_POLICY = "spread"  # HAMi cmd/scheduler/main.go --gpu-scheduler-policy, chart values.yaml
DEFAULT_NODE_POLICY = "binpack"  # --node-scheduler-policy
NODE_POLICIES = ("binpack", "spread")
MAX_BRANCHES = 64
NO_GPU_NODE = "no GPU node"


def node_score(devices: list[GpuDevice]) -> float:
    """HAMi's default node score over the node's current usage, in float32 (ComputeDefaultScore)."""
    total = sum(d.count for d in devices)
    cores = sum(d.devcore for d in devices)
    memory = sum(d.devmem for d in devices)
    if not (total and cores and memory):
        return 0.0
    slots = f32(sum(d.used for d in devices) / total)
    compute = f32(sum(d.usedcores for d in devices) / cores)
    used_memory = f32(sum(d.usedmem for d in devices) / memory)
    return f32(HAMI_SCORE_WEIGHT * f32(f32(slots + compute) + used_memory))


@dataclass
class Placement:
    """One pod of a plan: where HAMi may put it, or why it would not.

    `ok`: placed in every branch; `maybe_refused`: placed in some, refused in others. `node` and
    `device_ids` are set when they are certain; `nodes` lists every node HAMi may choose."""

    pod: int
    ok: bool
    node: str | None
    device_ids: list[str]
    reason: str
    memory_mib: int = 0
    cores: int = 0
    nodes: list[str] = field(default_factory=list)
    maybe_refused: bool = False
    hami_events: list[str] = field(default_factory=list)
    scheduler_message: str = ""

    @property
    def tie(self) -> bool:
        return len(self.nodes) > 1


@dataclass(frozen=True)
class Span:
    """A count over the branches HAMi may take: one value when they agree."""

    low: int
    high: int

    @property
    def certain(self) -> bool:
        return self.low == self.high

    def __str__(self) -> str:
        return str(self.low) if self.certain else f"{self.low}-{self.high}"

    def as_output(self) -> int | dict[str, int]:
        return self.low if self.certain else {"min": self.low, "max": self.high}


@dataclass
class Plan:
    """A sequence of pods planned on a set of nodes, every tie followed."""

    placements: list[Placement]
    placed: Span
    refused: Span
    cards_used: Span
    branches: int
    complete: bool
    final: list[dict[str, list[GpuDevice]]] = field(default_factory=list)
    """Each branch's nodes after the last pod (their cards with the usage HAMi would record)."""

    @property
    def certain(self) -> bool:
        """Every pod's outcome and node is the same in every branch."""
        return self.complete and not any(p.tie or p.maybe_refused for p in self.placements)


@dataclass(frozen=True)
class _Answer:
    """One node's answer for one request: the card positions it would use, or why not."""

    ok: bool
    positions: tuple[int, ...] = ()
    reason: str = ""


@dataclass
class _Outcome:
    """What one pod met across the branches of one step."""

    options: set[tuple[str, tuple[str, ...]]] = field(default_factory=set)
    memory: tuple[int, int] | None = None
    refusals: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    branches_placed: int = 0
    branches_refused: int = 0


Usage = tuple[tuple[int, int, int], ...]  # per card: used, usedmem, usedcores
State = tuple[Usage, ...]  # per node, in name order


class _Planner:
    """Nodes, their interchangeable classes, and name-free caches of fits and scores."""

    def __init__(self, nodes: Mapping[str, list[GpuDevice]], policy: str, node_policy: str) -> None:
        if node_policy not in NODE_POLICIES:
            raise ValueError(f"unsupported node scheduler policy {node_policy!r} (HAMi: {NODE_POLICIES})")
        self.names = sorted(nodes)
        self.position = {name: i for i, name in enumerate(self.names)}
        self.base = {name: [replace(d) for d in nodes[name]] for name in self.names}
        self.policy, self.node_policy = policy, node_policy
        self.shape = {name: tuple((d.count, d.devmem, d.devcore, d.type, d.numa, d.mode, d.health)
                                  for d in self.base[name]) for name in self.names}
        self.start: State = tuple(usage_of(self.base[name]) for name in self.names)
        # Interchangeable nodes: same cards and same usage at the start (HAMi's choice depends on
        # neither names nor ids), so swapping their histories gives an equally possible state.
        self.classes: dict[tuple, list[str]] = {}
        for name in self.names:
            self.classes.setdefault((self.shape[name], self.start[self.position[name]]), []).append(name)
        self.class_of = {name: key for key, members in self.classes.items() for name in members}
        self.answers: dict[tuple, _Answer] = {}
        self.scores: dict[tuple, float] = {}

    def devices(self, name: str, usage: Usage) -> list[GpuDevice]:
        return [replace(d, used=used, usedmem=memory, usedcores=cores)
                for d, (used, memory, cores) in zip(self.base[name], usage, strict=True)]

    def answer(self, name: str, usage: Usage, request: GpuRequest, quota: QuotaLeft | None = None) -> _Answer:
        key = (self.shape[name], usage, request, quota)
        if key not in self.answers:
            devices = self.devices(name, usage)
            found = fit(devices, request, policy=self.policy, quota=quota)
            index = {d.id: i for i, d in enumerate(devices)}
            self.answers[key] = _Answer(found.ok, tuple(index[c] for c in found.device_ids), found.reason)
        return self.answers[key]

    def score(self, name: str, usage: Usage) -> float:
        key = (self.shape[name], usage)
        if key not in self.scores:
            self.scores[key] = node_score(self.devices(name, usage))
        return self.scores[key]

    def canonical(self, state: State) -> tuple:
        """The branch's identity up to swapping interchangeable nodes."""
        return tuple(tuple(sorted(state[self.position[n]] for n in members))
                     for members in self.classes.values())


def usage_of(devices: list[GpuDevice]) -> Usage:
    return tuple((d.used, d.usedmem, d.usedcores) for d in devices)


def _cards_in_use(state: State) -> int:
    return sum(1 for usage in state for used, _, _ in usage if used > 0)


def _best(scores: dict[str, float], node_policy: str) -> list[str]:
    """The nodes HAMi may take: those sorted last (binpack: highest score, spread: lowest)."""
    best = (max if node_policy == "binpack" else min)(scores.values())
    return [name for name, score in scores.items() if score == best]


_REASON_PART = re.compile(r"^(\d+)/(\d+) (\S+)$")


def _hami_events(reasons: dict[str, str]) -> list[str]:
    """HAMi's FilteringFailed texts when no node takes a pod (scheduler.go Filter, score.go
    recordFilteringFailures over common.ParseReason): `<n> nodes <Code>(<nodes>)` per code that
    parses as `<n>/<m> <Code>` (not `NodeInsufficientDevice`, which has no count), and
    `no available node, <n> nodes do not meet`, n counting every node asked."""
    by_code: dict[str, list[str]] = {}
    for node, reason in reasons.items():
        for part in reason.split(", "):
            match = _REASON_PART.match(part)
            if match:
                by_code.setdefault(match[3], []).append(node)
    events = [f"{len(nodes)} nodes {code}({','.join(sorted(nodes))})"
              for code, nodes in sorted(by_code.items())]
    return [*events, f"no available node, {len(reasons)} nodes do not meet"]


def _scheduler_message(reasons: dict[str, str]) -> str:
    """kube-scheduler's FitError, first sentence: `0/N nodes are available: <n> <reason>, ...`."""
    histogram = Counter(reasons.values())
    body = ", ".join(sorted(f"{count} {reason}" for reason, count in histogram.items()))
    return f"0/{len(reasons)} nodes are available: {body}."


QuotaUsage = tuple[tuple[str, int, int], ...]  # per quota'd namespace: MiB and cores HAMi has allocated


def _quota_left(quotas: Mapping[str, QuotaLeft], used: QuotaUsage, namespace: str | None) -> QuotaLeft | None:
    """What the namespace's HAMi quota leaves, given what its placed pods use (quota.go `Used`)."""
    if namespace is None or namespace not in quotas:
        return None
    limit = quotas[namespace]
    memory, cores = next(((m, c) for ns, m, c in used if ns == namespace), (0, 0))
    return QuotaLeft(None if limit.memory is None else limit.memory - memory,
                     None if limit.cores is None else limit.cores - cores)


def _charged(used: QuotaUsage, namespace: str | None, quotas: Mapping[str, Any], memory: int,
             cores: int) -> QuotaUsage:
    if namespace is None or namespace not in quotas:
        return used
    totals = {ns: (m, c) for ns, m, c in used}
    m, c = totals.get(namespace, (0, 0))
    totals[namespace] = (m + memory, c + cores)
    return tuple(sorted((ns, m, c) for ns, (m, c) in totals.items()))


# HAMi's mutating webhook (charts/hami templates/scheduler/webhook.yaml `vgpu.hami.io`) denies a
# pod over its namespace's HAMi quota when it is created (pkg/scheduler/webhook.go fitResourceQuota).
WEBHOOK_DENIED = 'admission webhook "vgpu.hami.io" denied the request: exceeding resource quota'
GPU_REQUESTS = "requests.nvidia.com/gpu"  # the ResourceQuota key Kubernetes counts cards under


@dataclass(frozen=True)
class CountQuota:
    """A Kubernetes ResourceQuota on the cards pods request (`requests.nvidia.com/gpu`): `name` is
    the ResourceQuota object's, as the API server's refusal names it."""

    name: str
    limit: int


def _webhook_admits(request: GpuRequest, quota: QuotaLeft | None) -> bool:
    """fitResourceQuota: the pod's gpumem x cards (0 for a percentage: GenerateResourceRequests
    leaves Memreq 0) and gpucores x cards against what the namespace's placed pods leave."""
    if quota is None:
        return True
    if quota.memory is not None and request.memreq * request.nums > quota.memory:
        return False
    return quota.cores is None or request.coresreq * request.nums <= quota.cores


def _admission(request: GpuRequest, namespace: str | None, quota: QuotaLeft | None,
               counts: Mapping[str, CountQuota], created: QuotaUsage) -> str:
    """Why the API server refuses to create the pod ("" when it does not): HAMi's webhook first
    (mutating admission), then the ResourceQuota on requests.nvidia.com/gpu (validating; every
    created pod counts, Pending ones too: kubernetes pkg/quota/v1/evaluator/core/pods.go)."""
    if not _webhook_admits(request, quota):
        return WEBHOOK_DENIED
    if namespace is None or namespace not in counts:
        return ""
    count = counts[namespace]
    taken = next((m for ns, m, _ in created if ns == namespace), 0)
    if taken + request.nums <= count.limit:
        return ""
    # k8s.io/apiserver v0.35.4 admission/plugin/resourcequota/controller.go, within NewForbidden.
    return (f'pods "<pod>" is forbidden: exceeded quota: {count.name}, requested: '
            f"{GPU_REQUESTS}={request.nums}, used: {GPU_REQUESTS}={taken}, "
            f"limited: {GPU_REQUESTS}={count.limit}")


Branch = tuple[State, int, QuotaUsage, QuotaUsage]  # nodes, pods placed, HAMi's Used, pods' cards created


def plan_sequence(nodes: Mapping[str, list[GpuDevice]], pods: list[GpuRequest], *,
                  policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY,
                  namespaces: list[str] | None = None, quotas: Mapping[str, QuotaLeft] | None = None,
                  counts: Mapping[str, CountQuota] | None = None) -> Plan:
    """Create and place pods one after another as HAMi would, following every node tie.

    With `namespaces` (one per pod), `quotas` (namespace -> HAMi's limits.nvidia.com/gpumem and
    gpucores) and `counts` (namespace -> Kubernetes' requests.nvidia.com/gpu quota), a pod is first
    admitted or refused at creation (HAMi's webhook, then the ResourceQuota), then placed with
    HAMi's own quota check per card (pkg/device/quota.go FitQuota); what a namespace's placed pods
    use counts against the next one. Works on copies: the caller's devices are not changed."""
    planner = _Planner(nodes, policy, node_policy)
    quotas, counts = quotas or {}, counts or {}
    first: Branch = (planner.start, 0, (), ())
    frontier: dict[tuple, Branch] = {(planner.canonical(planner.start), 0, (), ()): first}
    placements, complete = [], True
    for number, request in enumerate(pods, start=1):
        namespace = namespaces[number - 1] if namespaces else None
        outcome, following = _Outcome(), {}
        for branch in frontier.values():
            for successor in _create_and_place(planner, branch, request, namespace, quotas, counts, outcome):
                state, count, used, created = successor
                following.setdefault((planner.canonical(state), count, used, created), successor)
        if len(following) > MAX_BRANCHES:
            complete = False
            following = dict(sorted(following.items())[:MAX_BRANCHES])
        frontier = following
        placements.append(_placement(number, request, outcome))
    placed = [count for _, count, _, _ in frontier.values()]
    cards = [_cards_in_use(state) for state, _, _, _ in frontier.values()]
    final = [{name: planner.devices(name, state[planner.position[name]]) for name in planner.names}
             for state, _, _, _ in frontier.values()]
    return Plan(placements, Span(min(placed), max(placed)),
                Span(len(pods) - max(placed), len(pods) - min(placed)),
                Span(min(cards), max(cards)), len(frontier), complete, final)


def _create_and_place(planner: _Planner, branch: Branch, request: GpuRequest, namespace: str | None,
                      quotas: Mapping[str, QuotaLeft], counts: Mapping[str, CountQuota],
                      outcome: _Outcome) -> list[Branch]:
    """The branches after one pod: refused at creation, or created and then placed or refused."""
    state, placed, used, created = branch
    quota = _quota_left(quotas, used, namespace)
    refusal = _admission(request, namespace, quota, counts, created)
    if refusal:
        outcome.branches_refused += 1
        outcome.refusals[refusal] = ([], refusal)
        return [branch]
    if namespace is not None and namespace in counts:
        created = _charged(created, namespace, counts, request.nums, 0)
    successors = []
    for successor, took, memory in _step(planner, state, request, outcome, quota):
        cores = min(request.coresreq, FULL_CARD_CORES) * request.nums
        charged = _charged(used, namespace, quotas, memory, cores) if took else used
        successors.append((successor, placed + took, charged, created))
    return successors


def _step(planner: _Planner, state: State, request: GpuRequest, outcome: _Outcome,
          quota: QuotaLeft | None = None) -> list[tuple[State, int, int]]:
    """(state, pods placed: 0 or 1, MiB it was charged) for each way one pod may go from `state`."""
    answers, moves = _moves(planner, state, request, quota)
    if not moves:
        outcome.branches_refused += 1
        reasons = {name: answer.reason for name, answer in answers.items()}
        if not reasons:
            outcome.refusals[NO_GPU_NODE] = ([], "")
        else:
            text = "; ".join(f"{n}: {r}" for n, r in reasons.items()) if len(reasons) > 1 \
                else next(iter(reasons.values()))
            outcome.refusals[text] = (_hami_events(reasons), _scheduler_message(reasons))
        return [(state, 0, 0)]
    outcome.branches_placed += 1
    for name, positions, _ in moves:
        for member in planner.classes[planner.class_of[name]]:
            outcome.options.add((member, tuple(planner.base[member][i].id for i in positions)))
        devices = planner.devices(name, state[planner.position[name]])
        outcome.memory = outcome.memory or (request.memory_on(devices[positions[0]]),
                                            min(request.coresreq, FULL_CARD_CORES))
    return [(successor, 1, sum(request.memory_on(planner.base[name][i]) for i in positions))
            for name, positions, successor in moves]


Move = tuple[str, tuple[int, ...], State]  # node, card positions, the state after


def _moves(planner: _Planner, state: State, request: GpuRequest,
           quota: QuotaLeft | None = None) -> tuple[dict[str, _Answer], list[Move]]:
    """Every node's answer, and each way HAMi may place the pod: one per tied best node."""
    answers = {name: planner.answer(name, state[i], request, quota) for i, name in enumerate(planner.names)}
    fitting = [name for name, answer in answers.items() if answer.ok]
    if not fitting:
        return answers, []
    scores = {name: planner.score(name, state[planner.position[name]]) for name in fitting}
    moves = []
    for name in _best(scores, planner.node_policy):
        positions = answers[name].positions
        devices = planner.devices(name, state[planner.position[name]])
        charge(devices, request, [devices[i].id for i in positions])
        successor = list(state)
        successor[planner.position[name]] = usage_of(devices)
        moves.append((name, positions, tuple(successor)))
    return answers, moves


Outcome = tuple[tuple[str, tuple[str, ...]], ...]  # (node, card ids) of each placed pod, sorted


def possible_outcomes(nodes: Mapping[str, list[GpuDevice]], pods: list[GpuRequest], *,
                      policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY,
                      limit: int = MAX_BRANCHES) -> set[Outcome]:
    """Every (node, cards) multiset HAMi may record for these pods, following each tie by name:
    what a live run is judged against when HAMi's choice between nodes is open.

    Raises ValueError beyond `limit` distinct branches (the answer would be a guess)."""
    planner = _Planner(nodes, policy, node_policy)
    frontier: set[tuple[State, Outcome]] = {(planner.start, ())}
    for request in pods:
        following: set[tuple[State, Outcome]] = set()
        for state, outcome in frontier:
            _, moves = _moves(planner, state, request)
            if not moves:
                following.add((state, outcome))
            for name, positions, successor in moves:
                ids = tuple(planner.base[name][i].id for i in positions)
                following.add((successor, tuple(sorted((*outcome, (name, ids))))))
        if len(following) > limit:
            raise ValueError(f"more than {limit} ways to place these pods: too many to list")
        frontier = following
    return {outcome for _, outcome in frontier}


def _placement(number: int, request: GpuRequest, outcome: _Outcome) -> Placement:
    reason = " | ".join(outcome.refusals)
    events = sorted({event for found, _ in outcome.refusals.values() for event in found})
    message = " | ".join(sorted({m for _, m in outcome.refusals.values() if m}))
    if not outcome.branches_placed:
        return Placement(number, False, None, [], reason or NO_GPU_NODE, hami_events=events,
                         scheduler_message=message)
    ok = not outcome.branches_refused
    nodes = sorted({node for node, _ in outcome.options})
    node = nodes[0] if ok and len(nodes) == 1 else None
    ids = list(next(iter(outcome.options))[1]) if ok and len(outcome.options) == 1 else []
    memory, cores = outcome.memory or (0, 0)
    return Placement(number, ok, node, ids, reason, memory, cores, nodes, not ok, events, message)


def plan_nodes(nodes: Mapping[str, list[GpuDevice]], pods: list[GpuRequest], *,
               policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY) -> list[Placement]:
    """The placements of `plan_sequence` (every node HAMi may choose for each pod)."""
    return plan_sequence(nodes, pods, policy=policy, node_policy=node_policy).placements


def plan(devices: list[GpuDevice], pods: list[GpuRequest], *,
         policy: str = DEFAULT_GPU_POLICY) -> list[Placement]:
    """Place pods one after another on one node's cards (the node is named `node`)."""
    return plan_nodes({"node": devices}, pods, policy=policy)


def capacity(nodes: Mapping[str, list[GpuDevice]], request: GpuRequest, *,
             policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY) -> Span:
    """How many pods of one shape the nodes take before HAMi refuses, over every tie."""
    upper_bound = sum(d.count for devices in nodes.values() for d in devices) + 1
    return plan_sequence(nodes, [request] * upper_bound, policy=policy, node_policy=node_policy).placed


def pods_that_fit(nodes: Mapping[str, list[GpuDevice]], request: GpuRequest, *,
                  policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY) -> int:
    """How many pods of one shape the nodes take in every order HAMi may choose (the low end)."""
    return capacity(nodes, request, policy=policy, node_policy=node_policy).low
