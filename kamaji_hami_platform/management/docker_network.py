"""The Docker network the platform owns, created before kind and removed after everything on it.

Workers get fixed addresses so that a tenant's control plane can accept exactly its own
workers (kamaji_hami_platform/tenant/network_policy.py). Docker gives a container a fixed address
(`docker run --ip`) only on a network whose IPv4 subnet was configured by its creator
(moby v28.5.2 api/types/network/endpoint.go `validateEndpointIPAddress`: "user specified IP
address is supported only when connecting to networks with user configured subnets"), which
the network kind creates is not (kind v0.31.0 pkg/cluster/internal/providers/docker/network.go
sets only an IPv6 subnet). So the platform creates the network itself, before kind, which
then uses it (`ensureNetwork`: an existing network is kept).

Its layout (which address is whose) is kamaji_hami_platform/network.py.
"""

from __future__ import annotations

import shlex

from kamaji_hami_platform.network import MAX_PREFIX, MIN_PREFIX, layout

NETWORK_LABEL = "io.kamaji-hami-platform/network"

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
