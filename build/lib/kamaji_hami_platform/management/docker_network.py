"""The Docker network the platform owns: its layout, fixed worker addresses, and its life.

Workers get fixed addresses so that a tenant's control plane can accept exactly its own
workers (kamaji_hami_platform/tenant/network_policy.py). Docker gives a container a fixed address
(`docker run --ip`) only on a network whose IPv4 subnet was configured by its creator
(moby v28.5.2 api/types/network/endpoint.go `validateEndpointIPAddress`: "user specified IP
address is supported only when connecting to networks with user configured subnets"), which
the network kind creates is not (kind v0.31.0 pkg/cluster/internal/providers/docker/network.go
sets only an IPv6 subnet). So the platform creates the network itself, before kind, which
then uses it (`ensureNetwork`: an existing network is kept).

Layout of the subnet, in quarters:

    quarter 0      Docker's own dynamic addresses (`--ip-range`): the kind node, anything else
    quarters 1-2   worker addresses: a block of 128 per tenant (`tenants[i].addressBlock`),
                   worker i at the block's address 1 + i
    quarter 3      MetalLB: by default the 51 addresses just below the broadcast address
"""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import dataclass

from kamaji_hami_platform import names

NETWORK_LABEL = "io.kamaji-hami-platform/network"
BLOCK_SIZE = 128  # addresses per tenant: every worker it may have (names.MAX_WORKERS)
MIN_PREFIX, MAX_PREFIX = 16, 24
# The MetalLB range by default: 51 addresses just below the broadcast address (in quarter 3).
_POOL_OFFSET_FROM_BROADCAST = (55, 5)


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

    def default_pool_range(self) -> str:
        start, end = (self.subnet.broadcast_address - offset for offset in _POOL_OFFSET_FROM_BROADCAST)
        return f"{start}-{end}"


def layout(subnet: str) -> NetworkLayout:
    return NetworkLayout(ipaddress.IPv4Network(subnet))


def parse_range(value: str) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]:
    first, last = (ipaddress.IPv4Address(part.strip()) for part in value.split("-"))
    return first, last


# --- the network's life: created before kind, removed after everything on it ------------------

_OWNER_FORMAT = shlex.quote(f'{{{{ index .Labels "{NETWORK_LABEL}" }}}}')
_SUBNETS_FORMAT = shlex.quote("{{ range .IPAM.Config }}{{ .Subnet }} {{ end }}")
_CONTAINERS_FORMAT = shlex.quote("{{ range $id, $c := .Containers }}{{ $c.Name }} {{ end }}")
# moby: `docker network inspect` of a missing network says "network <name> not found".
# The daemon's answer for a network that does not exist (moby v28.5.2 libnetwork/error.go
# ErrNoSuchNetwork "network %s not found"; older CLIs print "No such network"). Not a bare
# "not found": the shell says that of a missing docker binary.
_NOT_FOUND = '*"network $network not found"*|*"No such network"*'
_DOCKER_INSTALLED = ('command -v docker >/dev/null || '
                     '{ echo "docker is not installed or not on PATH" >&2; exit 1; }')


def create_script(network: str, subnet: str, cluster: str) -> str:
    """Create the network with the platform's fixed layout, or accept the one this platform
    created before (same owner, same subnet); a network of the same name that is not ours, or
    a Docker that does not answer, stops here with the reason."""
    plan = layout(subnet)
    net, own = shlex.quote(network), shlex.quote(cluster)
    return f"""set -eu
{_DOCKER_INSTALLED}
network={net}
if owner=$(docker network inspect --format {_OWNER_FORMAT} "$network" 2>&1); then
  if [ "$owner" != {own} ]; then
    echo "Docker network $network exists but was not created by this platform for kind cluster" \\
      "{cluster} (owner: '$owner'); workers need fixed addresses on a network whose subnet the" \\
      "platform configured: set management.dockerNetwork to a new name" >&2
    exit 1
  fi
  subnets=$(docker network inspect --format {_SUBNETS_FORMAT} "$network")
  case " $subnets " in
    *" {subnet} "*) echo "Docker network $network ({subnet}) exists"; exit 0 ;;
  esac
  echo "Docker network $network has subnet(s) $subnets, not {subnet} (management.dockerSubnet)" >&2
  exit 1
fi
case "$owner" in
  {_NOT_FOUND}) ;;
  *) echo "cannot inspect Docker network $network (is Docker running?): $owner" >&2; exit 1 ;;
esac
mtu=$(docker network inspect bridge --format '{{{{ index .Options "com.docker.network.driver.mtu" }}}}' \\
  2>/dev/null || true)
case "$mtu" in ''|*[!0-9]*) mtu_option="" ;; *) mtu_option="--opt com.docker.network.driver.mtu=$mtu" ;; esac
# Options as kind creates its own network (masquerade on, the default bridge's MTU), plus the
# configured subnet and Docker's own dynamic addresses kept to the first quarter.
if ! out=$(docker network create --driver bridge --opt com.docker.network.bridge.enable_ip_masquerade=true \\
    $mtu_option --subnet {subnet} --ip-range {plan.dynamic_range} --gateway {plan.gateway} \\
    --label {NETWORK_LABEL}={own} "$network" 2>&1); then
  echo "cannot create Docker network $network with subnet {subnet}: $out" >&2
  echo "If the subnet overlaps another network of this host, set management.dockerSubnet to a free" \\
    "/{MIN_PREFIX}../{MAX_PREFIX} (docker network inspect \\$(docker network ls -q) lists those in use)." >&2
  exit 1
fi
echo "Docker network $network ({subnet}) created"
"""


def delete_script(network: str, cluster: str) -> str:
    """Remove the network once nothing is attached; one the platform did not create is left
    alone (a warning); containers still attached stop the delete, naming them."""
    net, own = shlex.quote(network), shlex.quote(cluster)
    return f"""set -eu
{_DOCKER_INSTALLED}
network={net}
if ! owner=$(docker network inspect --format {_OWNER_FORMAT} "$network" 2>&1); then
  case "$owner" in
    {_NOT_FOUND}) echo "Docker network $network is already gone"; exit 0 ;;
  esac
  echo "cannot inspect Docker network $network (is Docker running?); nothing removed: $owner" >&2
  exit 1
fi
if [ "$owner" != {own} ]; then
  echo "warning: Docker network $network was not created for kind cluster {cluster}: left alone" >&2
  exit 0
fi
attached=$(docker network inspect --format {_CONTAINERS_FORMAT} "$network")
if [ -n "$(printf '%s' "$attached" | tr -d ' ')" ]; then
  echo "Docker network $network still has containers attached: $attached; remove them" \\
    "(they are not this stack's), then run the destroy again" >&2
  exit 1
fi
docker network rm "$network" >/dev/null
echo "Docker network $network removed"
"""
