"""kamaji-hami-platform: isolated, GPU-sharing Kubernetes tenants on one management cluster.

Three Pulumi components, composable on their own or together:

- `ManagementCluster(name, ManagementClusterArgs)`: a kind cluster with cert-manager, MetalLB and
  Kamaji; outputs `kubeconfig` (secret), `provider`, `pool_range`, `host_flags`, `cluster`, `network`.
- `KamajiTenant(name, KamajiTenantArgs)`: one tenant: its Kamaji control plane, isolation, and
  kubeadm-joined worker containers; outputs `endpoint`, `kubeconfig` (secret), `provider`,
  `node_names`, `workers`, `control_plane`.
- `HamiNodePool(name, HamiNodePoolArgs)`: HAMi in a tenant and its (mock) GPUs registered;
  outputs `cards`, `capacity` and `gpu_plan`.

Their settings (`ManagementSettings`, `TenantSettings`, ...) are the stack configuration's
sections, checked by the same validator (`kamaji_hami_platform.config`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what IDEs and type checkers read; at run time the names load on first use
    from kamaji_hami_platform.config.settings import (
        AddonSettings,
        BastionSettings,
        ChartSettings,
        GpuModelSettings,
        GpuPoolSettings,
        GpuWorkloadSettings,
        HamiSettings,
        HostSettings,
        ImageSettings,
        ManagementSettings,
        PodShapeSettings,
        TenantSettings,
    )
    from kamaji_hami_platform.gpu.component import HamiNodePool, HamiNodePoolArgs
    from kamaji_hami_platform.management.component import ManagementCluster, ManagementClusterArgs
    from kamaji_hami_platform.tenant.component import KamajiTenant, KamajiTenantArgs

# Loaded on first use (PEP 562), so the pure modules (versions, config, the planner) import
# without Pulumi's SDK: the Makefile reads pins with a bare python3.
_EXPORTS = {
    "HamiNodePool": "gpu.component", "HamiNodePoolArgs": "gpu.component",
    "ManagementCluster": "management.component", "ManagementClusterArgs": "management.component",
    "KamajiTenant": "tenant.component", "KamajiTenantArgs": "tenant.component",
    **{name: "config.settings" for name in (
        "AddonSettings", "BastionSettings", "ChartSettings", "ChartSource", "GpuModelSettings",
        "GpuPoolSettings", "GpuWorkloadSettings", "HamiSettings", "HamiSettingsArgs", "HostSettings",
        "ImageSettings", "ManagementSettings", "PodShapeSettings", "TenantSettings")},
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)


__version__ = "0.1.0"

__all__ = [
    "AddonSettings",
    "BastionSettings",
    "ChartSettings",
    "GpuModelSettings",
    "GpuPoolSettings",
    "GpuWorkloadSettings",
    "HamiNodePool",
    "HamiNodePoolArgs",
    "HamiSettings",
    "HostSettings",
    "ImageSettings",
    "KamajiTenant",
    "KamajiTenantArgs",
    "ManagementCluster",
    "ManagementClusterArgs",
    "ManagementSettings",
    "PodShapeSettings",
    "TenantSettings",
]
