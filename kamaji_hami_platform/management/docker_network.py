"""The Docker network the platform owns, created before kind and removed after everything on it.

Workers need fixed addresses (a control plane admits exactly its own workers), and Docker gives
those only on a network whose creator configured its IPv4 subnet, which kind's own network is
not; kind keeps a network that already exists. Its layout is kamaji_hami_platform/network.py.

Upstream: moby v28.5.2 api/types/network/endpoint.go `validateEndpointIPAddress`; kind v0.31.0
pkg/cluster/internal/providers/docker/network.go `ensureNetwork`.
Rationale: docs/design/docker-network.md.
"""

from __future__ import annotations

from kamaji_hami_platform.docker_calls import bounded_docker
from kamaji_hami_platform.network import MAX_PREFIX, MIN_PREFIX, layout
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script

NETWORK_LABEL = "io.kamaji-hami-platform/network"

_PACKAGE = "kamaji_hami_platform.management"


def create_script(network: str, subnet: str, cluster: str) -> str:
    """Create the network with the platform's fixed layout, or accept the one this platform
    created before (same owner, same subnet); a network of the same name that is not ours, or
    a Docker that does not answer, stops here with the reason. A network that does not exist is
    the daemon's "network <name> not found" (moby v28.5.2 libnetwork/error.go ErrNoSuchNetwork;
    older CLIs print "No such network"), never a bare "not found", which the shell says of a
    missing docker binary."""
    plan = layout(subnet)
    return render_script(_PACKAGE, "docker_network_create.sh", network=network,
                         bounded_docker=bounded_docker(), cluster=Text(cluster),
                         label=Text(NETWORK_LABEL), subnet=Text(subnet),
                         bridge_create=bridge_create_script(
                             subnet, str(plan.dynamic_range), str(plan.gateway), cluster,
                             f"management.dockerSubnet (/{MIN_PREFIX}../{MAX_PREFIX})"))


def bridge_create_script(subnet: str, dynamic_range: str, gateway: str, owner: str, setting: str) -> Shell:
    """Shell that creates bridge network $network as the platform makes its networks (the platform's
    and each tenant's own: tenant/own_network.py), or stops naming `setting` to change."""
    return Shell(render_script(_PACKAGE, "docker_bridge_create.sh", subnet=Text(subnet),
                               dynamic_range=Text(dynamic_range), gateway=Text(gateway),
                               label=Text(NETWORK_LABEL), owner=Text(owner), setting=Text(setting)))


def delete_script(network: str, cluster: str) -> str:
    """Remove the network once nothing is attached; one the platform did not create is left
    alone (a warning); containers still attached stop the delete, naming them."""
    return render_script(_PACKAGE, "docker_network_delete.sh", network=network,
                         bounded_docker=bounded_docker(), cluster=Text(cluster),
                         label=Text(NETWORK_LABEL))
