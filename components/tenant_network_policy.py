"""NetworkPolicies that isolate a tenant's namespace in the management cluster.

Default deny in both directions, then only what a TenantControlPlane needs
(pod labels from clastix/kamaji 26.8.2-edge internal/constants/labels.go):

- API (6443) and Konnectivity (8132) from outside the management pod network:
  workers, the host, and load-balancer traffic. kind's kube-network-policies
  evaluates a packet after kube-proxy's DNAT and before its masquerade, so
  load-balancer traffic arrives with its real client address (a worker or the
  host), while pods of the management cluster, other tenants' included, have
  addresses in the pod CIDR and are excluded. One pod-network address is
  allowed: the node's own end of every pod link (the first address of the one
  kind node's pod range), the source of the kubelet's probes of the
  control-plane containers (the API server's are on 6443); no pod can hold it;
- the same ports from the Kamaji controller in `kamaji-system` and from pods
  of the tenant's own namespace (in-namespace tooling, the isolation probe);
- the kubelet's health probes of the other control-plane containers from the node;
- egress: control-plane pods to the datastore (kamaji-etcd, 2379) in
  `kamaji-system`; every pod of the namespace to DNS and to its own control
  plane, and nowhere else.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from components.config import MANAGEMENT_POD_CIDR, TenantConfig
from components.management_render import KAMAJI_NAMESPACE
from components.tenantcontrolplane import API_PORT, KONNECTIVITY_PORT

TCP_POD_LABEL = "kamaji.clastix.io/name"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
DATASTORE_PORT = 2379
DNS_PORT = 53
# Probe ports of the containers Kamaji runs in a TCP pod: controller-manager,
# scheduler, konnectivity-server health.
PROBE_PORTS = (10257, 10259, 8134)
DEFAULT_DENY = "default-deny"
# kind gives its only node the first /24 of the pod subnet; the CNI puts the
# range's first address on the node side of every pod link.
MANAGEMENT_NODE_POD_GATEWAY = f"{ipaddress.ip_network(MANAGEMENT_POD_CIDR)[1]}/32"


def _ports(*numbers: int, protocol: str = "TCP") -> list[dict[str, Any]]:
    return [{"protocol": protocol, "port": number} for number in numbers]


def _from_outside_pod_network() -> list[dict[str, Any]]:
    return [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [MANAGEMENT_POD_CIDR]}},
            {"ipBlock": {"cidr": MANAGEMENT_NODE_POD_GATEWAY}}]


def _namespace(name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: name}}}


def _policy(tenant: TenantConfig, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": tenant.namespace},
        "spec": spec,
    }


def network_policies(tenant: TenantConfig) -> list[dict[str, Any]]:
    """All NetworkPolicies of one tenant namespace, default deny first."""
    control_plane = {"matchLabels": {TCP_POD_LABEL: tenant.name}}
    return [
        _policy(tenant, DEFAULT_DENY, {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
        }),
        _policy(tenant, "allow-control-plane-ingress", {
            "podSelector": control_plane,
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [*_from_outside_pod_network(), _namespace(KAMAJI_NAMESPACE),
                          {"podSelector": {}}],
                 "ports": _ports(API_PORT, KONNECTIVITY_PORT)},
                {"from": _from_outside_pod_network(), "ports": _ports(*PROBE_PORTS)},
            ],
        }),
        _policy(tenant, "allow-control-plane-egress", {
            "podSelector": control_plane,
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [_namespace(KAMAJI_NAMESPACE)], "ports": _ports(DATASTORE_PORT)},
            ],
        }),
        _policy(tenant, "allow-namespace-egress", {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{**_namespace("kube-system"),
                         "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                 "ports": _ports(DNS_PORT, protocol="UDP") + _ports(DNS_PORT)},
                {"to": [{"podSelector": control_plane}],
                 "ports": _ports(API_PORT, KONNECTIVITY_PORT)},
            ],
        }),
    ]
