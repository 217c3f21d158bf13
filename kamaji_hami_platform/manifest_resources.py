"""Turn rendered manifests (plain dicts) into typed pulumi_kubernetes resources.

Typed resources, not yaml/v2 ConfigGroups: ConfigGroup is a provider-side
component that cannot preview while the cluster does not exist yet
(pulumi-kubernetes#3027), and typed DaemonSets and Deployments are awaited.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_kubernetes as kubernetes

_CONSTRUCTORS: dict[tuple[str, str], Callable[..., pulumi.CustomResource]] = {
    ("v1", "ConfigMap"): kubernetes.core.v1.ConfigMap,
    ("v1", "Namespace"): kubernetes.core.v1.Namespace,
    ("v1", "ResourceQuota"): kubernetes.core.v1.ResourceQuota,
    ("v1", "ServiceAccount"): kubernetes.core.v1.ServiceAccount,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"):
        kubernetes.admissionregistration.v1.ValidatingAdmissionPolicy,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"):
        kubernetes.admissionregistration.v1.ValidatingAdmissionPolicyBinding,
    ("apps/v1", "DaemonSet"): kubernetes.apps.v1.DaemonSet,
    ("apps/v1", "Deployment"): kubernetes.apps.v1.Deployment,
    ("batch/v1", "CronJob"): kubernetes.batch.v1.CronJob,
    ("networking.k8s.io/v1", "NetworkPolicy"): kubernetes.networking.v1.NetworkPolicy,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): kubernetes.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): kubernetes.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): kubernetes.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): kubernetes.rbac.v1.RoleBinding,
}
_ARGUMENT_NAMES = {"roleRef": "role_ref", "aggregationRule": "aggregation_rule"}
# Kinds that run pods: created after the configuration and RBAC rendered with them, so a pod
# never starts (or restarts, on a rolled update) before the ConfigMap it mounts is applied.
_WORKLOADS = frozenset({"DaemonSet", "Deployment", "StatefulSet", "Job", "CronJob", "Pod"})
_IDENTITY_FIELDS = ("apiVersion", "kind", "metadata")
# Two different probe values tell which fields depend on a late-known input.
_PROBES = ("probe-a.invalid:1", "probe-b.invalid:2")


def resource_name(prefix: str, obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    scope = f"{meta['namespace']}-" if meta.get("namespace") else ""
    return f"{prefix}-{obj['kind'].lower()}-{scope}{meta['name']}"


def _create(prefix: str, obj: dict[str, Any], fields: dict[str, Any],
            opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    constructor = _CONSTRUCTORS[(obj["apiVersion"], obj["kind"])]
    kwargs = {_ARGUMENT_NAMES.get(key, key): value for key, value in fields.items()}
    return constructor(resource_name(prefix, obj), metadata=obj["metadata"], opts=opts, **kwargs)


def _create_all(prefix: str, objects: list[dict[str, Any]], fields: list[dict[str, Any]],
                opts: pulumi.ResourceOptions) -> list[pulumi.CustomResource]:
    """Configuration and RBAC first, then the workloads, which wait for them."""
    pairs = list(zip(objects, fields, strict=True))
    configuration = [_create(prefix, obj, values, opts) for obj, values in pairs
                     if obj["kind"] not in _WORKLOADS]
    after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=configuration))
    return configuration + [_create(prefix, obj, values, after) for obj, values in pairs
                            if obj["kind"] in _WORKLOADS]


def create_objects(prefix: str, objects: list[dict[str, Any]],
                   opts: pulumi.ResourceOptions) -> list[pulumi.CustomResource]:
    """One typed resource per rendered object."""
    return _create_all(prefix, objects, [{k: v for k, v in obj.items() if k not in _IDENTITY_FIELDS}
                                         for obj in objects], opts)


def _late_leaves(first: Any, second: Any, late: Callable[[tuple], Any], path: tuple = ()) -> Any:
    """`first`, where it equals `second`; elsewhere, at the deepest level where the two
    renders differ, an Output (`late(path)`) computed from the deploy-time value."""
    if first == second:
        return first
    if isinstance(first, dict) and isinstance(second, dict) and first.keys() == second.keys():
        return {key: _late_leaves(first[key], second[key], late, (*path, key)) for key in first}
    if isinstance(first, list) and isinstance(second, list) and len(first) == len(second):
        return [_late_leaves(a, b, late, (*path, index))
                for index, (a, b) in enumerate(zip(first, second, strict=True))]
    return late(path)


def _at(obj: Any, path: tuple) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def create_objects_with(prefix: str, render: Callable[[str], list[dict[str, Any]]],
                        value: pulumi.Input[str],
                        opts: pulumi.ResourceOptions) -> list[pulumi.CustomResource]:
    """Objects rendered from a value only known at deploy time (e.g. an API endpoint).

    Names and metadata must not depend on the value; only the values that do wait for it
    (down to the single env var or file), so everything else previews in full: a policy
    still sees a DaemonSet's images while the tenant's endpoint is unknown.
    """
    first, second = render(_PROBES[0]), render(_PROBES[1])
    output = pulumi.Output.from_input(value)
    render = functools.lru_cache(maxsize=1)(render)  # every late leaf of every object: one render
    fields: list[dict[str, Any]] = []
    for index, obj in enumerate(first):
        if obj["metadata"] != second[index]["metadata"]:
            raise ValueError(f"metadata of {resource_name(prefix, obj)} depends on a deploy-time value")

        def late(path: tuple, i: int = index) -> pulumi.Output[Any]:
            return output.apply(lambda v: _at(render(v)[i], path))

        fields.append({key: _late_leaves(obj[key], second[index][key], late, (key,))
                       for key in obj if key not in _IDENTITY_FIELDS})
    return _create_all(prefix, first, fields, opts)
