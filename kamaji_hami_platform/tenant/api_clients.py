"""Who may open a connection to a tenant's API and Konnectivity from outside the management
cluster, as one list of CIDRs that two filters enforce: the control plane's NetworkPolicy
(kindnetd's policy engine on kind, the CNI elsewhere) and its Service's
`loadBalancerSourceRanges` (kube-proxy, before any masquerade and whether or not the policy
engine runs).

- kind, own network: the tenant's door (tenant/door.py), through which its workers, their pods and
  this host (the network's gateway) reach it;
- kind, shared network (tenants created by 0.1.0): its block of worker addresses and the shared
  network's gateway;
- existing: the tenant's hosts (`/32` each) and `management.apiClientCidrs`.

Rationale: docs/design/network-isolation.md.
"""

from __future__ import annotations

from kamaji_hami_platform import network
from kamaji_hami_platform.config import ManagementConfig, TenantConfig


def api_clients(tenant: TenantConfig, management: ManagementConfig) -> list[str]:
    """The CIDRs, in the order the NetworkPolicy lists them."""
    if not management.is_kind:
        return [f"{host.address}/32" for host in tenant.hosts] + list(management.api_client_cidrs)
    if tenant.own_network:
        return [f"{network.layout(management.docker_subnet).door_address(tenant.address_block)}/32"]
    layout = network.layout(management.docker_subnet)
    return [*layout.block_cidrs(tenant.address_block), f"{layout.gateway}/32"]


def source_ranges(tenant: TenantConfig, management: ManagementConfig) -> list[str]:
    """The same clients as the fewest CIDRs: the Service's loadBalancerSourceRanges (Kamaji takes
    at most 16: config/cross_tenant.py checks it)."""
    return network.source_ranges([], api_clients(tenant, management))
