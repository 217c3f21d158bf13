"""An existing management cluster: its kubeconfig from a file's context, and a check of what the
platform relies on and does not install there. Pure functions; the component wires them.

Nothing here repeats a credential: a problem names the file and the context, never their content.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management.access import private_kubeconfig
from kamaji_hami_platform.management.render import CERT_MANAGER_NAMESPACE, KAMAJI_NAMESPACE
from kamaji_hami_platform.refusal import Refusal
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
        raise Refusal(f"{source} is not YAML (a kubeconfig is)") from None
    if not isinstance(document, dict):
        raise Refusal(f"{source} is not a kubeconfig")
    entry = _named(document.get("contexts"), context)
    if entry is None:
        names = ", ".join(str(c.get("name")) for c in document.get("contexts") or [] if isinstance(c, dict))
        raise Refusal(f"{source} has no context {context!r} (it has: {names or 'none'})")
    details = entry.get("context") or {}
    cluster = _named(document.get("clusters"), details.get("cluster", ""))
    user = _named(document.get("users"), details.get("user", ""))
    if cluster is None or user is None:
        raise Refusal(f"{source}: context {context!r} names a cluster or user the file does not hold")
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
        raise Refusal(f"management.kubeconfigContext: cannot read {path} ({error.strerror})") from None
    return kubeconfig_for_context(text, management.kubeconfig_context or "", str(path), path.parent)


# What Kamaji's chart needs of the cluster's storage: kamaji-etcd's StatefulSet has a volume claim
# template whose `storageClassName` is the value `persistentVolumeClaim.storageClassName`, "" by
# default, which renders as no class at all (clastix/kamaji-etcd v0.15.0, the chart Kamaji
# 26.8.2-edge's Chart.lock pins: charts/kamaji-etcd/templates/etcd_sts.yaml `volumeClaimTemplates`,
# values.yaml); a claim without a class gets the default class, or none and stays Pending
# (Kubernetes v1.35.4 plugin/pkg/admission/storage/storageclass/setdefault/admission.go `Admit`).
ETCD_SUBCHART = "kamaji-etcd"
# Its claims: template `data` of StatefulSet `kamaji-etcd` (Kamaji's values: fullnameOverride), in
# Kamaji's namespace, 8Gi each (the chart's persistentVolumeClaim.size).
ETCD_CLAIM_PREFIX = "data-kamaji-etcd-"
ETCD_VOLUME_SIZE = "8Gi"

# NetworkPolicy: no API says whether the CNI enforces it. The check knows CNIs by the DaemonSet of
# their node agent, in any namespace (Calico's operator puts calico-node in calico-system, Cilium's
# chart in its release's namespace): one of these enforces NetworkPolicy in its default settings
# (cilium/cilium install/kubernetes/cilium/templates/cilium-agent/daemonset.yaml `cilium`;
# cloudnativelabs/kube-router daemonset/kubeadm-kuberouter.yaml `kube-router`, --run-firewall=true;
# Calico's `calico-node`, Canal's `canal` (Calico's policy engine with flannel), Antrea's
# `antrea-agent`, Weave Net's `weave-net`). What it proves: such an agent is installed; not that it
# runs on every node or that its settings keep enforcement on.
ENFORCING_CNI_DAEMONSETS = ("calico-node", "canal", "cilium", "antrea-agent", "kube-router", "weave-net")
ENFORCING_CNI_NAMES = "Calico, Canal, Cilium, Antrea, kube-router, Weave Net"
# flannel's DaemonSet (flannel-io/flannel Documentation/kube-flannel.yml: `kube-flannel-ds`, once
# `kube-flannel-ds-<arch>`) routes pods and enforces no NetworkPolicy: alone, it is refused.
FLANNEL_DAEMONSET_PREFIX = "kube-flannel-ds"
# kind's kindnet enforces NetworkPolicy since kind v0.24.0 (kube-network-policies in kindnetd), when
# its ClusterRole `kindnet` gained list/watch on networkpolicies (kind v0.24.0
# pkg/build/nodeimage/const_cni.go and images/kindnetd/cmd/kindnetd/main.go; v0.23.0 has neither):
# without that access it cannot enforce them.
KINDNET = "kindnet"
CONFIRM_NETWORK_POLICY = ("To confirm by hand: docs/operations/troubleshooting.md "
                          "(a deny-all NetworkPolicy must stop one pod reaching another)")

# k3s's ServiceLB (k3s-io/k3s pkg/cloudprovider/servicelb.go, read at 0821db5a): a DaemonSet
# `svclb-<service>-<uid>` per LoadBalancer Service in its namespace (kube-system by default),
# labelled svccontroller.k3s.cattle.io/svcname; the ServiceAccount `svclb` made when it starts
# (`ensureServiceLBServiceAccount`); nodes labelled svccontroller.k3s.cattle.io/enablelb select where
# it runs. `--disable=servicelb` turns it off (pkg/cli/server/server.go), which deletes its
# DaemonSets (pkg/cloudprovider/cloudprovider.go `Initialize`).
K3S_SERVICELB_SVCNAME_LABEL = "svccontroller.k3s.cattle.io/svcname"
K3S_SERVICELB_NODE_LABEL = "svccontroller.k3s.cattle.io/enablelb"
K3S_SERVICELB_SERVICE_ACCOUNT = "svclb"
WARNING_PREFIX = "warning: "


def etcd_storage_class(kamaji_values: Mapping[str, Any] | None) -> str | None:
    """The StorageClass kamaji-etcd's volumes ask for, as the Kamaji release's values (beyond the
    platform's) set it: "" for the cluster's default (the chart's own), a class name, or None when
    the values deploy no kamaji-etcd. A value that is not plain text (an Output) counts as the
    default."""
    etcd = (kamaji_values or {}).get(ETCD_SUBCHART)
    if not isinstance(etcd, Mapping):
        return ""
    if etcd.get("deploy") is False:
        return None
    claim = etcd.get("persistentVolumeClaim")
    name = claim.get("storageClassName") if isinstance(claim, Mapping) else None
    return name if isinstance(name, str) else ""


def check_warnings(stdout: str | None) -> list[str]:
    """The warnings of a cluster check's output: what it could not tell, one message each."""
    return [line[len(WARNING_PREFIX):] for line in (stdout or "").splitlines()
            if line.startswith(WARNING_PREFIX)]


def cluster_check_script(management: ManagementConfig, kubeconfig_env: str,
                         etcd_storage: str | None = "") -> str:
    """Before anything is installed: the cluster answers with the kubeconfig given (in
    $kubeconfig_env); then, all checked together and listed in one message with their fixes:
    cert-manager when the platform is told not to install it, the StorageClass kamaji-etcd's
    volumes need (`etcd_storage`: "" the default class, a name, None no kamaji-etcd), a CNI that
    enforces NetworkPolicy, and no k3s ServiceLB beside the MetalLB the platform installs. What it
    cannot tell is a warning (`check_warnings`), never a failure."""
    kubectl = Shell(f'kubectl --kubeconfig "$kc" --request-timeout={REQUEST_TIMEOUT}')
    checks: list[str] = []
    if not management.install_cert_manager:
        checks.append(render_script(
            _PACKAGE, "cluster_check_cert_manager.sh", kubectl=kubectl,
            crds=Shell(" ".join(shlex.quote(crd) for crd in CERT_MANAGER_CRDS)),
            cert_manager_namespace=Text(CERT_MANAGER_NAMESPACE)))
    if etcd_storage == "":
        checks.append(render_script(
            _PACKAGE, "cluster_check_default_storage.sh", kubectl=kubectl,
            namespace=Text(KAMAJI_NAMESPACE), claim_prefix=Text(ETCD_CLAIM_PREFIX),
            replicas=management.kamaji_etcd_replicas, size=Text(ETCD_VOLUME_SIZE)))
    elif etcd_storage is not None:
        checks.append(render_script(_PACKAGE, "cluster_check_storage_class.sh", kubectl=kubectl,
                                    storage_class=etcd_storage, storage_class_text=Text(etcd_storage)))
    checks.append(render_script(
        _PACKAGE, "cluster_check_network_policy.sh", kubectl=kubectl,
        enforcing=Shell("|".join(ENFORCING_CNI_DAEMONSETS)), kindnet=Text(KINDNET),
        flannel=Text(FLANNEL_DAEMONSET_PREFIX), known=Text(ENFORCING_CNI_NAMES),
        confirm=Text(CONFIRM_NETWORK_POLICY)))
    if management.manages_pool:
        checks.append(render_script(
            _PACKAGE, "cluster_check_service_lb.sh", kubectl=kubectl,
            svcname_label=Text(K3S_SERVICELB_SVCNAME_LABEL), enablelb_label=Text(K3S_SERVICELB_NODE_LABEL),
            service_account=Text(K3S_SERVICELB_SERVICE_ACCOUNT), pool=Text(management.pool_range or "")))
    return render_script(_PACKAGE, "cluster_check.sh", kubeconfig=private_kubeconfig(kubeconfig_env, "kc"),
                         kubectl=kubectl, kamaji_namespace=Text(KAMAJI_NAMESPACE),
                         checks=Shell("".join(checks)))
