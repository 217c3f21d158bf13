"""A pure-Python model of HAMi 2.10.0's NVIDIA placement.

Read from Project-HAMi/HAMi v2.10.0: pkg/device/nvidia/device.go `Fit` and
`GenerateResourceRequests`, pkg/scheduler/score.go, pkg/scheduler/policy/.

What it models: the request HAMi builds from a container's limits (with the
admission webhook's defaults), the per-card check order and reason codes of
`Fit`, binpack / spread / mutex card ordering, multi-card requests, NUMA
binding, node-level `NodeInsufficientDevice`, and node choice by node policy.
What it leaves out on purpose: MIG, NUMA/NVLink topology scores
(`topology-aware`), ResourceQuota checks, per-pod scoring-weight annotations,
multi-container and init-container pods.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from components.gpu_devices import (
    DEVICE_TYPE_NVIDIA,
    GPU_CORES_RESOURCE,
    GPU_MEMORY_PERCENTAGE_RESOURCE,
    GPU_MEMORY_RESOURCE,
    GPU_RESOURCE,
    GpuDevice,
)

# HAMi reason codes (pkg/device/common/common.go).
CARD_TYPE_MISMATCH = "CardTypeMismatch"
CARD_UUID_MISMATCH = "CardUuidMismatch"
CARD_TIME_SLICING_EXHAUSTED = "CardTimeSlicingExhausted"
CARD_COMPUTE_UNITS_EXHAUSTED = "CardComputeUnitsExhausted"
CARD_INSUFFICIENT_MEMORY = "CardInsufficientMemory"
CARD_INSUFFICIENT_CORE = "CardInsufficientCore"
CARD_NOT_HEALTH = "CardNotHealth"
CARD_CORDONED = "CardCordoned"
NUMA_NOT_FIT = "NumaNotFit"
EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT = "ExclusiveDeviceAllocateConflict"
NODE_INSUFFICIENT_DEVICE = "NodeInsufficientDevice"
ALLOCATED_CARDS_INSUFFICIENT_REQUEST = "AllocatedCardsInsufficientRequest"

# Pod annotations Fit reads.
USE_GPU_TYPE = "nvidia.com/use-gputype"
NOUSE_GPU_TYPE = "nvidia.com/nouse-gputype"
USE_GPU_UUID = "nvidia.com/use-gpuuuid"
NOUSE_GPU_UUID = "nvidia.com/nouse-gpuuuid"
VGPU_MODE = "nvidia.com/vgpu-mode"
NUMA_BIND = "nvidia.com/numa-bind"

POLICIES = ("binpack", "spread", "mutex")
PERCENTAGE_UNSET = 101
FULL_CARD_CORES = 100
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class GpuRequest:
    """What one container asks of HAMi: cards, memory (MiB or %), cores (%)."""

    nums: int
    memreq: int = 0
    mempercentagereq: int = PERCENTAGE_UNSET
    coresreq: int = 0
    type: str = DEVICE_TYPE_NVIDIA

    @classmethod
    def from_limits(cls, limits: Mapping[str, int | str], *, default_memory: int = 0,
                    default_cores: int = 0, default_gpu_num: int = 1,
                    memory_factor: int = 1) -> GpuRequest | None:
        """Build the request as the webhook and GenerateResourceRequests would.

        Returns None for a container HAMi ignores (no NVIDIA resource, or a
        memory value HAMi cannot use); raises ValueError where the webhook
        would deny the pod.
        """
        gpu = _quantity(limits, GPU_RESOURCE)
        memory = _quantity(limits, GPU_MEMORY_RESOURCE)
        percentage = _quantity(limits, GPU_MEMORY_PERCENTAGE_RESOURCE)
        cores = _quantity(limits, GPU_CORES_RESOURCE)
        if gpu is None and (memory, percentage, cores) != (None, None, None):
            gpu = default_gpu_num  # webhook: gpumem/gpucores alone imply one card
        if gpu is None or gpu <= 0:
            return None
        if percentage is not None and not 0 <= percentage <= 100:
            raise ValueError(f"{GPU_MEMORY_PERCENTAGE_RESOURCE} must be 0-100, got {percentage}")
        whole_card = memory is None and percentage in (None, 100)
        if cores is None and whole_card:
            cores = FULL_CARD_CORES  # webhook: a whole card's memory means exclusive use
        memreq = (memory or 0) * memory_factor
        if memory is not None and not 0 <= memreq <= INT32_MAX:
            return None
        mempercentage = PERCENTAGE_UNSET
        if percentage is not None and percentage > 0:
            mempercentage = min(percentage, 100)
        if memreq == 0 and mempercentage == PERCENTAGE_UNSET:
            if default_memory:
                memreq = default_memory
            else:
                mempercentage = 100
        return cls(nums=gpu, memreq=memreq, mempercentagereq=mempercentage,
                   coresreq=default_cores if cores is None else cores)

    def memory_on(self, device: GpuDevice) -> int:
        """MiB this request takes on a given card."""
        if self.memreq > 0:
            return self.memreq
        return device.devmem * self.mempercentagereq // 100


def _quantity(limits: Mapping[str, int | str], key: str) -> int | None:
    if key not in limits:
        return None
    value = limits[key]
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be an integer, got {value!r}") from None


@dataclass
class FitResult:
    """HAMi's answer for one container on one node."""

    ok: bool
    device_ids: list[str] = field(default_factory=list)
    reason: str = ""


def gen_reason(reasons: Counter[str], total: int) -> str:
    """HAMi's GenReason: `<n>/<devices on node> <Code>` entries, sorted, joined by ', '."""
    return ", ".join(sorted(f"{count}/{total} {code}" for code, count in reasons.items()))


def device_score(device: GpuDevice, request: GpuRequest) -> float:
    """HAMi's ComputeScore with default weights, including the pending request."""
    if not (device.count and device.devcore and device.devmem):
        return 0.0
    slots = (1 + device.used) / device.count
    cores = (request.coresreq + device.usedcores) / device.devcore
    memory = (request.memory_on(device) + device.usedmem) / device.devmem
    return 100 * (slots + cores + memory)


def order_devices(devices: list[GpuDevice], request: GpuRequest, policy: str | None) -> list[GpuDevice]:
    """The list Fit walks (from its end): binpack ascending, spread descending by score."""
    if policy is None:
        return list(devices)
    if policy not in POLICIES:
        raise ValueError(f"unsupported GPU scheduler policy {policy!r} (model knows {POLICIES})")
    if policy == "mutex":
        return sorted(devices, key=lambda d: (-d.used, d.index))
    sign = 1 if policy == "binpack" else -1
    return sorted(devices, key=lambda d: (sign * device_score(d, request), d.numa, d.index))


def _csv(annotations: Mapping[str, str], key: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in annotations.get(key, "").split(",") if item.strip())


@dataclass(frozen=True)
class PodSelectors:
    """The pod annotations Fit consults, parsed once per pod rather than once per card."""

    use_types: tuple[str, ...] = ()
    nouse_types: tuple[str, ...] = ()
    use_uuids: frozenset[str] = frozenset()
    nouse_uuids: frozenset[str] = frozenset()
    mode: str = ""
    numa_bind: bool = False

    @classmethod
    def of(cls, annotations: Mapping[str, str]) -> PodSelectors:
        return cls(use_types=tuple(t.lower() for t in _csv(annotations, USE_GPU_TYPE)),
                   nouse_types=tuple(t.lower() for t in _csv(annotations, NOUSE_GPU_TYPE)),
                   use_uuids=frozenset(_csv(annotations, USE_GPU_UUID)),
                   nouse_uuids=frozenset(_csv(annotations, NOUSE_GPU_UUID)),
                   mode=annotations.get(VGPU_MODE, ""),
                   numa_bind=annotations.get(NUMA_BIND, "").lower() == "true")


NO_SELECTORS = PodSelectors()


def _type_matches(device: GpuDevice, request: GpuRequest, pod: PodSelectors) -> bool:
    if request.type != DEVICE_TYPE_NVIDIA:
        return False
    device_type = device.type.lower()
    if pod.use_types and not any(item in device_type for item in pod.use_types):
        return False
    if any(item in device_type for item in pod.nouse_types):
        return False
    return not pod.mode or device.mode in pod.mode


def _uuid_matches(device: GpuDevice, pod: PodSelectors) -> bool:
    if pod.use_uuids and device.id not in pod.use_uuids:
        return False
    return device.id not in pod.nouse_uuids


def _card_check(device: GpuDevice, request: GpuRequest, pod: PodSelectors,
                policy: str | None, cordoned: frozenset[str]) -> str | None:
    """The first failing check for one card, in HAMi's order, or None when it fits."""
    if not device.health:
        return CARD_NOT_HEALTH
    if device.id in cordoned:
        return CARD_CORDONED
    if not _type_matches(device, request, pod):
        return CARD_TYPE_MISMATCH
    if not _uuid_matches(device, pod):
        return CARD_UUID_MISMATCH
    if device.count <= device.used:
        return CARD_TIME_SLICING_EXHAUSTED
    if policy == "mutex" and device.used > 0:
        return EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT
    cores = min(request.coresreq, FULL_CARD_CORES)
    if device.devmem - device.usedmem < request.memory_on(device):
        return CARD_INSUFFICIENT_MEMORY
    if device.devcore - device.usedcores < cores:
        return CARD_INSUFFICIENT_CORE
    if device.devcore == FULL_CARD_CORES and cores == FULL_CARD_CORES and device.used > 0:
        return EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT
    if device.devcore != 0 and device.usedcores == device.devcore and cores == 0:
        return CARD_COMPUTE_UNITS_EXHAUSTED
    return None


def fit(devices: list[GpuDevice], request: GpuRequest, *, pod_annotations: Mapping[str, str] | None = None,
        policy: str | None = None, cordoned_ids: frozenset[str] = frozenset()) -> FitResult:
    """Where HAMi would put this container on a node with these cards, or why it would not."""
    pod = PodSelectors.of(pod_annotations) if pod_annotations else NO_SELECTORS
    nvidia = [d for d in devices if DEVICE_TYPE_NVIDIA.lower() in d.type.lower()]
    if request.nums > len(nvidia):
        return FitResult(False, [], NODE_INSUFFICIENT_DEVICE)
    ordered = order_devices(nvidia, request, policy)
    numa_bind = pod.numa_bind
    reasons: Counter[str] = Counter()
    picked: list[GpuDevice] = []
    previous_numa: int | None = None
    for device in reversed(ordered):
        if numa_bind and picked and previous_numa is not None and device.numa != previous_numa:
            reasons[NUMA_NOT_FIT] += len(picked)
            picked = []
        previous_numa = device.numa
        failure = _card_check(device, request, pod, policy, cordoned_ids)
        if failure:
            reasons[failure] += 1
            continue
        picked.append(device)
        if len(picked) == request.nums:
            return FitResult(True, [d.id for d in picked], "")
    if picked:
        reasons[ALLOCATED_CARDS_INSUFFICIENT_REQUEST] += len(picked)
    return FitResult(False, [], gen_reason(reasons, len(nvidia)))


def charge(devices: list[GpuDevice], request: GpuRequest, device_ids: list[str]) -> None:
    """HAMi's AddResourceUsage: each chosen card carries one more task."""
    for device in devices:
        if device.id in device_ids:
            device.used += 1
            device.usedmem += request.memory_on(device)
            device.usedcores += min(request.coresreq, FULL_CARD_CORES)


@dataclass
class Placement:
    """Where one pod of a plan landed, or why it did not."""

    pod: int
    ok: bool
    node: str | None
    device_ids: list[str]
    reason: str
    memory_mib: int = 0
    cores: int = 0


def node_score(devices: list[GpuDevice]) -> float:
    """HAMi's default node score over current usage."""
    total = sum(d.count for d in devices)
    cores = sum(d.devcore for d in devices)
    memory = sum(d.devmem for d in devices)
    if not (total and cores and memory):
        return 0.0
    return 100 * (sum(d.used for d in devices) / total + sum(d.usedcores for d in devices) / cores
                  + sum(d.usedmem for d in devices) / memory)


def plan_nodes(nodes: Mapping[str, list[GpuDevice]], pods: list[GpuRequest], *,
               policy: str = "binpack", node_policy: str = "binpack") -> list[Placement]:
    """Place pods one after another across nodes, charging each placement.

    Works on copies: the caller's devices are not changed.
    """
    state = {name: copy.deepcopy(devices) for name, devices in sorted(nodes.items())}
    placements = []
    # A node's answer changes only when a placement charges it (or the request changes):
    # cache it per node, so a fleet costs one fit per pod, not one per pod and node.
    answers: dict[str, tuple[GpuRequest, FitResult]] = {}
    for number, request in enumerate(pods, start=1):
        fitting = {}
        for name, devices in state.items():
            cached = answers.get(name)
            if cached is None or cached[0] != request:
                cached = answers[name] = (request, fit(devices, request, policy=policy))
            fitting[name] = cached[1]
        candidates = [name for name, result in fitting.items() if result.ok]
        if not candidates:
            reason = "; ".join(f"{name}: {result.reason}" for name, result in fitting.items()) \
                if len(fitting) > 1 else next(iter(fitting.values()), FitResult(False)).reason
            placements.append(Placement(number, False, None, [], reason or "no GPU node"))
            continue
        scores = {name: node_score(state[name]) for name in candidates}
        best = (max if node_policy == "binpack" else min)(candidates, key=lambda n: scores[n])
        chosen = fitting[best]
        charge(state[best], request, chosen.device_ids)
        answers.pop(best, None)
        card = next(d for d in state[best] if d.id == chosen.device_ids[0])
        placements.append(Placement(number, True, best, chosen.device_ids, "",
                                    request.memory_on(card), min(request.coresreq, FULL_CARD_CORES)))
    return placements


def plan(devices: list[GpuDevice], pods: list[GpuRequest], *, policy: str = "binpack") -> list[Placement]:
    """Place pods one after another on one node's cards (the node is named `node`)."""
    return plan_nodes({"node": devices}, pods, policy=policy)


def pods_that_fit(nodes: Mapping[str, list[GpuDevice]], request: GpuRequest, *,
                  policy: str = "binpack", node_policy: str = "binpack") -> int:
    """How many pods of one shape a set of nodes takes before HAMi refuses the next."""
    upper_bound = sum(d.count for devices in nodes.values() for d in devices) + 1
    placements = plan_nodes(nodes, [request] * upper_bound, policy=policy, node_policy=node_policy)
    return sum(1 for p in placements if p.ok)
