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
    GpuDevice,
    tenant_devices,
)
from kamaji_hami_platform.gpu.node_pods import floating_pods, gpu_pod_room
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
    """Plan pods on a tenant's GPU nodes with the tenant's HAMi policies and its kubelets' pod
    limit, every tie (and every way the platform's own pods may sit) followed."""
    nodes = tenant_devices(tenant, cluster)
    return plan_sequence(nodes, pods, policy=tenant.hami.gpu_scheduler_policy,
                         node_policy=tenant.hami.node_scheduler_policy, pod_room=_room(tenant, nodes),
                         floating=sum(floating_pods(tenant).values()))


def _room(tenant: TenantConfig, nodes: dict[str, list[GpuDevice]]) -> dict[str, int]:
    room = gpu_pod_room(tenant)
    return {node: room for node in nodes}


def tenant_capacity_summary(tenant: TenantConfig, cluster: str, request: GpuRequest) -> dict[str, Any]:
    """Capacity of a tenant and how many pods of the reference shape it takes (stack output):
    a number, or `{min, max}` when it depends on how HAMi breaks node ties."""
    nodes = tenant_devices(tenant, cluster)
    devices = [d for ds in nodes.values() for d in ds]
    fitting = capacity(nodes, request, policy=tenant.hami.gpu_scheduler_policy,
                       node_policy=tenant.hami.node_scheduler_policy, pod_room=_room(tenant, nodes),
                       floating=sum(floating_pods(tenant).values()))
    return {**GpuCapacity.of(devices).as_output(), "referencePodsThatFit": fitting.as_output()}


