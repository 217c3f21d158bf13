"""GPU devices as HAMi 2.10.0 sees them: mock registration and the node-register encoding.

`GpuDevice` carries HAMi's `DeviceInfo` fields (HAMi v2.10.0 pkg/device/devices.go) plus usage;
`node_register_annotation` encodes a node's cards exactly as HAMi's scheduler
parses `hami.io/node-nvidia-register` (JSON, since v2.8.0). The fit model
(`kamaji_hami_platform.gpu.card_fit`) works on the same objects; `kamaji_hami_platform.gpu.capacity` is
the public facade.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from kamaji_hami_platform.config import GpuModelConfig, TenantConfig

NODE_REGISTER_ANNOTATION = "hami.io/node-nvidia-register"
GPU_NODE_LABEL = ("gpu", "on")
GPU_RESOURCE = "nvidia.com/gpu"
GPU_MEMORY_RESOURCE = "nvidia.com/gpumem"
GPU_MEMORY_PERCENTAGE_RESOURCE = "nvidia.com/gpumem-percentage"
GPU_CORES_RESOURCE = "nvidia.com/gpucores"
DEVICE_TYPE_NVIDIA = "NVIDIA"
MODE_HAMI_CORE = "hami-core"
# Stable namespace for the deterministic card UUIDs (same config, same ids).
_CARD_ID_NAMESPACE = uuid.UUID("6f1c1b1e-3c43-5f0a-9b1f-6b616d69a100")
# HAMi DeviceInfo field order and JSON types (pkg/device/devices.go).
REGISTER_FIELDS = ("id", "index", "count", "devmem", "devcore", "type", "numa", "mode", "health")


@dataclass
class GpuDevice:
    """One card: HAMi's DeviceInfo fields, plus what is in use on it."""

    id: str
    index: int
    count: int
    devmem: int
    devcore: int
    type: str
    numa: int = 0
    mode: str = MODE_HAMI_CORE
    health: bool = True
    used: int = 0
    usedmem: int = 0
    usedcores: int = 0

    def register_entry(self) -> dict[str, object]:
        """This card as one element of the node-register JSON array."""
        return {name: getattr(self, name) for name in REGISTER_FIELDS}


def card_id(cluster: str, tenant: str, node: str, index: int) -> str:
    """A GPU-style UUID, unique per card across the platform and stable across runs."""
    return f"GPU-{uuid.uuid5(_CARD_ID_NAMESPACE, f'{cluster}/{tenant}/{node}/{index}')}"


def mock_devices(model: GpuModelConfig, cards: int, cluster: str, tenant: str, node: str) -> list[GpuDevice]:
    """The mock cards one node carries, as the real device plugin would register them."""
    return [
        GpuDevice(id=card_id(cluster, tenant, node, index), index=index, count=model.split_count,
                  devmem=model.memory_mib, devcore=model.cores, type=model.product)
        for index in range(cards)
    ]


def node_register_annotation(devices: list[GpuDevice]) -> str:
    """The value of `hami.io/node-nvidia-register` for these cards (compact, ordered JSON)."""
    return json.dumps([device.register_entry() for device in devices], separators=(",", ":"))


def parse_node_register_annotation(value: str) -> list[GpuDevice]:
    """Read an annotation back into devices (as HAMi's UnMarshalNodeDevices would)."""
    return [GpuDevice(**{name: entry[name] for name in REGISTER_FIELDS if name in entry})
            for entry in json.loads(value)]


def tenant_devices(tenant: TenantConfig, cluster: str) -> dict[str, list[GpuDevice]]:
    """node name -> mock cards, for every GPU worker of a tenant (empty without GPUs)."""
    if tenant.gpus is None:
        return {}
    return {node: mock_devices(tenant.gpus.model, tenant.gpus.per_worker, cluster, tenant.name, node)
            for node in tenant.worker_names()}


@dataclass(frozen=True)
class GpuCapacity:
    """What a set of cards offers: cards, memory, compute and task slots."""

    cards: int
    memory_mib: int
    cores: int
    slots: int

    @classmethod
    def of(cls, devices: list[GpuDevice]) -> GpuCapacity:
        return cls(cards=len(devices), memory_mib=sum(d.devmem for d in devices),
                   cores=sum(d.devcore for d in devices), slots=sum(d.count for d in devices))

    def as_output(self) -> dict[str, int]:
        return {"cards": self.cards, "memoryMiB": self.memory_mib, "cores": self.cores,
                "slots": self.slots}
