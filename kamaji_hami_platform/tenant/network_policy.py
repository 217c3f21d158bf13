"""NetworkPolicies that isolate a tenant's control plane in the management cluster.

Default deny both ways, then only what a TenantControlPlane needs: its API and Konnectivity from
the tenant's own clients (tenant/api_clients.py: its network, or hosts), Kamaji and its own
namespace; egress to the datastore, DNS and its own control plane. On kind this holds because
kindnetd's policy engine sees the real client address, before kube-proxy's masquerade.

Upstream: clastix/kamaji 26.8.2-edge internal/constants/labels.go (pod labels);
kube-network-policies v0.8.0 (kind 20ccfc88) pkg/networkpolicy/controller.go (POSTROUTING,
srcnat-5).
Rationale: docs/design/network-isolation.md.
"""

from __future__ import annotations

from typing import Any

from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.management.network_policy import (
    DATASTORE_PORT,
    DEFAULT_DENY,
    DNS_PORT,
    KUBE_DNS,
    TCP_POD_LABEL,
    network_policy,
)
from kamaji_hami_platform.management.network_policy import namespace_peer as _namespace
from kamaji_hami_platform.management.network_policy import ports as _ports
from kamaji_hami_platform.management.render import KAMAJI_NAMESPACE
from kamaji_hami_platform.tenant.api_clients import api_clients
from kamaji_hami_platform.tenant.control_plane import api_port, konnectivity_port


def _policy(tenant: TenantConfig, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return network_policy(tenant.namespace, name, spec)


def network_policies(tenant: TenantConfig, management: ManagementConfig) -> list[dict[str, Any]]:
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
                {"from": [*({"ipBlock": {"cidr": cidr}} for cidr in api_clients(tenant, management)),
                          _namespace(KAMAJI_NAMESPACE),
                          {"podSelector": {}}],
                 "ports": _ports(api_port(tenant), konnectivity_port(tenant))},
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
                {"to": [KUBE_DNS],
                 "ports": _ports(DNS_PORT, protocol="UDP") + _ports(DNS_PORT)},
                {"to": [{"podSelector": control_plane}],
                 "ports": _ports(api_port(tenant), konnectivity_port(tenant))},
            ],
        }),
    ]
