"""What a host's bootstrap token may do in its tenant: kubeadm join, and no certificate by itself.

kubeadm's node tokens carry the group `system:bootstrappers:kubeadm:default-node-token`, which
Kamaji binds, as kubeadm does, to the node bootstrap RBAC and to auto-approval: the nodeclient
approver signs any `system:node:<name>` certificate request from that group (kubernetes v1.35.4
pkg/controller/certificates/approver/sarapprove.go: it asks only whether the requester may create
`certificatesigningrequests/nodeclient`), and the certificate lasts a year. A host (or whoever
answers at its address) could so become any node of the tenant.

A host's token is in a group of its own instead (JOIN_GROUP), bound here to what `kubeadm join`
reads and the kubelet's TLS bootstrap posts, and to nothing that approves: its certificate request
waits until the local join script approves it, and only a request for this host's kubelet
(scripts/host_csr_approval.bash). Containers of kind mode keep kubeadm's group: they are the
platform's own, on the platform's machine.

The bindings are kubeadm's for its node group (v1.35.4 cmd/kubeadm/app/phases/bootstraptoken/node/
tlsbootstrap.go AllowBootstrapTokensToPostCSRs, AllowBootstrapTokensToGetNodes; uploadconfig/
uploadconfig.go NodesKubeadmConfigClusterRoleName; kubelet/config.go KubeletBaseConfigMapRole), to
the same roles Kamaji creates (internal/kubeadm/bootstraptoken.go, uploadconfig.go), without
AutoApproveNodeBootstrapTokens (`kubeadm:node-autoapprove-bootstrap`), the kube-proxy ConfigMap
role (the join tries to read it and goes on without it, as the platform runs its own kube-proxy:
v1.35.4 cmd/kubeadm/app/componentconfigs/configset.go, kubeproxy.go, an optional config) and
copycerts (control-plane joins). The sim tier checks this set
against the bindings real kubeadm creates (tests/sim/test_host_join_access.py).
Rationale: docs/design/worker-hosts.md.
"""

from __future__ import annotations

from typing import Any

from kamaji_hami_platform.config import PROJECT, TenantConfig

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"
KUBE_SYSTEM = "kube-system"
# The group of every host's join token (a bootstrap token's extra groups must match
# system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]: k8s.io/cluster-bootstrap token/api/types.go
# BootstrapGroupPattern).
JOIN_GROUP = f"system:bootstrappers:{PROJECT}:hosts"
# What `kubeadm join` and the kubelet's TLS bootstrap need, by kubeadm's role names.
CLUSTER_ROLES = (
    "system:node-bootstrapper",  # create, get, list, watch certificatesigningrequests
    "kubeadm:get-nodes",  # the join's check for a Ready Node of the same name
)
KUBE_SYSTEM_ROLES = (
    "kubeadm:nodes-kubeadm-config",  # the kubeadm-config ConfigMap
    "kubeadm:kubelet-config",  # the kubelet-config ConfigMap
)
# The role this group is never bound to: auto-approval of node client certificates.
AUTO_APPROVAL_CLUSTER_ROLE = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"


def binding_name(role: str) -> str:
    """`kamaji-hami-platform-hosts-<role>`, its colons as dashes: a name beside kubeadm's, never
    one of them, and no colon in a Pulumi resource name."""
    return f"{PROJECT}-hosts-{role.replace(':', '-')}"


def _binding(kind: str, role_kind: str, role: str, namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": binding_name(role)}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": JOIN_GROUP}],
    }


def join_access_objects(tenant: TenantConfig) -> list[dict[str, Any]]:
    """The bindings of the hosts' token group, for a tenant of hosts (none for containers)."""
    if not tenant.on_hosts:
        return []
    return ([_binding("ClusterRoleBinding", "ClusterRole", role) for role in CLUSTER_ROLES]
            + [_binding("RoleBinding", "Role", role, KUBE_SYSTEM) for role in KUBE_SYSTEM_ROLES])
