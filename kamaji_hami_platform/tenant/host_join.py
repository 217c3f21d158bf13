"""Worker hosts: machines reached over SSH, joined to a tenant with `kubeadm join`.

Per host, three local Commands: `<host>-leave` (its delete drains the node and resets the host:
tenant/host_leave.py), `<host>-join` and `<host>-ready`. The join runs here, as the tenant's admin:
it mints a bootstrap token that lives minutes and sends the host only the API endpoint, the token
(on stdin) and the CA, never a kubeconfig; while the host joins, it approves the token's
certificate requests for this host's kubelet, and nothing else (the token's group has no
auto-approval: tenant/host_join_access.py); the token is deleted after the join, also when it fails
or the script is signalled (a script killed outright leaves it to its 10-minute expiry).
The host keeps nothing of the session (traps on EXIT, HUP, INT, TERM, PIPE), and marks itself as
this stack's node of the tenant: a join or a leave touches no host another stack or cluster owns.

Upstream: kubernetes v1.35 cmd/kubeadm/app/util/pubkeypin/pubkeypin.go (the CA pin),
staging/src/k8s.io/cluster-bootstrap/token/api/types.go (a bootstrap token Secret).
Rationale: docs/design/worker-hosts.md.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from kamaji_hami_platform import cgroup_v1, resource_inputs
from kamaji_hami_platform.config import HostConfig, TenantConfig
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.tenant import host_join_access, host_ssh, node_admission, node_join

KUBECONFIG_ENV = node_join.KUBECONFIG_ENV
_PACKAGE = "kamaji_hami_platform.tenant"
# The tenant CA's pin for `kubeadm join` (tenant/ca_pin.py), in the join's and leave's environment.
CA_HASH_ENV = "KHP_CA_HASH"
# The id of the host's current join, in its Ready wait's environment: a new join (the host joined
# again: a new Node) updates the wait and, through it, the GPU registration (resource_inputs.py).
JOIN_ID_ENV = resource_inputs.WORKER_JOIN_ID_ENV
REDACT_SED = node_join.REDACT_SED
# A bootstrap token lives this long (its Secret's `expiration`), enough for one join.
BOOTSTRAP_TOKEN_MINUTES = 10
# How far the Pulumi host's clock, which sets the token's expiration, may be from the tenant API
# server's, which judges it (issue 38): the join refuses to go on beyond.
CLOCK_SKEW_SECONDS = 60
# The group of a host's token: bound to what the join needs, never to auto-approval; the join
# approves the kubelet's certificate request itself (tenant/host_join_access.py).
BOOTSTRAP_TOKEN_GROUP = host_join_access.JOIN_GROUP
# The signer of a kubelet's client certificate (kubernetes v1.35.4 staging/src/k8s.io/api/
# certificates/v1/types.go KubeAPIServerClientKubeletSignerName), and how often the join looks
# for the request while the host joins.
KUBELET_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
CSR_POLL_SECONDS = 1
READY_WAIT = node_join.NODE_READY_WAIT
API_REQUEST_TIMEOUT = node_join.API_REQUEST_TIMEOUT
API_CALL_TIMEOUT_SECONDS = node_join.API_CALL_TIMEOUT_SECONDS
# The whole join on the host: the prerequisites, kubeadm join (its discovery waits for the
# cluster-info signature of a new token), the kubelet's start.
JOIN_TIMEOUT_SECONDS = 600
# The local Command's create: bash reads the join script on its stdin, so a failure's message
# (pulumi-command prints the command it ran) is this line and the reason, not the script.
RUN_STDIN_SCRIPT = "exec /bin/bash -s"

# Paths on the host. Module constants, so the ssh test tier runs the scripts unchanged against
# a sandbox (bind mounts in a mount namespace; a path the sandbox cannot bind over is set there).
KUBELET_CONFIG = node_join.JOINED_KUBELET_CONFIG
NODE_CA_CERT = node_join.NODE_CA_CERT
# kindnetd writes its CNI config here (kind v0.31.0 images/kindnetd/cmd/kindnetd/cni.go); `kubeadm
# reset` leaves CNI configs alone ("does not perform cleanup of CNI plugin configuration").
KINDNET_CNI_CONFIG = "/etc/cni/net.d/10-kindnet.conflist"
# Written after a join, removed by every reset: whose node the host is (Ownership.marker), the node
# it joined as, and the CA pin of the control plane it joined.
JOIN_MARKER = "/etc/kubernetes/kamaji-hami-platform-tenant"
# How every Ownership.marker begins: a host whose marker begins so, and is not this stack's
# tenant's, belongs to another stack or tenant, whatever its CA.
STACK_MARKER_PREFIX = "kamaji-hami-platform stack="
CNI_BIN_DIR = "/opt/cni/bin"
# What kubeadm join writes once past its preflight checks, with the CA (kubernetes v1.35
# cmd/kubeadm/app/constants/constants.go KubeletBootstrapKubeConfigFileName): a failed join that
# wrote neither changed nothing, so it resets nothing.
BOOTSTRAP_KUBELET_CONFIG = "/etc/kubernetes/bootstrap-kubelet.conf"
# A kubelet set up on the host (constants.go KubeletRunDirectory, KubeletConfigurationFileName)
# or listening (KubeletPort) without kubeadm's kubelet.conf: another installer's node.
KUBELET_NODE_CONFIG = "/var/lib/kubelet/config.yaml"
KUBELET_PORT = 10250
# The runtime's CRI socket for nodeRegistration.criSocket (constants_unix.go CRISocketContainerd,
# CRISocketCRIO): kubeadm refuses to guess on a host with two.
CRI_SOCKETS = {"containerd": "unix:///var/run/containerd/containerd.sock",
               "crio": "unix:///var/run/crio/crio.sock"}
# The plugins kindnet's config chains (ptp, host-local IPAM, portmap) plus loopback, which the
# container runtime sets up in every pod: what kindest/node ships (tenant/addons.py).
CNI_PLUGINS = ("host-local", "loopback", "ptp", "portmap")
PROC_MODULES = "/proc/modules"
# A kernel with a module built in lists it here, not in /proc/modules ($(uname -r) at run time).
MODULES_BUILTIN = "/lib/modules/$(uname -r)/modules.builtin"
# overlay: containerd's default snapshotter; br_netfilter: bridged pod traffic through iptables
# (kube-proxy's Services). kubeadm v1.35 checks neither, so a missing one fails only later.
KERNEL_MODULES = ("overlay", "br_netfilter")
# What each module makes, there when it is loaded or built in: a kernel built with them and without
# module support (CONFIG_MODULES=n: no /proc/modules; a kernel booted from outside the disk: no
# modules.builtin) is known by these (a module with parameters, as overlay has, is in /sys/module
# also when built in; br_netfilter registers net.bridge.bridge-nf-call-iptables in every network
# namespace: linux v6.x net/bridge/br_netfilter_hooks.c br_netfilter_sysctl_init_net).
KERNEL_MODULE_MARKS = {"overlay": "/sys/module/overlay",
                       "br_netfilter": "/proc/sys/net/bridge/bridge-nf-call-iptables"}
# kubeadm's join preflight FileContent--proc-sys-net-ipv4-ip_forward (an error unless it is 1).
IP_FORWARD = "/proc/sys/net/ipv4/ip_forward"
PROC_SWAPS = "/proc/swaps"
# cgroup v2 is mounted here as `cgroup2fs` (stat -f); the kubelet refuses cgroup v1 since v1.35.
CGROUP_ROOT = "/sys/fs/cgroup"
# What the kubelet and kube-proxy run on a node (iptables rules, addresses, namespaces).
HOST_TOOLS = ("iptables", "ip", "nsenter")
# How long a connection to the tenant's API and Konnectivity may take to open.
CONNECT_TIMEOUT_SECONDS = 5
CONTAINER_RUNTIMES = ("containerd", "crio")
SYSTEMD_CGROUP = "^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*true"
# containerd's CRI plugin in `config dump`'s `disabled_plugins`: 1.7 keeps a version-1 file's short
# `cri`, 2.x writes the full id, and splits CRI into `io.containerd.cri.v1.runtime` and `.images`
# (containerd v1.7.34 services/server/config/config.go, v2.3.4 cmd/containerd/server/config/config.go
# v1MigratePluginName).
CRI_PLUGIN = "[\"'](cri|io\\.containerd\\.grpc\\.v1\\.cri|io\\.containerd\\.cri\\.v1\\.(runtime|images))[\"']"
# A non-login SSH session (and sudo's secure_path on some distributions) may lack the sbin and
# /usr/local directories kubeadm, kubelet and systemctl live in; appended, so an earlier entry wins.
HOST_PATH_EXTRA = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# kubeadm reads JoinConfiguration v1beta4 from v1.31 on; v1beta3 before (both have the fields used).
KUBEADM_V1BETA4_MINOR = 31
# The kubelet may be up to three minors older than the API server, never newer
# (https://kubernetes.io/releases/version-skew-policy/#kubelet).
KUBELET_SKEW_MINORS = 3
_KUBELET_VERSION = re.compile(r"\(kubelet v1\.([0-9]+)\.[0-9]+")
# The last line of a join's output: the id of the host's join, from its marker (new at each join).
_JOIN_ID = re.compile(r"^join: (\S+)$", re.M)


@dataclass(frozen=True)
class Ownership:
    """Whose node a joined host is: a tenant of one stack (project/stack) and management cluster.
    Two stacks may each have a tenant of the same name; their markers differ."""

    project: str
    stack: str
    management: str

    def marker(self, tenant: TenantConfig) -> str:
        """The first line of JOIN_MARKER on a host this stack joined to `tenant`."""
        return (f"{STACK_MARKER_PREFIX}{self.project}/{self.stack} management={self.management} "
                f"tenant={tenant.name}")


def legacy_marker(tenant: TenantConfig) -> str:
    """JOIN_MARKER as the platform's 0.1.0 wrote it: the tenant's name only."""
    return f"kamaji-hami-platform tenant {tenant.name}"


def tenant_minor(tenant: TenantConfig) -> int:
    return tenant.kubernetes_minor


def worker_script(tenant: TenantConfig, host: HostConfig) -> str:
    """The create of `<host>-leave`: nothing to do but say what the host is (one line, without
    the final newline, as every stack has it stored)."""
    return render_script(_PACKAGE, "host_worker.sh", host=Text(host.name), address=Text(host.address),
                         tenant=Text(tenant.name)).removesuffix("\n")


def prerequisites_script(tenant: TenantConfig, host: HostConfig, cgroup_v1_allowed: bool = False) -> Shell:
    """POSIX sh: check everything a join needs and fail with the full list of what is missing,
    each with its fix, before anything on the host changes. Sets $kubeadm_minor and $runtime.
    The API endpoint and Konnectivity's are the script's $endpoint and $konnectivity. A cgroup v1
    host is refused unless `cgroup_v1_allowed` (management.failCgroupV1: false, cgroup_v1.py).

    Version skew: https://kubernetes.io/releases/version-skew-policy/; kubeadm v1.35.4
    constants.MinimumKubeletVersion, preflight KubeletVersionCheck (docs/design/worker-hosts.md).
    """
    minor = tenant_minor(tenant)
    gpu = _gpu_prerequisites(tenant) if tenant.gpus is not None and not tenant.gpus.mock else Shell("")
    return Shell(render_script(
        _PACKAGE, "host_prerequisites.sh", kubeadm_wanted=Text(f"v1.{minor} or v1.{minor + 1}"),
        kubeadm_min=minor, kubeadm_max=minor + 1, version=Text(tenant.kubernetes_version),
        kubelet_min=minor - 3, kubelet_max=minor, minor=minor,
        container_runtimes=Text(" ".join(CONTAINER_RUNTIMES)), systemd_cgroup=SYSTEMD_CGROUP,
        kernel_modules=Text(" ".join(KERNEL_MODULES)), proc_modules=PROC_MODULES,
        module_active_cases=_module_active_cases(), clock_skew_seconds=CLOCK_SKEW_SECONDS,
        session_seconds=host_ssh.SSH_CONNECT_TIMEOUT_SECONDS * host_ssh.SSH_CONNECTION_ATTEMPTS,
        modules_builtin=Shell(MODULES_BUILTIN), ip_forward=IP_FORWARD,
        cni_plugins=Text(" ".join(CNI_PLUGINS)), cni_bin_dir=CNI_BIN_DIR, proc_swaps=PROC_SWAPS,
        gpu_prerequisites=gpu, host=Text(host.name), tenant=Text(tenant.name), cri_plugin=CRI_PLUGIN,
        cgroup_v2_check=_cgroup_v2_check(cgroup_v1_allowed), host_tools=Text(" ".join(HOST_TOOLS)),
        reach_function=reach_function(), kubelet_config=KUBELET_CONFIG,
        kubelet_node_config=KUBELET_NODE_CONFIG, kubelet_port=KUBELET_PORT))


def _module_active_cases() -> Shell:
    """`case` arms that `continue` when what a module makes is there (KERNEL_MODULE_MARKS)."""
    return Shell("\n".join(f"    {module}) [ -e {shlex.quote(KERNEL_MODULE_MARKS[module])} ] && continue ;;"
                           for module in KERNEL_MODULES) + "\n")


def _cgroup_v2_check(cgroup_v1_allowed: bool) -> Shell:
    """The check that refuses a cgroup v1 host, unless the platform lets kubelets start there."""
    if cgroup_v1_allowed:
        return Shell("")
    return Shell(render_script(_PACKAGE, "host_cgroup_v2_check.sh", cgroup_root=CGROUP_ROOT))


def _ignore_system_verification(cgroup_v1_allowed: bool) -> Shell:
    """JoinConfiguration lines (under nodeRegistration) that skip the preflight check refusing cgroup
    v1, when the platform lets kubelets start there (v1beta3 and v1beta4 both have the field)."""
    if not cgroup_v1_allowed:
        return Shell("")
    return Shell(f"  ignorePreflightErrors:\n  - {cgroup_v1.SYSTEM_VERIFICATION}\n")


def reach_function() -> Shell:
    """POSIX sh `reach HOST PORT`: whether a TCP connection opens within the connect timeout (2:
    neither bash nor nc is on the host to tell)."""
    return Shell(render_script(_PACKAGE, "host_reach_function.sh", connect_timeout=CONNECT_TIMEOUT_SECONDS))


def _gpu_prerequisites(tenant: TenantConfig) -> Shell:
    """Real GPUs: HAMi's NVIDIA device plugin needs the driver, the NVIDIA container toolkit and
    NVIDIA as the runtime's default (HAMi v2.10.0 README "Prerequisites": "NVIDIA configured as
    the default runtime for containerd, Docker, or CRI-O"; the chart's runtimeClassName is empty,
    so GPU pods run with the default runtime)."""
    assert tenant.gpus is not None
    return Shell(render_script(
        _PACKAGE, "host_gpu_prerequisites.sh", per_worker=tenant.gpus.per_worker,
        model=Text(tenant.gpus.model.name), product=_nvidia_smi_name(tenant.gpus.model.product),
        product_text=Text(tenant.gpus.model.product),
        containerd_default_runtime=_toml_setting("default_runtime_name", "nvidia"),
        crio_default_runtime=_toml_setting("default_runtime", "nvidia")))


def _toml_setting(key: str, value: str) -> str:
    """An extended regular expression of the TOML line `key = "value"` or `key = 'value'` (any
    indentation): containerd 2.x prints its config with literal strings ('nvidia'), 1.x and CRI-O
    with basic ones ("nvidia")."""
    return f"^[[:space:]]*{key}[[:space:]]*=[[:space:]]*[\"']{value}[\"']"


def _nvidia_smi_name(product: str) -> str:
    """What `nvidia-smi --query-gpu=name` must contain for a card of `product`: the product string
    without the vendor, since older drivers print `A100-SXM4-80GB` where newer ones print
    `NVIDIA A100-SXM4-80GB` (NVIDIA/CUDALibrarySamples#104); matched case-insensitively."""
    return product.removeprefix("NVIDIA ").strip()


def _reset_function() -> Shell:
    """POSIX sh `reset_host`: what `kubeadm join` left (kubeadm reset -f), and kindnet's CNI
    config, which kubeadm reset leaves and which would point a new node at the old pod network."""
    return Shell(render_script(_PACKAGE, "host_reset_function.sh", kindnet_cni_config=KINDNET_CNI_CONFIG,
                               join_marker=JOIN_MARKER))


def remote_join_script(tenant: TenantConfig, host: HostConfig, owner: Ownership,
                       cgroup_v1_allowed: bool = False) -> str:
    """POSIX sh on the host (root, or through sudo): unless it is already this stack's node of the
    tenant, check the prerequisites and join with the token on stdin ($1.. the CA pin, the CA,
    the API and Konnectivity endpoints, whether the tenant has the Node).

    Safe to run twice. A host this stack joined to the tenant (its marker, or this control plane's
    CA) that is joined to a replaced control plane, as another node, or whose Node the tenant lost,
    is reset and joins again; any other joined host is refused untouched. A failed join resets the
    host, so the next `pulumi up` starts clean.
    """
    return render_script(
        _PACKAGE, "host_join_remote.sh", path_extra=Text(HOST_PATH_EXTRA), redact=Shell(REDACT_SED),
        marker=owner.marker(tenant),
        stack_marker_prefix=STACK_MARKER_PREFIX, address=host.address,
        bootstrap_kubelet_config=BOOTSTRAP_KUBELET_CONFIG, containerd_socket=CRI_SOCKETS["containerd"],
        crio_socket=CRI_SOCKETS["crio"], kubelet_config=KUBELET_CONFIG,
        node_ca_cert=NODE_CA_CERT, join_marker=JOIN_MARKER, tenant=Text(tenant.name),
        prerequisites=prerequisites_script(tenant, host, cgroup_v1_allowed), reset_function=_reset_function(),
        v1beta4_minor=KUBEADM_V1BETA4_MINOR,
        ignore_system_verification=_ignore_system_verification(cgroup_v1_allowed))


def tenant_kubectl() -> Shell:
    """bash: a private temporary directory with the tenant kubeconfig from the environment, and
    `k`: kubectl against the tenant, each request and each call bounded: a tenant API that is gone
    must not hold a join or leave for the kernel's connect retries."""
    return Shell(render_script(_PACKAGE, "host_tenant_kubectl.bash", kubeconfig_env=Text(KUBECONFIG_ENV),
                               redact=Shell(REDACT_SED), call_timeout=API_CALL_TIMEOUT_SECONDS,
                               request_timeout=Text(API_REQUEST_TIMEOUT)))


def join_script(tenant: TenantConfig, host: HostConfig, owner: Ownership, konnectivity_port: int,
                cgroup_v1_allowed: bool = False) -> str:
    """bash on the Pulumi host, the stdin of `<host>-join` (its create: RUN_STDIN_SCRIPT): as the
    tenant's admin ($TENANT_KUBECONFIG), mint a bootstrap token, join the host over SSH with it
    while approving its kubelet's certificate request (csr_approval), delete the token (on
    every exit); a failure says first why. The CA pin is $KHP_CA_HASH."""
    return render_script(
        _PACKAGE, "host_join.bash", tenant_kubectl=tenant_kubectl(), node=host.name,
        ca_hash_env=Text(CA_HASH_ENV), konnectivity_port=konnectivity_port,
        token_minutes=BOOTSTRAP_TOKEN_MINUTES, clock_skew_seconds=CLOCK_SKEW_SECONDS,
        bootstrap_group=Text(BOOTSTRAP_TOKEN_GROUP),
        ssh_dir_env=Text(host_ssh.SSH_DIR_ENV), key_files=Shell(host_ssh.key_files(host)),
        # The remote command in a quoted heredoc: its line, then the heredoc's end.
        remote=Shell(host_ssh.remote_command(
            host, remote_join_script(tenant, host, owner, cgroup_v1_allowed)) + "\n"),
        join_timeout=JOIN_TIMEOUT_SECONDS, ssh=Shell(" ".join(host_ssh.ssh_words(host))),
        csr_approval=csr_approval(), kubelet_signer=Text(KUBELET_SIGNER),
        nodes_group=Text(node_admission.NODES_GROUP), csr_poll_seconds=CSR_POLL_SECONDS,
        ssh_failed=host_ssh.SSH_FAILED, timed_out=host_ssh.TIMED_OUT, where=Text(host_ssh.where(host)))


def csr_approval() -> Shell:
    """bash, after `tenant_kubectl` with $token_id and $node set: `judge_csrs` approves the token
    user's certificate requests for this node's kubelet and denies any other identity."""
    return Shell(render_script(_PACKAGE, "host_csr_approval.bash", kubelet_signer=Text(KUBELET_SIGNER),
                               nodes_group=Text(node_admission.NODES_GROUP)))


def ready_script(tenant: TenantConfig, host: HostConfig) -> str:
    """bash on the Pulumi host, `<host>-ready`: wait until the joined node is Ready (CNI up,
    kubelet posting), bounded, or fail with its conditions; print its kubelet's version, which a
    later preview holds to the version-skew policy (kubelet_skew_problem). The node stays: its
    kubelet would register it again anyway; the host needs a look (journalctl -u kubelet)."""
    attempts, interval = READY_WAIT
    return render_script(_PACKAGE, "host_ready.bash", tenant_kubectl=tenant_kubectl(), node=host.name,
                         bound=attempts * interval, interval=interval, tenant=tenant.name)


def join_id(join_output: str) -> str:
    """The id of the host's current join, as `<host>-join` printed it ("" when it printed none):
    the same while the host stays joined, new when it joined again (its Node is a new object)."""
    found = _JOIN_ID.findall(join_output or "")
    return found[-1] if found else ""


def kubelet_skew_problem(tenant: TenantConfig, host: HostConfig, ready_output: str) -> str | None:
    """Why the host's kubelet (as `<host>-ready` reported it) cannot serve the tenant's version,
    or None: within the skew policy, or not reported yet (a host joining now is checked by its
    prerequisites)."""
    found = _KUBELET_VERSION.search(ready_output or "")
    if found is None:
        return None
    kubelet, control_plane = int(found.group(1)), tenant_minor(tenant)
    if kubelet > control_plane:
        why = "newer than its control plane"
    elif control_plane - kubelet > KUBELET_SKEW_MINORS:
        why = f"more than {KUBELET_SKEW_MINORS} minors older than its control plane"
    else:
        return None
    return (f"host {host.name} runs kubelet v1.{kubelet}, {why} at {tenant.kubernetes_version} "
            "(https://kubernetes.io/releases/version-skew-policy/): upgrade the tenant one step at a "
            "time, and the host's kubeadm and kubelet between the steps (drain, upgrade, join again: "
            "docs/operations/upgrades.md)")
