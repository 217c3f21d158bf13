"""Rules across tenants: unique names, networks that do not overlap, an address block each, every
generated name valid, a machine in one tenant only. The components apply the same checks to the
tenants of one program run (tenant/addresses.py).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kamaji_hami_platform import names, network
from kamaji_hami_platform.config.model import ManagementConfig, SecretText, TenantConfig
from kamaji_hami_platform.config.reading import Problems
from kamaji_hami_platform.config.rules import (
    LOAD_BALANCER,
    MANAGEMENT_POD_CIDR,
    MANAGEMENT_SERVICE_CIDR,
    MAX_LOAD_BALANCER_SOURCE_RANGES,
    SSH_KEYS_KEY,
)


def check_address_blocks(tenants: list[TenantConfig], management: ManagementConfig,
                          problems: Problems) -> None:
    """Each tenant a block of its own: a /24 of tenantSubnet for its own network (and the block of
    that number on the platform's network for its door and control plane address), or a block of
    worker addresses in the shared network's worker region (one numbering for both, so that a
    tenant moved from one to the other can keep its number)."""
    owner: dict[int, str] = {}
    for index, tenant in enumerate(tenants):
        path = f"tenants[{index}].addressBlock"
        if tenant.own_network:
            key, subnet = "tenantSubnet", management.tenant_subnet
            blocks, what = network.tenant_networks(subnet), "tenants' own networks"
        else:
            key, subnet = "dockerSubnet", management.docker_subnet
            blocks, what = network.layout(subnet).blocks, "tenants' worker addresses"
        door_blocks = network.layout(management.docker_subnet).blocks
        if tenant.address_block >= blocks:
            problems.add(path, f"{tenant.address_block} is outside 0..{blocks - 1}: "
                               f"management.{key} {subnet} holds {blocks} {what}; use a larger subnet",
                         "address-block")
        elif tenant.own_network and tenant.address_block >= door_blocks:
            # Its door and control plane address are in the block of that number on the platform's
            # network (network.NetworkLayout.door_address).
            problems.add(path, f"{tenant.address_block} is outside 0..{door_blocks - 1}: "
                               f"management.dockerSubnet {management.docker_subnet} holds {door_blocks} "
                               "tenants' doors; use a larger subnet", "address-block")
        elif tenant.address_block in owner:
            problems.add(path, f"{tenant.address_block} is also {owner[tenant.address_block]}'s: "
                               "each tenant needs its own", "address-block")
        else:
            owner[tenant.address_block] = f"tenants[{index}] ({tenant.name})"


def check_overlaps(tenants: list[TenantConfig], management: ManagementConfig,
                   problems: Problems, first: int = 0) -> None:
    """Every tenant's pod and service networks against the management cluster's and those of the
    tenants before it; `first`: only tenants from that index on are checked (those before were,
    when they were claimed: tenant/addresses.py), so claiming tenant after tenant stays linear."""
    claimed: list[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network]] = []
    if management.is_kind:  # an existing cluster's own networks are its admin's to keep apart
        claimed += [
            ("the management cluster's pod CIDR", ipaddress.ip_network(MANAGEMENT_POD_CIDR)),
            ("the management cluster's service CIDR", ipaddress.ip_network(MANAGEMENT_SERVICE_CIDR)),
        ]
        docker_subnet = ipaddress.ip_network(management.docker_subnet)
        for owner, other in claimed:
            if docker_subnet.overlaps(other):
                problems.add("management.dockerSubnet", f"{docker_subnet} overlaps {owner} ({other})",
                             "overlap")
        claimed.append(("management.dockerSubnet", docker_subnet))
        tenant_subnet = ipaddress.ip_network(management.tenant_subnet)
        for owner, other in claimed:
            if tenant_subnet.overlaps(other):
                problems.add("management.tenantSubnet", f"{tenant_subnet} overlaps {owner} ({other})",
                             "overlap")
        claimed.append(("management.tenantSubnet", tenant_subnet))
    for index, tenant in enumerate(tenants):
        for key, cidr in (("podCidr", tenant.pod_cidr), ("serviceCidr", tenant.service_cidr)):
            network = ipaddress.ip_network(cidr)
            for owner, other in claimed if index >= first else ():
                if network.overlaps(other):
                    problems.add(f"tenants[{index}].{key}", f"{cidr} overlaps {owner} ({other})", "overlap")
            claimed.append((f"tenants[{index}].{key}", network))


def check_api_clients(tenants: list[TenantConfig], management: ManagementConfig, problems: Problems) -> None:
    """Existing cluster, LoadBalancer: each tenant's Service admits only its hosts and apiClientCidrs
    (loadBalancerSourceRanges, checked by kube-proxy before its masquerade), so a CIDR of
    apiClientCidrs that holds a tenant's host would admit that host to every tenant's API; and
    Kamaji takes at most 16 ranges."""
    if management.is_kind or management.api_exposure != LOAD_BALANCER:
        return
    clients = [(index, ipaddress.ip_network(cidr)) for index, cidr in enumerate(management.api_client_cidrs)]
    for tenant_index, tenant in enumerate(tenants):
        for host_index, host in enumerate(tenant.hosts):
            address = ipaddress.ip_address(host.address) if _is_ipv4(host.address) else None
            for index, cidr in clients:
                if address is not None and address in cidr:
                    problems.add(f"management.apiClientCidrs[{index}]",
                                 f"{cidr} holds tenants[{tenant_index}].hosts[{host_index}] "
                                 f"({host.address}): "
                                 "every tenant's API would admit that host; list narrower CIDRs (the "
                                 "management nodes' and Pulumi's host's addresses)", "api-clients")
        ranges = network.source_ranges([h.address for h in tenant.hosts if _is_ipv4(h.address)],
                                       management.api_client_cidrs)
        if len(ranges) > MAX_LOAD_BALANCER_SOURCE_RANGES:
            problems.add(f"tenants[{tenant_index}].hosts",
                         f"its {len(tenant.hosts)} hosts and management.apiClientCidrs make {len(ranges)} "
                         f"source ranges; Kamaji's Service takes at most {MAX_LOAD_BALANCER_SOURCE_RANGES}: "
                         "give hosts adjacent addresses, or fewer apiClientCidrs", "api-clients")


def _is_ipv4(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv4Address)
    except ValueError:
        return False


def check_generated_names(management: ManagementConfig, raw_tenants: list[Any],
                           tenants: list[TenantConfig], problems: Problems) -> None:
    """Every name Kubernetes, kind or Docker will see, from the valid parts of the config."""
    index: dict[str, int] = {}
    for i, raw in enumerate(raw_tenants):
        if isinstance(raw, Mapping) and isinstance(raw.get("name"), str):
            index.setdefault(raw["name"], i)
    shapes = [names.TenantShape(f"tenants[{index[t.name]}].name", t.name, t.workers, t.gpus is not None)
              for t in tenants]
    for path, problem in names.check(management.name, shapes):
        problems.add(path, problem, "generated-names")


def check_duplicate_names(raw_tenants: list[Any], problems: Problems) -> None:
    seen: dict[str, int] = {}
    for index, raw_tenant in enumerate(raw_tenants):
        name = raw_tenant.get("name") if isinstance(raw_tenant, Mapping) else None
        if isinstance(name, str) and name in seen:
            problems.add(f"tenants[{index}].name",
                         f"duplicate tenant name {name!r} (also tenants[{seen[name]}])", "duplicate-name")
        elif isinstance(name, str):
            seen[name] = index


def check_hosts(raw_tenants: list[Any], tenants: list[TenantConfig], keys: Mapping[str, SecretText],
                 problems: Problems) -> None:
    """One node per machine and per name in the stack, and every private key a host names given."""
    index = {raw["name"]: i for i, raw in reversed(list(enumerate(raw_tenants)))
             if isinstance(raw, Mapping) and isinstance(raw.get("name"), str)}
    seen: dict[tuple[str, str], str] = {}
    for tenant in tenants:
        for number, host in enumerate(tenant.hosts):
            path = f"tenants[{index[tenant.name]}].hosts[{number}]"
            for what, value in (("name", host.name), ("address", host.address)):
                owner = seen.setdefault((what, value), path)
                if owner != path:
                    problems.add(f"{path}.{what}", f"{value!r} is also {owner}'s: a machine joins one "
                                 "tenant, as one node", "hosts")
            for where, endpoint in (("", host.ssh), (".bastion", host.bastion)):
                if endpoint is not None and endpoint.private_key not in keys:
                    problems.add(f"{path}{where}.privateKey",
                                 f"{endpoint.private_key!r} is not in the secret {SSH_KEYS_KEY} "
                                 f"(given: {', '.join(sorted(keys)) or 'none'})", "hosts")
