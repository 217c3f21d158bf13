"""A worker host for real over SSH: Debian's sshd in a mount namespace, with stand-in tools; and
the tenant's API as the Pulumi host's stand-in kubectl sees it.

sshd (toolchain/openssh.sh: the Debian package unpacked, never installed) runs on a loopback
port in a private mount namespace where /etc is an overlay (its passwd gets the privilege
separation user, a root with a temporary home and /bin/sh as shell, and the users `deploy` and
`jump`), cgroup v2 is mounted on /sys/fs/cgroup (as on a host the 1.35 kubelet accepts), and the
paths a join touches are bound to folders of the sandbox: /etc/kubernetes, /etc/cni/net.d,
/opt/cni/bin (under a tmpfs on /opt), /proc/sys/net/ipv4/ip_forward and /proc/swaps. This kernel
has no module support, so there is no /proc/modules to bind over: the scripts read
host_join.PROC_MODULES, which the tests point at a sandbox file. The machine itself is untouched;
everything goes with the namespace when sshd is stopped.

The sessions' PATH is the stand-ins, then `sysbin`: this machine's /usr/bin and /usr/sbin less
the tools a host must have for a join (so a test decides whether they are there). The stand-ins
(kubeadm, kubelet, systemctl, containerd, iptables, ip, nsenter, timedatectl, nvidia-smi,
nvidia-container-runtime, sudo) are small sh scripts that log their argv and act on switch files
in the state folder, never printing their stdin. Each user authenticates with its own key only
(AuthorizedKeysFile per user).

The tenant's API: two loopback listeners (its API server and Konnectivity, which a host must
reach) and the local stand-in kubectl, whose state holds the Node's switches and the bootstrap
token Secrets; the host's stand-in `kubeadm join` accepts only a token whose Secret is there and
only the tenant CA's pin, as kube-apiserver and kubeadm's discovery would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kamaji_hami_platform.tenant import ca_pin

ROOT = Path(__file__).resolve().parents[2]
OPENSSH = ROOT / "toolchain" / "openssh.sh"
START_TIMEOUT = 15
# Each ssh or script run; the slowest case (a wait until Ready that gives up) takes a few seconds.
RUN_TIMEOUT = 60
USERS = {"root": 0, "deploy": 1000, "jump": 1001}
NODE_VERSION = "v1.35.4"
CNI_PLUGINS = ("host-local", "loopback", "ptp", "portmap")
# Tools a host must have (host_join.HOST_TOOLS and the rest) and this machine's that would stand in
# for them unasked: left out of sysbin; the tests give them as stand-ins.
HOST_TOOLS_HELD_BACK = ("kubeadm", "kubelet", "kubectl", "systemctl", "containerd", "crio", "iptables",
                        "ip6tables", "ip", "nsenter", "timedatectl", "nc", "ncat", "netcat", "nvidia-smi",
                        "nvidia-container-runtime", "sudo")

KUBEADM = r"""#!/bin/sh
# stand-in kubeadm
S=@STATE@ TENANT=@TENANT@
printf 'kubeadm %s\n' "$*" >> "$S/argv.log"
arg() { want=$1; shift; while [ $# -gt 1 ]; do [ "$1" = "$want" ] && { echo "$2"; return; }; shift; done; }
case "$1" in
  version) cat "$S/kubeadm-version" ;;
  join)
    config=$(arg --config "$@")
    { stat -c %a "$config"; cat "$config"; } > "$S/join-config"
    # What the script that runs kubeadm was given (its arguments) and its environment.
    tr '\0' '\n' < "/proc/$PPID/cmdline" > "$S/join-caller"
    env > "$S/join-env"
    # Preflight, before discovery: a file the join writes that is there already stops it, with
    # nothing changed (kubernetes v1.35.4 cmd/kubeadm/app/preflight/checks.go JoinNodeChecks,
    # FileAvailableCheck; cmd/kubeadm/app/cmd/phases/join/preflight.go runPreflight).
    fatal=""
    for file in /etc/kubernetes/kubelet.conf /etc/kubernetes/bootstrap-kubelet.conf \
        /etc/kubernetes/pki/ca.crt; do
      [ -e "$file" ] && fatal="$fatal	[ERROR FileAvailable-$(echo "$file" | tr / -)]: $file already exists
"
    done
    [ -f "$S/preflight-fails" ] && fatal="$fatal	[ERROR Port-10250]: Port 10250 is in use
"
    if [ -n "$fatal" ]; then
      printf 'error execution phase preflight: [preflight] %s:\n%s' "Some fatal errors occurred" "$fatal" >&2
      exit 1
    fi
    # Discovery: a token whose Secret the tenant has, and the pin of the tenant's CA (kubernetes
    # v1.35 cmd/kubeadm/app/discovery/token/token.go); then, slow on request, the kubelet's start.
    token=$(sed -n 's/^ *token: "\(.*\)"$/\1/p' "$config")
    id=${token%%.*}
    if ! grep -qs "token-secret: \"${token#*.}\"" "$TENANT/secrets/bootstrap-token-$id.yaml"; then
      echo "could not find a JWS signature in the cluster-info ConfigMap for token ID \"$id\"" >&2; exit 1
    fi
    pin=$(sed -n 's/^ *- "\(sha256:.*\)"$/\1/p' "$config")
    if [ "$pin" != "$(cat "$S/ca-pin")" ]; then
      printf 'cluster CA found in cluster-info ConfigMap is invalid: %s "%s" are pinned\n' \
        "none of the public keys" "$(cat "$S/ca-pin")" >&2
      exit 1
    fi
    touch "$S/join-started"
    [ -f "$S/join-slow" ] && sleep "$(cat "$S/join-slow")"
    mkdir -p /etc/kubernetes/pki && cp "$S/ca.pem" /etc/kubernetes/pki/ca.crt
    if [ -f "$S/join-fails" ]; then
      echo "error execution phase kubelet-start: token $token ($pin) rejected" >&2; exit 1
    fi
    # The kubelet's TLS bootstrap, with the token: a certificate request for its node's name (or
    # the subject the state gives, a host asking for another identity), then a wait for its
    # approval (kubernetes v1.35.4 pkg/kubelet/certificate/bootstrap/bootstrap.go).
    node=$(sed -n 's/^  name: //p' "$config" | head -n 1)
    subject=$(cat "$S/csr-subject" 2>/dev/null || echo "/O=system:nodes/CN=system:node:$node")
    csr="node-csr-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
    request=$(openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout /dev/null -subj "$subject" 2>/dev/null | base64 -w 0)
    printf 'system:bootstrap:%s %s kubernetes.io/kube-apiserver-client-kubelet %s\n' "$id" "$csr" \
      "$request" > "$TENANT/csr/$csr"
    # Bounded as kubeadm's wait for the kubelet's certificate (JoinConfiguration timeouts.
    # tlsBootstrap, 5 minutes by default), here 20 s or what the state says.
    for _ in $(seq 1 $(( $(cat "$S/tls-bootstrap-seconds" 2>/dev/null || echo 20) * 5 ))); do
      [ -f "$TENANT/csr/$csr.Approved" ] && break
      if [ -f "$TENANT/csr/$csr.Denied" ]; then
        echo "error execution phase kubelet-start: the certificate request $csr was denied" >&2; exit 1
      fi
      sleep 0.2
    done
    [ -f "$TENANT/csr/$csr.Approved" ] \
      || { echo "error execution phase kubelet-start: timed out waiting for the TLS bootstrap" >&2; exit 1; }
    echo "kubelet credentials" > /etc/kubernetes/kubelet.conf
    echo "This node has joined the cluster" ;;
  reset)
    if [ -f "$S/reset-fails" ]; then echo "failed to stop the kubelet" >&2; exit 1; fi
    # kubeadm v1.35 phases/reset/cleanupnode.go: stops the kubelet service, never disables it.
    echo "[reset] Stopping the kubelet service"; rm -f "$S/active-kubelet"
    rm -rf /etc/kubernetes/kubelet.conf /etc/kubernetes/bootstrap-kubelet.conf /etc/kubernetes/pki
    echo "[reset] Deleted contents of /etc/kubernetes" ;;
esac
"""

TOOLS = {
    "kubeadm": KUBEADM,
    "kubelet": """#!/bin/sh
printf 'kubelet %s\\n' "$*" >> @STATE@/argv.log
echo "Kubernetes $(cat @STATE@/kubelet-version)"
""",
    "systemctl": """#!/bin/sh
S=@STATE@
printf 'systemctl %s\\n' "$*" >> "$S/argv.log"
for unit; do :; done
case "$1" in
  is-active) [ -f "$S/active-$unit" ] ;;
  is-enabled) [ -f "$S/enabled-$unit" ] ;;
  enable) touch "$S/enabled-$unit" ;;
  disable) rm -f "$S/enabled-$unit" ;;
  cat) [ -f "$S/unit-$unit" ] && echo "# /lib/systemd/system/$unit.service" ;;
esac
""",
    "containerd": """#!/bin/sh
printf 'containerd %s\\n' "$*" >> @STATE@/argv.log
if [ "$*" = --version ] && [ -f @STATE@/containerd-version ]; then
  echo "containerd containerd.io $(cat @STATE@/containerd-version) bcc810d6b9066471b0b6fa75f557a15a1cbf31bb"
  exit 0
fi
[ "$*" = "config dump" ] || exit 1
[ -f @STATE@/cri-disabled ] && echo 'disabled_plugins = ["io.containerd.grpc.v1.cri"]'
runc='[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]'
[ -f @STATE@/systemd-cgroup ] && printf '%s\\n  SystemdCgroup = true\\n' "$runc"

# containerd 2.x prints literal strings ('nvidia'), 1.x basic ones ("nvidia"): the state says which.
quote='"'
[ -f @STATE@/containerd-2 ] && quote="'"
section='[plugins."io.containerd.grpc.v1.cri".containerd]'
printf 'version = 2\\n%s\\n  default_runtime_name = %s%s%s\\n' \\
  "$section" "$quote" "$(cat @STATE@/containerd-default-runtime)" "$quote"
""",
    "timedatectl": """#!/bin/sh
printf 'timedatectl %s\\n' "$*" >> @STATE@/argv.log
if [ -f @STATE@/clock-unsynchronized ]; then echo no; else echo yes; fi
""",
    # The host's clock: this machine's, or off by the seconds the state says (host-clock-offset).
    "date": """#!/bin/sh
offset=$(cat @STATE@/host-clock-offset 2>/dev/null || echo 0)
[ "$offset" = 0 ] && exec /usr/bin/date "$@"
exec /usr/bin/date -d "@$(( $(/usr/bin/date +%s) + offset ))" "$@"
""",
    "iptables": "#!/bin/sh\nexit 0\n",
    # `ip -o addr show`: the host's addresses, loopback's among them (the sandbox's host address).
    "ip": """#!/bin/sh
[ "$*" = "-o addr show" ] && echo "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever"
exit 0
""",
    "nsenter": "#!/bin/sh\nexit 0\n",
    # `nvidia-smi --query-gpu=name --format=csv,noheader`: one line per card.
    "nvidia-smi": """#!/bin/sh
printf 'nvidia-smi %s\\n' "$*" >> @STATE@/argv.log
for i in $(seq 1 "$(cat @STATE@/gpus)"); do cat @STATE@/gpu-name; done
""",
    "nvidia-container-runtime": "#!/bin/sh\nexit 0\n",
    # sudo -n runs the command as the same user here: the sandbox's host folders are writable by
    # all; what is proven is the command's form and stdin passing through.
    "sudo": """#!/bin/sh
printf 'sudo %s %s\\n' "$1" "$2" >> @STATE@/argv.log
[ "$1" = -n ] || { echo "sudo: a terminal is required to read the password" >&2; exit 1; }
shift
exec "$@"
""",
}

KUBECTL = r"""#!/bin/sh
# stand-in kubectl on the Pulumi host, against the tenant
S=@TENANT@
printf 'kubectl %s\n' "$*" >> "$S/argv.log"
kc="" output="" verb="" kind="" name=""
while [ $# -gt 0 ]; do
  case "$1" in
    --kubeconfig) kc=$2; shift ;;
    -o) output=$2; shift ;;
    -n|-f) shift ;;
    --*) ;;
    *) if [ -z "$verb" ]; then verb=$1
       elif [ -z "$kind" ] && [ "$verb" != drain ] && [ "$verb" != uncordon ]; then kind=$1
       else name=$1; fi ;;
  esac
  shift
done
[ -n "$name" ] || name=$kind
{ echo "$kc"; stat -c %a "$kc"; sha256sum < "$kc" | cut -d ' ' -f 1; } > "$S/kubeconfig-seen"
if [ -f "$S/unreachable" ]; then
  echo "Unable to connect to the server: dial tcp @ENDPOINT@: i/o timeout" >&2; exit 1
fi
# Certificate requests (the kubelet's, which the host's stand-in kubeadm makes): the join's
# go-template lists the pending ones of one bootstrap user; approve and deny decide one.
case "$verb $kind" in
  "get csr")
    user=$(printf '%s' "$output" | sed -n 's/.*"\(system:bootstrap:[a-z0-9]*\)".*/\1/p')
    for request in "$S"/csr/node-csr-*; do
      # -f: with no request yet, sh leaves the pattern as it is.
      case "$request" in *.Approved|*.Denied) continue ;; esac
      [ -f "$request" ] && [ ! -f "$request.Approved" ] && [ ! -f "$request.Denied" ] || continue
      read -r who csr signer pem < "$request"
      [ "$who" = "$user" ] && printf '%s %s %s\n' "$csr" "$signer" "$pem"
    done
    exit 0 ;;
  "certificate approve"|"certificate deny")
    decision=Approved; [ "$kind" = deny ] && decision=Denied
    touch "$S/csr/$name.$decision"; echo "certificatesigningrequest.certificates.k8s.io/$name ${decision}"
    exit 0 ;;
esac
case "$verb" in
  create)
    if [ -f "$S/create-fails" ]; then
      echo 'Error from server (Forbidden): secrets is forbidden:' \
        'User "kubernetes-admin" cannot create resource "secrets"' >&2
      exit 1
    fi
    doc=$(cat)
    # A warning the API server sends along (a Warning header), which kubectl prints on stderr.
    [ -f "$S/create-warning" ] && echo "Warning: $(cat "$S/create-warning")" >&2
    secret=$(printf '%s\n' "$doc" | sed -n 's/^  name: //p' | head -n 1)
    printf '%s\n' "$doc" > "$S/secrets/$secret.yaml"
    chmod 644 "$S/secrets/$secret.yaml"
    printf '%s\n---\n' "$doc" >> "$S/minted"
    case "$output" in
      # The API server's stamp, by its clock: this machine's, or off by what the state says.
      *creationTimestamp*)
        offset=$(cat "$S/clock-offset" 2>/dev/null || echo 0)
        date -u -d "@$(( $(date +%s) + offset ))" +%Y-%m-%dT%H:%M:%SZ ;;
      *) echo "secret/$secret" ;;
    esac
    exit 0 ;;
  delete)
    if [ "$kind" = secret ]; then
      rm -f "$S/secrets/$name.yaml"; echo "secret \"$name\" deleted"; exit 0
    fi ;;
esac
if [ -f "$S/node-missing" ] && [ "$verb" != delete ]; then
  echo "Error from server (NotFound): nodes \"$name\" not found" >&2; exit 1
fi
case "$verb" in
  get)
    case "$output" in
      *kubeletVersion*) cat "$S/kubelet-version" ;;
      *range*) echo "Ready=False KubeletNotReady; MemoryPressure=False KubeletHasSufficientMemory; " ;;
      *Ready*) cat "$S/ready" ;;
      *) echo "node/$name" ;;
    esac ;;
  drain)
    if [ -f "$S/drain-fails" ]; then
      echo "error when evicting pods/\"db-0\" -n \"default\": Cannot evict pod as it would violate" \
        "the pod's disruption budget." >&2
      exit 1
    fi
    echo "node/$name drained" ;;
  uncordon) echo "node/$name uncordoned" ;;
  delete) touch "$S/node-missing"; echo "node \"$name\" deleted" ;;
esac
"""


class Listener:
    """A TCP port on loopback that accepts every connection (and closes it): what a host's
    reachability check of the tenant's API server or Konnectivity finds."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(16)
        self.port: int = self.socket.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            connection.close()

    def close(self) -> None:
        """Stop listening at once: shutdown wakes the accept (close alone would leave the port
        open until the accept returned)."""
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def openssh_root() -> Path:
    """The unpacked openssh-server (fetched into the toolchain cache when missing)."""
    result = subprocess.run(["bash", str(OPENSSH)], capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"toolchain/openssh.sh failed:\n{result.stderr[-3000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


def keygen(path: Path, comment: str) -> str:
    """A new ed25519 key pair; returns the public key as `ssh-ed25519 AAAA...`."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, timeout=RUN_TIMEOUT)
    return " ".join(path.with_suffix(".pub").read_text().split()[:2])


def make_ca(path: Path, label: str) -> str:
    """A self-signed CA certificate (PEM) named `label`: a tenant's CA, whose pin kubeadm checks
    (tenant/ca_pin.py), or another cluster's."""
    key = path.with_suffix(".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", str(key), "-out", str(path), "-subj", f"/CN={label}", "-days", "1"],
                   capture_output=True, check=True, timeout=RUN_TIMEOUT)
    key.unlink()
    return path.read_text()


@dataclass
class Run:
    """One command the test ran, with what it printed."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass
class Sandbox:
    root: Path
    port: int
    host_key: str  # the sshd's public host key, `ssh-ed25519 AAAA...`
    keys: dict[str, Path]  # private key file of each user, and "wrong" (authorized for nobody)
    process: subprocess.Popen[bytes]
    api: Listener  # the tenant's API server, as the host reaches it
    konnectivity: Listener
    runs: list[Run] = field(default_factory=list)

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def tenant(self) -> Path:
        """The tenant API's state, as the local stand-in kubectl keeps it: `secrets/` (the
        bootstrap token Secrets that exist), `minted` (every one ever created), the Node's
        switches."""
        return self.root / "tenant"

    @property
    def host(self) -> Path:
        """The host's folders: kubernetes (/etc/kubernetes), cni-net.d, cni-bin, ip_forward..."""
        return self.root / "host"

    @property
    def remote_tmp(self) -> Path:
        """TMPDIR of the SSH sessions: where the join keeps its temporary files."""
        return self.root / "tmp"

    @property
    def local_tmp(self) -> Path:
        """TMPDIR of the local scripts (the tenant kubeconfig's and the keys' files)."""
        return self.root / "local-tmp"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def sysbin(self) -> Path:
        return self.root / "sysbin"

    @property
    def local_bin(self) -> Path:
        return self.root / "local-bin"

    @property
    def sshd_log(self) -> Path:
        return self.root / "sshd" / "log"

    @property
    def endpoint(self) -> str:
        """The tenant's API endpoint (host:port) in its kubeconfig."""
        return f"127.0.0.1:{self.api.port}"

    @property
    def ca(self) -> str:
        return (self.root / "ca.pem").read_text()

    def key_text(self, user: str) -> str:
        return self.keys[user].read_text()

    def reset(self) -> None:
        """A host with every prerequisite (containerd active, kubelet installed, v1.35.4 tools,
        overlay and br_netfilter loaded, forwarding on, the CNI plugins, the clock synchronized),
        nothing joined; a tenant whose Node exists and has no bootstrap token."""
        for folder in (self.state, self.tenant, self.remote_tmp, self.local_tmp, self.bin, self.local_bin,
                       *(self.host / name for name in ("kubernetes", "cni-net.d", "cni-bin"))):
            for child in folder.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        (self.host / "kubelet-config.yaml").unlink(missing_ok=True)
        for module in ("overlay", "br_netfilter"):
            self.module_mark(module).unlink(missing_ok=True)
        for name, text in TOOLS.items():
            self.tool(name, text)
        kubectl = self.local_bin / "kubectl"
        kubectl.write_text(KUBECTL.replace("@TENANT@", str(self.tenant)).replace("@ENDPOINT@", self.endpoint))
        kubectl.chmod(0o755)
        (self.tenant / "secrets").mkdir(mode=0o755)
        # Certificate requests: the host's kubeadm (any user) writes them, the local kubectl decides.
        (self.tenant / "csr").mkdir()
        (self.tenant / "csr").chmod(0o777)
        (self.tenant / "ready").write_text("True\n")
        (self.tenant / "kubelet-version").write_text(NODE_VERSION + "\n")
        self.write_state("kubeadm-version", NODE_VERSION)
        self.write_state("kubelet-version", NODE_VERSION)
        self.write_state("containerd-default-runtime", "runc")
        self.write_state("gpus", "0")
        self.write_state("gpu-name", "NVIDIA A100-SXM4-80GB\n")
        self.write_state("argv.log", "")
        for switch in ("active-containerd", "unit-kubelet", "enabled-kubelet"):
            self.write_state(switch, "")
        self.write_state("ca.pem", self.ca)
        self.write_state("ca-pin", ca_pin.ca_cert_hash(self.ca))
        self.modules(["overlay", "br_netfilter"])
        self.write_host("ip_forward", "1\n")
        self.write_host("swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
        for plugin in CNI_PLUGINS:
            self.cni_plugin(plugin)
        for folder in (self.state, self.host / "kubernetes", self.host / "cni-net.d"):
            folder.chmod(0o777)
        self.remote_tmp.chmod(0o1777)

    def tool(self, name: str, text: str) -> None:
        path = self.bin / name
        path.write_text(text.replace("@STATE@", str(self.state)).replace("@TENANT@", str(self.tenant)))
        path.chmod(0o755)

    def write_state(self, name: str, text: str) -> None:
        path = self.state / name
        path.write_text(text)
        path.chmod(0o666)

    def write_host(self, name: str, text: str) -> None:
        """Rewrite a bound file in place (a new inode would no longer be the one bound)."""
        with open(self.host / name, "w") as handle:
            handle.write(text)

    def modules(self, names: list[str]) -> None:
        self.write_host("modules", "".join(f"{name} 163840 1 - Live 0x0000000000000000\n" for name in names))

    def module_mark(self, name: str) -> Path:
        """What the module makes when loaded or built in (host_join.KERNEL_MODULE_MARKS): the
        sandbox's file, absent until a test writes it."""
        return self.host / f"module-mark-{name}"

    def cni_plugin(self, name: str) -> None:
        path = self.host / "cni-bin" / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)

    def joined(self, marker: str | None, ca: str | None = None) -> None:
        """The host as a join leaves it (with the tenant's CA, or another control plane's) and
        the marker it got (its whole text; None: a node another cluster set up)."""
        pki = self.host / "kubernetes" / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        (pki / "ca.crt").write_text(ca or self.ca)
        (self.host / "kubernetes" / "kubelet.conf").write_text("kubelet credentials\n")
        if marker is not None:
            (self.host / "kubernetes" / "kamaji-hami-platform-tenant").write_text(marker)
        (self.host / "cni-net.d" / "10-kindnet.conflist").write_text("{}\n")

    def marker(self) -> str | None:
        path = self.host / "kubernetes" / "kamaji-hami-platform-tenant"
        return path.read_text() if path.exists() else None

    def argv_log(self) -> list[str]:
        path = self.state / "argv.log"
        return path.read_text().splitlines() if path.exists() else []

    def kubectl_log(self) -> list[str]:
        path = self.tenant / "argv.log"
        return path.read_text().splitlines() if path.exists() else []

    def live_tokens(self) -> list[str]:
        """The bootstrap token Secrets the tenant has."""
        return sorted(path.stem for path in (self.tenant / "secrets").iterdir())

    def minted(self) -> list[str]:
        """Every bootstrap token Secret created, as the YAML kubectl was given."""
        path = self.tenant / "minted"
        return [doc for doc in path.read_text().split("---\n") if doc.strip()] if path.exists() else []

    def local_environment(self, env: dict[str, str]) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.local_bin}:{os.environ['PATH']}",
                "TMPDIR": str(self.local_tmp), **env}

    def start_local(self, command: str, stdin: str, **env: str) -> subprocess.Popen[str]:
        """What pulumi-command's local Command does with interpreter ["/bin/bash", "-c"]: the
        command as one argument, the stdin given, the environment variables added to the
        engine's environment (provider/pkg/provider/local/commandOutputs.go)."""
        # From a file: all of it there at once, as pulumi-command's strings.NewReader gives it.
        with tempfile.TemporaryFile("w+") as given:
            given.write(stdin)
            given.seek(0)
            return subprocess.Popen(["/bin/bash", "-c", command], stdin=given, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=self.local_environment(env),
                                    start_new_session=True)

    def finish(self, process: subprocess.Popen[str], started: float) -> Run:
        stdout, stderr = process.communicate(timeout=RUN_TIMEOUT)
        run = Run(list(map(str, process.args)), process.returncode, stdout, stderr,  # type: ignore[arg-type]
                  time.monotonic() - started)
        self.runs.append(run)
        return run

    def local(self, command: str, stdin: str = "", **env: str) -> Run:
        started = time.monotonic()
        return self.finish(self.start_local(command, stdin, **env), started)

    def stop(self) -> None:
        self.api.close()
        self.konnectivity.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def descendants(pid: int) -> list[int]:
    """The processes below `pid` (children, theirs, ...), from /proc."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], [pid]
    while queue:
        children = parents.get(queue.pop(), [])
        found += children
        queue += children
    return found


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")[:-1]
    except OSError:
        return []


RUN_SH = """set -eu
R=@ROOT@
mount -t tmpfs -o mode=755 none /run
mkdir -m 755 /run/sshd
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$R/etc-upper,workdir=$R/etc-work" /etc
grep -v '^root:' "$R/etc-lower-passwd" > /etc/passwd.new
cat "$R/passwd-extra" /etc/passwd.new > /etc/passwd && rm /etc/passwd.new
cat "$R/group-extra" >> /etc/group
mkdir -p /etc/kubernetes /etc/cni/net.d
mount --bind "$R/host/kubernetes" /etc/kubernetes
mount --bind "$R/host/cni-net.d" /etc/cni/net.d
mount -t tmpfs -o mode=755 none /opt
mkdir -p /opt/cni/bin
mount --bind "$R/host/cni-bin" /opt/cni/bin
mount --bind "$R/host/ip_forward" /proc/sys/net/ipv4/ip_forward
mount --bind "$R/host/swaps" /proc/swaps
mount -t cgroup2 none /sys/fs/cgroup
export LD_LIBRARY_PATH=@LIBS@
exec @SSHD@ -f "$R/sshd/config" -E "$R/sshd/log" -D
"""


def link_system_tools(sysbin: Path) -> None:
    """sysbin: a link to each of this machine's /usr/bin and /usr/sbin programs, less
    HOST_TOOLS_HELD_BACK."""
    for folder in (Path("/usr/bin"), Path("/usr/sbin")):
        for program in folder.iterdir():
            if program.name not in HOST_TOOLS_HELD_BACK and not (sysbin / program.name).exists():
                (sysbin / program.name).symlink_to(program)


def start(openssh: Path) -> Sandbox:
    """sshd in its mount namespace on a free loopback port, answering; stop() ends it all."""
    # Not under pytest's tmp_path (mode 0700): `deploy` must reach the stand-ins and folders.
    root = Path(tempfile.mkdtemp(prefix="khp-ssh-"))
    root.chmod(0o755)
    for folder in ("sshd", "etc-upper", "etc-work", "state", "tenant", "tmp", "local-tmp", "bin", "sysbin",
                   "local-bin", "host/kubernetes", "host/cni-net.d", "host/cni-bin",
                   *(f"home/{user}" for user in USERS)):
        (root / folder).mkdir(parents=True)
        (root / folder).chmod(0o755)
    link_system_tools(root / "sysbin")
    for name in ("ip_forward", "swaps", "modules"):
        (root / "host" / name).write_text("")
    make_ca(root / "ca.pem", "tenant CA")
    sshd = root / "sshd"
    host_key = keygen(sshd / "host_ed25519", "sandbox host key")
    keys: dict[str, Path] = {}
    for user in (*USERS, "wrong"):
        keys[user] = root / "keys" / user
        keys[user].parent.mkdir(exist_ok=True)
        public = keygen(keys[user], f"{user}@khp-ssh-test")
        if user in USERS:
            (sshd / f"authorized_keys.{user}").write_text(public + "\n")
    shutil.copy("/etc/passwd", root / "etc-lower-passwd")
    (root / "passwd-extra").write_text(
        f"root:x:0:0:root:{root}/home/root:/bin/sh\n"
        f"deploy:x:1000:1000::{root}/home/deploy:/bin/sh\n"
        f"jump:x:1001:1001::{root}/home/jump:/bin/sh\n"
        "sshd:x:65534:65534::/run/sshd:/usr/sbin/nologin\n")
    (root / "group-extra").write_text("deploy:x:1000:\njump:x:1001:\n")
    for user, uid in USERS.items():
        os.chown(root / "home" / user, uid, uid)
    port = free_port()
    (sshd / "config").write_text(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {sshd}/host_ed25519
AuthorizedKeysFile {sshd}/authorized_keys.%u
StrictModes no
UsePAM no
PidFile {sshd}/pid
PasswordAuthentication no
KbdInteractiveAuthentication no
LogLevel VERBOSE
SetEnv PATH={root}/bin:{root}/sysbin TMPDIR={root}/tmp
""")
    (root / "run.sh").write_text(RUN_SH.replace("@ROOT@", str(root))
                                 .replace("@LIBS@", str(openssh / "usr/lib/x86_64-linux-gnu"))
                                 .replace("@SSHD@", str(openssh / "usr/sbin/sshd")))
    with open(root / "run.log", "wb") as log:
        namespace = ["unshare", "--mount", "--propagation", "private"]
        process = subprocess.Popen([*namespace, "sh", str(root / "run.sh")], stdout=subprocess.DEVNULL,
                                   stderr=log, start_new_session=True)
    sandbox = Sandbox(root, port, host_key, keys, process, Listener(), Listener())
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                sandbox.stop()
                log = "".join(path.read_text() for path in (root / "run.log", sshd / "log") if path.exists())
                shutil.rmtree(root, ignore_errors=True)
                raise RuntimeError(f"sshd did not answer on 127.0.0.1:{port}:\n{log[-3000:]}") from None
            time.sleep(0.05)
    sandbox.reset()
    return sandbox


def remove(sandbox: Sandbox) -> None:
    sandbox.stop()
    shutil.rmtree(sandbox.root, ignore_errors=True)
