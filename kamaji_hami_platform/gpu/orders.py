"""Pods created together and placed in any order: what a Deployment, Job or ReplicaSet does.

A controller creates a workload's replicas together (a ReplicaSet in slow-start batches, kubernetes
v1.35.4 pkg/controller/replicaset/replica_set.go `slowStartBatch`), and one `kubectl apply` of
several workloads creates them together too. kube-scheduler's queue then hands the pods to HAMi by
priority and by the time each entered the queue (pkg/scheduler/framework/plugins/queuesort/
priority_sort.go `Less`), which with batches, back-off and retries is not the declared order. So:

1. Every pod is created before HAMi places any (the caller admits them: HAMi's webhook counts only
   pods HAMi has placed, pkg/device/quota.go `AddUsage`, so it sees none of them).
2. HAMi's scheduler then takes the created pods in every possible order: at each step a pod of any
   batch still waiting may go next. A pod HAMi refuses stays Pending and is retried, but nothing in
   the plan frees a card, a pod slot or quota (usage only grows), so it stays refused, and so do the
   rest of its batch (identical pods).

The verdict: `fits` when no order can refuse a pod, `does not fit` when one does (that order can
happen), `unknown` when neither could be shown within the limit. "No order can refuse" is shown in
one of two ways: the walk over every distinct state ends without a refusal, or a bound does it at
once (`never_refused`): however the other pods were laid on the cards, they could not block every
node for this pod.
Rationale: docs/design/gpu-fit-model.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
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
    Move,
    QuotaUsage,
    State,
    _charged,
    _Outcome,
    _Planner,
    _quota_left,
    move_memory,
    moves_from,
    note_options,
    note_refusal,
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


Branch = tuple[State, tuple[int, ...], tuple[int, ...], QuotaUsage]  # nodes, waiting, placed, HAMi Used


@dataclass
class OrderPlan:
    """The batches over every order HAMi may take them in, every node tie followed."""

    verdict: str
    outcomes: list[_Outcome]
    """Per batch, what its pods met across the branches (nodes, refusals, charge)."""
    finals: list[Branch] = field(default_factory=list)
    """Every branch's end: nothing waits any more."""
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


def plan_any_order(nodes: Mapping[str, list[GpuDevice]], batches: list[Batch], *,
                   policy: str = DEFAULT_GPU_POLICY, node_policy: str = DEFAULT_NODE_POLICY,
                   quotas: Mapping[str, QuotaLeft] | None = None,
                   pod_room: Mapping[str, int] | None = None, limit: int | None = None,
                   stop_at_refusal: bool = False, every_end: bool = False,
                   floating: int = 0) -> OrderPlan:
    """Every order in which HAMi may place the batches' pods (already created), with HAMi's quota
    check per card against what each namespace's placed pods use. `stop_at_refusal`: answer only
    the verdict, as soon as a refusal shows (the fix search). `limit`: states followed before the
    answer is `unknown` (MAX_STATES). `every_end`: follow every state up to the limit even when
    the bound already has the verdict (a live run is judged against every end). `floating`: the
    platform's own pods kube-scheduler may have put on any node, in every way they may sit."""
    limit = MAX_STATES if limit is None else limit
    planner = _Planner(nodes, policy, node_policy, pod_room, floating, [b.request for b in batches])
    proven = not quotas_refuse(nodes, batches, quotas or {}) and all(
        never_refused(nodes, batches, index, policy, pod_room, floating) for index in range(len(batches)))
    if proven and stop_at_refusal:
        return OrderPlan(FITS, [_Outcome() for _ in batches], complete=False, planner=planner)
    starts = planner.starts()
    # The details of a proven plan: enough states for every pod from every start (one workload on
    # many nodes is a long walk, not a wide one), at least DETAIL_STATES.
    detail = max(DETAIL_STATES, 2 * sum(b.count for b in batches) * len(starts))
    found = _Search(planner, batches, quotas or {}, min(detail, limit) if proven and not every_end else limit,
                    stop_at_refusal).run(starts)
    found.planner = planner
    if proven and found.verdict == UNKNOWN:
        # Only the walk stopped early: the bound has the verdict; the details cover what it followed.
        found.verdict, found.why = FITS, ""
    return found


def never_refused(nodes: Mapping[str, list[GpuDevice]], batches: list[Batch], index: int, policy: str,
                  pod_room: Mapping[str, int] | None = None, floating: int = 0) -> bool:
    """True when no order can leave a pod of batch `index` without a node: however badly the
    other pods were laid out, they could not block every node for it.

    HAMi refuses a card for the pod (pkg/device/nvidia/device.go `Fit`) when its task slots are
    used up, when it has less memory or compute left than the pod asks, when the pod wants a whole
    card's compute and the card has any task (or the policy is mutex), or when the pod asks no
    compute and the card's is used up; a node, when fewer of its cards than the pod asks can take
    it, or when its pods are at the kubelet's limit (`floating` platform pods may sit on any node:
    counted on each). Each pod of another batch goes at most its best dimension's share of the way
    to blocking a card, from what the card has left; the shares are added over every pod as if
    they could be split (more than any real layout achieves), and still fall short of the nodes
    that can take the pod now. HAMi's quota is `quotas_refuse`'s."""
    request = batches[index].request
    takers = 0
    # Nodes alike in what a pod's share reads (their usable cards' capacity and use, their pod
    # room) cost alike: one of each kind is enough for the cheapest (99 identical workers: one).
    kinds: dict[tuple[Any, ...], tuple[list[GpuDevice], int | None]] = {}
    for name, devices in nodes.items():
        room = None if pod_room is None or name not in pod_room else pod_room[name] - floating
        usable = [d for d in devices if _usable(d, request, policy)]
        if len(usable) >= request.nums and (room is None or room > 0):
            takers += 1
            kinds.setdefault((len(usable), frozenset(map(_share_inputs, usable)), room), (usable, room))
    if not takers:
        return False
    blocking = Fraction(0)
    for other, batch in enumerate(batches):
        pods = batch.count - 1 if other == index else batch.count
        if pods > 0:
            cost = min(_pods_to_block(usable, room, request, batch.request, policy)
                       for usable, room in kinds.values())
            blocking += pods / cost
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
                 limit: int, stop_at_refusal: bool) -> None:
        self.planner, self.batches, self.quotas = planner, batches, quotas
        self.limit, self.stop_at_refusal = limit, stop_at_refusal
        self.outcomes = [_Outcome() for _ in batches]
        self.moved: list[set[tuple[int, tuple[int, ...]]]] = [set() for _ in batches]  # class, cards
        self.seen: set[Branch] = set()
        self.finals: list[Branch] = []
        self.refused = False

    def run(self, starts: list[State]) -> OrderPlan:
        stack: list[Branch] = [(start, tuple(b.count for b in self.batches), (0,) * len(self.batches), ())
                               for start in starts]
        self.seen.update(stack)
        while stack:
            if len(self.seen) > self.limit:
                return self._unfinished()
            branch = stack.pop()
            if not any(branch[1]):
                self.finals.append(branch)
                continue
            for successor in self._successors(branch):
                if self.refused and self.stop_at_refusal:
                    return OrderPlan(DOES_NOT_FIT, self.outcomes, states=len(self.seen), complete=False)
                if successor not in self.seen:
                    self.seen.add(successor)
                    stack.append(successor)
        return OrderPlan(DOES_NOT_FIT if self.refused else FITS, self.outcomes, self.finals,
                         self._final_nodes(), len(self.seen))

    def _final_nodes(self) -> list[dict[str, list[GpuDevice]]]:
        """Each distinct end's nodes; first, every batch's moves named (any member of a moved class
        may be the node, by symmetry)."""
        for outcome, moved, batch in zip(self.outcomes, self.moved, self.batches, strict=True):
            moves = [Move((index, ()), positions, ()) for index, positions in sorted(moved)]
            note_options(outcome, self.planner, batch.request, moves)
        return [self.planner.final(state) for state in dict.fromkeys(b[0] for b in self.finals)]

    def _unfinished(self) -> OrderPlan:
        verdict = DOES_NOT_FIT if self.refused else UNKNOWN
        why = (f"more than {self.limit} distinct states of the cards over the orders and node ties HAMi "
               f"may take" + ("" if self.refused else ", and none of those followed refused a pod"))
        return OrderPlan(verdict, self.outcomes, self.finals, self._final_nodes(), len(self.seen),
                         complete=False, why=why)

    def _successors(self, branch: Branch) -> list[Branch]:
        state, waiting, placed, used = branch
        successors = []
        for index, batch in enumerate(self.batches):
            if not waiting[index]:
                continue
            quota = _quota_left(self.quotas, used, batch.namespace)
            answers, moves = moves_from(self.planner, state, batch.request, quota)
            outcome = self.outcomes[index]
            if not moves:
                # Refused for good, and so are the batch's other waiting pods (identical ones).
                self.refused = True
                outcome.branches_refused += 1
                note_refusal(outcome.refusals, self.planner, state, answers)
                successors.append((state, _set(waiting, index, 0), placed, used))
                continue
            outcome.branches_placed += 1
            if not self.stop_at_refusal:
                self.moved[index].update((move.group[0], move.positions) for move in moves)
            cores = min(batch.request.coresreq, FULL_CARD_CORES) * batch.request.nums
            for move in moves:
                memory = move_memory(self.planner, batch.request, move)
                charged = _charged(used, batch.namespace, self.quotas, memory, cores)
                successors.append((move.successor, _set(waiting, index, waiting[index] - 1),
                                   _set(placed, index, placed[index] + 1), charged))
        return successors


def _set(values: tuple[int, ...], index: int, value: int) -> tuple[int, ...]:
    return (*values[:index], value, *values[index + 1:])


__all__ = ["DOES_NOT_FIT", "FITS", "MAX_STATES", "UNKNOWN", "Batch", "OrderPlan", "never_refused",
           "plan_any_order", "quotas_refuse"]
