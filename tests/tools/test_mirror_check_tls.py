"""`make up`'s mirror check (kamaji_hami_platform/tools/mirror_check.py) against a registry stand-in
on loopback that answers every manifest: over plain HTTP it is asked over HTTP and passes (helm
v3.18.6, in the Kubernetes provider, falls back to plain HTTP the same way: pkg/registry/
fallback.go), over TLS with a CA this machine does not trust it is refused naming the certificate
(before, the check fell back to HTTP on it and reported every image missing), and with that CA in
SSL_CERT_FILE it passes. The real registry is the live tier's (tests/live/test_mirror_check.py,
make live-up)."""

from __future__ import annotations

import http.server
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kamaji_hami_platform.tools import mirror_check

pytestmark = pytest.mark.unit


class EveryManifest(http.server.BaseHTTPRequestHandler):
    """A registry that holds everything: 200 to `GET /v2/` and to every manifest HEAD."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, *args: object) -> None:
        pass


def serve(context: ssl.SSLContext | None) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EveryManifest)
    if context:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"localhost:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and a server certificate for localhost, made with openssl."""
    folder = tmp_path_factory.mktemp("tls")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
            "-days", "2", "-subj", "/CN=test mirror CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=localhost")
    (folder / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "2", "-extfile", "san.ext")
    return folder


@pytest.fixture
def plain_mirror() -> Iterator[str]:
    yield from serve(None)


@pytest.fixture
def tls_mirror(tls: Path) -> Iterator[str]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls / "server.crt", tls / "server.key")
    yield from serve(context)


def check(dev_config: dict, mirror: str, root: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str], ca: Path | None = None) -> tuple[int, str]:
    settings = {**dev_config, "images": {"mirror": mirror}}
    (root / "Pulumi.m.yaml").write_text(yaml.safe_dump(
        {"config": {f"kamaji-hami-platform:{key}": value for key, value in settings.items()}}))
    monkeypatch.delenv(mirror_check.SKIP_ENV, raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca or root / "no-ca.pem"))
    status = mirror_check.main(["--stack", "m", "--root", str(root), "--mode", "up"])
    return status, capsys.readouterr().err


def test_a_plain_http_mirror_is_asked_over_http(dev_config, plain_mirror, tmp_path, monkeypatch, capsys):
    status, err = check(dev_config, plain_mirror, tmp_path, monkeypatch, capsys)
    assert status == 0, err
    assert "images and charts are there" in err


def test_a_mirror_whose_certificate_is_not_trusted_is_named_as_such(dev_config, tls_mirror, tmp_path,
                                                                   monkeypatch, capsys):
    status, err = check(dev_config, tls_mirror, tmp_path, monkeypatch, capsys)
    assert status == 1
    assert "its TLS certificate is not trusted here" in err and "plain HTTP" not in err


def test_a_tls_mirror_this_machine_trusts_passes(dev_config, tls_mirror, tls, tmp_path, monkeypatch, capsys):
    status, err = check(dev_config, tls_mirror, tmp_path, monkeypatch, capsys, ca=tls / "ca.crt")
    assert status == 0, err
    assert "images and charts are there" in err
