"""A tenant's GPU capacity from its config: the reference pod, the plan on its cards, the stack output."""

from __future__ import annotations

from typing import Any

from kamaji_hami_platform.config import PodShapeConfig, TenantConfig
from kamaji_hami_platform.gpu.card_fit import GpuRequest
from kamaji_hami_platform.gpu.devices import (
    GPU_CORES_RESOURCE,
    GPU_MEMORY_RESOURCE,
    GPU_RESOURCE,
    GpuCapacity,
    tenant_devices,
)
from kamaji_hami_platform.gpu.placement import (
    Plan,
    capacity,
    plan_sequence,
)


def reference_request(shape: PodShapeConfig) -> GpuRequest:
    """The request HAMi builds from a reference pod shape's limits."""
    request = GpuRequest.from_limits({GPU_RESOURCE: shape.gpu, GPU_MEMORY_RESOURCE: shape.gpumem,
                                      GPU_CORES_RESOURCE: shape.gpucores})
    assert request is not None
    return request


def plan_tenant(tenant: TenantConfig, cluster: str, pods: list[GpuRequest]) -> Plan:
    """Plan pods on a tenant's GPU nodes with the tenant's HAMi policies, every tie followed."""
    return plan_sequence(tenant_devices(tenant, cluster), pods, policy=tenant.hami.gpu_scheduler_policy,
                         node_policy=tenant.hami.node_scheduler_policy)


def tenant_capacity_summary(tenant: TenantConfig, cluster: str, request: GpuRequest) -> dict[str, Any]:
    """Capacity of a tenant and how many pods of the reference shape it takes (stack output):
    a number, or `{min, max}` when it depends on how HAMi breaks node ties."""
    nodes = tenant_devices(tenant, cluster)
    devices = [d for ds in nodes.values() for d in ds]
    fitting = capacity(nodes, request, policy=tenant.hami.gpu_scheduler_policy,
                       node_policy=tenant.hami.node_scheduler_policy)
    return {**GpuCapacity.of(devices).as_output(), "referencePodsThatFit": fitting.as_output()}


