"""The platform's guardrails as plain functions, so they can be tested without the engine.

Each resource rule takes a `Resource` and returns violation messages (empty:
compliant); each stack rule takes every resource of the stack. `pack.py` wraps
them into CrossGuard policies.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

TCP_TYPE = "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane"
NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
COMMAND_TYPE = "command:local:Command"
WORKLOAD_TYPES = {
    "kubernetes:core/v1:Pod": (),
    "kubernetes:apps/v1:DaemonSet": ("template",),
    "kubernetes:apps/v1:Deployment": ("template",),
    "kubernetes:apps/v1:StatefulSet": ("template",),
    "kubernetes:batch/v1:Job": ("template",),
    "kubernetes:batch/v1:CronJob": ("jobTemplate", "spec", "template"),
}
WORKER_TENANT_LABEL = re.compile(r"io\.kamaji-hami-platform/tenant=([a-z0-9-]+)")
KIND_NODE_IMAGE = re.compile(r"kindest/node(?::([\w.-]+))?")
UNPINNED_TAGS = ("", "latest")


@dataclass(frozen=True)
class Resource:
    """What a policy sees of a resource: type, name, inputs and the secret-output option."""

    type: str
    name: str
    props: dict[str, Any]
    additional_secret_outputs: list[str] = field(default_factory=list)


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def tcp_exposure(resource: Resource) -> list[str]:
    """Every TenantControlPlane enables Konnectivity and is LoadBalancer, or NodePort with explicit ports."""
    if resource.type != TCP_TYPE:
        return []
    spec = resource.props.get("spec") or {}
    problems = []
    konnectivity = _get(spec, "addons", "konnectivity")
    if not isinstance(konnectivity, dict):
        problems.append(f"{resource.name}: Konnectivity is not enabled (spec.addons.konnectivity)")
    service_type = _get(spec, "controlPlane", "service", "serviceType")
    if service_type not in ("LoadBalancer", "NodePort"):
        problems.append(f"{resource.name}: serviceType {service_type!r} is neither LoadBalancer nor NodePort")
    if service_type == "NodePort":
        if not _get(spec, "networkProfile", "port"):
            problems.append(f"{resource.name}: NodePort without an explicit networkProfile.port")
        if not _get(konnectivity or {}, "server", "port"):
            problems.append(f"{resource.name}: NodePort without an explicit konnectivity server port")
    return problems


def hami_webhook_fails_closed(resource: Resource) -> list[str]:
    """HAMi's admission webhook has failurePolicy Fail."""
    if resource.type != HELM_RELEASE_TYPE or resource.props.get("chart") != "hami":
        return []
    policy = _get(resource.props.get("values") or {}, "scheduler", "admissionWebhook", "failurePolicy")
    if policy != "Fail":
        return [f"{resource.name}: HAMi webhook failurePolicy is {policy!r}, not 'Fail' "
                "(a broken webhook path would silently bypass HAMi)"]
    return []


def kubeconfig_outputs_secret(resource: Resource) -> list[str]:
    """A command that prints a kubeconfig has its output secret and its logging off."""
    if resource.type != COMMAND_TYPE or "get kubeconfig" not in str(resource.props.get("create", "")):
        return []
    problems = []
    if "stdout" not in resource.additional_secret_outputs:
        problems.append(f"{resource.name}: prints a kubeconfig but stdout is not a secret output")
    if resource.props.get("logging") != "none":
        problems.append(f"{resource.name}: prints a kubeconfig with command logging on")
    return problems


def _containers(resource: Resource) -> Iterator[dict[str, Any]]:
    spec = resource.props.get("spec") or {}
    template_path = WORKLOAD_TYPES[resource.type]
    pod_spec = spec if not template_path else _get(spec, *template_path, "spec")
    for key in ("initContainers", "containers"):
        yield from (pod_spec or {}).get(key) or []


def _image_tag(image: str) -> str:
    if "@sha256:" in image:
        return "digest"
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def images_pinned(resource: Resource) -> list[str]:
    """No container runs an image without a tag, or tagged `latest`."""
    images: list[str] = []
    if resource.type in WORKLOAD_TYPES:
        images = [c.get("image", "") for c in _containers(resource)]
    elif resource.type == COMMAND_TYPE:
        text = f"{resource.props.get('create', '')}\n{resource.props.get('stdin', '')}"
        images = [m.group(0) for m in KIND_NODE_IMAGE.finditer(text)]
    elif resource.type == HELM_RELEASE_TYPE:
        return _release_pinned(resource)
    return [f"{resource.name}: image {image!r} is not pinned to a tag"
            for image in images if _image_tag(image) in UNPINNED_TAGS]


def _release_pinned(resource: Resource) -> list[str]:
    problems = []
    version = str(resource.props.get("version") or "")
    if not version or version == "latest":
        problems.append(f"{resource.name}: chart version is not pinned")
    # A chart published only as +latest (Kamaji) pins nothing: the image tag must.
    if version.endswith("+latest"):
        tag = _get(resource.props.get("values") or {}, "image", "tag")
        if not tag or tag == "latest":
            problems.append(f"{resource.name}: chart {version} with no pinned image.tag")
    return problems


def tenant_namespaces_default_deny(resources: list[Resource]) -> list[str]:
    """Every namespace holding a TenantControlPlane has a default-deny NetworkPolicy."""
    denied = {
        _get(r.props, "metadata", "namespace") for r in resources
        if r.type == NETWORK_POLICY_TYPE
        and _get(r.props, "spec", "podSelector") in ({}, None)
        and {"Ingress", "Egress"} <= set(_get(r.props, "spec", "policyTypes") or [])
        and not _get(r.props, "spec", "ingress") and not _get(r.props, "spec", "egress")
    }
    return [f"tenant namespace {ns!r} has no default-deny NetworkPolicy"
            for ns in sorted({_get(r.props, "metadata", "namespace") for r in resources
                              if r.type == TCP_TYPE}) if ns not in denied]


def worker_versions_match(resources: list[Resource]) -> list[str]:
    """Each worker runs kindest/node at exactly its tenant control plane's version."""
    versions = {_get(r.props, "metadata", "namespace"): _get(r.props, "spec", "kubernetes", "version")
                for r in resources if r.type == TCP_TYPE}
    problems = []
    for r in resources:
        create = str(r.props.get("create", "")) if r.type == COMMAND_TYPE else ""
        tenant = WORKER_TENANT_LABEL.search(create)
        image = KIND_NODE_IMAGE.search(create)
        if not tenant or not image:
            continue
        expected = versions.get(tenant.group(1))
        if expected is None:
            problems.append(f"{r.name}: worker of tenant {tenant.group(1)!r}, which has no control plane")
        elif image.group(1) != expected:
            problems.append(f"{r.name}: worker runs {image.group(0)} but tenant "
                            f"{tenant.group(1)!r} runs {expected}")
    return problems


RESOURCE_RULES = {
    "tcp-konnectivity-and-explicit-exposure": tcp_exposure,
    "hami-webhook-fails-closed": hami_webhook_fails_closed,
    "kubeconfig-outputs-secret": kubeconfig_outputs_secret,
    "images-pinned": images_pinned,
}
STACK_RULES = {
    "tenant-namespaces-default-deny": tenant_namespaces_default_deny,
    "worker-version-matches-control-plane": worker_versions_match,
}
