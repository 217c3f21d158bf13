"""The platform's Docker network as address arithmetic: which addresses are Docker's own, which
are a tenant's workers', which are MetalLB's. Pure; the config's validator and the components
both read it (the network itself is created by management/docker_network.py).

Layout of the subnet, in quarters:

    quarter 0      Docker's own dynamic addresses (`--ip-range`): the kind node, anything else
    quarters 1-2   worker addresses: a block of 128 per tenant (`tenants[i].addressBlock`),
                   worker i at the block's address 1 + i; for a tenant with its own network, the
                   block holds its door's address (1) and its control plane's (2) instead
    quarter 3      MetalLB: by default the 51 addresses just below the broadcast address

A tenant with its own network (`tenants[i].workerNetwork: own`, the default) has a /24 of
`management.tenantSubnet` instead (the `addressBlock`-th), which no other tenant's container is on:

    .0/28          Docker's own dynamic addresses: the gateway (this host) at .1, the kind node
    .16 + i        worker i
    .250           the tenant's API address: its door (tenant/door.py), which forwards the API and
                   Konnectivity to its control plane's address in the tenant's block above
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from kamaji_hami_platform import names

BLOCK_SIZE = 128  # addresses per tenant: every worker it may have (names.MAX_WORKERS)
MIN_PREFIX, MAX_PREFIX = 16, 24
# The MetalLB range by default: 51 addresses just below the broadcast address (in quarter 3).
_POOL_OFFSET_FROM_BROADCAST = (55, 5)
# In the block of a tenant with its own network: its door, and its control plane's address.
_DOOR_IN_BLOCK, _CONTROL_PLANE_IN_BLOCK = 1, 2


@dataclass(frozen=True)
class NetworkLayout:
    """Where each kind of address of the platform's Docker network lives."""

    subnet: ipaddress.IPv4Network

    @property
    def gateway(self) -> ipaddress.IPv4Address:
        """The host's address on the network (Docker's default: the first one)."""
        return self.subnet.network_address + 1

    def _quarter(self, index: int) -> ipaddress.IPv4Network:
        return list(self.subnet.subnets(prefixlen_diff=2))[index]

    @property
    def dynamic_range(self) -> ipaddress.IPv4Network:
        return self._quarter(0)

    @property
    def worker_region(self) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]:
        return self._quarter(1).network_address, self._quarter(2).broadcast_address

    @property
    def blocks(self) -> int:
        """How many tenants can have worker addresses."""
        return 2 * self._quarter(1).num_addresses // BLOCK_SIZE

    @property
    def pool_quarter(self) -> ipaddress.IPv4Network:
        return self._quarter(3)

    def block(self, index: int) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]:
        """First and last worker address of the tenant with this `addressBlock`."""
        if not 0 <= index < self.blocks:
            raise ValueError(f"address block {index} is outside 0..{self.blocks - 1}")
        start = self.worker_region[0] + index * BLOCK_SIZE
        return start, start + BLOCK_SIZE - 1

    def block_cidrs(self, index: int) -> list[str]:
        """The block as CIDRs, for a NetworkPolicy's ipBlocks (one /25 where it is aligned)."""
        return [str(net) for net in ipaddress.summarize_address_range(*self.block(index))]

    def worker_address(self, block: int, index: int) -> str:
        if not 0 <= index < names.MAX_WORKERS:
            raise ValueError(f"worker index {index} is outside 0..{names.MAX_WORKERS - 1}")
        return str(self.block(block)[0] + 1 + index)

    def door_address(self, block: int) -> str:
        """A tenant's door on this network (the tenant has a network of its own and no workers here)."""
        return str(self.block(block)[0] + _DOOR_IN_BLOCK)

    def control_plane_address(self, block: int) -> str:
        """The LoadBalancer address of the control plane of a tenant with its own network: MetalLB's,
        announced by the kind node on this network, reached only through the tenant's door."""
        return str(self.block(block)[0] + _CONTROL_PLANE_IN_BLOCK)

    def default_pool_range(self) -> str:
        start, end = (self.subnet.broadcast_address - offset for offset in _POOL_OFFSET_FROM_BROADCAST)
        return f"{start}-{end}"


TENANT_NETWORK_PREFIX = 24
MAX_TENANT_SUBNET_PREFIX = TENANT_NETWORK_PREFIX  # a /24 holds one tenant's network
_TENANT_DYNAMIC_PREFIX = 28
_TENANT_FIRST_WORKER = 16
_TENANT_API_FROM_BROADCAST = 5


@dataclass(frozen=True)
class TenantNetwork:
    """A tenant's own Docker network: its subnet, and where each kind of address lives in it."""

    subnet: ipaddress.IPv4Network

    @property
    def gateway(self) -> ipaddress.IPv4Address:
        """This host's address on the network (Docker's default: the first one)."""
        return self.subnet.network_address + 1

    @property
    def dynamic_range(self) -> ipaddress.IPv4Network:
        """What Docker hands out itself (`--ip-range`): the gateway, the kind node."""
        return next(self.subnet.subnets(new_prefix=_TENANT_DYNAMIC_PREFIX))

    def worker_address(self, index: int) -> str:
        if not 0 <= index < names.MAX_WORKERS:
            raise ValueError(f"worker index {index} is outside 0..{names.MAX_WORKERS - 1}")
        return str(self.subnet.network_address + _TENANT_FIRST_WORKER + index)

    @property
    def api_address(self) -> str:
        """The tenant API's address: its door's, which workers, their pods and this host use."""
        return str(self.subnet.broadcast_address - _TENANT_API_FROM_BROADCAST)


def tenant_networks(tenant_subnet: str) -> int:
    """How many tenants' own networks `management.tenantSubnet` holds."""
    return 2 ** (TENANT_NETWORK_PREFIX - ipaddress.IPv4Network(tenant_subnet).prefixlen)


def tenant_network(tenant_subnet: str, block: int) -> TenantNetwork:
    """The own network of the tenant with this `addressBlock`: the block-th /24 of the subnet."""
    count = tenant_networks(tenant_subnet)
    if not 0 <= block < count:
        raise ValueError(f"address block {block} is outside 0..{count - 1}")
    first = ipaddress.IPv4Network(tenant_subnet).network_address + block * 2 ** (32 - TENANT_NETWORK_PREFIX)
    return TenantNetwork(ipaddress.IPv4Network(f"{first}/{TENANT_NETWORK_PREFIX}"))


def source_ranges(addresses: Sequence[str], cidrs: Sequence[str]) -> list[str]:
    """The fewest CIDRs that hold exactly these addresses and CIDRs (a LoadBalancer's
    `loadBalancerSourceRanges`)."""
    networks = [ipaddress.IPv4Network(f"{address}/32") for address in addresses]
    networks += [ipaddress.IPv4Network(cidr) for cidr in cidrs]
    return [str(net) for net in ipaddress.collapse_addresses(networks)]


def layout(subnet: str) -> NetworkLayout:
    return NetworkLayout(ipaddress.IPv4Network(subnet))


def parse_range(value: str) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]:
    first, last = (ipaddress.IPv4Address(part.strip()) for part in value.split("-"))
    return first, last
