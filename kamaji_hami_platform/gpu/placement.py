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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kamaji_hami_platform.gpu.card_fit import (
    FULL_CARD_CORES,
    HAMI_SCORE_WEIGHT,
    GpuRequest,
    QuotaLeft,
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
# GPU pods on the node (the kubelet's pod limit), and its cards' usage; the walk over orders adds the
# pods of the plan held on the node, each with its cards and whether its bind failed (orders.py).
NodeState = tuple[Any, ...]
ClassState = tuple[tuple[NodeState, int], ...]  # sorted: each node state and how many nodes are in it
State = tuple[ClassState, ...]  # per class of interchangeable nodes, in class order

# kube-scheduler's NodeResourcesFit refuses a node whose pods are at the kubelet's maxPods before any
# extender is asked (kubernetes v1.35.4 pkg/scheduler/framework/plugins/noderesources/fit.go
# `Too many pods`; schedule_one.go findNodesThatPassExtenders gets only the nodes that passed).
TOO_MANY_PODS = "Too many pods"


class _Planner:
    """Nodes grouped into classes of interchangeable ones, and name-free caches of fits and scores.

    A state is a multiset of node states per class: HAMi's choice depends on neither names nor ids,
    so two nodes of a class swapping their histories is an equally possible state, and a class of
    99 identical workers costs what its few distinct node states cost."""

    def __init__(self, nodes: Mapping[str, list[GpuDevice]], policy: str, node_policy: str,
                 pod_room: Mapping[str, int] | None = None, floating: int = 0,
                 requests: Iterable[GpuRequest] = ()) -> None:
        if node_policy not in NODE_POLICIES:
            raise ValueError(f"unsupported node scheduler policy {node_policy!r} (HAMi: {NODE_POLICIES})")
        self.names = sorted(nodes)
        self.base = {name: [replace(d) for d in nodes[name]] for name in self.names}
        self.policy, self.node_policy = policy, node_policy
        # A node's pod limit binds only when the plan's pods could reach it (`most_pods`).
        asked = list(requests)
        room = {name: limit for name, limit in (pod_room or {}).items()
                if name in nodes and limit - floating < most_pods(nodes[name], asked)}
        self.floating = floating if room else 0  # where no limit binds, where they sit cannot matter
        classes: dict[tuple, list[str]] = {}
        for name in self.names:
            shape = tuple((d.count, d.devmem, d.devcore, d.type, d.numa, d.mode, d.health)
                          for d in self.base[name])
            start: NodeState = (0, usage_of(self.base[name]))
            classes.setdefault((shape, room.get(name), start), []).append(name)
        self.members = list(classes.values())
        self.rooms: list[int | None] = [key[1] for key in classes]
        self.class_of = {name: index for index, members in enumerate(self.members) for name in members}
        self.start: State = tuple(((key[2], len(members)),) for key, members in classes.items())
        self.answers: dict[tuple, _Answer] = {}
        self.scores: dict[tuple, float] = {}

    def devices(self, index: int, usage: Usage, name: str | None = None) -> list[GpuDevice]:
        """A class's cards (those of `name`, else of its first member) with the given usage."""
        base = self.base[name or self.members[index][0]]
        return [replace(d, used=used, usedmem=memory, usedcores=cores)
                for d, (used, memory, cores) in zip(base, usage, strict=True)]

    def answer(self, index: int, node: NodeState, request: GpuRequest, quota: QuotaLeft | None) -> _Answer:
        pods, usage = node[0], node[1]  # the walk over orders keeps more in a node state (orders.py)
        room = self.rooms[index]
        if room is not None and pods >= room:
            return _Answer(False, (), TOO_MANY_PODS)
        key = (index, usage, request, quota)  # the class stands for its shape (cheaper to hash)
        if key not in self.answers:
            devices = self.devices(index, usage)
            found = fit(devices, request, policy=self.policy, quota=quota)
            position = {d.id: i for i, d in enumerate(devices)}
            self.answers[key] = _Answer(found.ok, tuple(position[c] for c in found.device_ids), found.reason)
        return self.answers[key]

    def score(self, index: int, usage: Usage) -> float:
        key = (index, usage)
        if key not in self.scores:
            self.scores[key] = node_score(self.devices(index, usage))
        return self.scores[key]

    def charged(self, index: int, node: NodeState, request: GpuRequest,
                positions: tuple[int, ...]) -> NodeState:
        """The node state after HAMi's AddResourceUsage for one pod on these cards (what else the
        state holds is kept)."""
        pods, usage = node[0], node[1]
        return (pods + 1, self.used(index, usage, request, positions, 1), *node[2:])

    def used(self, index: int, usage: Usage, request: GpuRequest, positions: tuple[int, ...],
             sign: int) -> Usage:
        """The cards' usage with one pod's allocation on these cards added (sign 1) or taken back
        (-1: HAMi's RmUsage of a stale allocation, pkg/scheduler/scheduler.go Filter)."""
        cards = list(usage)
        base = self.base[self.members[index][0]]
        for i in positions:
            used, memory, cores = cards[i]
            cards[i] = (used + sign, memory + sign * request.memory_on(base[i]),
                        cores + sign * min(request.coresreq, FULL_CARD_CORES))
        return tuple(cards)

    def starts(self) -> list[State]:
        """Every way the floating pods (the platform's, placed by kube-scheduler before any GPU
        pod) may sit on the nodes whose pod limit binds, up to swapping identical nodes and no
        node past its limit (any left over sit on the other nodes): the states a plan starts from.
        Where they cannot all fit, past the limits (the plan then refuses every GPU pod there)."""
        if not self.floating:
            return [self.start]
        return self._starts(capped=True) or self._starts(capped=False)

    def _starts(self, capped: bool) -> list[State]:
        binding = [index for index, room in enumerate(self.rooms) if room is not None]
        elsewhere = len(binding) < len(self.members)
        found: list[State] = []

        def per_class(position: int, left: int, state: list[ClassState]) -> None:
            if position == len(binding):
                if elsewhere or not left:
                    found.append(tuple(state))
                return
            index = binding[position]
            ((pods, usage), members), = self.start[index]
            room = self.rooms[index]
            assert room is not None
            largest = max(room - pods, 0) if capped else None  # a kubelet takes no more
            for here in range(left + 1):
                for parts in _partitions(here, members, largest):
                    nodes = Counter((pods + part, usage) for part in parts)
                    if members > len(parts):
                        nodes[(pods, usage)] += members - len(parts)
                    state[index] = tuple(sorted(nodes.items()))
                    per_class(position + 1, left - here, state)
            state[index] = self.start[index]

        per_class(0, self.floating, list(self.start))
        return found

    def named(self, state: State) -> dict[str, NodeState]:
        """One naming of a state: each class's members take its node states in order."""
        result: dict[str, NodeState] = {}
        for members, nodes in zip(self.members, state, strict=True):
            names = iter(members)
            for node, count in nodes:
                for _ in range(count):
                    result[next(names)] = node
        return result

    def final(self, state: State) -> dict[str, list[GpuDevice]]:
        named = self.named(state)
        return {name: self.devices(self.class_of[name], named[name][1], name) for name in self.names}


def most_pods(devices: list[GpuDevice], requests: list[GpuRequest]) -> int:
    """An upper bound on the pods of these shapes one node holds: each takes a task slot on a card,
    and a card holds no more tasks than its slots, its memory or its compute allow for the
    smallest of them (no requests given: its slots)."""
    total = 0
    for device in devices:
        tasks = device.count
        if requests:
            memory = min(r.memory_on(device) for r in requests)
            cores = min(min(r.coresreq, FULL_CARD_CORES) for r in requests)
            if memory > 0:
                tasks = min(tasks, device.devmem // memory)
            if cores > 0:
                tasks = min(tasks, device.devcore // cores)
        total += tasks
    return total


def _partitions(total: int, most_parts: int, largest: int | None = None) -> list[tuple[int, ...]]:
    """`total` as a sum of at most `most_parts` positive parts, largest first (0: no parts)."""
    if total == 0:
        return [()]
    largest = total if largest is None else largest
    return [(part, *rest) for part in range(min(total, largest), 0, -1) if most_parts > 0
            for rest in _partitions(total - part, most_parts - 1, part)]


def _moved(nodes: ClassState, old: NodeState, new: NodeState) -> ClassState:
    counts = dict(nodes)
    counts[old] -= 1
    if not counts[old]:
        del counts[old]
    counts[new] = counts.get(new, 0) + 1
    return tuple(sorted(counts.items()))


def usage_of(devices: list[GpuDevice]) -> Usage:
    return tuple((d.used, d.usedmem, d.usedcores) for d in devices)


def _cards_in_use(state: State) -> int:
    return sum(count for nodes in state for (_, usage), count in nodes for used, _, _ in usage if used > 0)


def _best(scores: dict[Group, float], node_policy: str) -> list[Group]:
    """The nodes HAMi may take: those sorted last (binpack: highest score, spread: lowest)."""
    best = (max if node_policy == "binpack" else min)(scores.values())
    return [group for group, score in scores.items() if score == best]


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
    return count_refusal(count, request, taken)


def count_refusal(count: CountQuota, request: GpuRequest, used: int) -> str:
    """The API server's refusal of a pod over the ResourceQuota on requests.nvidia.com/gpu
    (k8s.io/apiserver v0.35.4 admission/plugin/resourcequota/controller.go, within NewForbidden)."""
    return (f'pods "<pod>" is forbidden: exceeded quota: {count.name}, requested: '
            f"{GPU_REQUESTS}={request.nums}, used: {GPU_REQUESTS}={used}, "
            f"limited: {GPU_REQUESTS}={count.limit}")


Branch = tuple[State, int, QuotaUsage, QuotaUsage]  # nodes, pods placed, HAMi's Used, pods' cards created


def plan_sequence(nodes: Mapping[str, list[GpuDevice]], pods: list[GpuRequest], *,
                  policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY,
                  namespaces: list[str] | None = None, quotas: Mapping[str, QuotaLeft] | None = None,
                  counts: Mapping[str, CountQuota] | None = None,
                  pod_room: Mapping[str, int] | None = None, floating: int = 0) -> Plan:
    """Create and place pods one after another as HAMi would, following every node tie.

    With `namespaces` (one per pod), `quotas` (namespace -> HAMi's limits.nvidia.com/gpumem and
    gpucores) and `counts` (namespace -> Kubernetes' requests.nvidia.com/gpu quota), a pod is first
    admitted or refused at creation (HAMi's webhook, then the ResourceQuota), then placed with
    HAMi's own quota check per card (pkg/device/quota.go FitQuota); what a namespace's placed pods
    use counts against the next one. `pod_room`: node -> how many more pods its kubelet takes
    (maxPods less the pods already on it); a node at its limit is refused by kube-scheduler
    (`Too many pods`) before HAMi is asked; `floating` platform pods may already sit on any nodes
    (each way they may is a branch). Works on copies: the caller's devices are not changed.
    Pods created together and placed in any order: `kamaji_hami_platform.gpu.orders`."""
    planner = _Planner(nodes, policy, node_policy, pod_room, floating, pods)
    quotas, counts = quotas or {}, counts or {}
    frontier: dict[Branch, None] = {(start, 0, (), ()): None for start in planner.starts()}
    placements, complete = [], True
    for number, request in enumerate(pods, start=1):
        namespace = namespaces[number - 1] if namespaces else None
        outcome, following = _Outcome(), {}
        for branch in frontier:
            for successor in _create_and_place(planner, branch, request, namespace, quotas, counts, outcome):
                following[successor] = None
        if len(following) > MAX_BRANCHES:
            complete = False
            following = dict.fromkeys(sorted(following)[:MAX_BRANCHES])
        frontier = following
        placements.append(_placement(number, request, outcome))
    placed = [count for _, count, _, _ in frontier]
    cards = [_cards_in_use(state) for state, _, _, _ in frontier]
    final = [planner.final(state) for state, _, _, _ in frontier]
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
    answers, moves = moves_from(planner, state, request, quota)
    if not moves:
        outcome.branches_refused += 1
        note_refusal(outcome.refusals, planner, state, answers)
        return [(state, 0, 0)]
    outcome.branches_placed += 1
    note_options(outcome, planner, request, moves)
    return [(move.successor, 1, move_memory(planner, request, move)) for move in moves]


def note_options(outcome: _Outcome, planner: _Planner, request: GpuRequest, moves: list[Move]) -> None:
    """Every node (and its cards) a move may take: any member of the moved class, by symmetry."""
    for move in moves:
        for member in planner.members[move.group[0]]:
            outcome.options.add((member, tuple(planner.base[member][i].id for i in move.positions)))
        first = planner.base[planner.members[move.group[0]][0]][move.positions[0]]
        outcome.memory = outcome.memory or (request.memory_on(first), min(request.coresreq, FULL_CARD_CORES))


def move_memory(planner: _Planner, request: GpuRequest, move: Move) -> int:
    base = planner.base[planner.members[move.group[0]][0]]
    return sum(request.memory_on(base[i]) for i in move.positions)


def note_refusal(refusals: dict[str, tuple[list[str], str]], planner: _Planner, state: State,
                 answers: dict[Group, _Answer]) -> None:
    """Each node's reason (one naming of the state), HAMi's events and kube-scheduler's line."""
    reasons = node_reasons(planner, state, answers)
    if not reasons:
        refusals[NO_GPU_NODE] = ([], "")
        return
    text = "; ".join(f"{n}: {r}" for n, r in reasons.items()) if len(reasons) > 1 \
        else next(iter(reasons.values()))
    asked = {name: reason for name, reason in reasons.items() if reason != TOO_MANY_PODS}
    refusals[text] = (_hami_events(asked) if asked else [], _scheduler_message(reasons))


def node_reasons(planner: _Planner, state: State, answers: dict[Group, _Answer]) -> dict[str, str]:
    named = planner.named(state)
    return {name: answers[(planner.class_of[name], named[name])].reason for name in planner.names}


Group = tuple[int, NodeState]  # a class and one of its node states


@dataclass(frozen=True)
class Move:
    """One way HAMi may place a pod: a node of `group`, these card positions, the state after."""

    group: Group
    positions: tuple[int, ...]
    successor: State


def moves_from(planner: _Planner, state: State, request: GpuRequest,
               quota: QuotaLeft | None = None) -> tuple[dict[Group, _Answer], list[Move]]:
    """Every distinct node's answer, and each way HAMi may place the pod: one per tied best
    node state (nodes of a class in the same state are one move: their successors are the same
    state up to names)."""
    answers = {(index, node): planner.answer(index, node, request, quota)
               for index, nodes in enumerate(state) for node, _ in nodes}
    scores = {group: planner.score(group[0], group[1][1]) for group, answer in answers.items() if answer.ok}
    if not scores:
        return answers, []
    moves = []
    for group in _best(scores, planner.node_policy):
        index, node = group
        positions = answers[group].positions
        successor = list(state)
        successor[index] = _moved(state[index], node, planner.charged(index, node, request, positions))
        moves.append(Move(group, positions, tuple(successor)))
    return answers, moves


Outcome = tuple[tuple[str, tuple[str, ...]], ...]  # (node, card ids) of each placed pod, sorted


def possible_outcomes(nodes: Mapping[str, list[GpuDevice]], pods: list[GpuRequest], *,
                      policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY,
                      limit: int = MAX_BRANCHES) -> set[Outcome]:
    """Every (node, cards) multiset HAMi may record for these pods, following each tie by name:
    what a live run is judged against when HAMi's choice between nodes is open.

    Raises ValueError beyond `limit` distinct branches (the answer would be a guess)."""
    planner = _Planner(nodes, policy, node_policy)
    start = planner.named(planner.start)
    frontier: set[tuple[tuple[NodeState, ...], Outcome]] = {(tuple(start[n] for n in planner.names), ())}
    for request in pods:
        following: set[tuple[tuple[NodeState, ...], Outcome]] = set()
        for named, outcome in frontier:
            fitting = {}
            for position, name in enumerate(planner.names):
                index = planner.class_of[name]
                answer = planner.answer(index, named[position], request, None)
                if answer.ok:
                    fitting[(position, name)] = (planner.score(index, named[position][1]), answer.positions)
            if not fitting:
                following.add((named, outcome))
                continue
            best = (max if node_policy == "binpack" else min)(score for score, _ in fitting.values())
            for (position, name), (score, positions) in fitting.items():
                if score != best:
                    continue
                successor = list(named)
                successor[position] = planner.charged(planner.class_of[name], named[position], request,
                                                      positions)
                ids = tuple(planner.base[name][i].id for i in positions)
                following.add((tuple(successor), tuple(sorted((*outcome, (name, ids))))))
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
             policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY,
             pod_room: Mapping[str, int] | None = None, floating: int = 0) -> Span:
    """How many pods of one shape the nodes take before HAMi refuses, over every tie (and every
    way `floating` platform pods may sit on the nodes).

    Identical pods: a branch that refuses one refuses every later one (usage only grows), so each
    branch stops at its first refusal."""
    planner = _Planner(nodes, policy, node_policy, pod_room, floating, [request])
    filler = Filler(planner, request)
    spans = [filler.more(start) for start in planner.starts()]
    return Span(min(s.low for s in spans), max(s.high for s in spans))


class Filler:
    """Pods of one shape added one at a time until HAMi refuses one: how many more a state takes,
    over every tie. Identical pods and usage that only grows make the states a DAG whose branches
    meet, so each state is answered once, whichever start reaches it."""

    def __init__(self, planner: _Planner, request: GpuRequest) -> None:
        self.planner, self.request = planner, request
        self.cores = min(request.coresreq, FULL_CARD_CORES) * request.nums
        self.memo: dict[tuple[State, QuotaLeft | None], tuple[int, int]] = {}
        self.alone: dict[tuple[int, NodeState], int] = {}

    def more(self, state: State, quota: QuotaLeft | None = None) -> Span:
        """How many more pods `state` takes (HAMi's quota left: `quota`)."""
        if quota is None:
            return self._more_node_by_node(state)
        return self._more_over_every_order(state, quota)

    def _more_node_by_node(self, state: State) -> Span:
        """Without a quota, nodes do not share anything a pod asks for: a node's answer reads only
        its own usage and pod count (HAMi's Fit and the kubelet's limit), and its card choice is
        one, so each node takes the same number of pods in every order HAMi may fill them in, and
        the order only interleaves them. Every branch ends when no node takes one more: the
        sum of what each node takes alone (one walk per distinct node state, not one per order)."""
        total = sum(count * self._node_takes(index, node)
                    for index, nodes in enumerate(state) for node, count in nodes)
        return Span(total, total)

    def _node_takes(self, index: int, node: NodeState) -> int:
        """How many more pods of the request one node of class `index` takes from `node`."""
        key = (index, node)
        if key not in self.alone:
            taken, current = 0, node
            while (answer := self.planner.answer(index, current, self.request, None)).ok:
                current = self.planner.charged(index, current, self.request, answer.positions)
                taken += 1
            self.alone[key] = taken
        return self.alone[key]

    def _more_over_every_order(self, state: State, quota: QuotaLeft | None) -> Span:
        """Every order, state by state (a quota makes what one node takes depend on the others)."""
        start = (state, quota)
        stack, following = [start], {}
        while stack:
            key = stack[-1]
            if key in self.memo:
                stack.pop()
                continue
            if key not in following:
                following[key] = self._successors(*key)
            waiting = [s for s in following[key] if s not in self.memo]
            if waiting:
                stack.extend(waiting)
                continue
            stack.pop()
            counts = [self.memo[s] for s in following.pop(key)]
            self.memo[key] = ((1 + min(c[0] for c in counts), 1 + max(c[1] for c in counts)) if counts
                              else (0, 0))
        return Span(*self.memo[start])

    def _successors(self, state: State, quota: QuotaLeft | None) -> list[tuple[State, QuotaLeft | None]]:
        _, moves = moves_from(self.planner, state, self.request, quota)
        return [(move.successor, _less(quota, move_memory(self.planner, self.request, move), self.cores))
                for move in moves]


def _less(quota: QuotaLeft | None, memory: int, cores: int) -> QuotaLeft | None:
    if quota is None:
        return None
    return QuotaLeft(None if quota.memory is None else quota.memory - memory,
                     None if quota.cores is None else quota.cores - cores)


def pods_that_fit(nodes: Mapping[str, list[GpuDevice]], request: GpuRequest, *,
                  policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY) -> int:
    """How many pods of one shape the nodes take in every order HAMi may choose (the low end)."""
    return capacity(nodes, request, policy=policy, node_policy=node_policy).low
