"""Which nodes may register in a tenant: only those the platform's config lists.

A ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) and its binding (`Deny`) in each
tenant. A host removed from the config while it is down keeps a valid kubelet client
certificate; when it boots, its kubelet registers again, and only this policy refuses it.

Upstream (Kubernetes v1.35.4, v1.30.0 and v1.36.3 read alike; clastix/kamaji 26.8.2-edge):
- the tenant's kube-apiserver runs the plugin: Kamaji sets only `--enable-admission-plugins`
  (internal/builders/controlplane/deployment.go buildKubeAPIServerCommand: no
  `--disable-admission-plugins`, no `--runtime-config`), and that flag adds to the default-on
  plugins (k8s.io/apiserver pkg/server/options/admission.go enabledPluginNames), which include
  ValidatingAdmissionPolicy (pkg/kubeapiserver/options/plugins.go DefaultOffAdmissionPlugins;
  its feature gate is GA and locked on in 1.30, k8s.io/apiserver v0.30.0 pkg/features, and gone
  since); admissionregistration.k8s.io/v1 is served by default (pkg/controlplane/instance.go
  stableAPIGroupVersionsEnabledByDefault, the v1 policy storage in
  pkg/registry/admissionregistration/rest/storage_apiserver.go);
- a kubelet registers by a CREATE of its Node, and on AlreadyExists gets it and patches its
  status (pkg/kubelet/kubelet_node_status.go tryRegisterWithAPIServer); a kubelet is the user
  `system:node:<name>` in the group `system:nodes` (pkg/auth/nodeidentifier/default.go).
Rationale: docs/design/node-admission.md.
"""

from __future__ import annotations

import json
from typing import Any

from kamaji_hami_platform.config import PROJECT, ManagementConfig, TenantConfig

API_VERSION = "admissionregistration.k8s.io/v1"
POLICY_KIND = "ValidatingAdmissionPolicy"
BINDING_KIND = "ValidatingAdmissionPolicyBinding"
NAME = f"{PROJECT}-nodes"
NODES_GROUP = "system:nodes"
# What is judged: a kubelet's CREATE and UPDATE of a Node. A kubelet registers by a CREATE, and a
# removed node's Node is gone (its leave deleted it), so a CREATE is its only way back; a
# server-side apply that would create the object is admitted as a CREATE too (k8s.io/apiserver
# v0.35.4 pkg/endpoints/handlers/patch.go applyAdmission). An UPDATE (a PATCH is one) of a Node the
# list does not name is refused too: a kubelet keeps its certificate for a year, and it must not
# change the labels, annotations or taints of a Node the config dropped (issue 38). Its status
# (the `nodes/status` subresource, which a rule for `nodes` does not match: k8s.io/apiserver
# v0.35.4 pkg/admission/plugin/webhook/predicates/rules/rules.go Matcher.resource, which the policy
# matcher uses) is not judged: the leave drains such a node after the list shrank, and the
# attach/detach controller detaches a moved pod's volumes only once the kubelet reports them
# unmounted (status.volumesInUse; pkg/controller/volume/attachdetach/reconciler/reconciler.go),
# so a refused status would hold them until the Node is deleted. Nor does refusing it take the
# Node out of service: its Lease renewals count as heartbeats (pkg/controller/nodelifecycle/
# node_lifecycle_controller.go tryUpdateNodeHealth); deleting the Node, as the leave does, does.
# Only kubelets (group system:nodes; each can create and update only its own Node,
# NodeRestriction): the platform, Kamaji and kube-controller-manager never act as nodes, and the
# platform's own requests (as the tenant's admin) must never be refused, e.g. the leave's drain
# and delete after the list has shrunk (Pulumi deletes what the config dropped after every
# update, pulumi v3.259.0 pkg/resource/deploy/deployment_executor.go performPostSteps), a
# NodePatch's delete, a server-side apply (pulumi-kubernetes v4.32.0 provider/pkg/ssa actions.go
# Relinquish) that creates a bare Node when the node is already gone and no longer listed.
OPERATIONS = ("CREATE", "UPDATE")
RESOURCES = ("nodes",)


def node_names(tenant: TenantConfig) -> list[str]:
    """The names the tenant admits: its container workers or its hosts, sorted (reordering
    hosts changes nothing here)."""
    return sorted(tenant.worker_names())


def names_expression(tenant: TenantConfig) -> str:
    """CEL: true for a Node named in the config (node names are DNS labels, written as JSON
    strings, which CEL reads alike)."""
    return f"object.metadata.name in {json.dumps(node_names(tenant))}"


def _how_to_add(tenant: TenantConfig, management: ManagementConfig | None) -> str:
    path = f"tenants[name={tenant.name}]"
    if tenant.on_hosts or (management is not None and not management.is_kind):
        return f"list it in {path}.hosts and run pulumi up, which joins it"
    return (f"raise {path}.workers (its nodes are the containers {tenant.name}-worker-<i>) and run "
            "pulumi up")


def message(tenant: TenantConfig, management: ManagementConfig | None = None) -> str:
    """Why a node is refused and how to add one (the policy's message, after the node's name)."""
    return (f"is not a node of tenant {tenant.name} in the {PROJECT} config, so it may not "
            f"register (a removed node cannot come back); to add a node, {_how_to_add(tenant, management)}")


def node_admission_objects(tenant: TenantConfig,
                           management: ManagementConfig | None = None) -> list[dict[str, Any]]:
    """The policy and its binding for one tenant: a kubelet may create or update only a Node the
    config lists. The same config renders the same objects."""
    refusal = message(tenant, management)
    policy = {
        "apiVersion": API_VERSION,
        "kind": POLICY_KIND,
        "metadata": {"name": NAME},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                   "operations": list(OPERATIONS), "resources": list(RESOURCES)}],
            },
            "matchConditions": [{"name": "kubelets-only",
                                 "expression": f"{json.dumps(NODES_GROUP)} in request.userInfo.groups"}],
            "validations": [{
                "expression": names_expression(tenant),
                "reason": "Forbidden",
                "message": f"this node {refusal}",
                "messageExpression": (f"{json.dumps('node ')} + object.metadata.name + "
                                      f"{json.dumps(' ' + refusal)}"),
            }],
        },
    }
    binding = {
        "apiVersion": API_VERSION,
        "kind": BINDING_KIND,
        "metadata": {"name": NAME},
        "spec": {"policyName": NAME, "validationActions": ["Deny"]},
    }
    return [policy, binding]
