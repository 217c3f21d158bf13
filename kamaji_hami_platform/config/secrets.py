"""The stack's secrets: the management kubeconfig and SSH private keys.

A secret is read as SecretText (decrypted by Pulumi and known to be secret) or, from a stack file,
as its ciphertext; plain text is refused without echoing it. The shape checks never repeat the
secret: each problem says what is wrong in words of its own, so a message, a log line or an
exception carries no part of the value.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import yaml

from kamaji_hami_platform.config.model import ManagementConfig, SecretText
from kamaji_hami_platform.config.reading import Problems, mapping
from kamaji_hami_platform.config.rules import MANAGEMENT_KUBECONFIG_KEY, SECURE_KEY, SSH_KEYS_KEY

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


def _secret_text(value: Any, path: str, problems: Problems) -> SecretText | None:
    """A secret as the program reads it (SecretText, decrypted by Pulumi and known to be secret) or as
    a stack file holds it (`{secure: <ciphertext>}`); plain text is refused, without echoing it."""
    if isinstance(value, SecretText):
        return value
    if isinstance(value, Mapping) and set(value) == {SECURE_KEY} and isinstance(value[SECURE_KEY], str):
        return SecretText(None)
    problems.add(path, "must be a secret: set it with pulumi config set --secret (its value is not shown "
                       "here)", "secret")
    return None


def parse_secrets(raw: Mapping[str, Any], management: ManagementConfig,
                   problems: Problems) -> tuple[SecretText | None, dict[str, SecretText]]:
    kubeconfig = None
    given = raw.get(MANAGEMENT_KUBECONFIG_KEY) not in (None, "")  # refused when plain, but given
    if given:
        kubeconfig = _secret_text(raw[MANAGEMENT_KUBECONFIG_KEY], MANAGEMENT_KUBECONFIG_KEY, problems)
        if kubeconfig is not None and kubeconfig.value is not None:
            for problem in kubeconfig_problems(kubeconfig.value):
                problems.add(MANAGEMENT_KUBECONFIG_KEY, problem, "secret")
    keys: dict[str, SecretText] = {}
    for name, value in mapping(raw.get(SSH_KEYS_KEY), SSH_KEYS_KEY, problems).items():
        path = f"{SSH_KEYS_KEY}.{name}"
        key = _secret_text(value, path, problems)
        if key is None:
            continue
        if key.value is not None:
            for problem in private_key_problems(key.value):
                problems.add(path, problem, "secret")
        keys[str(name)] = key
    if management.is_kind and given:
        problems.add(MANAGEMENT_KUBECONFIG_KEY, "is for management.mode existing (kind's kubeconfig is the "
                                                "platform's own)", "mode")
    if not management.is_kind and given == (management.kubeconfig_context is not None):
        problems.add("management", "mode existing needs the cluster's kubeconfig: the secret "
                                   f"{MANAGEMENT_KUBECONFIG_KEY}, or kubeconfigContext (of kubeconfigFile), "
                                   "exactly one of them", "mode")
    return kubeconfig, keys


def secret_values(value: Any) -> Any:
    """A secret config value as SecretText (a mapping's values each), for parse_config: the one
    form it takes as secret besides a stack file's ciphertext."""
    if isinstance(value, Mapping):
        return {key: SecretText(item) if isinstance(item, str) else item for key, item in value.items()}
    return SecretText(value) if isinstance(value, str) else value
