"""Worker hosts: machines reached over SSH, joined to a tenant with `kubeadm join`.

The SSH counterpart of node_join's container workers, with its guarantees: the scripts are pure
functions of config and never carry a secret. Per host: `<host>-leave` (local; its delete drains
and resets the host, so a dead host warns instead of blocking `pulumi destroy`), `<host>-join`
(remote, no delete, no `environment`: the kubeconfig comes on stdin) and `<host>-ready` (local).

Upstream: pulumi-command v1.2.1 provider/pkg/provider/remote/commandOutputs.go (a failed SSH dial
fails a remote delete; `environment` is SSH `Setenv`).
Rationale: docs/design/worker-hosts.md.
"""

from __future__ import annotations

import shlex

from kamaji_hami_platform.config import HostConfig, SshEndpointConfig, TenantConfig
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.tenant import node_join

KUBECONFIG_ENV = node_join.KUBECONFIG_ENV
_PACKAGE = "kamaji_hami_platform.tenant"
SKIP_DRAIN_ENV = node_join.SKIP_DRAIN_ENV
# The private key (PEM) of the host's SSH user and, with a bastion, the bastion user's: in the
# environment of `<host>-leave` (secrets), written to 0600 files for the OpenSSH client.
HOST_SSH_KEY_ENV = "KHP_SSH_KEY"
BASTION_SSH_KEY_ENV = "KHP_BASTION_SSH_KEY"
# Where leave_script keeps the key files; exported, so the bastion's ProxyCommand (run by
# /bin/sh, not by the script) finds them too.
SSH_DIR_ENV = "KHP_SSH_DIR"
REDACT_SED = node_join.REDACT_SED
BOOTSTRAP_TOKEN_TTL = node_join.BOOTSTRAP_TOKEN_TTL
READY_WAIT = node_join.NODE_READY_WAIT
API_REQUEST_TIMEOUT = node_join.API_REQUEST_TIMEOUT
API_CALL_TIMEOUT_SECONDS = node_join.API_CALL_TIMEOUT_SECONDS
DRAIN_TIMEOUT_SECONDS = 120
# Minting the join token: retried while Kamaji sets up the bootstrap RBAC, each call bounded.
TOKEN_WAIT_SECONDS = 120
TOKEN_CALL_TIMEOUT_SECONDS = 30
# A node that does not answer: pods its drain evicted are gone after this long, whatever their
# state (kubectl drain --skip-wait-for-delete-timeout; a silent kubelet never confirms them).
SKIP_WAIT_FOR_DELETE_SECONDS = 30

# Paths on the host. Module constants, so the ssh test tier runs the scripts unchanged against
# a sandbox (bind mounts in a mount namespace; a path the sandbox cannot bind over is set there).
KUBELET_CONFIG = node_join.JOINED_KUBELET_CONFIG
NODE_CA_CERT = node_join.NODE_CA_CERT
# kindnetd writes its CNI config here (kind v0.31.0 images/kindnetd/cmd/kindnetd/cni.go); `kubeadm
# reset` leaves CNI configs alone ("does not perform cleanup of CNI plugin configuration").
KINDNET_CNI_CONFIG = "/etc/cni/net.d/10-kindnet.conflist"
# Written after a join, removed by every reset: which platform tenant the host is a node of. The
# join resets only a host that carries this tenant's marker, never a node of another cluster.
JOIN_MARKER = "/etc/kubernetes/kamaji-hami-platform-tenant"
CNI_BIN_DIR = "/opt/cni/bin"
# The plugins kindnet's config chains (ptp, host-local IPAM, portmap) plus loopback, which the
# container runtime sets up in every pod: what kindest/node ships (tenant/addons.py).
CNI_PLUGINS = ("host-local", "loopback", "ptp", "portmap")
PROC_MODULES = "/proc/modules"
# A kernel with a module built in lists it here, not in /proc/modules ($(uname -r) at run time).
MODULES_BUILTIN = "/lib/modules/$(uname -r)/modules.builtin"
# overlay: containerd's default snapshotter; br_netfilter: bridged pod traffic through iptables
# (kube-proxy's Services). kubeadm v1.35 checks neither, so a missing one fails only later.
KERNEL_MODULES = ("overlay", "br_netfilter")
# kubeadm's join preflight FileContent--proc-sys-net-ipv4-ip_forward (an error unless it is 1).
IP_FORWARD = "/proc/sys/net/ipv4/ip_forward"
PROC_SWAPS = "/proc/swaps"
CONTAINER_RUNTIMES = ("containerd", "crio")
SYSTEMD_CGROUP = "^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*true"
# A non-login SSH session (and sudo's secure_path on some distributions) may lack the sbin and
# /usr/local directories kubeadm, kubelet and systemctl live in; appended, so an earlier entry wins.
HOST_PATH_EXTRA = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# kubeadm reads JoinConfiguration v1beta4 from v1.31 on; v1beta3 before (both have the fields used).
KUBEADM_V1BETA4_MINOR = 31

# The OpenSSH client of leave_script: as pulumi-command dials (per-dial timeout 15 s), a few
# attempts, and the whole reset bounded (kubeadm reset stops the kubelet and removes containers).
SSH_CONNECT_TIMEOUT_SECONDS = 15
SSH_CONNECTION_ATTEMPTS = 2
HOST_RESET_TIMEOUT_SECONDS = 300
# Exit codes of the remote reset; OpenSSH's own 255 (cannot connect or authenticate) and
# coreutils timeout's 124 mean the host was not reached or did not finish.
HOST_RESET, HOST_RESET_FAILED, HOST_FOREIGN = 0, 3, 4
SSH_FAILED, TIMED_OUT = 255, 124


def _q(text: str) -> str:
    return shlex.quote(text)


def worker_script(tenant: TenantConfig, host: HostConfig) -> str:
    """The create of `<host>-leave`: nothing to do but say what the host is (one line, without
    the final newline, as every stack has it stored)."""
    return render_script(_PACKAGE, "host_worker.sh", host=Text(host.name), address=Text(host.address),
                         tenant=Text(tenant.name)).removesuffix("\n")


def marker_text(tenant: TenantConfig) -> str:
    """What JOIN_MARKER holds on a host joined to `tenant`."""
    return f"kamaji-hami-platform tenant {tenant.name}"


def tenant_minor(tenant: TenantConfig) -> int:
    return int(tenant.kubernetes_version.lstrip("v").split(".")[1])


def remote_command(host: HostConfig, script: str) -> str:
    """The command string sshd runs with the user's login shell (`$SHELL -c <command>`): the
    POSIX sh script as one quoted argument of /bin/sh, so bash, dash or zsh as login shell do not
    matter; through `sudo -n` (never a password prompt: fails at once) for a user other than
    root. Arguments after it become the script's $1...; stdin passes through sudo."""
    command = f"/bin/sh -c {_q(script)} {_q(host.name)}"
    return command if host.ssh.user == "root" else f"sudo -n {command}"


def join_command(tenant: TenantConfig, host: HostConfig) -> str:
    """The `create` of `<host>-join`: join_script on the host, the kubeconfig on its stdin."""
    return remote_command(host, join_script(tenant, host))


def prerequisites_script(tenant: TenantConfig, host: HostConfig) -> Shell:
    """POSIX sh: check everything a join needs and fail with the full list of what is missing,
    each with its fix, before anything on the host changes. Sets $kubeadm_minor and $runtime.
    Swap is only noted (the tenants' kubelets run with failSwapOn false).

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
        modules_builtin=Shell(MODULES_BUILTIN), ip_forward=IP_FORWARD,
        cni_plugins=Text(" ".join(CNI_PLUGINS)), cni_bin_dir=CNI_BIN_DIR, proc_swaps=PROC_SWAPS,
        gpu_prerequisites=gpu, host=Text(host.name), tenant=Text(tenant.name)))


def _gpu_prerequisites(tenant: TenantConfig) -> Shell:
    """Real GPUs: HAMi's NVIDIA device plugin needs the driver, the NVIDIA container toolkit and
    NVIDIA as the runtime's default (HAMi v2.10.0 README "Prerequisites": "NVIDIA configured as
    the default runtime for containerd, Docker, or CRI-O"; the chart's runtimeClassName is empty,
    so GPU pods run with the default runtime)."""
    assert tenant.gpus is not None
    return Shell(render_script(
        _PACKAGE, "host_gpu_prerequisites.sh", per_worker=tenant.gpus.per_worker,
        model=Text(tenant.gpus.model.name),
        containerd_default_runtime=_toml_setting("default_runtime_name", "nvidia"),
        crio_default_runtime=_toml_setting("default_runtime", "nvidia")))


def _toml_setting(key: str, value: str) -> str:
    """An extended regular expression of the TOML line `key = "value"` or `key = 'value'` (any
    indentation): containerd 2.x prints its config with literal strings ('nvidia'), 1.x and CRI-O
    with basic ones ("nvidia")."""
    return f"^[[:space:]]*{key}[[:space:]]*=[[:space:]]*[\"']{value}[\"']"


def _reset_function() -> Shell:
    """POSIX sh `reset_host`: what `kubeadm join` left (kubeadm reset -f), and kindnet's CNI
    config, which kubeadm reset leaves and which would point a new node at the old pod network."""
    return Shell(render_script(_PACKAGE, "host_reset_function.sh", kindnet_cni_config=KINDNET_CNI_CONFIG,
                               join_marker=JOIN_MARKER))


def join_script(tenant: TenantConfig, host: HostConfig) -> str:
    """POSIX sh on the host (root, or through sudo): check the prerequisites, join the tenant
    unless already joined to it, with a bootstrap token minted from the kubeconfig on stdin.

    Safe to run twice. A host joined to another control plane of this tenant (its CA is not the
    tenant's: the control plane was replaced) is reset first. A failed join resets the host, so
    the next `pulumi up` starts clean.
    """
    return render_script(
        _PACKAGE, "host_join.sh", path_extra=Text(HOST_PATH_EXTRA), host=Text(host.name),
        redact=Shell(REDACT_SED), kubelet_config=KUBELET_CONFIG, node_ca_cert=NODE_CA_CERT,
        tenant=Text(tenant.name), join_marker=JOIN_MARKER, marker=marker_text(tenant),
        prerequisites=prerequisites_script(tenant, host), reset_function=_reset_function(),
        token_wait=TOKEN_WAIT_SECONDS, token_call_timeout=TOKEN_CALL_TIMEOUT_SECONDS,
        token_ttl=Text(BOOTSTRAP_TOKEN_TTL), v1beta4_minor=KUBEADM_V1BETA4_MINOR)


def known_hosts_line(endpoint: SshEndpointConfig) -> str:
    """The pinned host key in known_hosts form: OpenSSH names a host on port 22 by its address
    alone and on any other port as `[address]:port`."""
    assert endpoint.host_key is not None
    name = endpoint.address if endpoint.port == 22 else f"[{endpoint.address}]:{endpoint.port}"
    return f"{name} {endpoint.host_key}"


def ssh_options(endpoint: SshEndpointConfig, role: str) -> list[str]:
    """OpenSSH client options (shell words) reaching `endpoint` as pulumi-command's remote
    Command does: only the given key, no agent, no ~/.ssh/config (-F none), never a prompt; its
    host key pinned when the config gives one (pulumi-command then uses ssh.FixedHostKey),
    otherwise not checked (pulumi-command: ssh.InsecureIgnoreHostKey). `role` names the key file
    ($KHP_SSH_DIR/<role>.key) and the pinned key's known_hosts file."""
    files = f"${SSH_DIR_ENV}/{role}"
    words = ["-F", "none", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT_SECONDS}",
             "-o", f"ConnectionAttempts={SSH_CONNECTION_ATTEMPTS}", "-o", "IdentitiesOnly=yes",
             "-o", "LogLevel=ERROR", "-i", f'"{files}.key"', "-p", str(endpoint.port)]
    if endpoint.host_key:
        words += ["-o", "StrictHostKeyChecking=yes", "-o", f'UserKnownHostsFile="{files}.known_hosts"']
    else:
        words += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
    return words


def _destination(endpoint: SshEndpointConfig) -> str:
    return f"{endpoint.user}@{endpoint.address}"


def ssh_words(host: HostConfig) -> list[str]:
    """The ssh command line (shell words, before the remote command) of leave_script. A bastion
    is crossed with a ProxyCommand: an ssh of its own, with the bastion's key and options, that
    forwards stdin/stdout to the host (-W). ssh runs the ProxyCommand with $SHELL, which the
    script sets to /bin/sh, where "$KHP_SSH_DIR/..." expands."""
    words = ["ssh", *ssh_options(host.ssh, "host")]
    if host.bastion is not None:
        proxy = " ".join(["ssh", *ssh_options(host.bastion, "bastion"), "-W", "%h:%p",
                          _q(_destination(host.bastion))])
        words += ["-o", _q(f"ProxyCommand={proxy}")]
    return [*words, _q(_destination(host.ssh))]


def manual_reset_command(host: HostConfig) -> str:
    """What an operator runs when the leave could not reach the host."""
    sudo = "" if host.ssh.user == "root" else "sudo "
    jump = ""
    if host.bastion is not None:
        jump = f"-J {_destination(host.bastion)}:{host.bastion.port} "
    reset = f"{sudo}kubeadm reset -f && {sudo}rm -f {KINDNET_CNI_CONFIG} {JOIN_MARKER}"
    return f"ssh {jump}-p {host.ssh.port} {_destination(host.ssh)} {_q(reset)}"


def host_reset_script() -> str:
    """POSIX sh on the host: `kubeadm reset -f` and kindnet's CNI config, unless the host is
    joined to another control plane ($1: sha256 of the tenant CA without line breaks, or
    `none`): a host that moved to another tenant, or rejoined a replaced control plane, before
    this old node's leave ran, is left as it is."""
    return render_script(
        _PACKAGE, "host_reset.sh", path_extra=Text(HOST_PATH_EXTRA), kubelet_config=KUBELET_CONFIG,
        node_ca_cert=NODE_CA_CERT, foreign=HOST_FOREIGN, reset_failed=HOST_RESET_FAILED,
        kindnet_cni_config=KINDNET_CNI_CONFIG, join_marker=JOIN_MARKER,
        kindnet_cni_config_text=Text(KINDNET_CNI_CONFIG), reset=HOST_RESET)


def _key_file(env: str, role: str) -> str:
    """bash: the private key in $env into $KHP_SSH_DIR/<role>.key. A PEM key needs its final
    newline; a secret may have lost it (or carry one): exactly one."""
    return render_script(_PACKAGE, "host_ssh_key.bash", key_env=Text(env), ssh_dir_env=Text(SSH_DIR_ENV),
                         role=Text(role))


def _known_hosts_file(endpoint: SshEndpointConfig, role: str) -> str:
    if not endpoint.host_key:
        return ""
    return render_script(_PACKAGE, "host_ssh_known_hosts.sh", known_hosts_line=known_hosts_line(endpoint),
                         ssh_dir_env=Text(SSH_DIR_ENV), role=Text(role))


def _tenant_kubectl() -> Shell:
    """bash: a private temporary directory with the tenant kubeconfig from the environment, and
    `k`: kubectl against the tenant, each request and each call bounded: a tenant API that is gone
    must not hold the leave for the kernel's connect retries."""
    return Shell(render_script(_PACKAGE, "host_tenant_kubectl.bash", kubeconfig_env=Text(KUBECONFIG_ENV),
                               redact=Shell(REDACT_SED), call_timeout=API_CALL_TIMEOUT_SECONDS,
                               request_timeout=Text(API_REQUEST_TIMEOUT)))


def leave_script(tenant: TenantConfig, host: HostConfig) -> str:
    """bash on the Pulumi host, the delete of `<host>-leave`: drain the node and delete it from
    the tenant, then reset the host over SSH.

    A failed drain (a PodDisruptionBudget, a pod that will not go) stops here: the node is
    uncordoned again and stays, the host is not reset, the delete fails. `KHP_SKIP_DRAIN=1`
    skips the drain (`make down`). A tenant API that does not answer, a node already gone, a
    host that cannot be reached or whose reset fails each give a warning (with the command to
    run by hand) and the leave goes on: a machine that is gone must not block `pulumi destroy`.
    """
    keys = _key_file(HOST_SSH_KEY_ENV, "host") + _known_hosts_file(host.ssh, "host")
    if host.bastion is not None:
        keys += _key_file(BASTION_SSH_KEY_ENV, "bastion") + _known_hosts_file(host.bastion, "bastion")
    where = f"{host.ssh.user}@{host.ssh.address}:{host.ssh.port}" + (
        f" through {host.bastion.user}@{host.bastion.address}:{host.bastion.port}" if host.bastion else "")
    return render_script(
        _PACKAGE, "host_leave.bash", tenant_kubectl=_tenant_kubectl(), node=host.name,
        kubeconfig_env=Text(KUBECONFIG_ENV), tenant=Text(tenant.name),
        skip_drain_env=Text(SKIP_DRAIN_ENV), drain_bound=DRAIN_TIMEOUT_SECONDS + API_CALL_TIMEOUT_SECONDS,
        request_timeout=Text(API_REQUEST_TIMEOUT), skip_wait_for_delete=SKIP_WAIT_FOR_DELETE_SECONDS,
        drain_timeout=DRAIN_TIMEOUT_SECONDS, ssh_dir_env=Text(SSH_DIR_ENV), key_files=Shell(keys),
        # The remote command in a quoted heredoc: its line, then the heredoc's end.
        remote=Shell(remote_command(host, host_reset_script()) + "\n"),
        reset_timeout=HOST_RESET_TIMEOUT_SECONDS, ssh=Shell(" ".join(ssh_words(host))), reset=HOST_RESET,
        foreign=HOST_FOREIGN, ssh_failed=SSH_FAILED, timed_out=TIMED_OUT, where=Text(where),
        manual=manual_reset_command(host))


def ready_script(tenant: TenantConfig, host: HostConfig) -> str:
    """bash on the Pulumi host, `<host>-ready`: wait until the joined node is Ready (CNI up,
    kubelet posting), bounded, or fail with its conditions. The node stays: its kubelet would
    register it again anyway; the host needs a look (journalctl -u kubelet)."""
    attempts, interval = READY_WAIT
    return render_script(_PACKAGE, "host_ready.bash", tenant_kubectl=_tenant_kubectl(), node=host.name,
                         bound=attempts * interval, interval=interval, tenant=tenant.name)
