"""An existing management cluster: its kubeconfig from a file's context, and a check of what the
platform relies on and does not install there. Pure functions; the component wires them.

Nothing here repeats a credential: a problem names the file and the context, never their content.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

import yaml

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management.access import private_kubeconfig
from kamaji_hami_platform.management.render import CERT_MANAGER_NAMESPACE, KAMAJI_NAMESPACE
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script

DEFAULT_KUBECONFIG = "~/.kube/config"
# What Kamaji's chart needs of cert-manager (its webhook Certificate and Issuer).
CERT_MANAGER_CRDS = ("certificates.cert-manager.io", "issuers.cert-manager.io")
REQUEST_TIMEOUT = "30s"
_PACKAGE = "kamaji_hami_platform.management"


def kubeconfig_path(management: ManagementConfig, environ: Mapping[str, str]) -> Path:
    """kubeconfigFile, else the first file of $KUBECONFIG (kubectl's own order), else ~/.kube/config."""
    if management.kubeconfig_file:
        return Path(management.kubeconfig_file).expanduser()
    first = next((p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p), None)
    return Path(first or DEFAULT_KUBECONFIG).expanduser()


def _named(items: object, name: str) -> dict | None:
    if not isinstance(items, list):
        return None
    return next((item for item in items if isinstance(item, dict) and item.get("name") == name), None)


# Kubeconfig fields that name files, which kubectl reads relative to the kubeconfig's folder
# (client-go v0.35.4 tools/clientcmd/loader.go ResolveLocalPaths): made absolute, since the copy
# lives elsewhere.
FILE_FIELDS = {"cluster": ("certificate-authority",),
               "user": ("client-certificate", "client-key", "tokenFile")}


def _absolute_paths(entry: dict, kind: str, base: Path | None) -> dict:
    if base is None:
        return entry
    body = dict(entry.get(kind) or {})
    for field in FILE_FIELDS[kind]:
        if isinstance(body.get(field), str) and body[field] and not Path(body[field]).is_absolute():
            body[field] = str(base / body[field])
    return {**entry, kind: body}


def kubeconfig_for_context(text: str, context: str, source: str, base: Path | None = None) -> str:
    """A kubeconfig holding only `context` (as current) with its cluster and user: what the
    providers and scripts get, so other contexts of the file never reach the stack's state; file
    paths relative to `base` (the file's folder) made absolute.
    Raises ValueError naming `source` and the context (never the file's content)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        raise ValueError(f"{source} is not YAML (a kubeconfig is)") from None
    if not isinstance(document, dict):
        raise ValueError(f"{source} is not a kubeconfig")
    entry = _named(document.get("contexts"), context)
    if entry is None:
        names = ", ".join(str(c.get("name")) for c in document.get("contexts") or [] if isinstance(c, dict))
        raise ValueError(f"{source} has no context {context!r} (it has: {names or 'none'})")
    details = entry.get("context") or {}
    cluster = _named(document.get("clusters"), details.get("cluster", ""))
    user = _named(document.get("users"), details.get("user", ""))
    if cluster is None or user is None:
        raise ValueError(f"{source}: context {context!r} names a cluster or user the file does not hold")
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "contexts": [entry], "clusters": [_absolute_paths(cluster, "cluster", base)],
        "users": [_absolute_paths(user, "user", base)],
    }, sort_keys=True)


def read_context_kubeconfig(management: ManagementConfig, environ: Mapping[str, str]) -> str:
    """The kubeconfig of management.kubeconfigContext, read now (at preview), or ValueError."""
    path = kubeconfig_path(management, environ)
    try:
        text = path.read_text()
    except OSError as error:
        raise ValueError(f"management.kubeconfigContext: cannot read {path} ({error.strerror})") from None
    return kubeconfig_for_context(text, management.kubeconfig_context or "", str(path), path.parent)


def cluster_check_script(management: ManagementConfig, kubeconfig_env: str) -> str:
    """Before anything is installed: the cluster answers with the kubeconfig given (in
    $kubeconfig_env), and cert-manager is there when the platform is told not to install it."""
    kubectl = Shell(f'kubectl --kubeconfig "$kc" --request-timeout={REQUEST_TIMEOUT}')
    cert_manager = Shell("") if management.install_cert_manager else Shell(render_script(
        _PACKAGE, "cluster_check_cert_manager.sh", kubectl=kubectl,
        crds=Shell(" ".join(shlex.quote(crd) for crd in CERT_MANAGER_CRDS)),
        cert_manager_namespace=Text(CERT_MANAGER_NAMESPACE)))
    return render_script(_PACKAGE, "cluster_check.sh", kubeconfig=private_kubeconfig(kubeconfig_env, "kc"),
                         kubectl=kubectl, kamaji_namespace=Text(KAMAJI_NAMESPACE),
                         cert_manager_check=cert_manager)
