"""kamaji-hami-platform: read the stack config, compose the components, export outputs."""

import pulumi

from kamaji_hami_platform import (
    HamiNodePool,
    HamiNodePoolArgs,
    KamajiTenant,
    KamajiTenantArgs,
    ManagementCluster,
    ManagementClusterArgs,
    create_only_report,
)
from kamaji_hami_platform.config import ConfigError, SecretText, TenantConfig, load_config
from kamaji_hami_platform.config.settings import (
    gpu_model_settings,
    image_settings,
    management_settings,
    pod_shape_settings,
    tenant_settings,
)
from kamaji_hami_platform.gpu.workloads import plan_declared_workloads, undecided_tenants
from kamaji_hami_platform.tenant import admin_credential

try:
    platform = load_config()
except ConfigError as error:
    # RunError: the message alone, no traceback; nothing has been registered yet.
    raise pulumi.RunError(str(error)) from None

# Capacity as code: the declared GPU workloads planned as HAMi would place them, before anything
# is created; what does not fit fails the preview (or warns, as the stack chooses).
gpu_plans, capacity_problems = plan_declared_workloads(platform)
if capacity_problems:
    report = "declared GPU workloads do not fit:\n  - " + "\n  - ".join(capacity_problems)
    if platform.gpu_capacity_enforcement == "mandatory":
        raise pulumi.RunError(f"{report}\n(gpuCapacity.enforcement: warning deploys anyway, with this "
                              "warning)")
    pulumi.log.warn(report)
# An unfinished plan is neither a pass nor a refusal: said, whatever the enforcement.
for line in undecided_tenants(platform, gpu_plans):
    pulumi.log.warn(line)


def secret(text: SecretText) -> pulumi.Output[str]:
    """A secret of the stack, as a secret Output (load_config decrypted it through Pulumi)."""
    assert text.value is not None
    return pulumi.Output.secret(text.value)


# In a preview, the platform's own message for a create-only setting changed since the last
# deployment, said before the engine can refuse it (kamaji_hami_platform/create_only_report.py).
create_only_report.report_changed_settings(platform)

# Every image from the mirror, when the stack names one (kamaji_hami_platform/mirror.py).
images = image_settings(platform.images)
management_args = ManagementClusterArgs(management=management_settings(platform.management), images=images)
if platform.management_kubeconfig is not None:
    management_args["kubeconfig"] = secret(platform.management_kubeconfig)
try:
    management = ManagementCluster("management", management_args)
except ConfigError as error:  # a kubeconfigContext that its file does not hold; nothing registered yet
    raise pulumi.RunError(str(error)) from None


def tenant_args(tenant: TenantConfig) -> KamajiTenantArgs:
    """The kind cluster's network, host flags and cluster for container workers; the SSH keys
    for worker hosts."""
    args = KamajiTenantArgs(tenant=tenant_settings(tenant), management_provider=management.provider,
                            management=management_settings(platform.management), images=images)
    if platform.management.is_kind:
        args.update(management_cluster=management.cluster, host_flags=management.host_flags,
                    management_network=management.network)
    if tenant.on_hosts:
        args["ssh_private_keys"] = {name: secret(key) for name, key in platform.ssh_private_keys.items()}
    return args


tenants = {
    tenant.name: KamajiTenant(tenant.name, tenant_args(tenant),
                              opts=pulumi.ResourceOptions(depends_on=[management]))
    for tenant in platform.tenants
}
gpu_pools = {
    tenant.name: HamiNodePool(
        f"{tenant.name}-gpus",
        HamiNodePoolArgs(tenant=tenant_settings(tenant), cluster_name=platform.management.name,
                         tenant_provider=tenants[tenant.name].provider, workers=tenants[tenant.name].workers,
                         gpu_models=gpu_model_settings(platform.gpu_models),
                         reference_pod=pod_shape_settings(platform.reference_pod), images=images),
        opts=pulumi.ResourceOptions(depends_on=[tenants[tenant.name]],
                                    deleted_with=tenants[tenant.name].control_plane))
    for tenant in platform.tenants
}

# Each create-only setting's value, which the next preview's message compares with the config.
# Each guard's value as its state holds it, not the config's: a targeted `up` that left a guard out
# must not record a value the platform never took.
pulumi.export(create_only_report.OUTPUT, {**management.create_only_values,
                                          **{guard: value for tenant in tenants.values()
                                             for guard, value in tenant.create_only_values.items()}})
pulumi.export("managementKubeconfig", management.kubeconfig)
pulumi.export("metallbPoolRange", management.pool_range)
pulumi.export("tenants", {
    name: {
        "endpoint": tenant.endpoint,
        "nodes": tenant.node_names,
        "gpuCards": gpu_pools[name].cards,
        "gpuCapacity": gpu_pools[name].capacity,
        # Whose credential tenantKubeconfigs holds: the next preview compares it (create_only_report.py).
        admin_credential.CREDENTIAL_OUTPUT_KEY: admin_credential.credential_kind(platform.management),
        **({"gpuPlan": gpu_plans[name].as_output()} if name in gpu_plans else {}),
    }
    for name, tenant in tenants.items()
})
# For the tenants' own admins (kind: a bounded tenant admin), and the platform's cluster-admin.
pulumi.export("tenantKubeconfigs", pulumi.Output.secret(
    {name: tenant.admin_kubeconfig for name, tenant in tenants.items()}))
pulumi.export("platformTenantKubeconfigs", pulumi.Output.secret(
    {name: tenant.kubeconfig for name, tenant in tenants.items()}))
