"""Shape checks of the stack's secrets that never repeat the secret: each problem says what is
wrong in words of its own, so a message, a log line or an exception carries no part of the value."""

from __future__ import annotations

import base64
import binascii

import yaml

PEM_BEGIN = "-----BEGIN "
PRIVATE_KEY_END = "PRIVATE KEY-----"
# OpenSSH's own key format (PROTOCOL.key): the magic, then the cipher name as an SSH string.
OPENSSH_HEADER = "-----BEGIN OPENSSH PRIVATE KEY-----"
OPENSSH_MAGIC = b"openssh-key-v1\0"
UNENCRYPTED_CIPHER = b"none"
# A PEM key with a passphrase says so in its header (RFC 1421 Proc-Type) or its type (PKCS#8).
PEM_ENCRYPTED_MARKERS = ("Proc-Type: 4,ENCRYPTED", "BEGIN ENCRYPTED PRIVATE KEY")
PASSPHRASE_PROBLEM = ("is protected by a passphrase: give the key without one (the stack encrypts it; "
                      "ssh-keygen -p -N '' -f <copy> removes it from a copy)")


def _openssh_cipher(text: str) -> bytes | None:
    body = "".join(line.strip() for line in text.strip().splitlines()[1:-1])
    try:
        blob = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not blob.startswith(OPENSSH_MAGIC) or len(blob) < len(OPENSSH_MAGIC) + 4:
        return None
    start = len(OPENSSH_MAGIC) + 4
    length = int.from_bytes(blob[len(OPENSSH_MAGIC):start], "big")
    return blob[start:start + length]


def private_key_problems(text: str) -> list[str]:
    """What keeps `text` from being an SSH private key pulumi-command and OpenSSH can use unattended."""
    stripped = text.strip()
    if not stripped.startswith(PEM_BEGIN) or not stripped.splitlines()[0].endswith(PRIVATE_KEY_END):
        return ["is not a PEM or OpenSSH private key (-----BEGIN ... PRIVATE KEY-----)"]
    if stripped.splitlines()[0] == OPENSSH_HEADER:
        cipher = _openssh_cipher(stripped)
        if cipher is None:
            return ["is not a readable OpenSSH private key (its body is not the key format)"]
        return [] if cipher == UNENCRYPTED_CIPHER else [PASSPHRASE_PROBLEM]
    return [PASSPHRASE_PROBLEM] if any(marker in stripped for marker in PEM_ENCRYPTED_MARKERS) else []


def kubeconfig_problems(text: str) -> list[str]:
    """What keeps `text` from being a kubeconfig whose current context names a cluster and a user."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return ["is not YAML (a kubeconfig is)"]
    if not isinstance(document, dict) or document.get("kind", "Config") != "Config":
        return ["is not a kubeconfig (kind: Config)"]
    current = document.get("current-context")
    contexts = {c.get("name"): c.get("context") or {} for c in document.get("contexts") or []
                if isinstance(c, dict)}
    if not current or current not in contexts:
        return ["has no current-context naming one of its contexts"]
    clusters = {c.get("name") for c in document.get("clusters") or [] if isinstance(c, dict)}
    if contexts[current].get("cluster") not in clusters:
        return ["its current context names a cluster the kubeconfig does not hold"]
    return []
