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

import shlex

from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.management.access import management_access, private_kubeconfig
from kamaji_hami_platform.management.render import KAMAJI_NAMESPACE, control_plane_container
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV

ADMIN_ACCESS_WAIT = (90, 2)  # 3 minutes; Kamaji's e2e allows 1


def _tenant_access(tenant: TenantConfig, management: ManagementConfig) -> tuple[str, str]:
    """(preamble, kubectl): access to the tenant with its admin kubeconfig ($TENANT_KUBECONFIG).
    kind: copied into the kind node over stdin (removed at exit), and its kubectl. existing: a
    private temporary file for this host's kubectl."""
    if not management.is_kind:
        return private_kubeconfig(KUBECONFIG_ENV, "tenant_kc"), 'kubectl --kubeconfig "$tenant_kc"'
    node = shlex.quote(control_plane_container(management))
    path = f"/tmp/{tenant.name}-admin-access.conf"
    preamble = f"""node={node}
file={path}
trap 'docker exec "$node" rm -f "$file" >/dev/null 2>&1 || true' EXIT
printf '%s' "${KUBECONFIG_ENV}" | docker exec -i "$node" sh -c "umask 077; cat > $file" || {{
  echo "cannot reach the kind node container $node to check tenant {tenant.name}" >&2; exit 1; }}
"""
    return preamble, 'docker exec "$node" kubectl --kubeconfig "$file"'


def tenant_admin_access_script(tenant: TenantConfig, management: ManagementConfig,
                               attempts: int = ADMIN_ACCESS_WAIT[0],
                               interval: int = ADMIN_ACCESS_WAIT[1]) -> str:
    """Wait until the tenant's admin kubeconfig (in ${TENANT_KUBECONFIG}) may do everything."""
    preamble, kubectl = _tenant_access(tenant, management)
    _, _, hint = management_access(management)
    bound = attempts * interval
    check = (f"{hint} -n {tenant.namespace} describe tcp {tenant.name};"
             f" {hint} -n {KAMAJI_NAMESPACE} logs deploy/kamaji")
    return f"""set -u
{preamble}answer=""
for attempt in $(seq 1 {attempts}); do
  answer=$({kubectl} auth can-i '*' '*' --all-namespaces 2>&1 \\
    || true)
  if [ "$answer" = "yes" ]; then
    echo "tenant {tenant.name}: the admin kubeconfig is authorized"
    exit 0
  fi
  sleep {interval}
done
echo "tenant {tenant.name}: the admin kubeconfig was not authorized within {bound}s" \\
  "(last answer: $answer)." >&2
echo "Kamaji binds group kubeadm:cluster-admins to cluster-admin after the control plane is Ready;" \\
  "check: {check}" >&2
exit 1
"""
