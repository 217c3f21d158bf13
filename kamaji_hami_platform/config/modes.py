"""What each management mode needs, and the keys of the other mode it refuses: per management
cluster (`kind`: created here; `existing`: a cluster you have) and per tenant."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kamaji_hami_platform.config.model import ManagementConfig, TenantConfig
from kamaji_hami_platform.config.reading import Problems
from kamaji_hami_platform.config.rules import (
    EXISTING_ONLY_MANAGEMENT_KEYS,
    KIND_ONLY_MANAGEMENT_KEYS,
    LOAD_BALANCER,
    NODE_PORT,
)


def check_management_mode(obj: Mapping[str, Any], management: ManagementConfig, problems: Problems) -> None:
    """What each mode needs, and the keys of the other mode it cannot use."""
    if management.is_kind:
        for key in EXISTING_ONLY_MANAGEMENT_KEYS:
            if obj.get(key) is not None:
                problems.add(f"management.{key}", "is for mode existing: a kind cluster's address and "
                                                  "kubeconfig are the platform's own", "mode")
        for key, installed in (("certManager", management.install_cert_manager),
                               ("metallb", management.install_metallb)):
            if not installed:
                problems.add(f"management.{key}.install", "must be true in mode kind: the kind cluster the "
                                                          "platform creates has none", "mode")
        if management.api_exposure != LOAD_BALANCER:
            problems.add("management.apiExposure", "must be LoadBalancer in mode kind (MetalLB on the "
                                                   "platform's Docker network); NodePort needs mode existing",
                         "mode")
        return
    for key in KIND_ONLY_MANAGEMENT_KEYS:
        if key in obj:
            problems.add(f"management.{key}", "is for mode kind: mode existing creates no kind cluster "
                         "and no Docker network", "mode")
    if not management.api_client_cidrs:
        problems.add("management.apiClientCidrs", "is required in mode existing: the tenant API servers "
                     "admit only their own worker hosts and these addresses, and Pulumi's host must be "
                     "one of them", "mode")
    load_balancer = management.api_exposure == LOAD_BALANCER
    if load_balancer and management.install_metallb and management.metallb_address_range is None:
        problems.add("management.metallbAddressRange", "is required when the platform installs MetalLB on an "
                                                       "existing cluster: the addresses of the cluster's "
                                                       "network MetalLB may hand out", "mode")
    if management.metallb_address_range is not None and not (load_balancer and management.install_metallb):
        problems.add("management.metallbAddressRange", "is only for MetalLB the platform installs (metallb."
                                                       "install true, apiExposure LoadBalancer)", "mode")
    if not load_balancer and management.node_port_address is None:
        problems.add("management.nodePortAddress", "is required with apiExposure NodePort: the management "
                                                   "node address workers reach tenant APIs on", "mode")
    if load_balancer and management.node_port_address is not None:
        problems.add("management.nodePortAddress", "is only for apiExposure NodePort", "mode")
    if management.kubeconfig_file is not None and management.kubeconfig_context is None:
        problems.add("management.kubeconfigFile", "needs kubeconfigContext: the context of the file to use",
                     "mode")


def _check_tenant_mode(raw: Mapping[str, Any], tenant: TenantConfig, path: str,
                       management: ManagementConfig, problems: Problems) -> None:
    """A tenant's workers, GPUs and ports against the management cluster's mode."""
    real_gpus = tenant.gpus is not None and not tenant.gpus.mock
    if management.is_kind:
        if tenant.on_hosts:
            problems.add(f"{path}.hosts", "need management.mode existing: a kind cluster's tenant APIs are "
                                          "on this machine's Docker network, out of other machines' reach",
                         "mode")
        if real_gpus:
            problems.add(f"{path}.gpus.mock", "false needs worker hosts with NVIDIA GPUs (management.mode "
                                              "existing): kind containers have none", "mode")
    else:
        if tenant.workers and not tenant.on_hosts and "workers" in raw:
            problems.add(f"{path}.workers", "container workers need the kind management cluster's Docker "
                                            "network: give hosts instead (machines reached over SSH)", "mode")
        elif tenant.workers and not tenant.on_hosts:
            problems.add(path, "give hosts (machines reached over SSH), or workers: 0: in mode existing a "
                               "tenant has no container workers (workers defaults to 1)", "mode")
        for key in ("addressBlock", "workerNetwork"):
            if key in raw:
                problems.add(f"{path}.{key}", "is for mode kind (worker containers on this machine's Docker "
                             "networks); a host's address is its own", "mode")
    node_port = management.api_exposure == NODE_PORT and not management.is_kind
    for key, port in (("apiNodePort", tenant.api_node_port),
                      ("konnectivityNodePort", tenant.konnectivity_node_port)):
        if node_port and port is None:
            problems.add(f"{path}.{key}", "is required with management.apiExposure NodePort (Kamaji "
                         "makes the Service's port its node port)", "mode")
        if not node_port and port is not None:
            problems.add(f"{path}.{key}", "is only for management.apiExposure NodePort", "mode")


def check_tenant_modes(raw_tenants: list[Any], tenants: list[TenantConfig], management: ManagementConfig,
                        problems: Problems) -> None:
    parsed = {tenant.name: tenant for tenant in tenants}
    ports: dict[int, str] = {}
    for index, raw in enumerate(raw_tenants):
        name = raw.get("name") if isinstance(raw, Mapping) else None
        tenant = parsed.get(name) if isinstance(name, str) else None
        if tenant is None:
            continue
        path = f"tenants[{index}]"
        _check_tenant_mode(raw, tenant, path, management, problems)
        for key, port in (("apiNodePort", tenant.api_node_port),
                          ("konnectivityNodePort", tenant.konnectivity_node_port)):
            if port is None:
                continue
            if port in ports:
                problems.add(f"{path}.{key}", f"{port} is also {ports[port]}: each node port is taken once "
                             "in the management cluster", "mode")
            ports.setdefault(port, f"{path}.{key}")
