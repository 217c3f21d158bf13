"""What tenants on one management cluster must not share: their block of worker addresses on the
Docker network, and their pod and service networks.

A stack file's validator checks these across all tenants (config/cross_tenant.py). Components are created one
by one, so each KamajiTenant claims its own here, per program run and management cluster, and a
second tenant that would take a claimed block or overlap a claimed network is refused before it
creates anything. Tenants of different programs (stacks) on one Docker host are not seen here.
"""

from __future__ import annotations

import weakref
from typing import Any

import pulumi

from kamaji_hami_platform import config as cfg
from kamaji_hami_platform.config.cross_tenant import check_address_blocks, check_overlaps
from kamaji_hami_platform.config.reading import Problems

# Per program run (its root Stack resource, a new one for each run, under mocks too; held weakly,
# so a finished run's claims go with it), per (management cluster name, Docker network): the
# tenants claimed so far, in order.
_CLAIMS: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], list[cfg.TenantConfig]]] = \
    weakref.WeakKeyDictionary()
_UNROOTED: dict[tuple[str, str], list[cfg.TenantConfig]] = {}


def _claims_of_this_run() -> dict[tuple[str, str], list[cfg.TenantConfig]]:
    root = pulumi.runtime.settings.get_root_resource()
    if root is None:
        return _UNROOTED
    return _CLAIMS.setdefault(root, {})


def claim_worker_addresses(tenant: cfg.TenantConfig, management: cfg.ManagementConfig, where: str) -> None:
    """Refuse a tenant whose address block or networks another tenant of this management cluster
    holds, with the stack validator's own checks and messages; else record its claim."""
    claimed = _claims_of_this_run().setdefault((management.name, management.docker_network), [])
    problems = Problems()
    tenants = [*claimed, tenant]
    if management.is_kind:  # an existing cluster's workers are hosts with their own addresses
        check_address_blocks(tenants, management, problems)
    check_overlaps(tenants, management, problems, first=len(claimed))  # the others were checked
    mine = f"tenants[{len(claimed)}]"
    found = [item for item in problems.items if item.startswith(mine)]
    if found:
        owners = ", ".join(f"tenants[{i}] is {t.name!r}" for i, t in enumerate(claimed))
        raise cfg.ConfigError([f"{where}: {item.replace(mine, 'tenant', 1)} ({owners})" for item in found])
    claimed.append(tenant)
