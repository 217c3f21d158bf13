"""The wait until a tenant's admin kubeconfig may do everything, before anything is created
inside the tenant.

A tenant's admin kubeconfig authenticates as group `kubeadm:cluster-admins`, which Kamaji's
per-tenant controller binds to `cluster-admin` only a while after the TCP reports Ready
(clastix/kamaji 26.8.2-edge internal/resources/kubeadm_phases.go PhaseClusterAdminRBAC; Kamaji's
own e2e retries for a minute), and pulumi-kubernetes retries a create only on NotFound/NoMatch, not
on 403. The kubeconfig arrives in an environment variable (a Pulumi secret) and reaches the kind
node over stdin.

Each try is bounded: kubectl sets no request timeout of its own, so a tenant API whose packets the
NetworkPolicy drops (a wrong `management.apiClientCidrs`) held each try for the kernel's connect
retries (some 48 minutes over the wait's 90 tries, issue 28 reports). `kubectl auth can-i` prints
"yes", or "no" with exit 1 when the API answered (kubectl v0.35 pkg/cmd/auth/cani.go
RunAccessCheck), and an error otherwise: "Unable to connect to the server" or "... was refused"
when the API did not answer (pkg/cmd/util/helpers.go StandardErrorMessage). The failure names the
network for the one and Kamaji's RBAC for the other.
"""

from __future__ import annotations

from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.docker_calls import bounded_docker
from kamaji_hami_platform.management.access import KIND_NODE_KUBECTL, management_access, private_kubeconfig
from kamaji_hami_platform.management.render import (
    KAMAJI_NAMESPACE,
    METALLB_NAMESPACE,
    control_plane_container,
)
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.tenant import door
from kamaji_hami_platform.tenant.control_plane import api_port
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV

# The wait: tries start until this many seconds have passed (3 minutes; Kamaji's e2e allows 1),
# this many seconds apart.
ADMIN_ACCESS_BOUND_SECONDS = 180
ADMIN_ACCESS_INTERVAL_SECONDS = 2
# Each try: kubectl's request timeout, and the whole call (coreutils `timeout`, on this host in mode
# existing, in the kind node otherwise: kindest/node has coreutils).
REQUEST_TIMEOUT = "15s"
CALL_TIMEOUT_SECONDS = 30
TIMED_OUT = 124  # coreutils `timeout`'s status when it ended the call
_PACKAGE = "kamaji_hami_platform.tenant"


def tenant_access(tenant: TenantConfig, management: ManagementConfig, call_timeout: int,
                  purpose: str = "admin-access", stdin: bool = False) -> tuple[Shell, Shell]:
    """(preamble, kubectl): access to the tenant with its admin kubeconfig ($TENANT_KUBECONFIG),
    each call bounded. kind: copied into the kind node over stdin (removed at exit), and its
    kubectl (given this script's stdin when `stdin`). existing: a private temporary file for this
    host's kubectl."""
    bounded = f"timeout {call_timeout} kubectl"
    if not management.is_kind:
        return (private_kubeconfig(KUBECONFIG_ENV, "tenant_kc"),
                Shell(f'{bounded} --kubeconfig "$tenant_kc" --request-timeout={REQUEST_TIMEOUT}'))
    preamble = render_script(_PACKAGE, "admin_access_kind_node.sh", bounded_docker=bounded_docker(),
                             node=control_plane_container(management),
                             file=f"/tmp/{tenant.name}-{purpose}.conf",
                             kubeconfig_env=Text(KUBECONFIG_ENV), tenant=Text(tenant.name))
    server = ""
    if tenant.own_network:
        # The kubeconfig names the door's address, on the tenant's network only (tenant/door.py).
        preamble += render_script(_PACKAGE, "admin_access_service_address.sh",
                                  management_kubectl=Shell(KIND_NODE_KUBECTL), namespace=tenant.namespace,
                                  service=tenant.name, tenant=Text(tenant.name))
        server = (f' --server "https://$service_ip:{api_port(tenant)}"'
                  f" --tls-server-name={service_name(tenant)}")
    exec_flags = "exec -i" if stdin else "exec"
    return Shell(preamble), Shell(f'docker {exec_flags} "$node" {bounded} --kubeconfig "$file"{server}'
                                  f" --request-timeout={REQUEST_TIMEOUT}")


def service_name(tenant: TenantConfig) -> str:
    """The name of the tenant API's Service that its certificate carries: Kamaji's own clients use
    it (26.8.2-edge internal/utilities/tenant_client.go; the admin Secret's `admin.svc`)."""
    return f"{tenant.name}.{tenant.namespace}.svc"


def _listed(items: list[str] | tuple[str, ...]) -> str:
    return ", ".join(items) if items else "none"


def network_hint(tenant: TenantConfig, management: ManagementConfig) -> str:
    """Where the tenant API is reached from, for a wait the API did not answer, with a command to
    look. existing: the tenant API's NetworkPolicy admits the tenant's hosts and apiClientCidrs
    only (tenant/network_policy.py). kind: the API is a MetalLB address on the platform's Docker
    network, reached from the kind node."""
    _, _, hint = management_access(management)
    service = f"{hint} -n {tenant.namespace} get service {tenant.name}"
    if not management.is_kind:
        hosts = _listed([host.address for host in tenant.hosts])
        return (f"The tenant API admits only the tenant's hosts ({hosts})"
                f" and management.apiClientCidrs ({_listed(management.api_client_cidrs)}), as its pods see a"
                " client: Pulumi's host must reach it from one of them (through a LoadBalancer or NodePort"
                " the pods see a management node's address, so apiClientCidrs must hold the management"
                f" nodes' network). Check the address: {service}")
    if tenant.own_network:
        door_name = door.container_name(tenant, management)
        return (f"The kind node reaches the tenant API at its Service's cluster address; its workers and"
                f" this host through its door {door_name} on {management.docker_network}-{tenant.name}."
                f" Check the Service: {service}; the door: docker logs {door_name}")
    return (f"The tenant API is a MetalLB address (pool {management.pool_range}) on the platform's Docker"
            f" network {management.docker_network} ({management.docker_subnet}), reached from the kind node"
            f" {control_plane_container(management)}. Check the address: {service};"
            f" MetalLB: {hint} -n {METALLB_NAMESPACE} logs deploy/metallb-controller")


def tenant_admin_access_script(tenant: TenantConfig, management: ManagementConfig,
                               bound: int = ADMIN_ACCESS_BOUND_SECONDS,
                               interval: int = ADMIN_ACCESS_INTERVAL_SECONDS,
                               call_timeout: int = CALL_TIMEOUT_SECONDS) -> str:
    """Wait until the tenant's admin kubeconfig (in ${TENANT_KUBECONFIG}) may do everything: tries
    `interval` seconds apart until `bound` seconds have passed, each cut off after `call_timeout`."""
    preamble, kubectl = tenant_access(tenant, management, call_timeout)
    _, _, hint = management_access(management)
    check = (f"{hint} -n {tenant.namespace} describe tcp {tenant.name};"
             f" {hint} -n {KAMAJI_NAMESPACE} logs deploy/kamaji")
    # The hint is a command line for the user, shown inside the message's double quotes.
    return render_script(
        _PACKAGE, "admin_access_wait.sh", access=preamble, kubectl=kubectl, tenant=Text(tenant.name),
        interval=interval, bound=bound, call_timeout=call_timeout, timed_out=TIMED_OUT,
        try_bound=Text(f"kubectl's --request-timeout={REQUEST_TIMEOUT}, the whole call {call_timeout}s"),
        check=Shell(check), network=Text(network_hint(tenant, management)))
