"""A tenant's API server, for real: etcd and kube-apiserver 1.35 built from their Go modules.

Started on loopback ports it picks, with the authorization modes and admission plugins the
platform gives a TenantControlPlane, an admin token (static token file, group
system:masters), a client CA that signs certificates for other users (a kubelet's: the user
system:node:<name> in the group system:nodes, as kubeadm's TLS bootstrap gives it) and a
service-account signing key made for the run. Everything it starts is stopped, and its folder
removed, when the context manager exits (also on failure).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import TenantConfig
from kamaji_hami_platform.tenant.control_plane import ADMISSION_CONTROLLERS
from tests import tiers

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "toolchain" / "build.sh"
ADMIN_TOKEN = "sim-admin-token"  # a throwaway credential of a throwaway API server
# Kamaji's own defaults for a tenant's kube-apiserver (26.8.2-edge internal/builders/
# controlplane/deployment.go `safeDefaults`); its admission plugins are the platform's list.
KAMAJI_APISERVER_DEFAULTS = (
    "--allow-privileged=true",
    "--enable-bootstrap-token-auth=true",
    "--authorization-mode=Node,RBAC",
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
)
METALLB_MODULE = "go.universe.tf/metallb"
METALLB_CRDS = ("metallb.io_ipaddresspools.yaml", "metallb.io_l2advertisements.yaml")
DOWNLOAD_TIMEOUT = 600
START_TIMEOUT = 120
COMMAND_TIMEOUT = 60


def toolchain() -> Path:
    """The folder with etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kubeadm and
    kubectl (built when missing)."""
    result = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, timeout=3600, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"toolchain build failed:\n{result.stderr[-3000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


def toolchain_or_skip() -> Path:
    """The toolchain, or a skip saying why there is none here (a failure when the sim tier is
    required: tests/tiers.py)."""
    try:
        return toolchain()
    except RuntimeError as error:
        tiers.unavailable("sim", f"the sim toolchain is not available here: {str(error).splitlines()[0]}")


def metallb_crds(tier: str) -> list[dict[str, Any]]:
    """MetalLB's IPAddressPool and L2Advertisement CRDs from its Go module at the pinned version."""
    module = f"{METALLB_MODULE}@v{versions.METALLB_CHART.version}"
    with tempfile.TemporaryDirectory() as empty:  # no go.mod around: a plain module download
        try:
            result = subprocess.run(["go", "mod", "download", "-json", module], cwd=empty,
                                    capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, check=False,
                                    env={**os.environ, "GOFLAGS": "-mod=mod"})
        except FileNotFoundError:
            tiers.unavailable(tier, "Go is not installed: MetalLB's CRDs come from its Go module")
    if result.returncode != 0:
        why = result.stdout.strip() or result.stderr.strip()
        tiers.unavailable(tier, f"cannot download {module}: {why}")
    folder = Path(json.loads(result.stdout)["Dir"]) / "config" / "crd" / "bases"
    return [yaml.safe_load((folder / name).read_text()) for name in METALLB_CRDS]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], capture_output=True, check=True, timeout=COMMAND_TIMEOUT)


def _ec_key_args(key: Path) -> list[str]:
    return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key)]


@dataclass
class TenantApi:
    """A running API server and a kubectl that talks to it as the admin (or with another
    kubeconfig, e.g. a node's)."""

    bin: Path
    kubeconfig: Path
    url: str
    work: Path | None = None  # the run's folder, with the client CA

    def kubectl(
        self, *args: str, stdin: str | None = None, as_user: str | None = None,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / "kubectl"), "--kubeconfig", str(kubeconfig or self.kubeconfig), *args]
        if as_user:
            command.insert(3, f"--as={as_user}")
        return subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
        )

    def client_kubeconfig(self, user: str, groups: tuple[str, ...] = ()) -> Path:
        """A kubeconfig with a client certificate the API server trusts: CN the user, O each group
        (how a kubelet authenticates: system:node:<name>, O system:nodes)."""
        assert self.work is not None, "started without a client CA"
        stem = str(self.work / user.replace(":", "-"))
        key, csr, crt = f"{stem}.key", f"{stem}.csr", f"{stem}.crt"
        subject = "".join(f"/O={group}" for group in groups) + f"/CN={user}"
        _openssl("req", "-new", *_ec_key_args(Path(key)), "-subj", subject, "-out", csr)
        ca = self.work / "client-ca"
        _openssl("x509", "-req", "-in", csr, "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
                 "-CAcreateserial", "-CAserial", f"{ca}.srl", "-days", "1", "-out", crt)
        kubeconfig = Path(f"{stem}.kubeconfig")
        kubeconfig.write_text(yaml.safe_dump(_kubeconfig(self.url, {"client-certificate": crt,
                                                                    "client-key": key})))
        kubeconfig.chmod(0o600)
        return kubeconfig

    def token_kubeconfig(self, token: str) -> Path:
        """A kubeconfig that authenticates with a bearer token (a bootstrap token, id.secret)."""
        assert self.work is not None, "started without a work folder"
        kubeconfig = self.work / f"token-{token.split('.', 1)[0]}.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(_kubeconfig(self.url, {"token": token})))
        kubeconfig.chmod(0o600)
        return kubeconfig

    def try_apply(
        self, objects: list[dict[str, Any]], manager: str = "kamaji-hami-platform", force: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Server-side apply, as pulumi-kubernetes does (`force`: as with pulumi.com/patchForce)."""
        document = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        flags = ["--force-conflicts"] if force else []
        return self.kubectl(
            "apply", "--server-side", f"--field-manager={manager}", *flags, "-f", "-", stdin=document
        )

    def apply(
        self, objects: list[dict[str, Any]], manager: str = "kamaji-hami-platform", force: bool = False
    ) -> str:
        """Server-side apply that must succeed: the real API server validates and admits."""
        result = self.try_apply(objects, manager, force)
        if result.returncode != 0:
            raise AssertionError(f"server-side apply refused:\n{result.stderr}")
        return result.stdout

    def get(self, *args: str) -> dict[str, Any]:
        result = self.kubectl("get", *args, "-o", "json")
        if result.returncode != 0:
            raise AssertionError(result.stderr)
        return json.loads(result.stdout)

    def wait_established(self, crds: list[dict[str, Any]], timeout: float = 60.0) -> None:
        """Wait until each CRD is served. Polls the Established condition itself: `kubectl wait
        --for=condition=established` fails at once ("accessor error: <nil>") when it reads the CRD
        before the API server wrote any condition, a race CI met."""
        deadline = time.monotonic() + timeout
        for crd in crds:
            name = crd["metadata"]["name"]
            while not _established(self.get("crd", name)):
                if time.monotonic() > deadline:
                    raise AssertionError(f"CRD {name} not established after {timeout:.0f} s")
                time.sleep(0.2)


def _established(crd: dict[str, Any]) -> bool:
    conditions = crd.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _kubeconfig(url: str, user: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "sim",
        "clusters": [{"name": "sim", "cluster": {"server": url, "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "user"}}],
        "users": [{"name": "user", "user": user}],
    }


def _wait_ready(api: TenantApi, processes: list[subprocess.Popen], logs: list[Path]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        for process, log in zip(processes, logs, strict=True):
            if process.poll() is not None:
                raise RuntimeError(f"{log.stem} exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        ready = api.kubectl("get", "--raw", "/readyz")
        # The bootstrap RBAC roles and priority classes come from post-start hooks.
        if (
            ready.returncode == 0
            and api.kubectl("get", "priorityclass", "system-node-critical").returncode == 0
        ):
            return
        time.sleep(1)
    raise RuntimeError(f"kube-apiserver not ready within {START_TIMEOUT}s:\n{logs[-1].read_text()[-3000:]}")


@contextmanager
def tenant_api(tenant: TenantConfig, bin_dir: Path) -> Iterator[TenantApi]:
    """etcd + kube-apiserver for one tenant, on free loopback ports; stopped on exit."""
    work = Path(tempfile.mkdtemp(prefix=f"sim-{tenant.name}-"))
    processes: list[subprocess.Popen] = []
    try:
        subprocess.run(
            ["openssl", "genrsa", "-out", str(work / "sa.key"), "2048"],
            capture_output=True,
            check=True,
            timeout=COMMAND_TIMEOUT,
        )
        (work / "tokens.csv").write_text(f'{ADMIN_TOKEN},sim-admin,sim-admin,"system:masters"\n')
        _openssl("req", "-x509", *_ec_key_args(work / "client-ca.key"), "-subj", "/CN=sim-client-ca",
                 "-days", "1", "-out", str(work / "client-ca.crt"))
        etcd_client, etcd_peer, api_port = free_port(), free_port(), free_port()
        logs = [work / "etcd.log", work / "kube-apiserver.log"]
        etcd = [
            str(bin_dir / "etcd"),
            "--data-dir",
            str(work / "etcd"),
            "--listen-client-urls",
            f"http://127.0.0.1:{etcd_client}",
            "--advertise-client-urls",
            f"http://127.0.0.1:{etcd_client}",
            "--listen-peer-urls",
            f"http://127.0.0.1:{etcd_peer}",
            "--initial-advertise-peer-urls",
            f"http://127.0.0.1:{etcd_peer}",
            "--initial-cluster",
            f"default=http://127.0.0.1:{etcd_peer}",
        ]
        apiserver = [
            str(bin_dir / "kube-apiserver"),
            "--etcd-servers",
            f"http://127.0.0.1:{etcd_client}",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            str(api_port),
            "--cert-dir",
            str(work / "certs"),
            "--token-auth-file",
            str(work / "tokens.csv"),
            "--client-ca-file",
            str(work / "client-ca.crt"),
            *KAMAJI_APISERVER_DEFAULTS,
            "--enable-admission-plugins",
            ",".join(ADMISSION_CONTROLLERS),
            "--service-cluster-ip-range",
            tenant.service_cidr,
            "--service-account-key-file",
            str(work / "sa.key"),
            "--service-account-signing-key-file",
            str(work / "sa.key"),
            "--api-audiences",
            "https://kubernetes.default.svc.cluster.local",
        ]
        for command, log in zip((etcd, apiserver), logs, strict=True):
            processes.append(
                subprocess.Popen(
                    command, stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=work, start_new_session=True
                )
            )
            if command is etcd:
                time.sleep(1)
        url = f"https://127.0.0.1:{api_port}"
        kubeconfig = work / "admin.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(_kubeconfig(url, {"token": ADMIN_TOKEN})))
        kubeconfig.chmod(0o600)
        api = TenantApi(bin_dir, kubeconfig, url, work)
        _wait_ready(api, processes, logs)
        yield api
    finally:
        # kube-apiserver first, and waited for: with etcd gone under it, its shutdown hangs until
        # the kill (about 27 s each time, measured); with etcd still there it takes about 1 s.
        for process in reversed(processes):
            if process.poll() is None:
                os.killpg(process.pid, 15)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
