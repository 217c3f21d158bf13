"""What every tenant cluster runs besides Kamaji's addons: kindnet (CNI) and kube-proxy.

kindest/node ships no network daemon, so each tenant gets kindnet; kube-proxy is the platform's
own because inside a kindest/node container it must run with `conntrack.maxPerCore: 0`, which
Kamaji's addon cannot set. Both reach the API server at its load-balancer address, since the
`kubernetes` Service is kube-proxy's own work.

Upstream: kind issue #2240 (nf_conntrack_max read-only outside the host netns since Linux 5.12).
Rationale: docs/design/worker-containers.md.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import TenantConfig
from kamaji_hami_platform.mirror import mirrored

KUBE_SYSTEM = "kube-system"
KINDNET = "kindnet"
KUBE_PROXY = "kube-proxy"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SYSTEM_NODE_CRITICAL = "system-node-critical"
# Rolls kube-proxy's pods on a changed ConfigMap, which running pods never reload (kubernetes
# v1.35.4 cmd/kube-proxy/app/options.go eventHandler; docs/design/worker-containers.md).
CONFIG_HASH_ANNOTATION = "io.kamaji-hami-platform/config-hash"


def _meta(name: str, namespace: str | None = KUBE_SYSTEM, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


def _host_path(name: str, path: str, type_: str | None = None) -> dict[str, Any]:
    host_path: dict[str, Any] = {"path": path}
    if type_:
        host_path["type"] = type_
    return {"name": name, "hostPath": host_path}


def _cluster_role_binding(name: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": _meta(name, None),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": KUBE_SYSTEM}],
    }


def _service_account(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name)}


def kindnet_objects(tenant: TenantConfig, endpoint: str, mirror: str | None = None) -> list[dict[str, Any]]:
    """kindnet with its RBAC; `endpoint` is the tenant API server as host:port."""
    labels = {"app": KINDNET, "k8s-app": KINDNET, "tier": "node"}
    container = {
        "name": "kindnet-cni",
        "image": mirrored(versions.KINDNET_IMAGE, mirror),
        "env": [
            {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "POD_SUBNET", "value": tenant.pod_cidr},
            {"name": "CONTROL_PLANE_ENDPOINT", "value": endpoint},
        ],
        "volumeMounts": [
            {"name": "cni-cfg", "mountPath": "/etc/cni/net.d"},
            {"name": "xtables-lock", "mountPath": "/run/xtables.lock", "readOnly": False},
            {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True},
        ],
        # kind's manifest (v0.31.0 pkg/build/nodeimage/const_cni.go) without limits, as kind since
        # (kubernetes-sigs/kind#4215, 52e59600: an OOM-killed or throttled kindnetd stalls traffic).
        "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}},
        "securityContext": {"privileged": False, "capabilities": {"add": ["NET_RAW", "NET_ADMIN"]}},
    }
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": _meta(KINDNET, None),
         "rules": [
             {"apiGroups": [""], "resources": ["nodes", "pods", "namespaces"],
              "verbs": ["list", "watch"]},
             {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
              "verbs": ["list", "watch"]},
         ]},
        _cluster_role_binding(KINDNET, KINDNET),
        _service_account(KINDNET),
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta(KINDNET, **labels),
         "spec": {
             "selector": {"matchLabels": {"app": KINDNET}},
             "template": {"metadata": {"labels": labels}, "spec": {
                 "hostNetwork": True,
                 # The node's network depends on it: never evicted before user pods.
                 "priorityClassName": SYSTEM_NODE_CRITICAL,
                 "nodeSelector": {"kubernetes.io/os": "linux"},
                 "tolerations": [{"operator": "Exists"}],
                 "serviceAccountName": KINDNET,
                 "containers": [container],
                 "volumes": [_host_path("cni-cfg", "/etc/cni/net.d"),
                             _host_path("xtables-lock", "/run/xtables.lock", "FileOrCreate"),
                             _host_path("lib-modules", "/lib/modules")],
             }},
         }},
    ]


def kube_proxy_configuration(tenant: TenantConfig) -> dict[str, Any]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": "/var/lib/kube-proxy/kubeconfig.conf"},
        "clusterCIDR": tenant.pod_cidr,
        "mode": "iptables",
        # Never touch the host's nf_conntrack_max from inside a container.
        "conntrack": {"maxPerCore": 0},
    }


def kube_proxy_kubeconfig(endpoint: str) -> dict[str, Any]:
    """In-cluster credentials, but the API server at its external endpoint."""
    return {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "default", "cluster": {
            "certificate-authority": f"{SA_DIR}/ca.crt", "server": f"https://{endpoint}"}}],
        "contexts": [{"name": "default", "context": {"cluster": "default", "user": "default"}}],
        "current-context": "default",
        "users": [{"name": "default", "user": {"tokenFile": f"{SA_DIR}/token"}}],
    }


def config_hash(data: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def kube_proxy_objects(tenant: TenantConfig, endpoint: str,
                       mirror: str | None = None) -> list[dict[str, Any]]:
    labels = {"k8s-app": KUBE_PROXY}
    config = {
        "config.conf": yaml.safe_dump(kube_proxy_configuration(tenant), sort_keys=True),
        "kubeconfig.conf": yaml.safe_dump(kube_proxy_kubeconfig(endpoint), sort_keys=True),
    }
    container = {
        "name": KUBE_PROXY,
        "image": mirrored(f"{versions.KUBE_PROXY_IMAGE_REPOSITORY}:{tenant.kubernetes_version}", mirror),
        "command": ["/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf",
                    "--hostname-override=$(NODE_NAME)"],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": KUBE_PROXY, "mountPath": "/var/lib/kube-proxy"},
            {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
            {"name": "lib-modules", "mountPath": "/lib/modules", "readOnly": True},
        ],
    }
    return [
        _service_account(KUBE_PROXY),
        # system:node-proxier is a bootstrap ClusterRole of every API server.
        _cluster_role_binding(KUBE_PROXY, "system:node-proxier"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(KUBE_PROXY, **labels), "data": config},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta(KUBE_PROXY, **labels),
         "spec": {
             "selector": {"matchLabels": labels},
             "updateStrategy": {"type": "RollingUpdate"},
             "template": {
                 "metadata": {"labels": labels, "annotations": {CONFIG_HASH_ANNOTATION: config_hash(config)}},
                 "spec": {
                     "hostNetwork": True,
                     "priorityClassName": SYSTEM_NODE_CRITICAL,
                     "serviceAccountName": KUBE_PROXY,
                     "nodeSelector": {"kubernetes.io/os": "linux"},
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [container],
                     "volumes": [{"name": KUBE_PROXY, "configMap": {"name": KUBE_PROXY}},
                                 _host_path("xtables-lock", "/run/xtables.lock", "FileOrCreate"),
                                 _host_path("lib-modules", "/lib/modules")],
                 },
             },
         }},
    ]
