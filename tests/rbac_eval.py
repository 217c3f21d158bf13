"""A small RBAC evaluator: does a list of PolicyRules allow one resource request?

It follows Kubernetes' own rule matching (k8s.io/kubernetes v1.35
pkg/apis/rbac/v1/evaluation_helpers.go: VerbMatches, APIGroupMatches,
ResourceMatches, ResourceNameMatches): a request for a subresource is matched
against `<resource>/<subresource>` (or `*`, or `*/<subresource>`), never
against the bare resource.
"""

from __future__ import annotations

from typing import Any

ALL = "*"


def _resource_matches(rule: dict[str, Any], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for granted in rule.get("resources", []):
        if granted in (ALL, combined):
            return True
        if subresource and granted == f"*/{subresource}":
            return True
    return False


def rule_allows(rule: dict[str, Any], verb: str, resource: str, subresource: str = "",
                name: str = "", api_group: str = "") -> bool:
    names = rule.get("resourceNames") or []
    return (any(v in (ALL, verb) for v in rule.get("verbs", []))
            and any(g in (ALL, api_group) for g in rule.get("apiGroups", []))
            and _resource_matches(rule, resource, subresource)
            and (not names or name in names))


def rbac_allows(rules: list[dict[str, Any]], verb: str, resource: str, subresource: str = "",
                name: str = "", api_group: str = "") -> bool:
    """True when any rule allows the request (RBAC has no deny)."""
    return any(rule_allows(rule, verb, resource, subresource, name, api_group) for rule in rules)
