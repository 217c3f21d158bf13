"""NetworkPolicies of the platform's own namespaces in the kind management cluster: cert-manager,
metallb-system and kamaji-system deny every flow, both ways, but the ones their pods need.

Who is judged, on kind (kindnetd's controller, kube-network-policies v0.8.0
pkg/networkpolicy/controller.go syncNFTablesRules: a POSTROUTING chain at srcnat - 5):
- not the node's root: `meta skuid 0 accept` comes first, so the API server (host network, root,
  on the cluster's only node) reaches every webhook, and the kubelet every probe, with no rule;
- not a pod's traffic to the API server: the `kubernetes` Service is DNATed to the node's own
  address and delivered locally, never through POSTROUTING;
- not hostNetwork pods (MetalLB's speaker): the controller has no pod for their address;
- every other new connection from or to a pod: pod to pod, pod to another container of the
  platform's Docker network (a tenant's control-plane address, its door), other namespaces.
So a webhook or metrics port answers the node and no pod, and what a pod may open is listed here.

Flows (charts at the pinned versions, labels from their templates):
- cert-manager v1.21.2, MetalLB v0.15.3 (controller): the API server only; nothing else in or out.
- Kamaji 26.8.2-edge: its controller resolves the datastore's names (DNS), opens kamaji-etcd on
  2379 (`kamaji-etcd-N.kamaji-etcd.kamaji-system.svc`) and each tenant's API server at its
  Service (`internal/.../tenant_client.go`: `https://<tcp>.<ns>.svc:<port>`, DNATed to the pod).
- kamaji-etcd v0.15.0 (StatefulSet, `charts/kamaji-etcd/templates/etcd_sts.yaml`): peers by DNS
  name on 2380 and 2379; clients on 2379 are Kamaji, the chart's setup Job (labels of the Job
  controller only: admitted as "a pod of kamaji-system") and every tenant control plane
  (`kamaji.clastix.io/name` on its pods, internal/builders/controlplane/deployment.go), whose own
  namespace admits that egress (tenant/network_policy.py).
Rationale and the live test: docs/design/network-isolation.md "The platform's namespaces".
"""

from __future__ import annotations

from typing import Any

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management.render import (
    CERT_MANAGER_NAMESPACE,
    KAMAJI_NAMESPACE,
    METALLB_NAMESPACE,
)

# A tenant API server's port in its pod: kind tenants have no node port (config/modes.py).
from kamaji_hami_platform.tenant.control_plane import API_PORT

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# Kamaji's label on a TenantControlPlane's pods, its value the TCP's name.
TCP_POD_LABEL = "kamaji.clastix.io/name"
DEFAULT_DENY = "default-deny"
DATASTORE_PORT, DATASTORE_PEER_PORT = 2379, 2380
DNS_PORT = 53

KAMAJI_CONTROLLER = {"app.kubernetes.io/name": "kamaji", "app.kubernetes.io/component": "controller-manager"}
KAMAJI_ETCD = {"app.kubernetes.io/name": "kamaji-etcd"}
# The one pod of metallb-system no NetworkPolicy can govern: it runs on the host's network.
METALLB_SPEAKER = {"key": "app.kubernetes.io/component", "operator": "NotIn", "values": ["speaker"]}
KUBE_DNS = {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}
# Kamaji's labels on every TenantControlPlane's pods (26.8.2-edge internal/builders/controlplane/
# deployment.go 1105-1107): the TCP's name, and the component.
TCP_COMPONENT_LABEL, TCP_COMPONENT = "kamaji.clastix.io/component", "deployment"
ANY_CONTROL_PLANE = {"namespaceSelector": {},
                     "podSelector": {"matchLabels": {TCP_COMPONENT_LABEL: TCP_COMPONENT},
                                     "matchExpressions": [{"key": TCP_POD_LABEL, "operator": "Exists"}]}}


def ports(*numbers: int, protocol: str = "TCP") -> list[dict[str, Any]]:
    return [{"protocol": protocol, "port": number} for number in numbers]


def namespace_peer(name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: name}}}


def network_policy(namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _default_deny(namespace: str, selector: dict[str, Any] | None = None) -> dict[str, Any]:
    return network_policy(namespace, DEFAULT_DENY, {"podSelector": selector or {},
                                                    "policyTypes": ["Ingress", "Egress"]})


def _kamaji_policies() -> list[dict[str, Any]]:
    etcd = {"matchLabels": KAMAJI_ETCD}
    return [
        _default_deny(KAMAJI_NAMESPACE),
        network_policy(KAMAJI_NAMESPACE, "allow-dns-egress", {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"to": [KUBE_DNS], "ports": ports(DNS_PORT, protocol="UDP") + ports(DNS_PORT)}],
        }),
        network_policy(KAMAJI_NAMESPACE, "allow-datastore-egress", {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"podSelector": etcd}], "ports": ports(DATASTORE_PORT)}],
        }),
        network_policy(KAMAJI_NAMESPACE, "allow-datastore-ingress", {
            "podSelector": etcd,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [
                {"from": [{"podSelector": {}}, ANY_CONTROL_PLANE], "ports": ports(DATASTORE_PORT)},
                {"from": [{"podSelector": etcd}], "ports": ports(DATASTORE_PEER_PORT)},
            ],
            "egress": [{"to": [{"podSelector": etcd}], "ports": ports(DATASTORE_PEER_PORT)}],
        }),
        network_policy(KAMAJI_NAMESPACE, "allow-controller-egress", {
            "podSelector": {"matchLabels": KAMAJI_CONTROLLER},
            "policyTypes": ["Egress"],
            "egress": [{"to": [ANY_CONTROL_PLANE], "ports": ports(API_PORT)}],
        }),
    ]


def platform_network_policies(management: ManagementConfig) -> list[dict[str, Any]]:
    """Every NetworkPolicy of the platform's namespaces on kind, where the platform installs all
    three charts; none on an existing cluster, whose CNI, API server addresses and policies are its
    admin's (docs/design/network-isolation.md)."""
    if not management.is_kind:
        return []
    return [_default_deny(CERT_MANAGER_NAMESPACE),
            _default_deny(METALLB_NAMESPACE, {"matchExpressions": [METALLB_SPEAKER]}),
            *_kamaji_policies()]
