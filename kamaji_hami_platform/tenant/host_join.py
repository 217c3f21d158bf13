"""Worker hosts: machines reached over SSH, joined to a tenant with `kubeadm join`.

The SSH counterpart of node_join's container workers, with its guarantees: the scripts are
pure functions of config and never carry a secret. Per host the component runs

- `<host>-leave` (local): create is a no-op, delete is `leave_script`: drain and delete the node
  in the tenant, then `kubeadm reset -f` the host over the OpenSSH client. It lives here and
  not in the join's delete because pulumi-command fails a remote delete whose SSH dial fails
  (pulumi-command v1.2.1 remote/commandOutputs.go run(): `Dial` error returned), which would
  block `pulumi destroy` for as long as the host is gone; a local command can warn and go on.
- `<host>-join` (remote, no delete): create is `join_command`, its stdin the tenant admin
  kubeconfig. It gets no `environment`: pulumi-command sets it with SSH `Setenv`, which a
  default sshd refuses (no AcceptEnv), and the command then fails (commandOutputs.go L42-48).
- `<host>-ready` (local): `ready_script`, until the node is Ready.

Secrets: the kubeconfig reaches the host on stdin only, into a 0600 file removed at exit; it
mints a bootstrap token that expires in minutes and is deleted after the join in every case;
the token reaches `kubeadm join` in a 0600 JoinConfiguration file, never on a command line a
local user could read (/proc/<pid>/cmdline). Private keys reach the local ssh client through
the environment into 0600 files. Output that could carry a token passes node_join's redaction.
"""

from __future__ import annotations

import shlex

from kamaji_hami_platform.config import HostConfig, SshEndpointConfig, TenantConfig
from kamaji_hami_platform.tenant import node_join

KUBECONFIG_ENV = node_join.KUBECONFIG_ENV
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


def _miss(text: str) -> str:
    """A shell call adding one line to the list of what the host lacks."""
    return f"miss {_q(text)}"


def prerequisites_script(tenant: TenantConfig, host: HostConfig) -> str:
    """POSIX sh: check everything a join needs and fail with the full list of what is missing,
    each with its fix, before anything on the host changes. Sets $kubeadm_minor and $runtime.

    Version skew (https://kubernetes.io/releases/version-skew-policy/): the kubelet may be up to
    three minors older than the API server, never newer; kubeadm supports a control plane of its
    own minor or one older (https://kubernetes.io/docs/setup/production-environment/tools/
    kubeadm/create-cluster-kubeadm/#version-skew-policy) and a kubelet up to three minors older
    than itself (kubeadm v1.35.4 constants.MinimumKubeletVersion, preflight KubeletVersionCheck).
    Swap is not missing: the tenants' kubelet runs with failSwapOn false (tenant/control_plane.py)
    and kubeadm's Swap preflight is a warning.
    """
    minor = tenant_minor(tenant)
    kubelet_range = (minor - 3, minor)
    kubeadm_range = (minor, minor + 1)
    wanted = f"v1.{kubeadm_range[0]} or v1.{kubeadm_range[1]}"
    modules = " ".join(KERNEL_MODULES)
    script = f"""missing=""
miss() {{ missing="$missing
  - $1"; }}
# The minor of a "v1.<minor>.<patch>" in the input ("Kubernetes v1.35.4", "v1.35.4"), else empty.
minor_of() {{ sed -n 's/^.*v1\\.\\([0-9][0-9]*\\)\\.[0-9].*$/\\1/p' | head -n 1; }}
kubeadm_minor="" kubelet_minor=""
if ! command -v kubeadm >/dev/null 2>&1; then
  {_miss(f"kubeadm is not on PATH: install kubeadm {wanted} "
         "(https://kubernetes.io/docs/setup/production-environment/tools/kubeadm/install-kubeadm/)")}
else
  kubeadm_version=$(kubeadm version -o short 2>/dev/null || true)
  kubeadm_minor=$(printf '%s\\n' "$kubeadm_version" | minor_of)
  if [ -z "$kubeadm_minor" ] || [ "$kubeadm_minor" -lt {kubeadm_range[0]} ] \\
      || [ "$kubeadm_minor" -gt {kubeadm_range[1]} ]; then
    miss "kubeadm is ${{kubeadm_version:-of unknown version}}, the tenant runs {tenant.kubernetes_version}: \\
install kubeadm {wanted}"
    kubeadm_minor=""
  fi
fi
if ! command -v kubelet >/dev/null 2>&1; then
  {_miss(f"kubelet is not on PATH: install kubelet v1.{kubelet_range[0]}..v1.{kubelet_range[1]} "
         "(the kubelet package, with kubeadm's systemd drop-in)")}
else
  kubelet_version=$(kubelet --version 2>/dev/null || true)
  kubelet_minor=$(printf '%s\\n' "$kubelet_version" | minor_of)
  if [ -z "$kubelet_minor" ] || [ "$kubelet_minor" -lt {kubelet_range[0]} ] \\
      || [ "$kubelet_minor" -gt {kubelet_range[1]} ]; then
    miss "kubelet is ${{kubelet_version:-of unknown version}}, the tenant runs {tenant.kubernetes_version}: \\
install kubelet v1.{kubelet_range[0]}..v1.{kubelet_range[1]} (never newer than the control plane)"
  elif [ -n "$kubeadm_minor" ] && [ "$kubelet_minor" -lt $((kubeadm_minor - 3)) ]; then
    miss "kubelet v1.$kubelet_minor is older than kubeadm v1.$kubeadm_minor supports (three minors): \\
install kubelet v1.$((kubeadm_minor - 3)) or newer, or kubeadm v1.{minor}"
  fi
fi
runtime=""
for unit in {" ".join(CONTAINER_RUNTIMES)}; do
  if systemctl is-active --quiet "$unit" 2>/dev/null; then runtime=$unit; break; fi
done
[ -n "$runtime" ] || {_miss("no container runtime is active: install and start containerd "
                            "(systemctl enable --now containerd) or CRI-O")}
if [ "$runtime" = containerd ]; then
  # containerd 1.x cannot tell the kubelet its cgroup driver (KubeletCgroupDriverFromCRI needs
  # containerd 2.0): runc must use systemd cgroups as the tenant's kubelets do (cgroupDriver
  # systemd, tenant/control_plane.py), or pods fail to start.
  containerd_major=$(containerd --version 2>/dev/null | awk '{{print $3}}' | sed 's/^v//' | cut -d . -f 1)
  if [ "$containerd_major" = 1 ] && ! containerd config dump 2>/dev/null \\
      | grep -Eq {_q(SYSTEMD_CGROUP)}; then
    {_miss("containerd 1.x runs runc with cgroupfs, the tenant's kubelets use systemd: set "
           "SystemdCgroup = true under the runc options in /etc/containerd/config.toml, then "
           "systemctl restart containerd")}
  fi
fi
systemctl cat kubelet >/dev/null 2>&1 \\
  || {_miss("the kubelet service is not installed: install the kubelet package (kubelet.service)")}
for module in {modules}; do
  grep -q "^$module " {PROC_MODULES} 2>/dev/null && continue
  grep -qs "/$module\\.ko" "{MODULES_BUILTIN}" && continue
  miss "kernel module $module is not loaded: modprobe $module, and list it in /etc/modules-load.d/"
done
[ "$(cat {IP_FORWARD} 2>/dev/null)" = 1 ] \\
  || {_miss("net.ipv4.ip_forward is not 1 (kubeadm's preflight requires it): sysctl -w "
            "net.ipv4.ip_forward=1, and set it in /etc/sysctl.d/")}
cni_missing=""
for plugin in {" ".join(CNI_PLUGINS)}; do
  [ -x {CNI_BIN_DIR}/"$plugin" ] || cni_missing="$cni_missing $plugin"
done
[ -z "$cni_missing" ] || miss "CNI plugins missing from {CNI_BIN_DIR}:$cni_missing (kindnet uses them): \\
install the CNI plugins (kubernetes-cni package, or github.com/containernetworking/plugins releases)"
if [ "$(awk 'NR > 1' {PROC_SWAPS} 2>/dev/null | wc -l)" -gt 0 ]; then
  echo "note: swap is on; fine, the tenant's kubelet runs with failSwapOn: false"
fi
"""
    if tenant.gpus is not None and not tenant.gpus.mock:
        script += _gpu_prerequisites(tenant)
    return script + f"""if [ -n "$missing" ]; then
  printf 'host %s cannot join tenant %s; nothing was changed on it. Missing:%s\\n' \\
    {_q(host.name)} {_q(tenant.name)} "$missing" >&2
  exit 1
fi
"""


def _gpu_prerequisites(tenant: TenantConfig) -> str:
    """Real GPUs: HAMi's NVIDIA device plugin needs the driver, the NVIDIA container toolkit and
    NVIDIA as the runtime's default (HAMi v2.10.0 README "Prerequisites": "NVIDIA configured as
    the default runtime for containerd, Docker, or CRI-O"; the chart's runtimeClassName is empty,
    so GPU pods run with the default runtime)."""
    assert tenant.gpus is not None
    per_worker = tenant.gpus.per_worker
    model = tenant.gpus.model.name
    configure = "nvidia-ctk runtime configure --runtime={0} --set-as-default, then systemctl restart {0}"
    return f"""if ! command -v nvidia-smi >/dev/null 2>&1; then
  {_miss("nvidia-smi is not on PATH: install the NVIDIA driver (HAMi needs >= 440)")}
else
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  [ "${{gpus:-0}}" -ge {per_worker} ] || miss "nvidia-smi -L lists ${{gpus:-0}} GPU(s), \\
each worker of the tenant carries {per_worker} {model}: check the driver (nvidia-smi) and the cards"
fi
command -v nvidia-container-runtime >/dev/null 2>&1 \\
  || {_miss("the NVIDIA container toolkit is not installed (no nvidia-container-runtime on PATH): "
            "install nvidia-container-toolkit")}
case "$runtime" in
  containerd)
    containerd config dump 2>/dev/null | grep -Eq {_q(_toml_setting("default_runtime_name", "nvidia"))} \\
      || {_miss("containerd's default runtime is not nvidia (HAMi requires it): "
                + configure.format("containerd"))} ;;
  crio)
    crio config 2>/dev/null | grep -Eq {_q(_toml_setting("default_runtime", "nvidia"))} \\
      || {_miss("CRI-O's default runtime is not nvidia (HAMi requires it): " + configure.format("crio"))} ;;
esac
"""


def _toml_setting(key: str, value: str) -> str:
    """An extended regular expression of the TOML line `key = "value"` or `key = 'value'` (any
    indentation): containerd 2.x prints its config with literal strings ('nvidia'), 1.x and CRI-O
    with basic ones ("nvidia")."""
    return f"^[[:space:]]*{key}[[:space:]]*=[[:space:]]*[\"']{value}[\"']"


def _reset_function() -> str:
    """POSIX sh `reset_host`: what `kubeadm join` left (kubeadm reset -f), and kindnet's CNI
    config, which kubeadm reset leaves and which would point a new node at the old pod network."""
    return f"""reset_host() {{
  if ! reset_output=$(kubeadm reset -f 2>&1); then
    printf 'kubeadm reset -f failed: %s\\n' "$reset_output"; return 1
  fi
  rm -f {KINDNET_CNI_CONFIG} {JOIN_MARKER}
}}
"""


def join_script(tenant: TenantConfig, host: HostConfig) -> str:
    """POSIX sh on the host (root, or through sudo): check the prerequisites, join the tenant
    unless already joined to it, with a bootstrap token minted from the kubeconfig on stdin.

    Safe to run twice. A host joined to another control plane of this tenant (its CA is not the
    tenant's: the control plane was replaced) is reset first. A failed join resets the host, so
    the next `pulumi up` starts clean.
    """
    node = _q(host.name)
    ttl = BOOTSTRAP_TOKEN_TTL
    return f"""set -u
PATH="${{PATH:-}}:{HOST_PATH_EXTRA}"; export PATH
umask 077
tmp=$(mktemp -d) || {{ echo "host {host.name}: cannot create a temporary directory" >&2; exit 1; }}
kc="$tmp/tenant-admin.conf"
token_id=""
# The token goes in every case: after the join, after a failure, on a signal.
cleanup() {{
  if [ -n "$token_id" ]; then
    kubeadm token delete --kubeconfig "$kc" "$token_id" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
redact() {{ {REDACT_SED}; }}
cat > "$kc"
# The tenant's CA, as PEM without line breaks, from its kubeconfig and from the node.
want=$(sed -n 's/^ *certificate-authority-data: *//p' "$kc" | head -n 1 | base64 -d 2>/dev/null \\
  | tr -d '\\r\\n' || true)
# Joined to this control plane already: nothing to check or change. First, so that a re-run
# (pulumi-command runs create again when an input changes, a rotated kubeconfig say) never
# fails a working node over a prerequisite that changed since its join.
if [ -f {KUBELET_CONFIG} ]; then
  have=$(tr -d '\\r\\n' < {NODE_CA_CERT} 2>/dev/null || true)
  # No CA data in the kubeconfig: nothing to compare, leave the node as it is.
  if [ -z "$want" ] || [ "$want" = "$have" ]; then
    echo "host {host.name} already joined to tenant {tenant.name}"; exit 0
  fi
  # Only a node this platform joined to this tenant is reset (its control plane was replaced);
  # a node of any other cluster (a mistyped address, a machine in use) is never touched.
  owner=$(cat {JOIN_MARKER} 2>/dev/null || echo "not joined by this platform")
  if [ "$owner" != {_q(marker_text(tenant))} ]; then
    echo "host {host.name} is a node of another cluster ({JOIN_MARKER}: $owner); it is left as it is." \\
      "If it should join tenant {tenant.name}, reset it by hand first (kubeadm reset -f)." >&2
    exit 1
  fi
fi
{prerequisites_script(tenant, host)}{_reset_function()}\
if [ -f {KUBELET_CONFIG} ]; then
  echo "host {host.name} was joined to another control plane of tenant {tenant.name}; resetting it"
  reset_host >&2 || exit 1
fi
join="" last_error="" deadline=$(( $(date +%s) + {TOKEN_WAIT_SECONDS} ))
while [ "$(date +%s)" -lt "$deadline" ]; do
  # Kamaji sets up the bootstrap RBAC a moment after the TCP is Ready. Only stdout is the
  # join command: a warning on stderr must never become part of it. Each call bounded: a tenant
  # API the host cannot reach must not hold the join for the kernel's connect retries.
  if join=$(timeout {TOKEN_CALL_TIMEOUT_SECONDS} kubeadm token create --kubeconfig "$kc" --ttl {ttl} \\
      --description "join {host.name}" --print-join-command 2>"$tmp/err"); then break; fi
  last_error=$(cat "$tmp/err"); join=""; sleep 2
done
if [ -z "$join" ]; then
  printf 'kubeadm token create failed for %ss (can the host reach the tenant API?): %s\\n' \\
    {TOKEN_WAIT_SECONDS} "$last_error" | redact >&2
  exit 1
fi
# "kubeadm join <endpoint> --token <token> --discovery-token-ca-cert-hash sha256:<hash> ..."
endpoint="" token="" hashes=""
set -f; set -- $join; set +f
[ "${{1:-}}" = kubeadm ] && [ "${{2:-}}" = join ] && endpoint=${{3:-}}
while [ $# -gt 0 ]; do
  case "$1" in
    --token) token=${{2:-}} ;;
    --discovery-token-ca-cert-hash) hashes="$hashes    - \\"${{2:-}}\\"
" ;;
  esac
  shift
done
token_id=${{token%%.*}}
if [ -z "$endpoint" ] || [ -z "$token" ] || [ -z "$hashes" ]; then
  # Never join without the CA pinned by its hash.
  printf 'unexpected output of kubeadm token create --print-join-command: %s\\n' "$join" | redact >&2
  exit 1
fi
api=v1beta4
[ "$kubeadm_minor" -ge {KUBEADM_V1BETA4_MINOR} ] || api=v1beta3
# The token in a 0600 file, not on kubeadm's command line. --node-name may be combined with
# --config (kubeadm v1.35.4 validation.isAllowedFlag) and wins over nodeRegistration.name.
cat > "$tmp/join.yaml" <<EOF
apiVersion: kubeadm.k8s.io/$api
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: "$endpoint"
    token: "$token"
    caCertHashes:
$hashes
nodeRegistration:
  name: {node}
EOF
if ! output=$(kubeadm join --config "$tmp/join.yaml" --node-name {node} 2>&1); then
  kubeadm token delete --kubeconfig "$kc" "$token_id" >/dev/null 2>&1 || true
  token_id=""
  if reset_report=$(reset_host); then
    reset_report="the host was reset, so the next run starts clean"
  fi
  printf 'kubeadm join of host %s failed (%s):\\n%s\\n' {node} "$reset_report" "$output" | redact >&2
  exit 1
fi
printf '%s\\n' {_q(marker_text(tenant))} > {JOIN_MARKER}
# The node must come back after a reboot; kubeadm only warns when the kubelet is not enabled.
if ! systemctl is-enabled --quiet kubelet 2>/dev/null; then
  systemctl enable kubelet >/dev/null 2>&1 && echo "enabled kubelet.service (it starts at boot)"
fi
echo "joined {host.name} to tenant {tenant.name}"
"""


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
    return f"""set -u
PATH="${{PATH:-}}:{HOST_PATH_EXTRA}"; export PATH
want=${{1:-none}}
if [ -f {KUBELET_CONFIG} ] && [ "$want" != none ]; then
  have=$(tr -d '\\r\\n' < {NODE_CA_CERT} 2>/dev/null | sha256sum | cut -d ' ' -f 1)
  if [ "$have" != "$want" ]; then
    echo "the host is joined to another control plane: left as it is"; exit {HOST_FOREIGN}
  fi
fi
if command -v kubeadm >/dev/null 2>&1; then
  if ! output=$(kubeadm reset -f 2>&1); then
    printf 'kubeadm reset -f failed: %s\\n' "$output"; exit {HOST_RESET_FAILED}
  fi
else
  echo "kubeadm is not on the host's PATH: nothing to reset"
fi
rm -f {KINDNET_CNI_CONFIG} {JOIN_MARKER} || exit {HOST_RESET_FAILED}
echo "host reset (kubeadm reset -f; {KINDNET_CNI_CONFIG} removed)"
exit {HOST_RESET}
"""


def _write_key(env: str, role: str) -> str:
    # A PEM key needs its final newline; a secret may have lost it (or carry one): exactly one.
    return f"""printf '%s\\n' "${{{env}%$'\\n'}}" > "${SSH_DIR_ENV}/{role}.key"\n"""


def _write_known_hosts(endpoint: SshEndpointConfig, role: str) -> str:
    if not endpoint.host_key:
        return ""
    return f"""printf '%s\\n' {_q(known_hosts_line(endpoint))} > "${SSH_DIR_ENV}/{role}.known_hosts"\n"""


def _kubectl_function() -> str:
    """bash `k`: kubectl against the tenant, each request and each call bounded: a tenant API
    that is gone must not hold the leave for the kernel's connect retries."""
    return (f'k() {{ timeout {API_CALL_TIMEOUT_SECONDS} kubectl --kubeconfig "$kc" '
            f'--request-timeout={API_REQUEST_TIMEOUT} "$@"; }}\n')


def _tenant_kubeconfig() -> str:
    """bash: a private temporary directory with the tenant kubeconfig from the environment."""
    return f"""umask 077
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
kc="$tmp/tenant-admin.conf"
printf '%s' "${{{KUBECONFIG_ENV}:-}}" > "$kc"
redact() {{ {REDACT_SED}; }}
"""


def leave_script(tenant: TenantConfig, host: HostConfig) -> str:
    """bash on the Pulumi host, the delete of `<host>-leave`: drain the node and delete it from
    the tenant, then reset the host over SSH.

    A failed drain (a PodDisruptionBudget, a pod that will not go) stops here: the node is
    uncordoned again and stays, the host is not reset, the delete fails. `KHP_SKIP_DRAIN=1`
    skips the drain (`make down`). A tenant API that does not answer, a node already gone, a
    host that cannot be reached or whose reset fails each give a warning (with the command to
    run by hand) and the leave goes on: a machine that is gone must not block `pulumi destroy`.
    """
    node = _q(host.name)
    drain_bound = DRAIN_TIMEOUT_SECONDS + API_CALL_TIMEOUT_SECONDS
    keys = _write_key(HOST_SSH_KEY_ENV, "host") + _write_known_hosts(host.ssh, "host")
    if host.bastion is not None:
        keys += _write_key(BASTION_SSH_KEY_ENV, "bastion") + _write_known_hosts(host.bastion, "bastion")
    where = f"{host.ssh.user}@{host.ssh.address}:{host.ssh.port}" + (
        f" through {host.bastion.user}@{host.bastion.address}:{host.bastion.port}" if host.bastion else "")
    manual = _q(manual_reset_command(host))
    return f"""set -u
{_tenant_kubeconfig()}{_kubectl_function()}\
node={node}
warn() {{ printf 'warning: host %s: %s\\n' "$node" "$1" | redact >&2; }}
if [ -z "${{{KUBECONFIG_ENV}:-}}" ]; then
  warn "no tenant kubeconfig: the node is not removed from tenant {tenant.name}"
elif ! found=$(k get node "$node" -o name 2>&1); then
  case "$found" in
    *"(NotFound)"*) echo "node $node is not in tenant {tenant.name}" ;;
    *) warn "could not remove the node from tenant {tenant.name} (API unreachable?): $found" ;;
  esac
else
  drain=1
  [ "${{{SKIP_DRAIN_ENV}:-}}" = 1 ] && drain=""
  ready=$(k get node "$node" -o jsonpath='{{.status.conditions[?(@.type=="Ready")].status}}' \\
    2>/dev/null || true)
  if [ -n "$drain" ] && [ "$ready" != True ]; then
    # A node whose kubelet does not report (a dead host) never confirms an eviction: kubectl
    # drain would wait out its timeout and fail, and with it the destroy.
    warn "the node is not Ready (Ready=${{ready:-unknown}}): not drained, its pods go with it"
    drain=""
  fi
  if [ -n "$drain" ]; then
    # --force deletes pods no controller recreates, --delete-emptydir-data their emptyDirs:
    # both would go with the node anyway. --skip-wait-for-delete-timeout: a pod that stops
    # answering while it terminates does not hold the drain (kubectl pkg/drain filters.go).
    if ! out=$(timeout {drain_bound} kubectl --kubeconfig "$kc" --request-timeout={API_REQUEST_TIMEOUT} \\
        drain "$node" --ignore-daemonsets --delete-emptydir-data --force \\
        --skip-wait-for-delete-timeout={SKIP_WAIT_FOR_DELETE_SECONDS} \\
        --timeout={DRAIN_TIMEOUT_SECONDS}s 2>&1); then
      # drain cordons first and leaves it so on failure: the node must keep taking pods.
      k uncordon "$node" >/dev/null 2>&1 || true
      printf 'host %s: the drain failed, so the node stays and the host is not reset:\\n%s\\n' \\
        "$node" "$out" | redact >&2
      echo "Resolve what blocks the eviction (kubectl get pdb -A in the tenant) and run again, or" \\
        "remove the host without a drain: {SKIP_DRAIN_ENV}=1 (its pods are deleted with it)." >&2
      exit 1
    fi
  fi
  if out=$(k delete node "$node" --ignore-not-found --timeout=60s 2>&1); then
    echo "node $node removed from tenant {tenant.name}"
  else
    warn "could not delete the node from tenant {tenant.name}: $out"
  fi
fi
# The host: kubeadm reset over SSH, only if it is still joined to this tenant's CA.
ca=$(sed -n 's/^ *certificate-authority-data: *//p' "$kc" | head -n 1 | base64 -d 2>/dev/null \\
  | tr -d '\\r\\n' || true)
ca_hash=none
[ -z "$ca" ] || ca_hash=$(printf '%s' "$ca" | sha256sum | cut -d ' ' -f 1)
{SSH_DIR_ENV}="$tmp"; export {SSH_DIR_ENV}
{keys}# Quoted heredoc: the command reads as sshd receives it, its argument $1 the CA's hash.
remote=$(cat <<'KHP_REMOTE'
{remote_command(host, host_reset_script())}
KHP_REMOTE
)
remote="$remote $ca_hash"
# SHELL: ssh runs a ProxyCommand with $SHELL; the options are written for /bin/sh.
status=0
out=$(SHELL=/bin/sh timeout {HOST_RESET_TIMEOUT_SECONDS} {" ".join(ssh_words(host))} "$remote" \\
  2>&1 </dev/null) || status=$?
case "$status" in
  {HOST_RESET}) printf '%s\\n' "$out" | redact ;;
  {HOST_FOREIGN}) warn "$out" ;;
  {SSH_FAILED}) warn "could not reach {where} over SSH ($out); the host was not reset. \\
Run by hand: "{manual} ;;
  {TIMED_OUT}) warn "the reset over SSH did not finish within {HOST_RESET_TIMEOUT_SECONDS}s. \\
Check the host, or run by hand: "{manual} ;;
  *) warn "the reset failed ($out). Run by hand: "{manual} ;;
esac
exit 0
"""


def ready_script(tenant: TenantConfig, host: HostConfig) -> str:
    """bash on the Pulumi host, `<host>-ready`: wait until the joined node is Ready (CNI up,
    kubelet posting), bounded, or fail with its conditions. The node stays: its kubelet would
    register it again anyway; the host needs a look (journalctl -u kubelet)."""
    attempts, interval = READY_WAIT
    bound = attempts * interval
    ready = "{.status.conditions[?(@.type==\"Ready\")].status}"
    conditions = "{range .status.conditions[*]}{.type}={.status} {.reason}; {end}"
    return f"""set -u
{_tenant_kubeconfig()}{_kubectl_function()}\
node={_q(host.name)}
deadline=$(( $(date +%s) + {bound} ))
ready=""
while :; do
  ready=$(k get node "$node" -o jsonpath={_q(ready)} 2>/dev/null || true)
  [ "$ready" = True ] && break
  [ "$(date +%s)" -lt "$deadline" ] || break
  sleep {interval}
done
if [ "$ready" != True ]; then
  conditions=$(k get node "$node" -o jsonpath={_q(conditions)} 2>&1 || true)
  printf 'host %s joined tenant %s but its node was not Ready within %ss: %s\\n' \\
    "$node" {_q(tenant.name)} {bound} "$conditions" | redact >&2
  echo "Look at the kubelet on the host: journalctl -u kubelet" >&2
  exit 1
fi
echo "node $node is Ready"
"""
