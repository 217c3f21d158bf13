"""What the engine's Kubernetes provider reaches over the network, answered on this machine: an
HTTPS proxy it is given through `HTTPS_PROXY` (tests/engine/engine.py: the provider alone), which
answers `CONNECT` for two kinds of address and refuses every other one: nothing is forwarded off
the machine, and what tried is listed (`refused`) for the session to fail on.

- The Helm repositories the program names: with a certificate of a CA made for the run (trusted
  through `SSL_CERT_FILE`), it serves their `index.yaml` and chart archives.
- Tenant API addresses (`tunnel`): the address a tenant's kubeconfig names (in the live platform
  a MetalLB address on the tenant's Docker network) joined to a sim tier API server on loopback,
  byte for byte (the kubeconfig skips TLS verification, as the sim's do).

Why the engine needs them: pulumi-kubernetes loads a Helm release's chart in `Check` whenever the
release's inputs are all known (v4.25.0 `pkg/provider/helm_release.go` `Check`, `helmLoad`), in a
preview too: every preview of a deployed stack, and of an existing cluster's, fetches the
repository's index and the chart, as a user's `pulumi preview` does.

What is served: stand-in charts of the pinned names and versions (`Chart.yaml`, `values.yaml`, no
templates). The tier judges Pulumi's plan, and the provider's `Check` and `Diff` read a chart's
metadata only (`Check` takes the chart's `version`); what a chart installs is the live tier's.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import socket
import socketserver
import ssl
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from kamaji_hami_platform import versions
from tests.sim.cluster import _ec_key_args, _openssl

HTTPS_PORT = "443"


@dataclass(frozen=True)
class Chart:
    name: str
    version: str
    repository: str  # https://host/path, as the program names it
    app_version: str = ""


def pinned_charts() -> list[Chart]:
    """Every chart the platform installs from a repository (kamaji_hami_platform/versions.py)."""
    return [Chart(pin.name, pin.version, pin.repository.rstrip("/"))
            for pin in (versions.CERT_MANAGER_CHART, versions.METALLB_CHART, versions.HAMI_CHART)]


def chart_archive(chart: Chart) -> bytes:
    """A chart archive as `helm package` lays it out: `<name>/Chart.yaml`, `<name>/values.yaml`."""
    files = {
        "Chart.yaml": yaml.safe_dump({"apiVersion": "v2", "name": chart.name, "version": chart.version,
                                      "appVersion": chart.app_version or chart.version,
                                      "description": "engine tier stand-in of the pinned chart"}),
        "values.yaml": "{}\n",
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{chart.name}/{name}")
            info.size = len(data)
            info.mtime = 0
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def write_local_chart(folder: Path, name: str, version: str) -> None:
    """A stand-in chart in a folder (for a chart the program takes from a local path)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Chart.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v2", "name": name, "version": version, "appVersion": version,
         "description": "engine tier stand-in of the pinned chart"}))
    (folder / "values.yaml").write_text("{}\n")


def _files(charts: list[Chart]) -> dict[tuple[str, str], bytes]:
    """(host, path) -> body: each repository's index.yaml and its charts' archives."""
    files: dict[tuple[str, str], bytes] = {}
    indexes: dict[tuple[str, str], dict] = {}
    for chart in charts:
        url = urlsplit(chart.repository)
        base = url.path.rstrip("/")
        archive = chart_archive(chart)
        archive_path = f"{base}/{chart.name}-{chart.version}.tgz"
        files[(url.hostname or "", archive_path)] = archive
        index = indexes.setdefault((url.hostname or "", base), {"apiVersion": "v1", "entries": {}})
        index["entries"].setdefault(chart.name, []).append({
            "apiVersion": "v2", "name": chart.name, "version": chart.version,
            "appVersion": chart.app_version or chart.version,
            "digest": hashlib.sha256(archive).hexdigest(),
            "urls": [f"https://{url.hostname}{archive_path}"]})
    for (host, base), index in indexes.items():
        files[(host, f"{base}/index.yaml")] = yaml.safe_dump(index).encode()
    return files


class _ChartHandler(BaseHTTPRequestHandler):
    """GET of a served file, over the TLS connection the proxy opened for one host."""

    server: _Proxy

    def do_GET(self) -> None:
        body = self.server.files.get((self.server_host, self.path.split("?")[0]))
        if body is None:
            self.server.refused.append(f"https://{self.server_host}{self.path} (not served)")
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        self.server.log.append(format % args)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


class _ProxyHandler(socketserver.StreamRequestHandler):
    server: _Proxy

    def handle(self) -> None:
        request = self.rfile.readline(65537).decode("latin-1").split()
        while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
            pass
        method, target = [*request, "", ""][:2]
        host, _, port = target.rpartition(":")
        if method == "CONNECT" and target in self.server.tunnels:
            self._tunnel(self.server.tunnels[target])
            return
        if method != "CONNECT" or port != HTTPS_PORT or host not in self.server.hosts:
            self.server.refused.append(f"{method} {target}")
            self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        with self.server.tls.wrap_socket(self.connection, server_side=True) as tls:
            handler = _ChartHandler.__new__(_ChartHandler)
            handler.server_host = host  # type: ignore[attr-defined]
            _ChartHandler.__init__(handler, tls, self.client_address, self.server)

    def _tunnel(self, loopback_port: int) -> None:
        with socket.create_connection(("127.0.0.1", loopback_port), timeout=30) as upstream:
            upstream.settimeout(None)
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self.wfile.flush()
            back = threading.Thread(target=_pipe, args=(upstream, self.connection), daemon=True)
            back.start()
            _pipe(self.connection, upstream)
            back.join()


class _Proxy(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, files: dict[tuple[str, str], bytes], tls: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.files = files
        self.hosts = {host for host, _ in files}
        self.tls = tls
        self.tunnels: dict[str, int] = {}  # "address:port" -> a loopback port
        self.refused: list[str] = []
        self.log: list[str] = []


def _certificates(folder: Path, hosts: set[str]) -> tuple[Path, Path, Path]:
    """A CA made for the run and one server certificate for every host (subjectAltName)."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = folder / "ca.key", folder / "ca.crt"
    key, request, cert = folder / "server.key", folder / "server.csr", folder / "server.crt"
    _openssl("req", "-x509", *_ec_key_args(ca_key), "-subj", "/CN=engine-tier-chart-ca", "-days", "1",
             "-out", str(ca_cert))
    _openssl("req", "-new", *_ec_key_args(key), "-subj", "/CN=engine-tier-charts", "-out", str(request))
    extensions = folder / "san.cnf"
    extensions.write_text("subjectAltName=" + ",".join(f"DNS:{host}" for host in sorted(hosts)) + "\n")
    _openssl("x509", "-req", "-in", str(request), "-CA", str(ca_cert), "-CAkey", str(ca_key),
             "-CAcreateserial", "-days", "1", "-extfile", str(extensions), "-out", str(cert))
    return ca_cert, cert, key


@dataclass
class TierProxy:
    proxy: _Proxy
    ca_cert: Path

    def tunnel(self, address: str, loopback_port: int) -> None:
        """`CONNECT address` (host:port) reaches this loopback port from now on."""
        self.proxy.tunnels[address] = loopback_port

    def close_tunnel(self, address: str) -> None:
        self.proxy.tunnels.pop(address, None)

    def env(self) -> dict[str, str]:
        """What the engine's processes need to reach the repositories (and only them)."""
        address = f"http://127.0.0.1:{self.proxy.server_address[1]}"
        # Loopback stays direct: the provider's gRPC with the engine, and the management cluster's
        # sim API server.
        loopback = "127.0.0.1,localhost,::1"
        return {"HTTPS_PROXY": address, "HTTP_PROXY": address, "https_proxy": address,
                "http_proxy": address, "SSL_CERT_FILE": str(self.ca_cert), "NO_PROXY": loopback,
                "no_proxy": loopback}

    @property
    def refused(self) -> list[str]:
        return list(self.proxy.refused)


@contextmanager
def tier_proxy(folder: Path, charts: list[Chart]) -> Iterator[TierProxy]:
    files = _files(charts)
    ca_cert, cert, key = _certificates(folder, {host for host, _ in files})
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    proxy = _Proxy(files, tls)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield TierProxy(proxy, ca_cert)
    finally:
        proxy.shutdown()
        proxy.server_close()


def loopback_port_closed() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
