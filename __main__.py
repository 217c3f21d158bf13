"""kamaji-hami-platform: read config, build components, export outputs."""

import pulumi

from components.config import load_config
from components.kamaji_tenant import KamajiTenant
from components.management_cluster import ManagementCluster

platform = load_config()

management = ManagementCluster("management", platform.management)
tenants = {
    tenant.name: KamajiTenant(tenant.name, tenant, platform.management, management)
    for tenant in platform.tenants
}

pulumi.export("managementKubeconfig", management.kubeconfig)
pulumi.export("metallbPoolRange", management.pool_range)
pulumi.export("tenants", {
    name: {"endpoint": tenant.endpoint, "nodes": tenant.node_names}
    for name, tenant in tenants.items()
})
pulumi.export("tenantKubeconfigs", pulumi.Output.secret(
    {name: tenant.kubeconfig for name, tenant in tenants.items()}))
