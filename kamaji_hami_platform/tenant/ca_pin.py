"""The pin `kubeadm join` checks a tenant's CA against: `sha256:` and the hex SHA-256 of the CA
certificate's DER-encoded SubjectPublicKeyInfo (kubernetes v1.35 cmd/kubeadm/app/util/pubkeypin/
pubkeypin.go `Hash`: sha256 over `certificate.RawSubjectPublicKeyInfo`). Computed here, with the
standard library, so neither this host nor a worker host needs openssl.
"""

from __future__ import annotations

import base64
import hashlib
import ssl

import yaml

# DER tags (X.690): a SEQUENCE, and the [0] EXPLICIT version of a TBSCertificate (RFC 5280 4.1).
_SEQUENCE, _VERSION = 0x30, 0xA0


def _element(der: bytes, offset: int) -> tuple[int, int, int]:
    """(tag, where its contents start, where the element ends) of the DER element at `offset`."""
    tag, length = der[offset], der[offset + 1]
    start = offset + 2
    if length & 0x80:
        size = length & 0x7F
        length = int.from_bytes(der[start:start + size], "big")
        start += size
    if start + length > len(der):
        raise ValueError("truncated DER")
    return tag, start, start + length


def _children(der: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    """(tag, offset, end) of each element inside a constructed element's contents."""
    found, offset = [], start
    while offset < end:
        tag, _, element_end = _element(der, offset)
        found.append((tag, offset, element_end))
        offset = element_end
    return found


def subject_public_key_info(certificate_der: bytes) -> bytes:
    """The DER of a certificate's SubjectPublicKeyInfo (RFC 5280 4.1: the seventh field of its
    TBSCertificate, counting the optional version)."""
    tag, start, _ = _element(certificate_der, 0)
    if tag != _SEQUENCE:
        raise ValueError("not a DER certificate")
    tbs_tag, tbs_start, tbs_end = _element(certificate_der, start)
    if tbs_tag != _SEQUENCE:
        raise ValueError("not a DER certificate")
    fields = _children(certificate_der, tbs_start, tbs_end)
    if fields and fields[0][0] == _VERSION:
        fields = fields[1:]
    # serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
    if len(fields) < 6 or fields[5][0] != _SEQUENCE:
        raise ValueError("a certificate without a SubjectPublicKeyInfo")
    _, offset, spki_end = fields[5]
    return certificate_der[offset:spki_end]


def ca_cert_hash(pem: str) -> str:
    """kubeadm's `--discovery-token-ca-cert-hash` of a PEM CA certificate."""
    der = ssl.PEM_cert_to_DER_cert(pem.strip() + "\n")
    return "sha256:" + hashlib.sha256(subject_public_key_info(der)).hexdigest()


def kubeconfig_ca_hash(kubeconfig: str) -> str:
    """The pin of the CA of a kubeconfig's current context's cluster (not secret), or "" when the
    kubeconfig has no CA data (Kamaji's always has; the join then fails, saying so)."""
    document = yaml.safe_load(kubeconfig) or {}
    contexts = {c["name"]: c["context"] for c in document.get("contexts") or []}
    context = contexts.get(document.get("current-context"), {})
    clusters = {c["name"]: c["cluster"] for c in document.get("clusters") or []}
    data = clusters.get(context.get("cluster"), {}).get("certificate-authority-data")
    return ca_cert_hash(base64.b64decode(data).decode()) if data else ""
