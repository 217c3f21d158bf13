"""The platform's guardrails as plain functions, so they can be tested without the engine.

Each resource rule takes a `Resource` and returns violation messages (empty:
compliant); each stack rule takes every resource of the stack and returns
`Violation`s, each naming the resource it concerns. `pack.py` wraps them into
CrossGuard policies and decides what a stack rule sees of each resource (its
outputs, or where a fresh preview gives none, its inputs: see pack.py).

Unknown values: during a preview, inputs computed from other resources (a
kubeconfig, a command's output) are not known yet. A rule reads only the
properties it needs (`_get`), sees an unknown one as `UNKNOWN`, and decides
without it where it can: an unknown value is never a violation, and never a
reason to skip the other resources. (pulumi-policy raises UnknownValueError on
reading an unknown and then downgrades the whole policy to advisory for that
preview: "can't run policy ... during preview"; pulumi-policy 1.21
pulumi_policy/policy.py.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class _Unknown:
    """A value the preview does not know yet."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()

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
# One exact chart version; anything else (`^2.0`, `~2.10`, `2.x`, `>=2.10.0`) is a range Helm
# resolves to whatever the repository serves that day.
EXACT_CHART_VERSION = re.compile(r"v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")
# The namespaces HAMi's webhook may skip: the platform's own list
# (kamaji_hami_platform/config/rules.py WEBHOOK_EXCLUDED_NAMESPACES; tests/policy holds them equal).
WEBHOOK_SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
LOCAL_CHART_DIGEST = re.compile(r"-[0-9a-f]{12}/?$")


@dataclass(frozen=True)
class Resource:
    """What a policy sees of a resource: type, name, properties and the secret-output option."""

    type: str
    name: str
    props: Mapping[str, Any]
    additional_secret_outputs: list[str] = field(default_factory=list)
    urn: str = ""
    parent: str = ""


@dataclass(frozen=True)
class Violation:
    """A stack rule's finding: the resource it concerns and what is wrong."""

    resource: Resource
    message: str


def _get(obj: Any, *path: str) -> Any:
    """obj[path[0]][path[1]]...: None where a key is missing, UNKNOWN where a value is unknown."""
    for key in path:
        if obj is UNKNOWN:
            return UNKNOWN
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _items(value: Any) -> list[Any]:
    """The elements of a list input, UNKNOWN ones included; [] for anything else."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return []


def tcp_exposure(resource: Resource) -> list[str]:
    """Every TenantControlPlane enables Konnectivity and is LoadBalancer, or NodePort with explicit ports."""
    if resource.type != TCP_TYPE:
        return []
    spec = _get(resource.props, "spec")
    problems = []
    konnectivity = _get(spec, "addons", "konnectivity")
    if konnectivity is not UNKNOWN and not isinstance(konnectivity, Mapping):
        problems.append(f"{resource.name}: Konnectivity is not enabled (spec.addons.konnectivity)")
    service_type = _get(spec, "controlPlane", "service", "serviceType")
    if service_type is not UNKNOWN and service_type not in ("LoadBalancer", "NodePort"):
        problems.append(f"{resource.name}: serviceType {service_type!r} is neither LoadBalancer nor NodePort")
    if service_type == "NodePort":
        if not _get(spec, "networkProfile", "port"):
            problems.append(f"{resource.name}: NodePort without an explicit networkProfile.port")
        if not _get(konnectivity, "server", "port"):
            problems.append(f"{resource.name}: NodePort without an explicit konnectivity server port")
    return problems


def hami_webhook_fails_closed(resource: Resource) -> list[str]:
    """HAMi's admission webhook has failurePolicy Fail and sees every GPU pod: not disabled, no
    customURL, no namespace whitelisted beyond the system ones, no selector term that narrows it
    (HAMi chart 2.10.0 values.yaml `scheduler.admissionWebhook`)."""
    if resource.type != HELM_RELEASE_TYPE or _get(resource.props, "chart") != "hami":
        return []
    webhook = _get(resource.props, "values", "scheduler", "admissionWebhook")
    if webhook is UNKNOWN:
        return []
    webhook = webhook if isinstance(webhook, Mapping) else {}
    problems = []
    policy = webhook.get("failurePolicy")
    if policy is not UNKNOWN and policy != "Fail":
        problems.append(f"{resource.name}: HAMi webhook failurePolicy is {policy!r}, not 'Fail' "
                        "(a broken webhook path would silently bypass HAMi)")
    if webhook.get("enabled", True) not in (True, UNKNOWN):
        problems.append(f"{resource.name}: HAMi webhook is disabled (admissionWebhook.enabled)")
    custom_url = webhook.get("customURL")
    if isinstance(custom_url, Mapping) and custom_url.get("enabled", False) not in (False, UNKNOWN):
        problems.append(f"{resource.name}: HAMi webhook points at a customURL")
    listed = webhook.get("whitelistNamespaces") or []
    if isinstance(listed, list):
        extra = sorted(str(n) for n in listed if n not in WEBHOOK_SYSTEM_NAMESPACES and n is not UNKNOWN)
        if extra:
            problems.append(f"{resource.name}: HAMi webhook skips namespaces {', '.join(extra)} "
                            "(whitelistNamespaces beyond the system ones)")
    for selector in ("namespaceSelector", "objectSelector"):
        for term in ("matchLabels", "matchExpressions"):
            if _get(webhook, selector, term) not in (None, UNKNOWN, {}, []):
                problems.append(f"{resource.name}: HAMi webhook {selector}.{term} narrows the pods it sees")
    return problems


def kubeconfig_outputs_secret(resource: Resource) -> list[str]:
    """A command that prints a kubeconfig has its output secret and its logging off."""
    create = _get(resource.props, "create")
    if resource.type != COMMAND_TYPE or not isinstance(create, str) or "get kubeconfig" not in create:
        return []
    problems = []
    if "stdout" not in resource.additional_secret_outputs:
        problems.append(f"{resource.name}: prints a kubeconfig but stdout is not a secret output")
    logging = _get(resource.props, "logging")
    if logging is not UNKNOWN and logging != "none":
        problems.append(f"{resource.name}: prints a kubeconfig with command logging on")
    return problems


def _containers(resource: Resource) -> Iterator[Any]:
    pod_spec = _get(resource.props, "spec", *WORKLOAD_TYPES[resource.type],
                    *(("spec",) if WORKLOAD_TYPES[resource.type] else ()))
    for key in ("initContainers", "containers"):
        yield from _items(_get(pod_spec, key))


def _image_tag(image: str) -> str:
    if "@sha256:" in image:
        return "digest"
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def images_pinned(resource: Resource) -> list[str]:
    """No container runs an image without a tag, or tagged `latest`."""
    images: list[str] = []
    if resource.type in WORKLOAD_TYPES:
        images = [image for c in _containers(resource) if isinstance(image := _get(c, "image") or "", str)]
    elif resource.type == COMMAND_TYPE:
        text = "\n".join(value for key in ("create", "stdin")
                         if isinstance(value := _get(resource.props, key), str))
        images = [m.group(0) for m in KIND_NODE_IMAGE.finditer(text)]
    elif resource.type == HELM_RELEASE_TYPE:
        return _release_pinned(resource)
    return [f"{resource.name}: image {image!r} is not pinned to a tag"
            for image in images if _image_tag(image) in UNPINNED_TAGS]


def _release_pinned(resource: Resource) -> list[str]:
    chart = _get(resource.props, "chart")
    version = _get(resource.props, "version")
    if UNKNOWN in (chart, version):
        return []
    version = str(version or "")
    problems = []
    if isinstance(chart, str) and chart.startswith((".", "/")):
        # A local chart folder (the platform's verified Kamaji chart,
        # kamaji_hami_platform/management/kamaji_chart.py)
        # is pinned by the content digest in its name; its version is what the provider's Check
        # reads from its Chart.yaml (pulumi-kubernetes v4.32.0 helm_release.go), not an input.
        if not LOCAL_CHART_DIGEST.search(chart):
            problems.append(f"{resource.name}: local chart {chart!r} carries no content digest in its name")
    elif not version or version == "latest":
        problems.append(f"{resource.name}: chart version is not pinned")
    elif not EXACT_CHART_VERSION.fullmatch(version):
        problems.append(f"{resource.name}: chart version {version!r} is a range, not one version")
    # A chart versioned +latest (Kamaji's, whose appVersion is `latest`) pins no image: image.tag must.
    if version.endswith("+latest"):
        tag = _get(resource.props, "values", "image", "tag")
        if tag is not UNKNOWN and (not tag or tag == "latest"):
            problems.append(f"{resource.name}: chart {version} with no pinned image.tag")
    return problems


def _denies_everything(policy: Resource) -> bool | None:
    """True for a default-deny NetworkPolicy (all pods, both directions, no rules), False for
    another policy, None when an unknown value leaves it open."""
    selector = _get(policy.props, "spec", "podSelector")
    types = _get(policy.props, "spec", "policyTypes")
    rules_ = [_get(policy.props, "spec", key) for key in ("ingress", "egress")]
    if UNKNOWN in (selector, types, *rules_) or UNKNOWN in _items(types):
        return None
    return (selector in ({}, None) and {"Ingress", "Egress"} <= set(_items(types))
            and not any(rules_))


def _same_component(a: Resource, b: Resource) -> bool:
    """True when both have the same parent, or when either parent is not known."""
    return not a.parent or not b.parent or a.parent == b.parent


def tenant_namespaces_default_deny(resources: list[Resource]) -> list[Violation]:
    """Every namespace holding a TenantControlPlane has a default-deny NetworkPolicy."""
    denied: set[str] = set()
    # Policies that may be a default deny where we cannot see it: an unknown namespace, or
    # nothing seen at all. They excuse only control planes of their own component.
    maybe: list[tuple[Resource, Any]] = []
    for r in (r for r in resources if r.type == NETWORK_POLICY_TYPE):
        verdict = _denies_everything(r) if r.props else None
        namespace = _get(r.props, "metadata", "namespace")
        if verdict and namespace not in (None, UNKNOWN):
            denied.add(namespace)
        elif verdict is None or namespace in (None, UNKNOWN):
            maybe.append((r, namespace))
    violations = []
    for tcp in (r for r in resources if r.type == TCP_TYPE):
        namespace = _get(tcp.props, "metadata", "namespace")
        if namespace in (None, UNKNOWN) or namespace in denied:
            continue  # nothing known to judge, or a default deny there
        if any(ns in (namespace, None, UNKNOWN) and _same_component(policy, tcp) for policy, ns in maybe):
            continue  # a policy that may be its default deny, not known yet
        violations.append(Violation(tcp, f"tenant namespace {namespace!r} has no default-deny "
                                         "NetworkPolicy"))
    return violations


def worker_versions_match(resources: list[Resource]) -> list[Violation]:
    """Each worker runs kindest/node at exactly its tenant control plane's version."""
    planes = [r for r in resources if r.type == TCP_TYPE]
    versions = {_get(r.props, "metadata", "namespace"): _get(r.props, "spec", "kubernetes", "version")
                for r in planes}
    # Control planes whose tenant is not known yet (unknown namespace, or nothing seen).
    unseen = [r for r in planes if _get(r.props, "metadata", "namespace") in (None, UNKNOWN)]
    violations = []
    for r in resources:
        create = _get(r.props, "create") if r.type == COMMAND_TYPE else None
        if not isinstance(create, str):
            continue  # not a command, or a script the preview does not know yet
        tenant = WORKER_TENANT_LABEL.search(create)
        image = KIND_NODE_IMAGE.search(create)
        if not tenant or not image:
            continue
        expected = versions.get(tenant.group(1))
        if expected is UNKNOWN or (expected is None and any(_same_component(p, r) for p in unseen)):
            continue
        if expected is None:
            violations.append(Violation(r, f"{r.name}: worker of tenant {tenant.group(1)!r}, "
                                           "which has no control plane"))
        elif image.group(1) != expected:
            violations.append(Violation(r, f"{r.name}: worker runs {image.group(0)} but tenant "
                                           f"{tenant.group(1)!r} runs {expected}"))
    return violations


# Set on a worker host's join and leave when a hop's host key is not checked
# (kamaji_hami_platform/tenant/host_ssh.py INSECURE_HOST_KEY_ENV).
INSECURE_HOST_KEY_ENV = "KHP_INSECURE_HOST_KEY"


def worker_host_keys_pinned(resource: Resource) -> list[str]:
    """Every worker host and bastion is reached with its host key pinned (no insecureSkipHostKeyCheck)."""
    if resource.type != COMMAND_TYPE:
        return []
    unchecked = _get(resource.props, "environment", INSECURE_HOST_KEY_ENV)
    if not isinstance(unchecked, str) or not unchecked:
        return []  # pinned, or not known in this preview
    return [f"{resource.name}: the host key of {unchecked} is not checked (insecureSkipHostKeyCheck): "
            "whoever answers at that address gets the join; pin its hostKey"]


RESOURCE_RULES = {
    "tcp-konnectivity-and-explicit-exposure": tcp_exposure,
    "hami-webhook-fails-closed": hami_webhook_fails_closed,
    "kubeconfig-outputs-secret": kubeconfig_outputs_secret,
    "images-pinned": images_pinned,
    "worker-host-keys-pinned": worker_host_keys_pinned,
}
# Rules that warn unless the stack's policy config makes them mandatory: a stack is marked
# production by policy/config/<stack>.json, which `make preview` and `make up` pass to the engine.
ADVISORY_RULES = frozenset({"worker-host-keys-pinned"})
STACK_RULES = {
    "tenant-namespaces-default-deny": tenant_namespaces_default_deny,
    "worker-version-matches-control-plane": worker_versions_match,
}
