"""A pure-Python model of HAMi 2.10.0's NVIDIA placement on one node.

The request HAMi builds from a container's limits, `Fit`'s per-card checks and reason codes in
HAMi's order, its card ordering in float32, and HAMi's per-card quota check (`fit(..., quota=)`).
The choice between nodes and the quota admission are `kamaji_hami_platform.gpu.placement`; MIG,
topology scores and multi-container pods are left out on purpose.

Upstream: Project-HAMi/HAMi v2.10.0 pkg/device/nvidia/device.go `MutateAdmission`, `Fit`,
`GenerateResourceRequests`; pkg/scheduler/policy/gpu_policy.go.
Rationale: docs/design/gpu-fit-model.md.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from kamaji_hami_platform.gpu.devices import (
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
RESOURCE_QUOTA_NOT_FIT = "ResourceQuotaNotFit"


@dataclass(frozen=True)
class QuotaLeft:
    """What a namespace's HAMi quota still allows (limits.nvidia.com/gpumem MiB and gpucores %),
    None where it sets no limit: HAMi's QuotaManager.FitQuota (pkg/device/quota.go)."""

    memory: int | None = None
    cores: int | None = None

# Pod annotations Fit reads.
USE_GPU_TYPE = "nvidia.com/use-gputype"
NOUSE_GPU_TYPE = "nvidia.com/nouse-gputype"
USE_GPU_UUID = "nvidia.com/use-gpuuuid"
NOUSE_GPU_UUID = "nvidia.com/nouse-gpuuuid"
VGPU_MODE = "nvidia.com/vgpu-mode"
NUMA_BIND = "nvidia.com/numa-bind"

POLICIES = ("binpack", "spread", "mutex")
HAMI_SCORE_WEIGHT = 10  # pkg/util/types.go `Weight`
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
        # The webhook's defaultExclusiveCoreIfNeeded (pkg/device/nvidia/device.go): with a
        # percentage, exclusive exactly when it is 100, whatever gpumem says; without one, when
        # no gpumem is given either.
        whole_card = percentage == 100 if percentage is not None else memory is None
        if cores is None and whole_card:
            cores = FULL_CARD_CORES  # a whole card's memory means exclusive use
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
        """MiB this request takes on a given card: gpumem when given, else the percentage of
        the card, else nothing (Fit's `memreq`, HAMi v2.10.0 pkg/device/nvidia/device.go: it
        starts at 0 and takes the percentage only when one is set; AddResourceUsage the same)."""
        if self.memreq > 0:
            return self.memreq
        if self.mempercentagereq == PERCENTAGE_UNSET:
            return 0
        return device.devmem * self.mempercentagereq // 100

    def ranking_memory_on(self, device: GpuDevice) -> int:
        """MiB HAMi counts when it ranks a card whose type is the request's: the percentage of
        the card when one is given, even beside gpumem (policy/gpu_policy.go `ComputeScore`),
        else gpumem (see `device_score`: on real cards the request is not counted at all)."""
        if self.mempercentagereq not in (0, PERCENTAGE_UNSET):
            return device.devmem * self.mempercentagereq // 100
        return self.memreq


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


def f32(value: float) -> float:
    """Round to float32, as Go's float32 arithmetic does after each operation (one rounding from
    the exact double result is exact for + - * / of float32 operands: 53 >= 2 * 24 + 2 bits)."""
    return struct.unpack("f", struct.pack("f", value))[0]


def device_score(device: GpuDevice, request: GpuRequest) -> float:
    """HAMi's card score with default weights, in float32 as HAMi computes it
    (policy/gpu_policy.go `ComputeScore`), so cards tie exactly when HAMi's tie.

    ComputeScore counts the pending request only on a card whose type equals the request's
    (`if container.Type != ds.Device.Type { continue }`). An NVIDIA request's type is "NVIDIA"
    (pkg/device/nvidia/device.go `NvidiaGPUDevice`), a card's is its model ("NVIDIA A100-SXM4-80GB",
    the device plugin's register.go `Type: Model`), so on real cards the score is the card's usage
    before the pod: the request (gpumem, percentage, cores) does not rank cards at all."""
    if not (device.count and device.devcore and device.devmem):
        return 0.0
    counted = device.type == request.type
    slots = f32((int(counted) + device.used) / device.count)
    cores = f32(((request.coresreq if counted else 0) + device.usedcores) / device.devcore)
    memory = f32(((request.ranking_memory_on(device) if counted else 0) + device.usedmem) / device.devmem)
    return f32(HAMI_SCORE_WEIGHT * f32(f32(slots + cores) + memory))


def order_devices(devices: list[GpuDevice], request: GpuRequest, policy: str | None,
                  numa_bind: bool = False) -> list[GpuDevice]:
    """The list Fit walks from its end, as `DeviceUsageList.Less` sorts it (policy/gpu_policy.go):
    mutex busiest first, then NUMA; with numa-bind NUMA first (binpack descending, spread
    ascending) and the score within a NUMA group, so groups stay together; otherwise binpack
    ascending, spread descending by score, NUMA breaking ties. Beyond that the list keeps its
    registration order: Go's sort.Sort is an insertion sort, stable, up to 12 elements, and
    Python's sort is stable."""
    if policy is None:
        return list(devices)
    if policy not in POLICIES:
        raise ValueError(f"unsupported GPU scheduler policy {policy!r} (model knows {POLICIES})")
    if policy == "mutex":
        return sorted(devices, key=lambda d: (-d.used, d.numa))
    sign = 1 if policy == "binpack" else -1
    if numa_bind:
        return sorted(devices, key=lambda d: (-sign * d.numa, sign * device_score(d, request)))
    return sorted(devices, key=lambda d: (sign * device_score(d, request), d.numa))


# Go's strconv.ParseBool, true side (HAMi reads nvidia.com/numa-bind with it).
GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def _csv(annotations: Mapping[str, str], key: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in annotations.get(key, "").split(",") if item.strip())


@dataclass(frozen=True)
class PodSelectors:
    """The pod annotations Fit consults, parsed once per pod rather than once per card."""

    use_types: tuple[str, ...] = ()
    nouse_types: tuple[str, ...] = ()
    use_uuids: frozenset[str] = frozenset()
    nouse_uuids: frozenset[str] = frozenset()
    mode: str | None = None  # present but empty matches no card (strings.Contains("", mode))
    numa_bind: bool = False

    @classmethod
    def of(cls, annotations: Mapping[str, str]) -> PodSelectors:
        return cls(use_types=tuple(t.lower() for t in _csv(annotations, USE_GPU_TYPE)),
                   nouse_types=tuple(t.lower() for t in _csv(annotations, NOUSE_GPU_TYPE)),
                   use_uuids=frozenset(_csv(annotations, USE_GPU_UUID)),
                   nouse_uuids=frozenset(_csv(annotations, NOUSE_GPU_UUID)),
                   mode=annotations.get(VGPU_MODE),
                   numa_bind=annotations.get(NUMA_BIND, "") in GO_TRUE)


NO_SELECTORS = PodSelectors()


def _type_matches(device: GpuDevice, request: GpuRequest, pod: PodSelectors) -> bool:
    if request.type != DEVICE_TYPE_NVIDIA:
        return False
    device_type = device.type.lower()
    if pod.use_types and not any(item in device_type for item in pod.use_types):
        return False
    if any(item in device_type for item in pod.nouse_types):
        return False
    return pod.mode is None or device.mode in pod.mode


def _uuid_matches(device: GpuDevice, pod: PodSelectors) -> bool:
    if pod.use_uuids and device.id not in pod.use_uuids:
        return False
    return device.id not in pod.nouse_uuids


def _card_usable(device: GpuDevice, request: GpuRequest, pod: PodSelectors,
                 cordoned: frozenset[str]) -> str | None:
    """The checks Fit makes before its NUMA bookkeeping (health, cordon, type), or None."""
    if not device.health:
        return CARD_NOT_HEALTH
    if device.id in cordoned:
        return CARD_CORDONED
    if not _type_matches(device, request, pod):
        return CARD_TYPE_MISMATCH
    return None


def _quota_fits(device: GpuDevice, request: GpuRequest, picked: list[GpuDevice],
                quota: QuotaLeft | None) -> bool:
    """HAMi's fitQuota (pkg/device/nvidia/device.go): the pod's cards picked so far and this one
    against what the namespace's quota leaves."""
    if quota is None:
        return True
    cores = min(request.coresreq, FULL_CARD_CORES)
    memory = sum(request.memory_on(d) for d in (*picked, device))
    if quota.memory is not None and memory > quota.memory:
        return False
    return quota.cores is None or cores * (len(picked) + 1) <= quota.cores


def _card_check(device: GpuDevice, request: GpuRequest, pod: PodSelectors, policy: str | None,
                picked: list[GpuDevice] | None = None, quota: QuotaLeft | None = None) -> str | None:
    """The checks Fit makes after its NUMA bookkeeping, in HAMi's order, or None when it fits."""
    if not _uuid_matches(device, pod):
        return CARD_UUID_MISMATCH
    if device.count <= device.used:
        return CARD_TIME_SLICING_EXHAUSTED
    if policy == "mutex" and device.used > 0:
        return EXCLUSIVE_DEVICE_ALLOCATE_CONFLICT
    cores = min(request.coresreq, FULL_CARD_CORES)
    if not _quota_fits(device, request, picked or [], quota):
        return RESOURCE_QUOTA_NOT_FIT
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
        policy: str | None = None, cordoned_ids: frozenset[str] = frozenset(),
        quota: QuotaLeft | None = None) -> FitResult:
    """Where HAMi would put this container on a node with these cards, or why it would not."""
    pod = PodSelectors.of(pod_annotations) if pod_annotations else NO_SELECTORS
    nvidia = [d for d in devices if DEVICE_TYPE_NVIDIA.lower() in d.type.lower()]
    if request.nums > len(nvidia):
        return FitResult(False, [], NODE_INSUFFICIENT_DEVICE)
    ordered = order_devices(nvidia, request, policy, pod.numa_bind)
    reasons: Counter[str] = Counter()
    picked: list[GpuDevice] = []
    previous_numa: int | None = None
    for device in reversed(ordered):
        failure = _card_usable(device, request, pod, cordoned_ids)
        if failure:
            reasons[failure] += 1
            continue
        # Fit's `if numa && prevnuma != dev.Numa`: a new NUMA group starts over (only cards that
        # passed health, cordon and type move it).
        if pod.numa_bind and device.numa != previous_numa:
            if picked:
                reasons[NUMA_NOT_FIT] += len(picked)
            picked, previous_numa = [], device.numa
        failure = _card_check(device, request, pod, policy, picked, quota)
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
