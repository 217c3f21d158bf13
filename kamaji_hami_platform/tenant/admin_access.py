"""The wait until a tenant's admin kubeconfig may do everything, before anything is created
inside the tenant.

A tenant's admin kubeconfig authenticates as group `kubeadm:cluster-admins`, which Kamaji's
per-tenant controller binds to `cluster-admin` only a while after the TCP reports Ready
(clastix/kamaji 26.8.2-edge internal/resources/kubeadm_phases.go PhaseClusterAdminRBAC; Kamaji's
own e2e retries for a minute), and pulumi-kubernetes retries a create only on NotFound/NoMatch, not
on 403. The kubeconfig arrives in an environment variable (a Pulumi secret) and reaches the kind
node over stdin.
"""

from __future__ import annotations

from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.management.access import management_access, private_kubeconfig
from kamaji_hami_platform.management.render import KAMAJI_NAMESPACE, control_plane_container
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV

ADMIN_ACCESS_WAIT = (90, 2)  # 3 minutes; Kamaji's e2e allows 1
_PACKAGE = "kamaji_hami_platform.tenant"


def _tenant_access(tenant: TenantConfig, management: ManagementConfig) -> tuple[Shell, Shell]:
    """(preamble, kubectl): access to the tenant with its admin kubeconfig ($TENANT_KUBECONFIG).
    kind: copied into the kind node over stdin (removed at exit), and its kubectl. existing: a
    private temporary file for this host's kubectl."""
    if not management.is_kind:
        return private_kubeconfig(KUBECONFIG_ENV, "tenant_kc"), Shell('kubectl --kubeconfig "$tenant_kc"')
    preamble = render_script(_PACKAGE, "admin_access_kind_node.sh", node=control_plane_container(management),
                             file=f"/tmp/{tenant.name}-admin-access.conf",
                             kubeconfig_env=Text(KUBECONFIG_ENV), tenant=Text(tenant.name))
    return Shell(preamble), Shell('docker exec "$node" kubectl --kubeconfig "$file"')


def tenant_admin_access_script(tenant: TenantConfig, management: ManagementConfig,
                               attempts: int = ADMIN_ACCESS_WAIT[0],
                               interval: int = ADMIN_ACCESS_WAIT[1]) -> str:
    """Wait until the tenant's admin kubeconfig (in ${TENANT_KUBECONFIG}) may do everything."""
    preamble, kubectl = _tenant_access(tenant, management)
    _, _, hint = management_access(management)
    check = (f"{hint} -n {tenant.namespace} describe tcp {tenant.name};"
             f" {hint} -n {KAMAJI_NAMESPACE} logs deploy/kamaji")
    # The hint is a command line for the user, shown inside the message's double quotes.
    return render_script(_PACKAGE, "admin_access_wait.sh", access=preamble, attempts=attempts,
                         kubectl=kubectl, tenant=Text(tenant.name), interval=interval,
                         bound=attempts * interval, check=Shell(check))
