"""A tenant's own Docker network: its workers' segment, shared with no other tenant's container.

On one shared bridge a tenant who is root on its workers could reach another tenant's control
plane by routing through that tenant's worker (which forwards, and masquerades what it forwards:
kind v0.31.0 images/kindnetd/cmd/kindnetd/masq.go) or by taking an unused address of that
tenant's block. Here each tenant's workers are alone on their network with their door
(tenant/door.py), the only container on both this network and the platform's; Docker drops what
one bridge forwards to another (moby v28.5.2 libnetwork/drivers/bridge/internal/iptabler/
network.go `setINC`, the DOCKER-ISOLATION-STAGE-1/2 chains). No platform node is on it: the kind
node, which unreleased builds before the door attached, is detached by this network's create (it
would relay between tenant networks and answer on them with every management service).

The tenant's control plane has a LoadBalancer address on the platform's network, in the tenant's
block there (network.NetworkLayout.control_plane_address): a MetalLB pool of that one address,
usable only from the tenant's namespace (`serviceAllocation`), which the Service asks for by
annotation (MetalLB v0.15.3 internal/allocator/allocator.go, controller/service.go
`metallb.io/loadBalancerIPs`; Kamaji 26.8.2-edge copies `controlPlane.service.additionalMetadata`
to the Service, internal/resources/k8s_service_resource.go), announced by the kind node on the
platform's network only.
Rationale: docs/design/network-isolation.md.
"""

from __future__ import annotations

from typing import Any

from kamaji_hami_platform import names, network
from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.docker_calls import bounded_docker
from kamaji_hami_platform.management.docker_network import NETWORK_LABEL, bridge_create_script
from kamaji_hami_platform.management.render import METALLB_API_VERSION, METALLB_NAMESPACE
from kamaji_hami_platform.shell_templates import Text
from kamaji_hami_platform.shell_templates import render as render_script

_PACKAGE = "kamaji_hami_platform.tenant"
METALLB_LOAD_BALANCER_IPS = "metallb.io/loadBalancerIPs"


def network_name(tenant: TenantConfig, management: ManagementConfig) -> str:
    """`<dockerNetwork>-<tenant>`: another stack on this host has another dockerNetwork."""
    return f"{management.docker_network}-{tenant.name}"


def tenant_network(tenant: TenantConfig, management: ManagementConfig) -> network.TenantNetwork:
    return network.tenant_network(management.tenant_subnet, tenant.address_block)


def owner(tenant: TenantConfig, management: ManagementConfig) -> str:
    """The network's label value: whose it is (kind cluster and tenant)."""
    return f"{management.name}/{tenant.name}"


def create_script(tenant: TenantConfig, management: ManagementConfig) -> str:
    """Create the network (or accept the one this tenant's create made before: same owner, same
    subnet), and detach the kind node if an earlier build attached it. Safe to run twice."""
    own = tenant_network(tenant, management)
    return render_script(
        _PACKAGE, "own_network_create.sh", network=network_name(tenant, management),
        bounded_docker=bounded_docker(),
        node=names.kind_node_container(management.name), label=Text(NETWORK_LABEL),
        owner=Text(owner(tenant, management)), tenant=Text(tenant.name), subnet=Text(str(own.subnet)),
        bridge_create=bridge_create_script(
            str(own.subnet), str(own.dynamic_range), str(own.gateway), owner(tenant, management),
            f"management.tenantSubnet (or tenants[name={tenant.name}].addressBlock)"))


def delete_script(tenant: TenantConfig, management: ManagementConfig) -> str:
    """Remove the network once nothing else is attached (the kind node, if an earlier build
    attached it, is detached first); one that is not this tenant's is left alone (a warning)."""
    return render_script(
        _PACKAGE, "own_network_delete.sh", network=network_name(tenant, management),
        bounded_docker=bounded_docker(),
        node=names.kind_node_container(management.name), label=Text(NETWORK_LABEL),
        owner=Text(owner(tenant, management)))


def pool_name(tenant: TenantConfig) -> str:
    return f"tenant-{tenant.name}"


def metallb_objects(tenant: TenantConfig, management: ManagementConfig) -> list[dict[str, Any]]:
    """The control plane's address on the platform's network as a MetalLB pool of its own (only the
    tenant's namespace may use it, never handed out on its own), and its L2 announcement."""
    metadata = {"name": pool_name(tenant), "namespace": METALLB_NAMESPACE}
    return [
        {"apiVersion": METALLB_API_VERSION, "kind": "IPAddressPool", "metadata": metadata,
         "spec": {"addresses": [f"{control_plane_address(tenant, management)}/32"],
                  "autoAssign": False,
                  "serviceAllocation": {"namespaces": [tenant.namespace]}}},
        {"apiVersion": METALLB_API_VERSION, "kind": "L2Advertisement", "metadata": metadata,
         "spec": {"ipAddressPools": [pool_name(tenant)]}},
    ]


def service_annotations(tenant: TenantConfig, management: ManagementConfig) -> dict[str, str]:
    """What the TenantControlPlane's Service carries: the one address of the tenant's pool."""
    return {METALLB_LOAD_BALANCER_IPS: control_plane_address(tenant, management)}


def control_plane_address(tenant: TenantConfig, management: ManagementConfig) -> str:
    """The control plane's LoadBalancer address: on the platform's network, in the tenant's block."""
    return network.layout(management.docker_subnet).control_plane_address(tenant.address_block)
