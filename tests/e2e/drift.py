"""Drift made by hand on a deployed stack, as an operator might, and what shows it was undone.

Two edits of fields the platform sets (the only fields Pulumi counts as drift: a refresh reads an
object back pruned to the inputs it was given, pulumi-kubernetes v4.32.0 provider.go `Read`,
`pruneLiveState`), each one an operator could make and a platform must not keep:
- a tenant's default-deny NetworkPolicy in the management cluster loosened to ingress only (its
  pods' egress no longer denied);
- the mock-mode lock release agent scaled to zero inside a tenant (HAMi's node lock then waits
  for its timeout again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kamaji_hami_platform.gpu.lock_release import LOCK_RELEASE_AGENT, LOCK_RELEASE_REPLICAS
from kamaji_hami_platform.gpu.lock_release import NAMESPACE as LOCK_RELEASE_NAMESPACE
from kamaji_hami_platform.management.network_policy import DEFAULT_DENY

DENY_BOTH = ["Ingress", "Egress"]
LOOSENED = ["Ingress"]
NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
DEPLOYMENT_TYPE = "kubernetes:apps/v1:Deployment"


@dataclass(frozen=True)
class Edit:
    """One hand edit: the resource the state holds for the object, and where the object lives."""

    resource: str  # the Pulumi resource name (the last part of its URN)
    tenant: str
    namespace: str
    name: str


def state_resource(state: dict[str, Any], type_: str, object_id: str, tenant: str) -> str:
    """The name of the one resource of `type_` and id `namespace/name` that a tenant's component
    created (its name starts with the tenant's: `<tenant>-...`)."""
    found = [resource["urn"].rsplit("::", 1)[1] for resource in state["deployment"]["resources"]
             if resource["type"] == type_ and resource.get("id") == object_id
             and resource["urn"].rsplit("::", 1)[1].startswith(f"{tenant}-")]
    if len(found) != 1:
        raise LookupError(f"{tenant}: expected one {type_} {object_id} in the state, found {found}")
    return found[0]


def loosen_default_deny(management: Any, state: dict[str, Any], tenant: str, namespace: str) -> Edit:
    """Drop Egress from the tenant namespace's default deny, as `kubectl edit` would."""
    from kubernetes import client

    client.NetworkingV1Api(management).patch_namespaced_network_policy(
        DEFAULT_DENY, namespace, {"spec": {"policyTypes": LOOSENED}})
    resource = state_resource(state, NETWORK_POLICY_TYPE, f"{namespace}/{DEFAULT_DENY}", tenant)
    return Edit(resource, tenant, namespace, DEFAULT_DENY)


def stop_lock_release(tenant_api: Any, state: dict[str, Any], tenant: str) -> Edit:
    """Scale the tenant's lock release agent to zero, as `kubectl scale` would."""
    from kubernetes import client

    client.AppsV1Api(tenant_api).patch_namespaced_deployment_scale(
        LOCK_RELEASE_AGENT, LOCK_RELEASE_NAMESPACE, {"spec": {"replicas": 0}})
    object_id = f"{LOCK_RELEASE_NAMESPACE}/{LOCK_RELEASE_AGENT}"
    return Edit(state_resource(state, DEPLOYMENT_TYPE, object_id, tenant), tenant,
                LOCK_RELEASE_NAMESPACE, LOCK_RELEASE_AGENT)


def default_deny_types(management: Any, namespace: str) -> list[str]:
    from kubernetes import client

    policy = client.NetworkingV1Api(management).read_namespaced_network_policy(DEFAULT_DENY, namespace)
    return list(policy.spec.policy_types or [])


def lock_release_replicas(tenant_api: Any) -> int:
    from kubernetes import client

    apps = client.AppsV1Api(tenant_api)
    return apps.read_namespaced_deployment(LOCK_RELEASE_AGENT, LOCK_RELEASE_NAMESPACE).spec.replicas


def undone(management: Any, namespace: str, tenant_api: Any) -> list[str]:
    """What a repair left as the hand made it (nothing, when it was undone)."""
    left = []
    if default_deny_types(management, namespace) != DENY_BOTH:
        left.append(f"{namespace}/{DEFAULT_DENY} policyTypes {default_deny_types(management, namespace)}")
    if lock_release_replicas(tenant_api) != LOCK_RELEASE_REPLICAS:
        left.append(f"{LOCK_RELEASE_AGENT} replicas {lock_release_replicas(tenant_api)}")
    return left
