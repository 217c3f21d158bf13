"""kamaji-hami-platform: read config, build components, export outputs."""

import pulumi

from kamaji_hami_platform.config import ConfigError, load_config
from kamaji_hami_platform.gpu import reference_request
from kamaji_hami_platform.gpu.component import HamiNodePool
from kamaji_hami_platform.management.component import ManagementCluster
from kamaji_hami_platform.tenant.component import KamajiTenant

try:
    platform = load_config()
except ConfigError as error:
    # RunError: the message alone, no traceback; nothing has been registered yet.
    raise pulumi.RunError(str(error)) from None

management = ManagementCluster("management", platform.management)
tenants = {
    tenant.name: KamajiTenant(tenant.name, tenant, platform.management, management)
    for tenant in platform.tenants
}
gpu_pools = {
    tenant.name: HamiNodePool(f"{tenant.name}-gpus", tenant, platform.management.name,
                              tenants[tenant.name], reference_request(platform))
    for tenant in platform.tenants
}

pulumi.export("managementKubeconfig", management.kubeconfig)
pulumi.export("metallbPoolRange", management.pool_range)
pulumi.export("tenants", {
    name: {
        "endpoint": tenant.endpoint,
        "nodes": tenant.node_names,
        "gpuCards": gpu_pools[name].cards,
        "gpuCapacity": gpu_pools[name].capacity,
    }
    for name, tenant in tenants.items()
})
pulumi.export("tenantKubeconfigs", pulumi.Output.secret(
    {name: tenant.kubeconfig for name, tenant in tenants.items()}))
