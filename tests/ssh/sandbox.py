"""A worker host for real over SSH: Debian's sshd in a mount namespace, with stand-in tools.

sshd (toolchain/openssh.sh: the Debian package unpacked, never installed) runs on a loopback
port in a private mount namespace where /etc is an overlay (its passwd gets the privilege
separation user, a root with a temporary home and /bin/sh as shell, and the users `deploy` and
`jump`), and the paths a join touches are bound to folders of the sandbox: /etc/kubernetes,
/etc/cni/net.d, /opt/cni/bin (under a tmpfs on /opt), /proc/sys/net/ipv4/ip_forward and
/proc/swaps. This kernel has no module support, so there is no /proc/modules to bind over: the
scripts read host_join.PROC_MODULES, which the tests point at a sandbox file. The machine itself
is untouched; everything goes with the namespace when sshd is stopped.

The host's tools (kubeadm, kubelet, systemctl, containerd, nvidia-smi, nvidia-container-runtime,
sudo) are stand-ins first on the sessions' PATH: small sh scripts that log their argv and act on
switch files in the state folder, never printing their stdin. Each user authenticates with its own
key only (AuthorizedKeysFile per user).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPENSSH = ROOT / "toolchain" / "openssh.sh"
START_TIMEOUT = 15
# Each ssh or script run; the slowest case (a wait until Ready that gives up) takes a few seconds.
RUN_TIMEOUT = 60
USERS = {"root": 0, "deploy": 1000, "jump": 1001}
# What a bootstrap token and its CA hash look like, as the stand-in kubeadm mints them.
TOKEN = "abcdef.0123456789abcdef"
CA_HASH = "sha256:" + "0123456789abcdef" * 4
JOIN_ENDPOINT = "10.0.0.1:6443"
NODE_VERSION = "v1.35.4"
CNI_PLUGINS = ("host-local", "loopback", "ptp", "portmap")

KUBEADM = r"""#!/bin/sh
# stand-in kubeadm
S=@STATE@
printf 'kubeadm %s\n' "$*" >> "$S/argv.log"
arg() { want=$1; shift; while [ $# -gt 1 ]; do [ "$1" = "$want" ] && { echo "$2"; return; }; shift; done; }
case "$1" in
  version) cat "$S/kubeadm-version" ;;
  token)
    kc=$(arg --kubeconfig "$@")
    { echo "$kc"; stat -c %a "$kc"; sha256sum < "$kc" | cut -d ' ' -f 1; } > "$S/kubeconfig-seen"
    case "$2" in
      create)
        if [ -f "$S/token-create-fails" ]; then echo "timed out waiting for the condition" >&2; exit 1; fi
        echo "W1203 a warning kubeadm prints on stderr" >&2
        touch "$S/token-live"
        echo "kubeadm join @ENDPOINT@ --token @TOKEN@ --discovery-token-ca-cert-hash @CA_HASH@ " ;;
      delete) rm -f "$S/token-live" ;;
    esac ;;
  join)
    config=$(arg --config "$@")
    { stat -c %a "$config"; cat "$config"; } > "$S/join-config"
    mkdir -p /etc/kubernetes/pki && cp "$S/ca.pem" /etc/kubernetes/pki/ca.crt
    if [ -f "$S/join-fails" ]; then
      echo "error execution phase kubelet-start: token @TOKEN@ (@CA_HASH@) rejected" >&2; exit 1
    fi
    echo "kubelet credentials" > /etc/kubernetes/kubelet.conf
    echo "This node has joined the cluster" ;;
  reset)
    if [ -f "$S/reset-fails" ]; then echo "failed to stop the kubelet" >&2; exit 1; fi
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
runc='[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]'
[ -f @STATE@/systemd-cgroup ] && printf '%s\\n  SystemdCgroup = true\\n' "$runc"

# containerd 2.x prints literal strings ('nvidia'), 1.x basic ones ("nvidia"): the state says which.
quote='"'
[ -f @STATE@/containerd-2 ] && quote="'"
section='[plugins."io.containerd.grpc.v1.cri".containerd]'
printf 'version = 2\\n%s\\n  default_runtime_name = %s%s%s\\n' \\
  "$section" "$quote" "$(cat @STATE@/containerd-default-runtime)" "$quote"
""",
    "nvidia-smi": """#!/bin/sh
printf 'nvidia-smi %s\\n' "$*" >> @STATE@/argv.log
for i in $(seq 0 $(($(cat @STATE@/gpus) - 1))); do
  echo "GPU $i: NVIDIA A100-SXM4-80GB (UUID: GPU-0000000$i)"
done
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
# stand-in kubectl on the Pulumi host
S=@STATE@
printf 'kubectl %s\n' "$*" >> "$S/argv.log"
kc="" verb="" name="" output=""
while [ $# -gt 0 ]; do
  case "$1" in
    --kubeconfig) kc=$2; shift ;;
    -o) output=$2; shift ;;
    --*) ;;
    *) if [ -z "$verb" ]; then verb=$1; elif [ "$1" != node ]; then name=$1; fi ;;
  esac
  shift
done
{ echo "$kc"; stat -c %a "$kc"; sha256sum < "$kc" | cut -d ' ' -f 1; } > "$S/kubeconfig-seen"
if [ -f "$S/unreachable" ]; then
  echo "Unable to connect to the server: dial tcp @ENDPOINT@: connect: connection refused" >&2; exit 1
fi
if [ -f "$S/node-missing" ] && [ "$verb" != delete ]; then
  echo "Error from server (NotFound): nodes \"$name\" not found" >&2; exit 1
fi
case "$verb" in
  get)
    case "$output" in
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
    """A PEM that stands for a cluster CA (the scripts only compare it byte for byte)."""
    body = hashlib.sha256(label.encode()).hexdigest() * 2
    pem = f"-----BEGIN CERTIFICATE-----\n{body[:64]}\n{body[64:]}\n-----END CERTIFICATE-----\n"
    path.write_text(pem)
    return pem


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
    runs: list[Run] = field(default_factory=list)

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def kubectl_state(self) -> Path:
        return self.root / "kubectl-state"

    @property
    def host(self) -> Path:
        """The host's folders: kubernetes (/etc/kubernetes), cni-net.d, cni-bin, ip_forward..."""
        return self.root / "host"

    @property
    def remote_tmp(self) -> Path:
        """TMPDIR of the SSH sessions: where the join keeps its temporary files."""
        return self.root / "tmp"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def local_bin(self) -> Path:
        return self.root / "local-bin"

    @property
    def sshd_log(self) -> Path:
        return self.root / "sshd" / "log"

    def key_text(self, user: str) -> str:
        return self.keys[user].read_text()

    def reset(self) -> None:
        """A host with every prerequisite (containerd active, kubelet installed, v1.35.4 tools,
        overlay and br_netfilter loaded, forwarding on, the CNI plugins), nothing joined; a
        tenant whose node exists."""
        for folder in (self.state, self.kubectl_state, self.remote_tmp, self.bin, self.local_bin,
                       *(self.host / name for name in ("kubernetes", "cni-net.d", "cni-bin"))):
            for child in folder.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        for name, text in TOOLS.items():
            self.tool(name, text)
        kubectl = self.local_bin / "kubectl"
        kubectl.write_text(KUBECTL.replace("@STATE@", str(self.kubectl_state))
                           .replace("@ENDPOINT@", JOIN_ENDPOINT))
        kubectl.chmod(0o755)
        self.write_state("kubeadm-version", NODE_VERSION)
        self.write_state("kubelet-version", NODE_VERSION)
        self.write_state("containerd-default-runtime", "runc")
        self.write_state("gpus", "0")
        self.write_state("argv.log", "")
        (self.kubectl_state / "ready").write_text("True\n")
        for switch in ("active-containerd", "unit-kubelet", "enabled-kubelet"):
            self.write_state(switch, "")
        (self.state / "ca.pem").write_text((self.root / "ca.pem").read_text())
        self.modules(["overlay", "br_netfilter"])
        self.write_host("ip_forward", "1\n")
        self.write_host("swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
        for plugin in CNI_PLUGINS:
            self.cni_plugin(plugin)
        for folder in (self.state, self.host / "kubernetes", self.host / "cni-net.d", self.remote_tmp):
            folder.chmod(0o1777 if folder == self.remote_tmp else 0o777)

    def tool(self, name: str, text: str) -> None:
        path = self.bin / name
        path.write_text(text.replace("@STATE@", str(self.state)).replace("@TOKEN@", TOKEN)
                        .replace("@CA_HASH@", CA_HASH).replace("@ENDPOINT@", JOIN_ENDPOINT))
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

    def cni_plugin(self, name: str) -> None:
        path = self.host / "cni-bin" / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)

    def joined(self, ca: str | None = None,
               marker: str | None = "kamaji-hami-platform tenant team-a") -> None:
        """The host as a join leaves it (with the test CA, or another control plane's), and the
        platform's marker of the tenant it joined (None: a node another cluster set up)."""
        pki = self.host / "kubernetes" / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        (pki / "ca.crt").write_text(ca or (self.root / "ca.pem").read_text())
        (self.host / "kubernetes" / "kubelet.conf").write_text("kubelet credentials\n")
        if marker is not None:
            (self.host / "kubernetes" / "kamaji-hami-platform-tenant").write_text(marker + "\n")
        (self.host / "cni-net.d" / "10-kindnet.conflist").write_text("{}\n")

    def argv_log(self) -> list[str]:
        path = self.state / "argv.log"
        return path.read_text().splitlines() if path.exists() else []

    def kubectl_log(self) -> list[str]:
        path = self.kubectl_state / "argv.log"
        return path.read_text().splitlines() if path.exists() else []

    def _run(self, argv: list[str], stdin: str, env: dict[str, str]) -> Run:
        start = time.monotonic()
        result = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env,
                                timeout=RUN_TIMEOUT, check=False)
        run = Run(argv, result.returncode, result.stdout, result.stderr, time.monotonic() - start)
        self.runs.append(run)
        return run

    def ssh(self, user: str, command: str, stdin: str) -> Run:
        """What pulumi-command's remote Command does: one exec request with the command string,
        stdin piped, no host key check (no hostKey given), key authentication only."""
        argv = ["ssh", "-F", "none", "-i", str(self.keys[user]), "-p", str(self.port), "-o", "BatchMode=yes",
                "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", f"{user}@127.0.0.1", command]
        return self._run(argv, stdin, dict(os.environ))

    def local(self, script: str, **env: str) -> Run:
        """What pulumi-command's local Command does with interpreter ["/bin/bash", "-c"]: the
        script as one argument, the environment variables added to the engine's environment."""
        environment = {**os.environ, "PATH": f"{self.local_bin}:{os.environ['PATH']}", **env}
        return self._run(["/bin/bash", "-c", script], "", environment)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


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
export LD_LIBRARY_PATH=@LIBS@
exec @SSHD@ -f "$R/sshd/config" -E "$R/sshd/log" -D
"""


def start(openssh: Path) -> Sandbox:
    """sshd in its mount namespace on a free loopback port, answering; stop() ends it all."""
    # Not under pytest's tmp_path (mode 0700): `deploy` must reach the stand-ins and folders.
    root = Path(tempfile.mkdtemp(prefix="khp-ssh-"))
    root.chmod(0o755)
    for folder in ("sshd", "etc-upper", "etc-work", "state", "kubectl-state", "tmp", "bin", "local-bin",
                   "host/kubernetes", "host/cni-net.d", "host/cni-bin", *(f"home/{user}" for user in USERS)):
        (root / folder).mkdir(parents=True)
        (root / folder).chmod(0o755)
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
SetEnv PATH={root}/bin:/usr/bin:/bin TMPDIR={root}/tmp
""")
    (root / "run.sh").write_text(RUN_SH.replace("@ROOT@", str(root))
                                 .replace("@LIBS@", str(openssh / "usr/lib/x86_64-linux-gnu"))
                                 .replace("@SSHD@", str(openssh / "usr/sbin/sshd")))
    with open(root / "run.log", "wb") as log:
        namespace = ["unshare", "--mount", "--propagation", "private"]
        process = subprocess.Popen([*namespace, "sh", str(root / "run.sh")], stdout=subprocess.DEVNULL,
                                   stderr=log, start_new_session=True)
    sandbox = Sandbox(root, port, host_key, keys, process)
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
