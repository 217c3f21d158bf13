"""Worker nodes: kindest/node containers joined to a tenant with `kubeadm join`.

The scripts are pure functions of config. Secrets never appear in them: the
tenant admin kubeconfig arrives in the environment variable `TENANT_KUBECONFIG`
(a Pulumi secret), is streamed into the container over stdin (never a host
file), used there to mint a bootstrap token that expires in minutes, and
removed when the script ends. Anything printed on failure passes through a
filter that redacts bootstrap tokens and CA hashes.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass

from kamaji_hami_platform import docker_calls, network, versions
from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.docker_calls import bounded_docker
from kamaji_hami_platform.management import docker_host
from kamaji_hami_platform.mirror import mirrored
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.tenant import own_network

KUBECONFIG_ENV = "TENANT_KUBECONFIG"
_PACKAGE = "kamaji_hami_platform.tenant"
# `KHP_SKIP_DRAIN=1` in the environment of `pulumi destroy`/`up`: remove workers without
# draining them first (`make down` sets it: the whole tenant goes, nothing is left to move to).
SKIP_DRAIN_ENV = "KHP_SKIP_DRAIN"
BOOTSTRAP_TOKEN_TTL = "10m"
# A joined node must be Ready before the next worker is replaced (attempts, seconds apart).
NODE_READY_WAIT = (120, 2)
DRAIN_TIMEOUT = "120s"
# kubectl sets no request timeout of its own: a tenant API whose address no longer answers (its
# control plane went with a lost kind cluster) would hold each worker's delete for the length of
# the kernel's connect retries, once per discovery attempt. Each request is bounded, and each
# call as a whole (coreutils `timeout`, in the node image).
API_REQUEST_TIMEOUT = "30s"
API_CALL_TIMEOUT_SECONDS = 90
# Exit codes of the node removal inside the container.
REMOVED, DRAIN_FAILED, API_UNREACHABLE = 0, 2, 3
# Kamaji's own e2e joins kindest/node containers with these (clastix/kamaji 26.8.2-edge
# e2e/worker_kubeadm_join_test.go), plus Swap: the platform never turns the host's swap off.
IGNORED_PREFLIGHT_ERRORS = "SystemVerification,FileExisting,Swap"
CONTAINER_KUBECONFIG = "/etc/kubernetes/tenant-admin.conf"
# What `kubeadm join` leaves on a node: its kubelet credentials and the cluster CA.
JOINED_KUBELET_CONFIG = "/etc/kubernetes/kubelet.conf"
NODE_CA_CERT = "/etc/kubernetes/pki/ca.crt"
PLATFORM_LABEL = "io.kamaji-hami-platform/cluster"
TENANT_LABEL = "io.kamaji-hami-platform/tenant"
# Bootstrap tokens look like abcdef.0123456789abcdef; discovery hashes like sha256:<64 hex>.
REDACT_SED = (r"sed -E 's/[a-z0-9]{6}\.[a-z0-9]{16}/<redacted-token>/g; "
              r"s/sha256:[a-f0-9]{64}/sha256:<redacted>/g'")


@dataclass(frozen=True)
class Worker:
    """One worker node of a tenant: container name = hostname = node name."""

    tenant: TenantConfig
    index: int
    management: ManagementConfig
    mirror: str | None = None  # images.mirror: the node image comes from it

    @property
    def name(self) -> str:
        return self.tenant.worker_names()[self.index]

    @property
    def image(self) -> str:
        return mirrored(versions.kind_node_image(self.tenant.kubernetes_version), self.mirror)

    @property
    def network(self) -> str:
        """The Docker network it is on: the tenant's own, or the platform's shared one."""
        if self.tenant.own_network:
            return own_network.network_name(self.tenant, self.management)
        return self.management.docker_network

    @property
    def subnet(self) -> str:
        if self.tenant.own_network:
            return str(own_network.tenant_network(self.tenant, self.management).subnet)
        return self.management.docker_subnet

    @property
    def address(self) -> str:
        """Its fixed address on that network: what its control plane admits."""
        if self.tenant.own_network:
            return own_network.tenant_network(self.tenant, self.management).worker_address(self.index)
        return network.layout(self.management.docker_subnet).worker_address(
            self.tenant.address_block, self.index)


def docker_run_args(worker: Worker) -> list[str]:
    """The container specification: the flags kind starts every node with (kind v0.31.0
    provision.go `commonArgs`, `runArgsForNode`), its fixed address, our labels, the image.
    What kind adds only on some hosts comes at create time (management/docker_host.py)."""
    return [
        "-d", "--name", worker.name, "--hostname", worker.name,
        "--network", worker.network, "--ip", worker.address,
        "--privileged", "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
        "--tty", "--init=false", "--cgroupns=private",
        "--tmpfs", "/tmp", "--tmpfs", "/run", "--volume", "/var", "--volume", "/lib/modules:/lib/modules:ro",
        "--label", f"{PLATFORM_LABEL}={worker.management.name}",
        "--label", f"{TENANT_LABEL}={worker.tenant.name}",
        "--restart", "on-failure:1", worker.image,
    ]


def container_spec_hash(worker: Worker, environment: str = "") -> str:
    """Changes exactly when the container would be started differently (its flags, what it
    would get from the environment of `up`: `docker_host.environment_digest`): a worker
    trigger, so a changed specification replaces running workers (create alone is a no-op for
    a joined one). The host's own flags are a trigger of their own (the host check's output)."""
    spec = [*docker_run_args(worker), *([environment] if environment else [])]
    return hashlib.sha256("\0".join(spec).encode()).hexdigest()[:16]


def image_pull_script(image: str) -> str:
    """Make the image available before any worker is replaced: a pull that fails (a version
    without an image) fails before an old worker is deleted. A present image is not pulled
    again (an air-gapped host that mirrored it keeps working)."""
    return render_script(_PACKAGE, "worker_image.sh", image=image, image_text=Text(image),
                         bounded_docker=bounded_docker())


# What a join reads, from the four steps Kamaji starts at once for a tenant (clastix/kamaji
# 26.8.2-edge controllers/soot/manager.go, internal/resources/kubeadm_phases.go): the kubeadm
# and kubelet configuration uploads (kubeadm phases/uploadconfig, Kamaji internal/kubeadm/
# uploadconfig.go: each a ConfigMap, then its RoleBinding) and the bootstrap-token phase
# (internal/kubeadm/bootstraptoken.go: its ClusterRoleBindings, then cluster-info and its
# RoleBinding last). The fourth, the admin binding, is what `<tenant>-admin-access` waits for.
KAMAJI_JOIN_SETUP = {
    "kube-system": ("configmap/kubeadm-config", "rolebinding/kubeadm:nodes-kubeadm-config",
                    "configmap/kubelet-config", "rolebinding/kubeadm:kubelet-config"),
    "kube-public": ("configmap/cluster-info", "rolebinding/kubeadm:bootstrap-signer-clusterinfo"),
    "": ("clusterrolebinding/kubeadm:get-nodes", "clusterrolebinding/kubeadm:kubelet-bootstrap",
         "clusterrolebinding/kubeadm:node-autoapprove-bootstrap",
         "clusterrolebinding/kubeadm:node-autoapprove-certificate-rotation"),
}
KAMAJI_SETUP_WAIT = (60, 2)


def _kamaji_setup_gets(kc: str) -> Shell:
    """The kubectl calls that succeed once everything a join reads exists (success is the exit
    status: kubectl writes warnings to stderr on success too)."""
    return Shell(" && ".join(
        f"kubectl --kubeconfig {kc}{f' -n {namespace}' if namespace else ''} get {' '.join(objects)} -o name"
        for namespace, objects in KAMAJI_JOIN_SETUP.items()))


def _inner_join_script(node: str, kubeconfig: str = CONTAINER_KUBECONFIG) -> str:
    """Runs inside the container: wait until Kamaji has set the tenant up for joins (or fail naming
    what is missing), mint a short-lived token, join, delete the token, then wait until the node
    is Ready (CNI up, kubelet posting), so a rolling replacement never takes the next node away
    while this one cannot run pods; a node that does not get Ready is deleted from the tenant
    again (its container is removed by the caller).

    Only the token command's stdout is the join command: a warning kubeadm
    prints on stderr must never become part of the command that runs next.
    """
    setup_attempts, setup_interval = KAMAJI_SETUP_WAIT
    ready_attempts, ready_interval = NODE_READY_WAIT
    return render_script(
        _PACKAGE, "worker_join.bash", kubeconfig=Text(kubeconfig), errors=Text(f"{kubeconfig}.err"),
        setup_attempts=setup_attempts, setup_interval=setup_interval,
        setup_gets=_kamaji_setup_gets(kubeconfig), setup_bound=setup_attempts * setup_interval,
        token_ttl=Text(BOOTSTRAP_TOKEN_TTL), node=Text(node),
        ignored_preflight_errors=Text(IGNORED_PREFLIGHT_ERRORS), ready_attempts=ready_attempts,
        ready_interval=ready_interval, ready_bound=ready_attempts * ready_interval)


def container_lookup(cluster: str, what: str = "worker") -> Shell:
    """Shell that defines `lookup`, which sets $owner, $running ("absent", "true" or "false") and
    $foreign (non-empty: another cluster's) for container $name, the `what` of a message. Only
    Docker's "No such container" means absent; any other failure stops the script (`docker
    container inspect`: a plain inspect also matches images, volumes, networks)."""
    return Shell(render_script(_PACKAGE, "container_lookup.sh", cluster_label=Text(PLATFORM_LABEL),
                               cluster=cluster, what=Text(what)))


def no_proxy_extra(worker: Worker) -> list[str]:
    """What a worker must reach without a proxy, as kind adds for its nodes (its networks, its
    node names, the in-cluster DNS suffixes): the tenant's pod and service CIDRs, its Docker
    network (API endpoint, other nodes), the tenant's worker names."""
    return [worker.tenant.service_cidr, worker.tenant.pod_cidr, worker.subnet,
            *worker.tenant.worker_names(), ".svc", ".svc.cluster", ".svc.cluster.local"]


def create_script(worker: Worker) -> str:
    """Start the container (if absent, or started if stopped) and join it (if not joined to this
    tenant's control plane). Safe to run twice.

    The `docker run` flags are kind's own for its nodes (provision.go `commonArgs`,
    `runArgsForNode`), including what kind adds on some hosts ($KHP_HOST_FLAGS from the
    management cluster's host check, proxies by name: management/docker_host.py), plus the
    fixed address and our labels. A container joined to another control plane (its CA is not
    this tenant's: the TCP was recreated) is removed and created again, so no CNI config or
    iptables rule of the old cluster is left on it (`kubeadm reset` would leave them).
    """
    return render_script(
        _PACKAGE, "worker_create.bash", name=worker.name, bounded_docker=bounded_docker(),
        timed_out=docker_calls.TIMED_OUT,
        redact=Shell(REDACT_SED),
        lookup=container_lookup(worker.management.name),
        proxy_flags=docker_host.proxy_script(no_proxy_extra(worker)),
        run_args=Shell(" ".join(shlex.quote(arg) for arg in docker_run_args(worker)[:-1])),
        host_flags_env=Text(docker_host.HOST_FLAGS_ENV), image=worker.image,
        cluster=Text(worker.management.name), kubelet_config=JOINED_KUBELET_CONFIG,
        kubeconfig_env=Text(KUBECONFIG_ENV), node_ca_cert=NODE_CA_CERT,
        tenant=Text(worker.tenant.name), container_kubeconfig=Text(CONTAINER_KUBECONFIG),
        join=_inner_join_script(worker.name))


def _inner_delete_script(node: str, kubeconfig: str) -> str:
    """Runs inside the container: drain the node, then delete it from the tenant.

    Exit REMOVED when the node is gone (or never was in the tenant), DRAIN_FAILED when the
    drain fails (a PodDisruptionBudget, a pod that will not go),
    API_UNREACHABLE when the tenant API does not answer. `$1` is `drain`, `no-drain` or
    `drain-only` (the node drained and kept: REMOVED).
    `--force` deletes pods no controller recreates; `--delete-emptydir-data` drops their
    emptyDir volumes: both would go with the node anyway.
    """
    bounded = Shell(f"timeout {API_CALL_TIMEOUT_SECONDS} kubectl --kubeconfig {kubeconfig}"
                    f" --request-timeout={API_REQUEST_TIMEOUT}")
    return render_script(_PACKAGE, "worker_leave.bash", kubeconfig=Text(kubeconfig),
                         bounded_kubectl=bounded, node=Text(node), removed=REMOVED,
                         api_unreachable=API_UNREACHABLE,
                         drain_timeout=Text(DRAIN_TIMEOUT), drain_failed=DRAIN_FAILED)


# Nothing to do on create: the leave's delete drains the node when the worker is replaced or removed.
LEAVE_CREATE = "echo 'drained on replacement or removal'\n"


def drain_script(worker: Worker) -> str:
    """The delete of `<worker>-leave`: drain the node, and only that (its replacement or removal
    deletes it after). It runs before the worker and its GPU registration are replaced (their
    replacement cascade starts at the worker, the leave goes first as a replacement of its own), so
    a drain that fails stops there with the node uncordoned and still registered. Nothing to do
    when the container is gone, another stack's, or `KHP_SKIP_DRAIN=1`."""
    kubeconfig = "/tmp/tenant-admin.conf"
    return render_script(
        _PACKAGE, "worker_drain.bash", name=worker.name, bounded_docker=bounded_docker(),
        lookup=container_lookup(worker.management.name), skip_drain_env=Text(SKIP_DRAIN_ENV),
        api_unreachable=API_UNREACHABLE, kubeconfig_env=Text(KUBECONFIG_ENV), kubeconfig=Text(kubeconfig),
        leave=_inner_delete_script(worker.name, kubeconfig), removed=REMOVED, redact=Shell(REDACT_SED),
        drain_failed=DRAIN_FAILED, tenant=worker.tenant.name,
        timeout_env=Text(docker_calls.DOCKER_TIMEOUT_ENV))


def delete_script(worker: Worker) -> str:
    """Drain the node and delete it from the tenant, then remove the container.

    A drain that fails stops here: the node (uncordoned again) and its container stay, so a
    rolling replacement or a scale-down never throws pods away behind a PodDisruptionBudget.
    The node is uncordoned again after a failed drain. So does a `docker exec` that timed out or
    failed: whether the node drained is not known.
    `KHP_SKIP_DRAIN=1` skips the drain (`make down`: the whole platform goes). A tenant API
    that does not answer, or a node already gone, does not stop the container's removal.
    """
    kubeconfig = "/tmp/tenant-admin.conf"
    return render_script(
        _PACKAGE, "worker_delete.bash", name=worker.name, bounded_docker=bounded_docker(),
        lookup=container_lookup(worker.management.name),
        cluster=Text(worker.management.name), skip_drain_env=Text(SKIP_DRAIN_ENV),
        api_unreachable=API_UNREACHABLE,
        kubeconfig_env=Text(KUBECONFIG_ENV), kubeconfig=Text(kubeconfig),
        leave=_inner_delete_script(worker.name, kubeconfig), removed=REMOVED, redact=Shell(REDACT_SED),
        drain_failed=DRAIN_FAILED, tenant=worker.tenant.name,
        timeout_env=Text(docker_calls.DOCKER_TIMEOUT_ENV))
