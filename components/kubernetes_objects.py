"""Turn rendered manifests (plain dicts) into typed pulumi_kubernetes resources.

Typed resources, not yaml/v2 ConfigGroups: ConfigGroup is a provider-side
component that cannot preview while the cluster does not exist yet
(pulumi-kubernetes#3027), and typed DaemonSets and Deployments are awaited.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_kubernetes as kubernetes

_CONSTRUCTORS: dict[tuple[str, str], Callable[..., pulumi.CustomResource]] = {
    ("v1", "ConfigMap"): kubernetes.core.v1.ConfigMap,
    ("v1", "Namespace"): kubernetes.core.v1.Namespace,
    ("v1", "ResourceQuota"): kubernetes.core.v1.ResourceQuota,
    ("v1", "ServiceAccount"): kubernetes.core.v1.ServiceAccount,
    ("apps/v1", "DaemonSet"): kubernetes.apps.v1.DaemonSet,
    ("apps/v1", "Deployment"): kubernetes.apps.v1.Deployment,
    ("batch/v1", "CronJob"): kubernetes.batch.v1.CronJob,
    ("networking.k8s.io/v1", "NetworkPolicy"): kubernetes.networking.v1.NetworkPolicy,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): kubernetes.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): kubernetes.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): kubernetes.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): kubernetes.rbac.v1.RoleBinding,
}
_ARGUMENT_NAMES = {"roleRef": "role_ref"}
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


def create_objects(prefix: str, objects: list[dict[str, Any]],
                   opts: pulumi.ResourceOptions) -> list[pulumi.CustomResource]:
    """One typed resource per rendered object."""
    return [_create(prefix, obj, {k: v for k, v in obj.items() if k not in _IDENTITY_FIELDS}, opts)
            for obj in objects]


def create_objects_with(prefix: str, render: Callable[[str], list[dict[str, Any]]],
                        value: pulumi.Input[str],
                        opts: pulumi.ResourceOptions) -> list[pulumi.CustomResource]:
    """Objects rendered from a value only known at deploy time (e.g. an API endpoint).

    Names and metadata must not depend on the value; only the fields that do
    wait for it, so the rest previews in full.
    """
    first, second = render(_PROBES[0]), render(_PROBES[1])
    output = pulumi.Output.from_input(value)
    resources = []
    for index, obj in enumerate(first):
        if obj["metadata"] != second[index]["metadata"]:
            raise ValueError(f"metadata of {resource_name(prefix, obj)} depends on a deploy-time value")
        fields: dict[str, Any] = {}
        for key in obj:
            if key in _IDENTITY_FIELDS:
                continue
            if obj[key] == second[index][key]:
                fields[key] = obj[key]
            else:
                fields[key] = output.apply(lambda v, i=index, k=key: render(v)[i][k])
        resources.append(_create(prefix, obj, fields, opts))
    return resources
