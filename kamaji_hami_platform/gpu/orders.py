"""Pods created together and placed in any order: what a Deployment, Job or ReplicaSet does.

A controller creates a workload's replicas together (a ReplicaSet in slow-start batches, kubernetes
v1.35.4 pkg/controller/replicaset/replica_set.go `slowStartBatch`), and one `kubectl apply` of
several workloads creates them together too. kube-scheduler's queue then hands the pods to HAMi by
priority and by the time each entered the queue (pkg/scheduler/framework/plugins/queuesort/
priority_sort.go `Less`), which with batches, back-off and retries is not the declared order. So
the walk follows every interleaving of what happens to each pod (Project-HAMi/HAMi v2.10.0):

1. Creation, in any order. A pod in a namespace with a quota is admitted or refused when it is
   created: HAMi's webhook against what HAMi holds allocated for the namespace then (pkg/scheduler/
   webhook.go `fitResourceQuota`, pkg/device/quota.go `Used`), which may already count placed pods,
   then the ResourceQuota on requests.nvidia.com/gpu against the pods created before it (every
   created pod counts, Pending ones too). A refused creation is final. Creations that read no HAMi
   usage (a count quota alone) come first: taking them earlier changes no outcome.
2. Filter, in any order: HAMi places a created pod (its Fit, node score and quota check per card,
   `FitQuota`) and records the allocation (`Filter`, scheduler.go ~1135: the pod cache and the
   quota's Used), or refuses it. A refused pod stays Pending and is retried (kube-scheduler
   requeues a pod an extender refused on any cluster event); it is placed later only if usage went
   down meanwhile, which only a stale allocation's release (3) does.
3. Bind may fail: kube-scheduler binds in the background, in its own goroutine per pod, while it
   filters the next pods (v1.35.4 pkg/scheduler/schedule_one.go), and HAMi's `Bind` fails at once
   while another pod holds the node's lock (pkg/util/nodelock/nodelock.go `LockNode` ~241-290).
   So the walk keeps every placed pod's bind open: at any later step it may fail if another pod
   of the plan is on that node (one filtered later may have taken the lock first). The failed pod
   leaves the node (kube-scheduler forgets it: no pod slot) but its allocation stays in HAMi's
   cache and quota, stale (`fail`, scheduler.go ~1036-1045, releases none). When kube-scheduler
   retries the pod, `Filter` drops the stale allocation (~1092) and places the pod again on the
   usage of that moment: elsewhere, the same place, or nowhere. HAMi's informer may put the
   allocation back from the pod's annotations before the usage is read (`onUpdatePod` ->
   `onAddPod`), so the retry is also placed as if it were still there; and a pod refused then may
   get it back while Pending (a ghost, until its next retry).

An end is a settled state: every pod created or refused at creation, and no Pending or stale pod
that `Filter` would place (a stale one whose retry is refused is Pending, its allocation perhaps a
ghost; every pod left on a node binds). The verdict: `fits` when no end has a pod refused (at
creation, or Pending for good), `does not fit` when one does (that path can happen), `unknown`
when neither could be shown within the limit. A refusal on the way that a later retry undoes (the
informer's race above) is not a refusal of the plan: kube-scheduler retries the pod. "No end
refuses" is shown in one of two ways: the walk over every distinct state ends without such an end,
or a bound does it at once (`never_refused`): however the other pods lay on the cards (each holds
at most one allocation, stale or not, when a pod is refused for good), they could not block every
node for this pod.
What the walk does not follow: other failures after `Filter` (a plugin's Reserve, Permit or
PreBind, an extender timeout, an API error while binding: any bind could then fail, on any
node), locks held by pods from before the plan, a ReplicaSet creating again a pod the webhook
denied, and a pod deleted between `Filter` and `Bind`.
Rationale: docs/design/gpu-fit-model.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from kamaji_hami_platform.gpu.card_fit import (
    FULL_CARD_CORES,
    NO_SELECTORS,
    GpuRequest,
    QuotaLeft,
    _card_check,
    _card_usable,
)
from kamaji_hami_platform.gpu.devices import DEVICE_TYPE_NVIDIA, GpuDevice
from kamaji_hami_platform.gpu.placement import (
    DEFAULT_GPU_POLICY,
    DEFAULT_NODE_POLICY,
    CountQuota,
    Move,
    NodeState,
    QuotaUsage,
    State,
    _admission,
    _charged,
    _Outcome,
    _Planner,
    _quota_left,
    move_memory,
    moves_from,
    note_options,
    note_refusal,
    usage_of,
)

FITS, DOES_NOT_FIT, UNKNOWN = "fits", "does not fit", "unknown"
# Distinct branch states followed before the answer is `unknown`: about a second of planning.
MAX_STATES = 20000
# States followed for the details (nodes, what each card has left) once the bound has the verdict.
DETAIL_STATES = 1000


@dataclass(frozen=True)
class Batch:
    """Identical pods created together: one request in one namespace (None: no quota applies)."""

    request: GpuRequest
    namespace: str | None
    count: int


Branch = tuple[State, tuple[int, ...], tuple[int, ...], QuotaUsage]  # nodes, Pending, placed, HAMi Used
# A node state in the walk: (pods, usage, entries), an entry (batch, card positions, stale) per pod of
# the plan whose allocation HAMi holds there; stale 1: its bind failed (the pod is not on the node,
# kube-scheduler forgot it), 0: on the node, its bind still open.
# The walk's branch: nodes, Pending (created, no allocation), placed (on a node), HAMi Used, not yet
# created, the cards the created pods of each count-quota'd namespace request.
Walk = tuple[State, tuple[int, ...], tuple[int, ...], QuotaUsage, tuple[int, ...], QuotaUsage]


@dataclass
class OrderPlan:
    """The batches over every path HAMi may take them on, every node tie followed."""

    verdict: str
    outcomes: list[_Outcome]
    """Per batch, what its pods met across the branches (nodes, refusals, charge)."""
    finals: list[Branch] = field(default_factory=list)
    """Every branch's end: nothing more can happen (Pending: the pods refused for good)."""
    final_nodes: list[dict[str, list[GpuDevice]]] = field(default_factory=list)
    """Each distinct end's nodes (one naming), their cards with the usage HAMi would record."""
    states: int = 0
    complete: bool = True
    why: str = ""
    planner: _Planner | None = None
    """The planner the states belong to (its classes of nodes and caches)."""

    def placed(self, batch: int) -> tuple[int, int]:
        counts = [placed[batch] for _, _, placed, _ in self.finals]
        return min(counts), max(counts)

    def reaches(self, devices: Mapping[str, list[GpuDevice]], pods: Mapping[str, int],
                placed: Sequence[int]) -> bool:
        """Whether an end seen for real is one of the plan's: each node's cards with the usage HAMi
        recorded, the GPU pods bound on each node, the pods placed per batch; up to swapping
        interchangeable nodes (with floating pods, whose places vary, the pods are not compared)."""
        planner = self.planner
        assert planner is not None
        exact = not planner.floating
        seen = tuple(tuple(sorted(Counter(
            ((pods.get(name, 0) if exact else 0), usage_of(devices[name])) for name in members).items()))
            for members in planner.members)
        ends = {(tuple(tuple(sorted(_recount(nodes, exact))) for nodes in state), tuple(count))
                for state, _, count, _ in self.finals}
        return (seen, tuple(placed)) in ends


def _recount(nodes: tuple[tuple[NodeState, int], ...], with_pods: bool) -> list[tuple[NodeState, int]]:
    """A class's nodes in an end as `reaches` compares them: pods (or none) and the cards' usage."""
    counts: Counter = Counter()
    for node, count in nodes:
        counts[((node[0] if with_pods else 0), node[1])] += count
    return list(counts.items())


def plan_any_order(nodes: Mapping[str, list[GpuDevice]], batches: list[Batch], *,
                   policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY,
                   quotas: Mapping[str, QuotaLeft] | None = None,
                   counts: Mapping[str, CountQuota] | None = None,
                   pod_room: Mapping[str, int] | None = None, limit: int | None = None,
                   stop_at_refusal: bool = False, every_end: bool = False,
                   floating: int = 0, bind_failures: bool = True) -> OrderPlan:
    """Every path on which HAMi may place the batches' pods, created together: each pod created in
    any order, placed in any order, its bind failing and the pod placed again (module docstring).
    `quotas`: HAMi's quota per namespace; `counts`: the ResourceQuota on requests.nvidia.com/gpu per
    namespace (a batch's `count` is then the pods asked for, before admission; without either,
    every pod is created). `stop_at_refusal`: answer only the verdict, as soon as a refusal shows
    (the fix search). `limit`: states followed before the answer is `unknown` (MAX_STATES).
    `every_end`: follow every state up to the limit even when the bound already has the verdict (a
    run on real HAMi is judged against every end). `floating`: the platform's own pods
    kube-scheduler may have put on any node, in every way they may sit. `bind_failures`: False
    walks only paths where every bind succeeds (for comparison)."""
    limit = MAX_STATES if limit is None else limit
    quotas, counts = quotas or {}, counts or {}
    planner = _Planner(nodes, policy, node_policy, pod_room, floating, [b.request for b in batches])
    proven = not quotas_refuse(nodes, batches, quotas) and not counts_refuse(batches, counts) and all(
        never_refused(nodes, batches, index, policy, pod_room, floating) for index in range(len(batches)))
    if proven and stop_at_refusal:
        return OrderPlan(FITS, [_Outcome() for _ in batches], complete=False, planner=planner)
    starts = planner.starts()
    # The details of a proven plan: enough states for every pod from every start (one workload on
    # many nodes is a long walk, not a wide one), at least DETAIL_STATES.
    detail = max(DETAIL_STATES, 2 * sum(b.count for b in batches) * len(starts))
    found = _Search(planner, batches, quotas, counts, bind_failures, stop_at_refusal).run(
        starts, min(detail, limit) if proven and not every_end else limit)
    if proven and not every_end and not found.complete and bind_failures:
        # The bound has the verdict, failed binds included; failed binds multiply the states, so
        # the details follow the binds that succeed: still not every path.
        found = _Search(planner, batches, quotas, counts, False, stop_at_refusal).run(starts,
                                                                                      min(detail, limit))
        found.complete = False
    found.planner = planner
    if proven and found.verdict == UNKNOWN:
        # Only the walk stopped early: the bound has the verdict; the details cover what it followed.
        found.verdict, found.why = FITS, ""
    return found


def counts_refuse(batches: list[Batch], counts: Mapping[str, CountQuota]) -> bool:
    """Whether a namespace's pods ask more cards than its ResourceQuota on requests.nvidia.com/gpu
    allows: then some creation order refuses one (the quota counts every created pod)."""
    return any(sum(b.count * b.request.nums for b in batches if b.namespace == namespace) > count.limit
               for namespace, count in counts.items())


def never_refused(nodes: Mapping[str, list[GpuDevice]], batches: list[Batch], index: int, policy: str,
                  pod_room: Mapping[str, int] | None = None, floating: int = 0) -> bool:
    """True when no order can leave a pod of batch `index` without a node: however badly the
    other pods were laid out, they could not block every node for it.

    HAMi refuses a card for the pod (pkg/device/nvidia/device.go `Fit`) when its task slots are
    used up, when it has less memory or compute left than the pod asks, when the pod wants a whole
    card's compute and the card has any task (or the policy is mutex), or when the pod asks no
    compute and the card's is used up; a node, when fewer of its cards than the pod asks can take
    it, or when its pods are at the kubelet's limit. Each pod of another batch goes at most its best
    dimension's share of the way to blocking a card, from what the card has left, or one slot of
    the way to filling a node's pod room (so does each of the `floating` platform pods, which may
    sit on any node); the shares are added over every pod as if they could be split (more than any
    real layout achieves), and still fall short of the nodes that can take the pod now. Failed
    binds change nothing here: when a pod is refused for good (its own old allocation dropped),
    every other pod holds at most one allocation, stale or not. HAMi's quota is `quotas_refuse`'s."""
    request = batches[index].request
    takers = 0
    # Nodes alike in what a pod's share reads (their usable cards' capacity and use, their pod
    # room) cost alike: one of each kind is enough for the cheapest (99 identical workers: one).
    kinds: dict[tuple[Any, ...], tuple[list[GpuDevice], int | None]] = {}
    for name, devices in nodes.items():
        room = None if pod_room is None or name not in pod_room else pod_room[name]
        usable = [d for d in devices if _usable(d, request, policy)]
        if len(usable) >= request.nums and (room is None or room > 0):
            takers += 1
            kinds.setdefault((len(usable), frozenset(map(_share_inputs, usable)), room), (usable, room))
    if not takers:
        return False
    # Pods all of this one shape block a card only whole: as many as the card takes of them.
    alike = all(batch.request == request for batch in batches if batch.count)

    def cost(other: GpuRequest, usable: list[GpuDevice], room: int | None) -> Fraction:
        return (_alike_to_block(usable, room, request, policy) if alike
                else _pods_to_block(usable, room, request, other, policy))

    # The platform's floating pods block a node only by its pod room, each one slot of it; where
    # every node's cards are blocked before its room fills, even with all of them on it, never.
    rooms = [room for _, room in kinds.values() if room is not None]
    by_room = floating and rooms and any(
        room is not None and room - floating < cost(b.request, usable, None)
        for usable, room in kinds.values() for b in batches if b.count)
    blocking = Fraction(floating, min(rooms)) if by_room else Fraction(0)
    for other, batch in enumerate(batches):
        pods = batch.count - 1 if other == index else batch.count
        if pods > 0:
            blocking += pods / min(cost(batch.request, usable, room) for usable, room in kinds.values())
    return blocking < takers


def _share_inputs(device: GpuDevice) -> tuple[int, ...]:
    """What `_card_share` reads of a card (its memory share reads `devmem` through memory_on)."""
    return (device.count, device.used, device.devmem, device.usedmem, device.devcore, device.usedcores)


def quotas_refuse(nodes: Mapping[str, list[GpuDevice]], batches: list[Batch],
                  quotas: Mapping[str, QuotaLeft]) -> bool:
    """Whether a namespace's pods may ask more than its HAMi quota allows in all, so that some
    order may refuse one (HAMi's FitQuota adds each placed pod's charge to `Used`, pkg/device/
    quota.go); when they cannot, no order meets the quota. A percentage is counted on the largest
    card: a gate for the walk, which decides."""
    cards = [d for devices in nodes.values() for d in devices]
    for namespace, limit in quotas.items():
        mine = [b for b in batches if b.namespace == namespace]
        memory = sum(b.count * b.request.nums * max((b.request.memory_on(d) for d in cards), default=0)
                     for b in mine)
        cores = sum(b.count * b.request.nums * min(b.request.coresreq, FULL_CARD_CORES) for b in mine)
        if (limit.memory is not None and memory > limit.memory) or (limit.cores is not None
                                                                    and cores > limit.cores):
            return True
    return False


def _usable(device: GpuDevice, request: GpuRequest, policy: str) -> bool:
    """The card takes the pod as it is now (Fit's card checks, quota aside; Fit looks only at
    NVIDIA cards)."""
    return (DEVICE_TYPE_NVIDIA.lower() in device.type.lower() and device.devcore > 0
            and _card_usable(device, request, NO_SELECTORS, frozenset()) is None
            and _card_check(device, request, NO_SELECTORS, policy) is None)


def _pods_to_block(cards: list[GpuDevice], room: int | None, request: GpuRequest, other: GpuRequest,
                   policy: str) -> Fraction:
    """The fewest pods of `other` (split at will) that leave the node with fewer usable cards than
    `request` asks, or fill its pod slots."""
    needed = len(cards) - request.nums + 1  # cards to block
    per_pod = max(_card_share(d, request, other, policy) for d in cards) * other.nums
    by_cards = Fraction(needed) / per_pod
    return by_cards if room is None else min(by_cards, Fraction(room))


def _alike_to_block(cards: list[GpuDevice], room: int | None, request: GpuRequest,
                    policy: str) -> Fraction:
    """The fewest pods of the request's own shape that leave the node with fewer usable cards than
    it asks, or fill its pod slots: the cards that take the fewest of them, each filled (a pod on
    `nums` cards fills `nums` at once)."""
    needed = len(cards) - request.nums + 1
    takes = sorted(_card_takes(d, request, policy) for d in cards)
    by_cards = Fraction(sum(takes[:needed]), request.nums)
    return by_cards if room is None else min(by_cards, Fraction(room))


def _card_takes(device: GpuDevice, request: GpuRequest, policy: str) -> int:
    """How many more pods of this shape one card takes (Fit's card checks, one after another)."""
    card, taken = replace(device), 0
    while _usable(card, request, policy):
        card = replace(card, used=card.used + 1, usedmem=card.usedmem + request.memory_on(card),
                       usedcores=card.usedcores + min(request.coresreq, FULL_CARD_CORES))
        taken += 1
    return taken


def _card_share(device: GpuDevice, request: GpuRequest, other: GpuRequest, policy: str) -> Fraction:
    """How much of the way to blocking a usable card for `request` one `other` pod goes, at most."""
    cores = min(request.coresreq, FULL_CARD_CORES)
    if policy == "mutex" or (cores == FULL_CARD_CORES and device.devcore == FULL_CARD_CORES):
        return Fraction(1)  # any task on the card refuses the pod
    memory_left = device.devmem - device.usedmem - request.memory_on(device) + 1  # this much more blocks
    cores_left = device.devcore - device.usedcores
    cores_to_block = cores_left if cores == 0 else cores_left - cores + 1
    shares = [Fraction(1, device.count - device.used), Fraction(other.memory_on(device), memory_left),
              Fraction(min(other.coresreq, FULL_CARD_CORES), cores_to_block)]
    return min(Fraction(1), max(shares))


class _Search:
    """A depth-first walk over the distinct branch states, each visited once."""

    def __init__(self, planner: _Planner, batches: list[Batch], quotas: Mapping[str, QuotaLeft],
                 counts: Mapping[str, CountQuota], bind_failures: bool, stop_at_refusal: bool) -> None:
        self.planner, self.batches, self.quotas, self.counts = planner, batches, quotas, counts
        self.bind_failures, self.stop_at_refusal = bind_failures, stop_at_refusal
        self.outcomes = [_Outcome() for _ in batches]
        self.moved: list[set[tuple[int, tuple[int, ...]]]] = [set() for _ in batches]  # class, cards
        self.seen: set[Walk] = set()
        self.finals: list[Branch] = []
        self.refused = False
        # Batches whose creation is checked (a quota in their namespace), and which of those read
        # HAMi's usage when they are (its webhook: a HAMi quota).
        self.admitted = [b.namespace is not None and (b.namespace in quotas or b.namespace in counts)
                         for b in batches]
        self.reads_usage = [b.namespace is not None and b.namespace in quotas for b in batches]

    def run(self, starts: list[State], limit: int) -> OrderPlan:
        uncreated = tuple(b.count if checked else 0 for b, checked in zip(self.batches, self.admitted,
                                                                           strict=True))
        pending = tuple(b.count - later for b, later in zip(self.batches, uncreated, strict=True))
        none = (0,) * len(self.batches)
        stack: list[Walk] = [(_with_entries(start), pending, none, (), uncreated, ()) for start in starts]
        self.seen.update(stack)
        ends: dict[Branch, None] = {}
        while stack:
            if len(self.seen) > limit:
                self.finals = list(ends)
                return self._unfinished(limit)
            branch = stack.pop()
            successors, settled = self._successors(branch)
            if self.refused and self.stop_at_refusal:
                return OrderPlan(DOES_NOT_FIT, self.outcomes, states=len(self.seen), complete=False)
            if settled:
                ends[self._end(branch)] = None
            for successor in successors:
                if successor not in self.seen:
                    self.seen.add(successor)
                    stack.append(successor)
        self.finals = list(ends)
        return OrderPlan(DOES_NOT_FIT if self.refused else FITS, self.outcomes, self.finals,
                         self._final_nodes(), len(self.seen))

    def _end(self, branch: Walk) -> Branch:
        """A settled branch as it is seen: every pod left on a node binds; a Pending pod's stale
        allocation (back in HAMi's cache from its annotations) is on no node. Pending counts them."""
        state, pending, placed, used = branch[:4]
        waiting = list(pending)
        ended = []
        for index, nodes in enumerate(state):
            counted: Counter = Counter()
            for node, count in nodes:
                pods, usage, entries = node
                for batch, positions, stale in entries:
                    if stale:
                        usage = self.planner.used(index, usage, self.batches[batch].request, positions, -1)
                        waiting[batch] += count
                counted[(pods, usage, ())] += count
            ended.append(tuple(sorted(counted.items())))
        return tuple(ended), tuple(waiting), placed, used

    def _final_nodes(self) -> list[dict[str, list[GpuDevice]]]:
        """Each distinct end's nodes; first, every batch's moves named (any member of a moved class
        may be the node, by symmetry)."""
        for outcome, moved, batch in zip(self.outcomes, self.moved, self.batches, strict=True):
            moves = [Move((index, ()), positions, ()) for index, positions in sorted(moved)]
            note_options(outcome, self.planner, batch.request, moves)
        return [self.planner.final(state) for state in dict.fromkeys(b[0] for b in self.finals)]

    def _unfinished(self, limit: int) -> OrderPlan:
        verdict = DOES_NOT_FIT if self.refused else UNKNOWN
        why = (f"more than {limit} distinct states of the cards over the orders, node ties and failed "
               f"binds HAMi may take"
               + ("" if self.refused else ", and none of those followed refused a pod"))
        return OrderPlan(verdict, self.outcomes, self.finals, self._final_nodes(), len(self.seen),
                         complete=False, why=why)

    def _successors(self, branch: Walk) -> tuple[list[Walk], bool]:
        """Every next step (a creation, a Pending pod placed, a bind failing, a stale pod placed
        again), and whether the branch is settled: nothing is created or placed any more unless a
        bind fails (each pod on a node may still bind). A settled branch's Pending pods are refused
        for good: noted (a refusal on the way, whose pod a later retry places, is not)."""
        state, pending, placed, used, uncreated, created = branch
        first = [i for i, left in enumerate(uncreated) if left and not self.reads_usage[i]]
        if first:  # their admission reads no usage: created before anything else, in any order
            return [self._create(branch, index) for index in first], False
        # The walk takes the last first: placements, so that ends come early.
        successors: list[Walk] = []
        settled = not any(uncreated)
        refused: list[tuple[State, QuotaUsage, int]] = []
        for after, charged, index, places, raced in self._replacements(state, used):
            if places:
                settled = False
            else:
                refused.append((after, charged, index))
            if raced or not places:  # refused now: Pending (its allocation may come back: `_end`)
                successors.append((after, _add(pending, index, 1), placed, charged, uncreated, created))
            for again, recharged in places:
                successors.append((again, pending, _add(placed, index, 1), recharged, uncreated, created))
        for after, index in self._failures(state):
            successors.append((after, pending, _add(placed, index, -1), used, uncreated, created))
        successors += [self._create(branch, i) for i, left in enumerate(uncreated) if left]
        for index, waiting in enumerate(pending):
            if waiting:
                places = self._placements(state, index, used)
                if places:
                    settled = False
                else:
                    refused.append((state, used, index))
                successors += [(after, _add(pending, index, -1), _add(placed, index, 1), charged, uncreated,
                                created) for after, charged in places]
        if settled:
            for where, charged, index in refused:
                self._note_refusal(where, charged, index)
        return successors, settled

    def _note_refusal(self, state: State, used: QuotaUsage, index: int) -> None:
        """A pod of the batch refused for good in an end: every node's reason then."""
        batch = self.batches[index]
        quota = _quota_left(self.quotas, used, batch.namespace)
        answers, _ = moves_from(self.planner, state, batch.request, quota)
        self.refused = True
        self.outcomes[index].branches_refused += 1
        note_refusal(self.outcomes[index].refusals, self.planner, state, answers)

    def _create(self, branch: Walk, index: int) -> Walk:
        """One pod of the batch created, or refused at creation (for good)."""
        state, pending, placed, used, uncreated, created = branch
        batch = self.batches[index]
        refusal = _admission(batch.request, batch.namespace, _quota_left(self.quotas, used, batch.namespace),
                             self.counts, created)
        uncreated = _add(uncreated, index, -1)
        if refusal:
            self.refused = True
            self.outcomes[index].branches_refused += 1
            self.outcomes[index].refusals[refusal] = ([], refusal)
            return state, pending, placed, used, uncreated, created
        if batch.namespace in self.counts:
            created = _charged(created, batch.namespace, self.counts, batch.request.nums, 0)
        return state, _add(pending, index, 1), placed, used, uncreated, created

    def _placements(self, state: State, index: int, used: QuotaUsage,
                    onto: tuple[State, int, NodeState, NodeState] | None = None
                    ) -> list[tuple[State, QuotaUsage]]:
        """Each way HAMi may place one pod of the batch, seen from `state`: the nodes after (the pod
        on its node, its bind still to come) and HAMi's Used; none when HAMi refuses it.
        `onto`: the state the pod lands in when that differs from the one it was filtered on (its
        own stale allocation dropped from one node: that class, the node before and after)."""
        batch = self.batches[index]
        quota = _quota_left(self.quotas, used, batch.namespace)
        _, moves = moves_from(self.planner, state, batch.request, quota)
        outcome = self.outcomes[index]
        if not moves:
            return []
        outcome.branches_placed += 1
        if not self.stop_at_refusal:
            self.moved[index].update((move.group[0], move.positions) for move in moves)
        cores = min(batch.request.coresreq, FULL_CARD_CORES) * batch.request.nums
        places = []
        for move in moves:
            charged = _charged(used, batch.namespace, self.quotas,
                               move_memory(self.planner, batch.request, move), cores)
            for target, node in self._targets(state, move.group, onto):
                places.append((self._placed(target, move.group[0], node, index, move.positions), charged))
        return places

    @staticmethod
    def _targets(state: State, group: tuple[int, NodeState], onto: tuple[State, int, NodeState, NodeState]
                 | None) -> list[tuple[State, NodeState]]:
        """The node a move lands on, in the state it lands in: the chosen node, or, when the pod
        was filtered with its own old allocation still counted, that node freed of it (and, if
        another node of the class was in the same state, that one too)."""
        index, node = group
        if onto is None:
            return [(state, node)]
        after, holder_class, held, freed = onto
        if (index, node) != (holder_class, held):
            return [(after, node)]
        others = dict(after[index]).get(held, 0)
        return [(after, freed), *([(after, held)] if others else [])]

    def _placed(self, state: State, index: int, node: NodeState, batch: int,
                positions: tuple[int, ...]) -> State:
        pods, usage, entries = node
        request = self.batches[batch].request
        landed = (pods + 1, self.planner.used(index, usage, request, positions, 1),
                  tuple(sorted((*entries, (batch, positions, 0)))))
        return _replaced(state, index, node, landed)

    def _failures(self, state: State) -> list[tuple[State, int]]:
        """Each pod on a node whose bind may still fail: another pod of the plan on that node may
        take its lock first (kube-scheduler binds in the background, in any order). The failed
        pod leaves the node (kube-scheduler forgets it); HAMi keeps its allocation, stale."""
        if not self.bind_failures:
            return []
        found = []
        for index, nodes in enumerate(state):
            for node, _ in nodes:
                pods, usage, entries = node
                placed = [entry for entry in entries if not entry[2]]
                if len(placed) < 2:
                    continue
                for entry in dict.fromkeys(placed):
                    rest = list(entries)
                    rest.remove(entry)
                    failed = (pods - 1, usage, tuple(sorted((*rest, (entry[0], entry[1], 1)))))
                    found.append((_replaced(state, index, node, failed), entry[0]))
        return found

    def _replacements(self, state: State, used: QuotaUsage
                      ) -> list[tuple[State, QuotaUsage, int, list[tuple[State, QuotaUsage]], bool]]:
        """Each stale pod retried: `Filter` drops its allocation, then places the pod again (or
        refuses it). The drop may not have happened yet when the usage is read: HAMi's informer
        can put the allocation back from the pod's annotations first (`onUpdatePod`), so the pod is
        also placed as if its old allocation were still there, which may refuse it (the last
        item: refused only so)."""
        found = []
        for group_index, nodes in enumerate(state):
            for node, _ in nodes:
                pods, usage, entries = node
                for entry in dict.fromkeys(e for e in entries if e[2]):
                    index, positions, _ = entry
                    batch = self.batches[index]
                    rest = list(entries)
                    rest.remove(entry)
                    freed = (pods, self.planner.used(group_index, usage, batch.request, positions, -1),
                             tuple(rest))
                    after = _replaced(state, group_index, node, freed)
                    dropped = Move((group_index, node), positions, ())
                    memory = move_memory(self.planner, batch.request, dropped)
                    cores = min(batch.request.coresreq, FULL_CARD_CORES) * batch.request.nums
                    released = _charged(used, batch.namespace, self.quotas, -memory, -cores)
                    places = self._placements(after, index, released)
                    raced = places and self._placements(state, index, released,
                                                        (after, group_index, node, freed))
                    found.append((after, released, index, places, bool(places) and not raced))
                    if raced:
                        places += raced
        return found


def _with_entries(state: State) -> State:
    """A start state in the walk's form: no pod of the plan on any node yet."""
    return tuple(tuple(((*node, ()), count) for node, count in nodes) for nodes in state)


def _replaced(state: State, index: int, old: NodeState, new: NodeState) -> State:
    counts = dict(state[index])
    counts[old] -= 1
    if not counts[old]:
        del counts[old]
    counts[new] = counts.get(new, 0) + 1
    nodes = list(state)
    nodes[index] = tuple(sorted(counts.items()))
    return tuple(nodes)


def _add(values: tuple[int, ...], index: int, change: int) -> tuple[int, ...]:
    return (*values[:index], values[index] + change, *values[index + 1:])


__all__ = ["DOES_NOT_FIT", "FITS", "MAX_STATES", "UNKNOWN", "Batch", "OrderPlan", "counts_refuse",
           "never_refused", "plan_any_order", "quotas_refuse"]
