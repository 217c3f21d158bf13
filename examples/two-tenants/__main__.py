"""Two GPU tenants on one management cluster, composed from the kamaji-hami-platform package.

A program of its own (not the platform's stack config): settings written in code, a values
override for cert-manager, HAMi's chart from a mirror, and tenant-b sharing its cards with spread.
"""

import pulumi

from kamaji_hami_platform import (
    HamiNodePool,
    HamiNodePoolArgs,
    KamajiTenant,
    KamajiTenantArgs,
    ManagementCluster,
    ManagementClusterArgs,
    ManagementSettings,
    TenantSettings,
)

settings = ManagementSettings(name="lab", docker_network="lab", docker_subnet="172.28.0.0/16",
                              tenant_subnet="172.27.0.0/16",
                              kamaji_etcd_replicas=1)
management = ManagementCluster("lab", ManagementClusterArgs(
    management=settings,
    helm_values={"cert-manager": {"resources": {"requests": {"cpu": "20m"}}}},
))

tenants = [
    TenantSettings(name="team-a", kubernetes_version="v1.35.0", pod_cidr="10.50.0.0/16",
                   service_cidr="10.51.0.0/16", workers=1, gpus={"model": "A100-80GB", "per_worker": 1}),
    TenantSettings(name="team-b", kubernetes_version="v1.35.0", pod_cidr="10.52.0.0/16",
                   service_cidr="10.53.0.0/16", workers=2, address_block=1,
                   gpus={"model": "A100-80GB", "per_worker": 2}, hami={"gpu_scheduler_policy": "spread"}),
]

for tenant in tenants:
    cluster = KamajiTenant(tenant["name"], KamajiTenantArgs(
        tenant=tenant, management=settings, management_provider=management.provider,
        management_cluster=management.cluster, host_flags=management.host_flags,
        management_network=management.network),
        opts=pulumi.ResourceOptions(depends_on=[management]))
    gpus = HamiNodePool(f"{tenant['name']}-gpus", HamiNodePoolArgs(
        tenant=tenant, cluster_name=settings["name"], tenant_provider=cluster.provider,
        workers=cluster.workers,
        chart={"chart": "hami", "version": "2.10.0", "repository": "https://charts.example.internal/hami"}),
        opts=pulumi.ResourceOptions(depends_on=[cluster], deleted_with=cluster.control_plane))
    pulumi.export(f"{tenant['name']}Endpoint", cluster.endpoint)
    pulumi.export(f"{tenant['name']}Cards", gpus.cards)
    # For the tenant's own admins (a bounded tenant admin on kind); the platform's cluster-admin apart.
    pulumi.export(f"{tenant['name']}Kubeconfig", cluster.admin_kubeconfig)
    pulumi.export(f"{tenant['name']}PlatformKubeconfig", cluster.kubeconfig)
