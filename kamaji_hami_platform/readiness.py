"""Bounded waits for what Kamaji does after its own readiness says "done".

Two races would fail a first `pulumi up` on a real host, each checked from
inside the kind node (which ships kubectl; the user's host needs none), or, for an
existing management cluster, with this host's kubectl and the stack's kubeconfig:

- Kamaji's TenantControlPlane webhooks fail closed (`failurePolicy: Fail`),
  and the controller reports Ready on a bare ping (clastix/kamaji 26.8.2-edge
  cmd/manager/cmd.go `AddReadyzCheck("readyz", healthz.Ping)`), so the Helm
  release can be "ready" before the webhook serves. The TCPs wait until a
  server-side dry run of a TCP of the platform's own shape is accepted.
- A tenant's admin kubeconfig authenticates as group `kubeadm:cluster-admins`,
  which Kamaji's per-tenant controller binds to `cluster-admin` only a while
  after the TCP reports Ready (internal/resources/kubeadm_phases.go
  PhaseClusterAdminRBAC; Kamaji's own e2e retries for a minute), and
  pulumi-kubernetes retries a create only on NotFound/NoMatch, not on 403.
  Everything inside the tenant waits until `kubectl auth can-i '*' '*'` says yes.

Both are pure renderings of shell scripts; tests run them against a stand-in
docker. Neither prints or stores a secret: the tenant kubeconfig arrives in an
environment variable (a Pulumi secret) and reaches the node over stdin.
"""

from __future__ import annotations

import json
import shlex

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.management.render import KAMAJI_NAMESPACE, control_plane_container
from kamaji_hami_platform.tenant import control_plane as tcp_render
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV

# The kind node's own admin kubeconfig (kubeadm writes it; kind reads it there too).
KIND_NODE_ADMIN_KUBECONFIG = "/etc/kubernetes/admin.conf"
WEBHOOK_PROBE_NAME = "platform-webhook-probe"
# The hints name commands that reach the management cluster whatever the user's kubeconfig says.
KIND_NODE_KUBECTL = f"kubectl --kubeconfig {KIND_NODE_ADMIN_KUBECONFIG}"
WEBHOOK_WAIT = (60, 5)  # attempts, seconds between them: 5 minutes
ADMIN_ACCESS_WAIT = (90, 2)  # 3 minutes; Kamaji's e2e allows 1
# A synthetic tenant whose TCP is only ever dry-run, never created.
_PROBE_TENANT = TenantConfig(
    name=WEBHOOK_PROBE_NAME, kubernetes_version=versions.KIND_NODE_VERSION,
    control_plane_replicas=1, pod_cidr="10.36.0.0/16", service_cidr="10.37.0.0/16",
    workers=0, gpus=None)


def webhook_probe_manifest() -> str:
    """A TCP rendered by the platform's own renderer, placed in kamaji-system (which exists
    once Kamaji is installed); its server-side dry run passes both Kamaji webhooks."""
    tcp = tcp_render.tenant_control_plane(_PROBE_TENANT)
    tcp["metadata"] = {"name": WEBHOOK_PROBE_NAME, "namespace": KAMAJI_NAMESPACE}
    return json.dumps(tcp, sort_keys=True, separators=(",", ":"))


MANAGEMENT_KUBECONFIG_ENV = "MANAGEMENT_KUBECONFIG"


def _management_kubectl(node: str) -> str:
    """A kubectl command line that reaches the management cluster, whatever ~/.kube/config says."""
    return f"docker exec {node} {KIND_NODE_KUBECTL}"


def _private_kubeconfig(variable: str, shell_var: str) -> str:
    """Shell that writes the kubeconfig in $variable (a Pulumi secret) to a private temporary file
    named by $shell_var, removed when the script ends: never an argument, never a fixed path."""
    return (f"{shell_var}=$(umask 077; mktemp)\n"
            f"trap 'rm -f \"${shell_var}\"' EXIT\n"
            f"printf '%s' \"${variable}\" > \"${shell_var}\"\n")


def _management_access(management: ManagementConfig) -> tuple[str, str, str]:
    """(preamble, kube, hint): shell that sets up access to the management cluster, the command
    that runs kubectl against it, and the command line a user runs to look for themselves.
    kind: the kind node's own kubectl and admin kubeconfig (the user's host needs no kubectl).
    existing: this host's kubectl with the kubeconfig the stack holds ($MANAGEMENT_KUBECONFIG)."""
    if management.is_kind:
        node = shlex.quote(control_plane_container(management))
        return f"node={node}\n", f'docker exec -i "$node" {KIND_NODE_KUBECTL}', _management_kubectl(node)
    return (_private_kubeconfig(MANAGEMENT_KUBECONFIG_ENV, "management_kc"),
            'kubectl --kubeconfig "$management_kc"', "kubectl --context <the management cluster's>")


def kamaji_webhook_wait_script(management: ManagementConfig,
                               attempts: int = WEBHOOK_WAIT[0], interval: int = WEBHOOK_WAIT[1]) -> str:
    """Retry a server-side dry run of a TCP until Kamaji's webhooks accept it, or fail naming why."""
    preamble, kube, hint = _management_access(management)
    probe = shlex.quote(webhook_probe_manifest())
    bound = attempts * interval
    check = (f"{hint} -n {KAMAJI_NAMESPACE} get pods,certificates;"
             f" {hint} -n {KAMAJI_NAMESPACE} logs deploy/kamaji")
    return f"""set -u
{preamble}probe={probe}
output=""
for attempt in $(seq 1 {attempts}); do
  if output=$(printf '%s' "$probe" \\
      | {kube} create --dry-run=server -o name -f - 2>&1); then
    echo "Kamaji's TenantControlPlane webhooks answer (server-side dry run accepted)"
    exit 0
  fi
  sleep {interval}
done
echo "Kamaji's TenantControlPlane webhooks did not accept a dry-run TenantControlPlane" \\
  "within {bound}s: $output" >&2
echo "check: {check}" >&2
exit 1
"""


def _tenant_access(tenant: TenantConfig, management: ManagementConfig) -> tuple[str, str]:
    """(preamble, kubectl): access to the tenant with its admin kubeconfig ($TENANT_KUBECONFIG).
    kind: copied into the kind node over stdin (removed at exit), and its kubectl. existing: a
    private temporary file for this host's kubectl."""
    if not management.is_kind:
        return _private_kubeconfig(KUBECONFIG_ENV, "tenant_kc"), 'kubectl --kubeconfig "$tenant_kc"'
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
    _, _, hint = _management_access(management)
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
