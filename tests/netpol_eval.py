"""A small evaluator of Kubernetes NetworkPolicy semantics, for testing the rendered policies.

Covers what the platform uses: podSelector / namespaceSelector (matchLabels, matchExpressions),
ipBlock with except, ports with protocol, Ingress and Egress policy types.
A flow is allowed when the source's egress and the destination's ingress both
allow it; a direction is unrestricted for a pod no policy of that type selects.
As kind's enforcer (kube-network-policies v0.8.0 pkg/networkpolicy/controller.go), a packet
from a socket of root on the node itself is accepted before any policy (`meta skuid 0`).
It agrees with that enforcer, run by the live tier, on every flow of tests/live/test_kind_cluster.py
test_the_platform_s_namespaces_admit_only_their_flows (the platform's and the tenants' policies).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Endpoint:
    namespace: str | None  # None: not a pod of the cluster (host, worker container)
    ip: str
    labels: dict[str, str] = field(default_factory=dict)
    node_root: bool = False  # a process of root on the node itself (the kubelet, docker exec)


def _expression_matches(expression: dict[str, Any], labels: dict[str, str]) -> bool:
    key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":  # a pod without the key matches NotIn (apimachinery labels.Selector)
        return labels.get(key) not in values
    raise ValueError(f"unknown selector operator {operator}")


def _matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return (all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())
            and all(_expression_matches(e, labels) for e in selector.get("matchExpressions", [])))


def _peer_matches(peer: dict[str, Any], policy_ns: str, other: Endpoint) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        address = ipaddress.ip_address(other.ip)
        if address not in ipaddress.ip_network(block["cidr"]):
            return False
        return not any(address in ipaddress.ip_network(c) for c in block.get("except", []))
    if other.namespace is None:
        return False
    if "namespaceSelector" in peer:
        ns_labels = {"kubernetes.io/metadata.name": other.namespace}
        if not _matches(peer["namespaceSelector"], ns_labels):
            return False
    elif other.namespace != policy_ns:
        return False
    return _matches(peer.get("podSelector", {}), other.labels)


def _port_matches(ports: list[dict[str, Any]] | None, port: int, protocol: str) -> bool:
    if not ports:
        return True
    return any(p.get("port") == port and p.get("protocol", "TCP") == protocol for p in ports)


def _direction_allows(policies: list[dict[str, Any]], pod: Endpoint, other: Endpoint, port: int,
                      protocol: str, direction: str) -> bool:
    if pod.namespace is None:
        return True
    rule_key, peer_key = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    selecting = [p for p in policies
                 if p["metadata"]["namespace"] == pod.namespace
                 and _matches(p["spec"]["podSelector"], pod.labels)
                 and direction in p["spec"].get("policyTypes", [])]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get(rule_key, []):
            peers = rule.get(peer_key)
            peer_ok = not peers or any(
                _peer_matches(peer, policy["metadata"]["namespace"], other) for peer in peers)
            if peer_ok and _port_matches(rule.get("ports"), port, protocol):
                return True
    return False


def allowed(policies: list[dict[str, Any]], source: Endpoint, destination: Endpoint, port: int,
            protocol: str = "TCP") -> bool:
    if source.node_root:
        return True
    return (_direction_allows(policies, source, destination, port, protocol, "Egress")
            and _direction_allows(policies, destination, source, port, protocol, "Ingress"))
