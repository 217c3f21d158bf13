"""kubeadm's CA pin (tenant/ca_pin.py) equals what openssl computes, for RSA and ECDSA CAs, and a
kubeconfig without CA data gives none."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kamaji_hami_platform.tenant import ca_pin

pytestmark = pytest.mark.unit


def openssl_pin(pem: Path) -> str:
    """sha256 over the DER SubjectPublicKeyInfo, as kubeadm's docs compute it with openssl."""
    public = subprocess.run(["openssl", "x509", "-in", str(pem), "-pubkey", "-noout"], capture_output=True,
                            check=True, timeout=30).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=public, capture_output=True,
                         check=True, timeout=30).stdout
    return "sha256:" + hashlib.sha256(der).hexdigest()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the test CAs")
@pytest.mark.parametrize("key", [["-newkey", "rsa:2048"],
                                 ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]])
def test_the_pin_is_kubeadms(tmp_path, key):
    pem = tmp_path / "ca.pem"
    subprocess.run(["openssl", "req", "-x509", *key, "-nodes", "-keyout", str(tmp_path / "ca.key"),
                    "-out", str(pem), "-subj", "/CN=kubernetes", "-days", "1"],
                   capture_output=True, check=True, timeout=60)
    assert ca_pin.ca_cert_hash(pem.read_text()) == openssl_pin(pem)
    kubeconfig = yaml.safe_dump({
        "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "t", "user": "u"}}],
        "clusters": [{"name": "t", "cluster": {"server": "https://10.0.0.1:6443",
                                               "certificate-authority-data": base64.b64encode(
                                                   pem.read_bytes()).decode()}}]})
    assert ca_pin.kubeconfig_ca_hash(kubeconfig) == openssl_pin(pem)


def test_a_kubeconfig_without_ca_data_has_no_pin():
    assert ca_pin.kubeconfig_ca_hash("current-context: c\ncontexts: []\nclusters: []\n") == ""


def test_what_is_not_a_certificate_is_refused():
    with pytest.raises(ValueError):
        ca_pin.subject_public_key_info(b"\x02\x01\x00")
