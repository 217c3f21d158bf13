"""The TenantControlPlane of a tenant, rendered by one pure function.

Field names and defaults follow the Kamaji CRD at tag 26.8.2-edge
(kamaji.clastix.io/v1alpha1; clastix/kamaji 26.8.2-edge
api/v1alpha1/tenantcontrolplane_types.go, charts/kamaji/crds/).
"""

from __future__ import annotations

import json
from typing import Any

from kamaji_hami_platform import cgroup_v1, names, versions
from kamaji_hami_platform.config import LOAD_BALANCER, NODE_PORT, ManagementConfig, TenantConfig
from kamaji_hami_platform.create_only_guards import CreateOnlySetting
from kamaji_hami_platform.mirror import mirrored_registry, mirrored_repository
from kamaji_hami_platform.tenant import own_network
from kamaji_hami_platform.tenant.api_clients import source_ranges

API_VERSION = "kamaji.clastix.io/v1alpha1"
KIND = "TenantControlPlane"
DATASTORE = "default"
API_PORT = 6443
KONNECTIVITY_PORT = 8132
READY_JSONPATH = "{.status.kubernetesResources.version.status}"
# Kamaji writes the running version only when the control plane is Ready at the spec's version
# (26.8.2-edge internal/resources/k8s_deployment_resource.go UpdateTenantControlPlaneStatus):
# without it, an upgrade's update would be "Ready" with the old version still running.
VERSION_JSONPATH = "{.status.kubernetesResources.version.version}"
READY_TIMEOUT_MINUTES = 15

# The CRD's default `admissionControllers`; setting the field replaces it, so
# the whole list is repeated with NodeRestriction (which kubeadm enables and
# Kamaji does not) added.
KAMAJI_DEFAULT_ADMISSION_CONTROLLERS = (
    "CertificateApproval", "CertificateSigning", "CertificateSubjectRestriction",
    "DefaultIngressClass", "DefaultStorageClass", "DefaultTolerationSeconds", "LimitRanger",
    "MutatingAdmissionWebhook", "NamespaceLifecycle", "PersistentVolumeClaimResize", "Priority",
    "ResourceQuota", "RuntimeClass", "ServiceAccount", "StorageObjectInUseProtection",
    "TaintNodesByCondition", "ValidatingAdmissionWebhook",
)
ADMISSION_CONTROLLERS = (*KAMAJI_DEFAULT_ADMISSION_CONTROLLERS, "NodeRestriction")

# The kubelet's cgroup driver matches kindest/node's containerd (systemd); the rest is what kind
# applies to its nodes. Every patch is `add`: Kamaji patches a KubeletConfiguration without
# `cgroupDriver`, where a `replace` would fail every join (26.8.2-edge internal/kubeadm/
# uploadconfig.go getKubeletConfigmapContent). Rationale: docs/design/tenant-control-plane.md.
KUBELET_CGROUP_DRIVER = "systemd"
# What every kubelet of a tenant gets; the laptop's disk settings (0% eviction thresholds, image GC
# only when full) only on kind, never on the hosts of an existing cluster.
HOST_KUBELET_PATCH_PATHS = ("/cgroupDriver", "/failSwapOn")
KUBELET_CONFIGURATION_PATCHES = (
    {"op": "add", "path": "/cgroupDriver", "value": KUBELET_CGROUP_DRIVER},
    {"op": "add", "path": "/failSwapOn", "value": False},
    {"op": "add", "path": "/imageGCHighThresholdPercent", "value": 100},
    {"op": "add", "path": "/evictionHard",
     "value": {"imagefs.available": "0%", "nodefs.available": "0%", "nodefs.inodesFree": "0%"}},
)


def kubelet_patches(management: ManagementConfig | None, tenant_minor: int) -> list[dict[str, Any]]:
    """The kubelet configuration patches of a tenant's nodes (kind: all; hosts: the cgroup driver
    and swap only, the kubelet's own eviction and image GC defaults kept), and on either, with
    `management.failCgroupV1: false`, the one that lets kubelets start on cgroup v1."""
    laptop = management is None or management.is_kind
    patches = [dict(patch) for patch in KUBELET_CONFIGURATION_PATCHES
               if laptop or patch["path"] in HOST_KUBELET_PATCH_PATHS]
    return [*patches, *cgroup_v1.tenant_kubelet_patches(management, tenant_minor)]


def datastore_schema(tenant: TenantConfig) -> str:
    """A predictable schema name per tenant (Kamaji's default is the TCP's UID).

    It names the tenant's keys in kamaji-etcd for an operator; it does not carry
    data across a replace: Kamaji's finalizer deletes the schema's keys when a
    TCP is deleted (clastix/kamaji 26.8.2-edge,
    internal/resources/datastore/datastore_setup.go, internal/datastore/etcd.go DeleteDB),
    so a replaced control plane starts empty either way.
    """
    return tenant.name.replace("-", "_")


def admin_kubeconfig_secret(tenant: TenantConfig) -> str:
    return names.admin_kubeconfig_secret(tenant.name)


def wait_for(tenant: TenantConfig) -> str:
    """`pulumi.com/waitFor`: Ready at the tenant's version. A JSON array, which pulumi-kubernetes
    awaits as all of its conditions (v4.32.0 provider/pkg/metadata/overrides.go ReadyCondition)."""
    return json.dumps([f"jsonpath={READY_JSONPATH}=Ready",
                       f"jsonpath={VERSION_JSONPATH}={tenant.kubernetes_version}"])


def api_port(tenant: TenantConfig) -> int:
    """The port of the tenant's API server: its node port when exposed as NodePort (Kamaji makes the
    Service's port, the container's port and the node port one number: 26.8.2-edge
    internal/resources/k8s_service_resource.go)."""
    return tenant.api_node_port or API_PORT


def konnectivity_port(tenant: TenantConfig) -> int:
    """Konnectivity's server port, a node port too under NodePort (internal/resources/konnectivity/
    service_resource.go sets NodePort to addons.konnectivity.server.port)."""
    return tenant.konnectivity_node_port or KONNECTIVITY_PORT


def _service_and_address(tenant: TenantConfig,
                         management: ManagementConfig | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The Service, and what the network profile adds to it.

    The address Kamaji advertises: a LoadBalancer's comes from its status (an IP only: Kamaji
    refuses a hostname-only ingress, api/v1alpha1/tenantcontrolplane_funcs.go
    DeclaredControlPlaneAddress); a NodePort has none, so the management node's is set.
    A LoadBalancer admits only the tenant's API clients (tenant/api_clients.py), checked by
    kube-proxy on the real client address before its masquerade and whether or not the policy
    engine runs (Kamaji 26.8.2-edge `networkProfile.loadBalancerSourceRanges`, internal/resources/
    k8s_service_resource.go); behind the platform's MetalLB it gets no node ports (MetalLB never
    uses them, and kube-proxy does not filter node ports by source: kubernetes v1.35.4
    pkg/proxy/iptables/proxier.go "nodeports are not subject to loadBalancerSourceRanges"); a
    tenant with its own network asks for its control plane's address on the platform's network
    and advertises its door's (Kamaji 26.8.2-edge `networkProfile.advertiseAddress`: the API
    server's --advertise-address, kubeadm's control plane endpoint, cluster-info, admin.conf).
    Rationale: docs/design/network-isolation.md."""
    if management is None:
        return {"serviceType": LOAD_BALANCER}, {}
    if management.api_exposure != LOAD_BALANCER:
        return {"serviceType": NODE_PORT}, {"address": management.node_port_address}
    service: dict[str, Any] = {"serviceType": LOAD_BALANCER}
    address: dict[str, Any] = {}
    if management.is_kind and tenant.own_network:
        service["additionalMetadata"] = {"annotations": own_network.service_annotations(tenant, management)}
        # Workers, their pods and Konnectivity use the door's address (tenant/door.py), never the
        # Service's, which only the door reaches.
        address["advertiseAddress"] = own_network.tenant_network(tenant, management).api_address
    if management.install_metallb:
        service["allocateLoadBalancerNodePorts"] = False
    return service, {**address, "loadBalancerSourceRanges": source_ranges(tenant, management)}


def _mirrored_images(mirror: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(deployment, addons) settings that pull the control plane's images from the mirror: Kamaji
    builds `<registry>/<component>:<version>` (26.8.2-edge api/v1alpha1/
    tenantcontrolplane_registrysettings_funcs.go), `<image>:<version>` for Konnectivity
    (internal/builders/controlplane/konnectivity_server.go, internal/resources/konnectivity/agent.go),
    and CoreDNS as kubeadm does, `<imageRepository>/coredns:<tag>` (kubernetes
    cmd/kubeadm/app/images/images.go GetDNSImage, through Kamaji's internal/kubeadm/addon.go)."""
    if not mirror:
        return {}, {}
    server, agent = (mirrored_repository(image, mirror) for image in versions.KONNECTIVITY_IMAGES)
    registry = mirrored_registry(versions.CONTROL_PLANE_IMAGE_REGISTRY, mirror)
    return ({"registrySettings": {"registry": registry}},
            {"coreDNS": {"imageRepository": mirrored_repository(versions.COREDNS_REPOSITORY, mirror)},
             "konnectivity": {"server": {"image": server}, "agent": {"image": agent}}})


def tenant_control_plane(tenant: TenantConfig, management: ManagementConfig | None = None,
                         mirror: str | None = None) -> dict[str, Any]:
    """The whole TenantControlPlane object for one tenant (exposed as `management` says; by default
    as a LoadBalancer; its images from the mirror, if any)."""
    service, address = _service_and_address(tenant, management)
    deployment_images, addon_images = _mirrored_images(mirror)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": tenant.name,
            "namespace": tenant.namespace,
            "annotations": {"pulumi.com/waitFor": wait_for(tenant)},
        },
        "spec": {
            "dataStore": DATASTORE,
            "dataStoreSchema": datastore_schema(tenant),
            "controlPlane": {
                "deployment": {"replicas": tenant.control_plane_replicas, **deployment_images},
                "service": service,
            },
            "kubernetes": {
                "version": tenant.kubernetes_version,
                "kubelet": {
                    "preferredAddressTypes": ["InternalIP", "ExternalIP", "Hostname"],
                    "configurationJSONPatches": kubelet_patches(management, tenant.kubernetes_minor),
                },
                "admissionControllers": list(ADMISSION_CONTROLLERS),
            },
            "networkProfile": {
                **address,
                "port": api_port(tenant),
                "podCidrs": [tenant.pod_cidr],
                "serviceCidrs": [tenant.service_cidr],
                "dnsServiceIPs": [tenant.dns_service_ip],
            },
            # kube-proxy is deployed by the platform (kube_proxy.py), not by
            # Kamaji's addon, which has no conntrack override (tenant/addons.py).
            "addons": {
                "coreDNS": {**addon_images.get("coreDNS", {})},
                "konnectivity": {
                    "server": {"port": konnectivity_port(tenant),
                               **addon_images.get("konnectivity", {}).get("server", {})},
                    # Host network: the agent connects before the tenant CNI runs.
                    "agent": {"mode": "DaemonSet", "hostNetwork": True,
                              **addon_images.get("konnectivity", {}).get("agent", {})},
                },
            },
        },
    }


def create_only_settings(tenant: TenantConfig) -> tuple[CreateOnlySetting, ...]:
    """What a tenant's running nodes keep from their join, so a change breaks them.

    The controller-manager gives each node a pod range once (`spec.podCIDR` is immutable
    on a Node), and the kubelet keeps the cluster DNS address (10th of the service CIDR)
    it was configured with at join (kubelet-config, `clusterDNS`).
    """
    path = f"tenants[name={tenant.name}]"
    return (
        CreateOnlySetting("podCidr", f"{path}.podCidr",
                          "every node keeps the pod range it was given at join, so its pods would "
                          "get addresses outside the new range"),
        CreateOnlySetting("serviceCidr", f"{path}.serviceCidr",
                          "every kubelet keeps the DNS address it was given at join, and Services "
                          "keep their addresses"),
        # Defaults to the tenant's position in `tenants`: removing or inserting a tenant before it
        # would move its workers' addresses, and the control plane would admit none of the old ones.
        # Its value names the network too (workerNetwork, tenantSubnet): a tenant moved to another
        # network is refused by this same guard, which every tenant created by 0.1.0 has.
        CreateOnlySetting("addressBlock", f"{path}.addressBlock",
                          "its workers' fixed addresses, its API address and what its control plane "
                          "admits are in it, on its network (workerNetwork, management.tenantSubnet; "
                          "a tenant created by 0.1.0 keeps workerNetwork shared; the default is the "
                          "tenant's position in tenants: pin it before removing or inserting a tenant "
                          "ahead of this one)"),
    )


def create_only_values(tenant: TenantConfig, management: ManagementConfig | None = None) -> dict[str, str]:
    """Each create-only setting's value, as its guard's trigger. A tenant on the shared network keeps
    the bare block number it had in 0.1.0 (so its guard does not change); one on its own
    network adds the network's subnet."""
    block = str(tenant.address_block)
    if management is not None and management.is_kind and tenant.own_network:
        block = f"{block} own network {own_network.tenant_network(tenant, management).subnet}"
    return {"podCidr": tenant.pod_cidr, "serviceCidr": tenant.service_cidr, "addressBlock": block}


def create_only_way_out(tenant: TenantConfig) -> str:
    return (f"set the old value back, or recreate the tenant (it starts empty): make unprotect-tenant "
            f"TENANT={tenant.name}, remove it from tenants and make up, then add it back and make up")
