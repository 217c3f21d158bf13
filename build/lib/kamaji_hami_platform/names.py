"""Every name the platform derives from the config, and the rule Kubernetes, kind or Docker
applies to it: one place for the formulas, checked against the config before any resource.

A name that breaks a rule fails on a real `up` only after the control plane and the workers
exist (the API server rejects the object), so `config.parse_config` checks every one here
first and names the tenant and the limit (`check`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class NameRule:
    """A naming rule: what it is called, its maximum length and its pattern."""

    title: str
    max_length: int | None  # None: the source sets no length limit
    pattern: re.Pattern[str]

    def problem(self, name: str) -> str | None:
        if self.max_length is not None and len(name) > self.max_length:
            return f"is {len(name)} characters long, {self.title} allows {self.max_length}"
        if not self.pattern.fullmatch(name):
            return f"is not {self.title}"
        return None


# k8s.io/apimachinery/pkg/util/validation: IsDNS1123Label, IsDNS1035Label, IsDNS1123Subdomain,
# IsValidLabelValue; k8s.io/kubernetes/pkg/apis/batch/validation ValidateCronJob (52: the
# CronJob controller appends an 11-character suffix to its Jobs' names, which are label values).
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = NameRule("a DNS-1123 label", 63, re.compile(_LABEL))
DNS1035_LABEL = NameRule("a DNS-1035 label (a Service name)", 63, re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?"))
DNS1123_SUBDOMAIN = NameRule("a DNS-1123 subdomain", 253, re.compile(rf"{_LABEL}(\.{_LABEL})*"))
CRONJOB_NAME_LIMIT = 52
CRONJOB_NAME = NameRule("a CronJob name", CRONJOB_NAME_LIMIT, DNS1123_SUBDOMAIN.pattern)
LABEL_VALUE = NameRule("a label value", 63, re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"))
# kind v0.31.0 pkg/internal/apis/config/validate.go validNameRE (no length limit; its node's
# name is checked as a DNS-1123 label below); Docker container names (moby daemon/names
# RestrictedNamePattern, no length limit).
KIND_CLUSTER_NAME = NameRule("a kind cluster name", None, re.compile(r"[a-z0-9.-]+"))
DOCKER_CONTAINER_NAME = NameRule("a Docker container name", None, re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]+"))

# Kamaji 26.8.2-edge names each tenant's Secrets and ConfigMaps `<tcp>-<resource>`
# (internal/utilities/utilities.go AddTenantPrefix); its longest resource name:
KAMAJI_LONGEST_SUFFIX = "konnectivity-egress-selector-configuration"  # internal/resources/konnectivity
CAPACITY_AGENT = "hami-mock-gpu-capacity"
MAX_WORKERS = 99  # per tenant: `-worker-<0..98>`, and one fixed address each (docker_network.py)
_HASH_LENGTH = 8


def worker_name(tenant: str, index: int) -> str:
    """Container name = hostname = Kubernetes node name of a tenant's worker."""
    return f"{tenant}-worker-{index}"


def admin_kubeconfig_secret(tenant: str) -> str:
    """The Secret Kamaji writes the tenant's admin kubeconfig to."""
    return f"{tenant}-admin-kubeconfig"


def kind_node_container(cluster: str) -> str:
    """kind names a one-node cluster's node (container, hostname, node) `<name>-control-plane`."""
    return f"{cluster}-control-plane"


def capacity_cronjob_name(node: str) -> str:
    """The GPU capacity CronJob of a node: `hami-mock-gpu-capacity-<node>`, or, where that
    exceeds a CronJob's 52 characters, its beginning and a hash of the node name."""
    name = f"{CAPACITY_AGENT}-{node}"
    if len(name) <= CRONJOB_NAME_LIMIT:
        return name
    digest = hashlib.sha256(node.encode()).hexdigest()[:_HASH_LENGTH]
    return f"{name[:CRONJOB_NAME_LIMIT - _HASH_LENGTH - 1].rstrip('-')}-{digest}"


@dataclass(frozen=True)
class TenantShape:
    """What of a tenant its generated names depend on."""

    path: str
    name: str
    workers: int
    gpus: bool


def generated(management: str, tenants: Iterable[TenantShape]) -> list[tuple[str, str, str, NameRule]]:
    """(config path, what, name, rule) for every name derived from the config."""
    node = kind_node_container(management)
    names = [
        ("management.name", "the kind cluster", management, KIND_CLUSTER_NAME),
        ("management.name", "the kind node (container, hostname and node name)", node, DNS1123_LABEL),
    ]
    for tenant in tenants:
        names += [
            (tenant.path, "the tenant namespace", tenant.name, DNS1123_LABEL),
            (tenant.path, "the TenantControlPlane's Service", tenant.name, DNS1035_LABEL),
            (tenant.path, "Kamaji's label kamaji.clastix.io/name", tenant.name, LABEL_VALUE),
            (tenant.path, "Kamaji's Secrets and ConfigMaps", f"{tenant.name}-{KAMAJI_LONGEST_SUFFIX}",
             DNS1123_SUBDOMAIN),
            (tenant.path, "the admin kubeconfig Secret", admin_kubeconfig_secret(tenant.name),
             DNS1123_SUBDOMAIN),
        ]
        for index in range(tenant.workers):
            worker = worker_name(tenant.name, index)
            names += [(tenant.path, "a worker (hostname and node name)", worker, DNS1123_LABEL),
                      (tenant.path, "a worker container", worker, DOCKER_CONTAINER_NAME)]
            if tenant.gpus:
                names.append((tenant.path, "a GPU capacity CronJob", capacity_cronjob_name(worker),
                              CRONJOB_NAME))
    return names


def check(management: str, tenants: Iterable[TenantShape]) -> list[tuple[str, str]]:
    """(config path, problem) for every generated name that breaks its rule."""
    problems: dict[tuple[str, str], str] = {}
    for path, what, name, rule in generated(management, tenants):
        problem = rule.problem(name)
        if problem and (path, what) not in problems:  # the first of a tenant's workers says it
            problems[(path, what)] = f"makes {what} {name!r}, which {problem}"
    return [(path, problem) for (path, _), problem in problems.items()]
