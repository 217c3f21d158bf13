"""A bounded tenant admin for kind mode, where every tenant's workers share one kernel.

A tenant's own people get everything a team running its cluster needs (namespaces, workloads, RBAC,
CRDs and their resources, GPU pods), but nothing that reaches the shared host or the platform:
no privileged, host-namespace, hostPath or hostPort pods, no changes to nodes, admission policies,
webhooks, API services or certificate approval, no impersonation, and nothing written, exec'd or
port-forwarded in the platform's namespaces. The platform keeps its own credential (Kamaji's
admin.conf, group `kubeadm:cluster-admins`), which nothing here judges.

Enforced in the tenant's own API server by two means, neither of which the tenant admin can change:
- RBAC: the tenant admin's ClusterRole names what it may do. It may not write admission
  objects: ValidatingAdmissionPolicies never judge them (k8s.io/apiserver v0.35.4
  pkg/admission/plugin/policy/generic/policy_source.go and pkg/admission/plugin/webhook/
  predicates/rules IsExemptAdmissionConfigurationResource), so RBAC is their only guard.
- ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, on by default and GA since 1.30;
  tenant/node_admission.py cites the sources): pod security in the tenants' namespaces (what Pod
  Security Admission's `baseline` level forbids of a Linux pod), the platform's namespaces for the
  platform alone, roles that cannot grant what the tenant admin lacks, the cluster roles and
  bindings of Kubernetes, kubeadm and the platform left as they are, and no host-path volumes.

A tenant admin may create roles that grant what it does not hold (`escalate`), so that an operator's
ClusterRole for its own CRDs can be written and, labelled `AGGREGATE_LABEL`, join the tenant
admin's role (the clusterrole-aggregation controller); the role policy is what bounds them. It may
not `bind` a role it does not hold, except `NAMESPACE_ADMIN_ROLE` in a namespace of its own: the
tenant admin reads secrets only where it bound that role, so the platform's namespaces' secrets
(bootstrap tokens among them, which would give a node's credential) stay unread.

Rationale, what is and is not protected per mode: docs/design/tenant-admin.md.
"""

from __future__ import annotations

import json
from typing import Any

from kamaji_hami_platform.config import PROJECT

ADMISSION_API = "admissionregistration.k8s.io/v1"
RBAC_API = "rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"

# Who the tenant's people are: the group of the credential the platform issues them.
TENANT_ADMINS_GROUP = f"{PROJECT}:tenant-admins"
ADMIN_ROLE = f"{PROJECT}:tenant-admin"
# Aggregated into the tenant admin's grant: the operators' ClusterRoles a tenant admin labels.
EXTENSIONS_ROLE = f"{PROJECT}:tenant-admin-extensions"
AGGREGATE_LABEL = f"{PROJECT}.io/aggregate-to-tenant-admin"
# Everything inside one namespace, secrets and exec included: bound by a RoleBinding only.
NAMESPACE_ADMIN_ROLE = f"{PROJECT}:tenant-namespace-admin"

# The platform's namespaces in a tenant: kube-proxy, kindnet, konnectivity's agent and HAMi run in
# kube-system (gpu/render.py HAMI_NAMESPACE), kubeadm's bootstrap tokens live there, node leases in
# kube-node-lease, kubeadm's cluster-info in kube-public.
PLATFORM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")

# Who the platform is in a tenant's API server: never judged. The platform's and Kamaji's
# credential (admin.conf: kubeadm:cluster-admins; super-admin.conf and the API server's loopback:
# system:masters), the kubelets (system:nodes), the control plane's own identities, and service
# accounts of kube-system (kube-controller-manager's controllers with
# --use-service-account-credentials, and the platform's add-ons). Everyone else is judged: the tenant
# admin and whoever it grants anything to, its service accounts included.
PLATFORM_GROUPS = ("system:masters", "kubeadm:cluster-admins", "system:nodes")
PLATFORM_USERS = ("system:kube-controller-manager", "system:kube-scheduler", "system:apiserver")
PLATFORM_SERVICE_ACCOUNTS = "system:serviceaccount:kube-system:"

READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
ALL_VERBS = (*READ_VERBS, *WRITE_VERBS)
# Capabilities a container may add: Pod Security Standards, baseline level
# (k8s.io/pod-security-admission v0.35.4 policy/check_capabilities_baseline.go).
BASELINE_CAPABILITIES = ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                         "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT")
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"

POD_POLICY = f"{PROJECT}-tenant-pods"
NAMESPACE_POLICY = f"{PROJECT}-platform-namespaces"
ROLE_POLICY = f"{PROJECT}-tenant-roles"
VOLUME_POLICY = f"{PROJECT}-tenant-volumes"
PLATFORM_ROLES_POLICY = f"{PROJECT}-platform-roles"


def _cel(value: object) -> str:
    """A Python string or list as a CEL literal (JSON's syntax is CEL's for both)."""
    return json.dumps(value)


def platform_request() -> str:
    """CEL: true when the platform (or Kubernetes itself) makes the request."""
    user = "request.userInfo"
    return (f"{user}.groups.exists(g, g in {_cel(list(PLATFORM_GROUPS))})"
            f" || {user}.username in {_cel(list(PLATFORM_USERS))}"
            f" || {user}.username.startsWith({_cel(PLATFORM_SERVICE_ACCOUNTS)})")


def _tenant_side() -> list[dict[str, str]]:
    return [{"name": "not-the-platform", "expression": f"!({platform_request()})"}]


def _policy(name: str, rules: list[dict[str, Any]], validations: list[dict[str, str]],
            match_conditions: list[dict[str, str]] | None = None,
            namespace_selector: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    constraints: dict[str, Any] = {"resourceRules": rules}
    if namespace_selector is not None:
        constraints["namespaceSelector"] = namespace_selector
    spec: dict[str, Any] = {"failurePolicy": "Fail", "matchConstraints": constraints,
                            "validations": validations}
    if match_conditions:
        spec["matchConditions"] = match_conditions
    policy = {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
              "spec": spec}
    binding = {"apiVersion": ADMISSION_API, "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}
    return [policy, binding]


def _rule(groups: list[str], resources: list[str], operations: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "apiVersions": ["*"], "operations": operations, "resources": resources}


def _validation(expression: str, message: str) -> dict[str, str]:
    return {"expression": expression, "reason": "Forbidden", "message": message}


# --- Pods: what Pod Security's baseline level forbids, in every namespace but the platform's.

def _unset_or(path: str, field: str, allowed: str) -> str:
    """CEL: `path.field` is unset or satisfies `allowed` (written with `{v}` for its value)."""
    return f"(!has({path}.{field}) || {allowed.format(v=f'{path}.{field}')})"


def _every_container(condition: str) -> str:
    """CEL: `condition` (of a container `c`) holds for every container of each list. The lists are of
    different schema types, so each is checked on its own."""
    return " && ".join(f"(!has(object.spec.{name}) || object.spec.{name}.all(c, {condition}))"
                       for name in CONTAINER_LISTS)


def _security(field: str, allowed: str) -> str:
    """CEL for a container `c`: its securityContext's `field` is unset or allowed."""
    return f"(!has(c.securityContext) || {_unset_or('c.securityContext', field, allowed)})"


def _profile_not(field: str, forbidden: str) -> str:
    """CEL: the pod's and every container's `field` (seccompProfile, appArmorProfile) is not of
    type `forbidden`."""
    pod = ("(!has(object.spec.securityContext) || "
           + _unset_or("object.spec.securityContext", field, f"{{v}}.type != {_cel(forbidden)}") + ")")
    return f"{pod} && {_every_container(_security(field, f'{{v}}.type != {_cel(forbidden)}'))}"


def _no_host_in_handlers() -> str:
    """CEL for a container `c`: no probe or lifecycle handler names a host (Pod Security baseline
    since 1.34: k8s.io/pod-security-admission v0.35.4 policy/check_hostProbesAndhostLifecycle.go)."""
    handlers = [f"c.{probe}" for probe in ("livenessProbe", "readinessProbe", "startupProbe")]
    handlers += [f"c.lifecycle.{hook}" for hook in ("postStart", "preStop")]
    checks = []
    for handler in handlers:
        parent = handler.rsplit(".", 1)[0]
        guard = f"has({parent}) && " if parent != "c" else ""
        for action in ("httpGet", "tcpSocket"):
            checks.append(f"!({guard}has({handler}) && has({handler}.{action}) && "
                          f"has({handler}.{action}.host) && {handler}.{action}.host != '')")
    return "(" + " && ".join(checks) + ")"


def pod_validations() -> list[dict[str, str]]:
    """Each check of the pod policy with the message that names it."""
    spec = "object.spec"
    host_namespaces = " && ".join(_unset_or(spec, field, "!{v}")
                                  for field in ("hostNetwork", "hostPID", "hostIPC"))
    apparmor_annotations = (f"!has(object.metadata.annotations) || object.metadata.annotations.all(k, "
                            f"!k.startsWith({_cel(APPARMOR_ANNOTATION_PREFIX)}) || "
                            f"object.metadata.annotations[k] != 'unconfined')")
    return [
        _validation(host_namespaces, "a tenant's pod may not use the node's network, PID or IPC namespace "
                                     "(hostNetwork, hostPID, hostIPC)"),
        _validation(f"!has({spec}.volumes) || {spec}.volumes.all(v, !has(v.hostPath))",
                    "a tenant's pod may not mount a hostPath volume"),
        _validation(_every_container(_security("privileged", "!{v}")),
                    "a tenant's container may not be privileged"),
        _validation(_every_container(_security("capabilities", _unset_or(
            "{v}", "add", "{v}.all(cap, cap in " + _cel(list(BASELINE_CAPABILITIES)) + ")"))),
            "a tenant's container may add only the capabilities of Pod Security's baseline level: "
            + ", ".join(BASELINE_CAPABILITIES)),
        _validation(_every_container("(!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))"
                                     ),
                    "a tenant's container may not use a hostPort"),
        _validation(_profile_not("seccompProfile", "Unconfined"),
                    "a tenant's pod or container may not run seccomp Unconfined"),
        _validation(f"{_profile_not('appArmorProfile', 'Unconfined')} && ({apparmor_annotations})",
                    "a tenant's pod or container may not run AppArmor unconfined"),
        _validation(_every_container(_security("procMount", "{v} != 'Unmasked'")),
                    "a tenant's container may not use an Unmasked /proc"),
        _validation(_every_container(_no_host_in_handlers()),
                    "a tenant's probe or lifecycle handler may not name a host (the kubelet would connect "
                    "from the node's network)"),
    ]


def pod_policy() -> list[dict[str, Any]]:
    """Judges every pod created in a namespace that is not the platform's, whoever creates it (a
    Deployment's pods are created by kube-controller-manager), and every ephemeral container added.
    The fields it checks cannot change in a pod's other updates (k8s.io/kubernetes v1.35.4
    pkg/apis/core/validation ValidatePodUpdate)."""
    rules = [_rule([""], ["pods"], ["CREATE"]), _rule([""], ["pods/ephemeralcontainers"], ["UPDATE"])]
    not_platform = {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                          "values": list(PLATFORM_NAMESPACES)}]}
    return _policy(POD_POLICY, rules, pod_validations(), namespace_selector=not_platform)


# --- The platform's namespaces: only the platform writes, execs or forwards there.

def namespace_policy() -> list[dict[str, Any]]:
    """A tenant-side request that writes or connects to (exec, attach, port-forward, proxy) anything
    in a platform namespace, or changes or deletes the namespace itself, is refused. Reads stay
    allowed, secrets apart (the tenant admin's role has none cluster-wide)."""
    platform = _cel(list(PLATFORM_NAMESPACES))
    # A cluster-scoped request has no namespace (and a generated name no name) in `request`.
    expression = (f"!(has(request.namespace) && request.namespace in {platform})"
                  f" && !(request.resource.resource == 'namespaces' && has(request.name)"
                  f" && request.name in {platform})")
    message = (f"the namespaces {', '.join(PLATFORM_NAMESPACES)} are the platform's: a tenant may read "
               "there but not write, exec, attach, port-forward or proxy")
    # `*/*`: every resource and every subresource (exec, attach, portforward, proxy, status, ...).
    rules = [_rule(["*"], ["*/*"], ["CREATE", "UPDATE", "DELETE", "CONNECT"])]
    return _policy(NAMESPACE_POLICY, rules, [_validation(expression, message)], _tenant_side())


# --- Roles: a tenant-side role never grants what would reach past the tenant admin's bounds.

# (API group, resource): any verb but a read is forbidden.
WRITE_FORBIDDEN = (
    ("admissionregistration.k8s.io", "*"),
    ("apiregistration.k8s.io", "*"),
    ("", "nodes"),
    ("", "nodes/status"),
    ("certificates.k8s.io", "certificatesigningrequests/approval"),
    ("certificates.k8s.io", "certificatesigningrequests/status"),
    ("certificates.k8s.io", "signers"),
    ("certificates.k8s.io", "clustertrustbundles"),
    ("flowcontrol.apiserver.k8s.io", "*"),
)
# (API group, resource): any verb at all is forbidden. A nodeclient CSR is approved by
# kube-controller-manager on its own (its csrapproving controller), giving a node's credential.
ANY_VERB_FORBIDDEN = (
    # The kubelet's API: proxy is exec in any pod of the node, the others its logs, pods and config
    # (k8s.io/kubernetes v1.35.4 pkg/kubelet/server/auth.go).
    *(("", f"nodes/{sub}") for sub in ("proxy", "log", "stats", "metrics", "configz", "pods", "spec",
                                        "checkpoint", "healthz")),
    ("certificates.k8s.io", "certificatesigningrequests/nodeclient"),
    ("certificates.k8s.io", "certificatesigningrequests/selfnodeclient"),
)
IMPERSONATION = (("", "users"), ("", "groups"), ("", "serviceaccounts"),
                 ("authentication.k8s.io", "uids"), ("authentication.k8s.io", "userextras"))


def _covers(group: str, resource: str) -> str:
    """CEL for a rule `r`: its apiGroups and resources reach (`group`, `resource`), wildcards
    included (RBAC's `*` and `*/<subresource>`, k8s.io/kubernetes v1.35.4
    pkg/apis/rbac/v1/evaluation_helpers.go ResourceMatches)."""
    groups = f"r.apiGroups.exists(g, g == '*' || g == {_cel(group)})"
    if resource == "*":
        return groups
    names = ["*", resource]
    if "/" in resource:
        names.append("*/" + resource.split("/", 1)[1])
    elif resource == "userextras":
        return f"{groups} && r.resources.exists(x, x == '*' || x.startsWith('userextras'))"
    return f"{groups} && r.resources.exists(x, x in {_cel(names)})"


def _verbs_beyond_read() -> str:
    return f"r.verbs.exists(v, !(v in {_cel(list(READ_VERBS))}))"


def forbidden_rule() -> str:
    """CEL for a rule `r`: true when it grants something a tenant-side role may not."""
    write = " || ".join(_covers(group, resource) for group, resource in WRITE_FORBIDDEN)
    anything = " || ".join(_covers(group, resource) for group, resource in ANY_VERB_FORBIDDEN)
    impersonate = " || ".join(_covers(group, resource) for group, resource in IMPERSONATION)
    bind = " || ".join(_covers(RBAC_GROUP, resource) for resource in ("clusterroles", "roles"))
    return (f"(({write}) && {_verbs_beyond_read()})"
            f" || ({anything})"
            f" || r.verbs.exists(v, v.startsWith('impersonate'))"
            f" || (r.verbs.exists(v, v == '*') && ({impersonate}))"
            f" || (r.verbs.exists(v, v in ['bind', '*']) && ({bind}))")


def _in_namespace_only() -> str:
    """CEL for a rule `r`: it reaches secrets' reads, or exec, attach, port-forward or proxy."""
    reads = f"{_covers('', 'secrets')} && r.verbs.exists(v, v in ['get', 'list', 'watch', '*'])"
    connects = " || ".join(_covers("", resource) for resource in IN_NAMESPACE_ONLY if resource != "secrets")
    return f"({reads}) || {connects}"


def _rules_none(rule: str) -> str:
    return f"!has(object.rules) || object.rules.all(r, !has(r.resources) || !({rule}))"


def _non_resource_urls() -> str:
    """CEL: every non-resource rule of the object only reads, and none names `*` or /debug (whose
    PUT /debug/flags/v sets the API server's verbosity)."""
    return ("!has(object.rules) || object.rules.all(r, !has(r.nonResourceURLs) || "
            "(r.verbs.all(v, v == 'get') && r.nonResourceURLs.all(u, u != '*' && !u.startsWith('/debug'))))")


def role_validations() -> list[dict[str, str]]:
    """ClusterRoles only: a Role grants inside its namespace alone, and the platform's namespaces
    are closed to tenant-side writes (namespace_policy). Every tenant-side ClusterRole is judged
    alike, bound or not: one the tenant admin's group is bound to can be edited after the binding
    (`escalate` skips RBAC's check on an update too: k8s.io/kubernetes v1.35.4
    pkg/registry/rbac/clusterrole/policybased/storage.go)."""
    cluster_role = "request.kind.kind == 'ClusterRole'"
    return [
        _validation(f"!({cluster_role}) || {_rules_none(forbidden_rule())}",
                    "a tenant's ClusterRole may not grant writes to nodes, admission objects, API services, "
                    "flow control or trust bundles, certificate approval and signing, the kubelet's API "
                    "(nodes/proxy, log, stats, ...), node client certificates, impersonation or bind"),
        _validation(f"!({cluster_role} && has(object.aggregationRule))",
                    "a tenant's ClusterRole may not aggregate other roles (it would take their rules "
                    "unjudged)"),
        _validation(f"!({cluster_role}) || {_rules_none(_in_namespace_only())}",
                    "a tenant's ClusterRole neither reads secrets nor execs, attaches, port-forwards or "
                    "proxies (a ClusterRole can be bound, or edited once bound, cluster-wide, and the "
                    "platform's namespaces hold bootstrap tokens): write a Role in the namespace, or bind "
                    f"{NAMESPACE_ADMIN_ROLE} there"),
        _validation(f"!({cluster_role}) || {_non_resource_urls()}",
                    "a tenant's ClusterRole may only get non-resource URLs, never `*` or /debug"),
        _validation(f"!(request.kind.kind == 'ClusterRoleBinding' && object.roleRef.name == "
                    f"{_cel(NAMESPACE_ADMIN_ROLE)})",
                    f"{NAMESPACE_ADMIN_ROLE} is bound in a namespace (a RoleBinding), never cluster-wide"),
    ]


def role_policy() -> list[dict[str, Any]]:
    rules = [_rule([RBAC_GROUP], ["clusterroles", "clusterrolebindings"], ["CREATE", "UPDATE"])]
    return _policy(ROLE_POLICY, rules, role_validations(), _tenant_side())


# Cluster roles and bindings the tenant side may neither change nor delete: Kubernetes' own, kubeadm's
# (its `kubeadm:cluster-admins` binding is the platform's way in) and the platform's.
PROTECTED_ROLE_PREFIXES = ("system:", "kubeadm:", f"{PROJECT}:")
PROTECTED_ROLE_NAMES = ("cluster-admin", "admin", "edit", "view")


def platform_roles_policy() -> list[dict[str, Any]]:
    """A tenant-side UPDATE or DELETE of a protected cluster role or binding is refused: editing the
    tenant admin's own role would widen it, deleting `kubeadm:cluster-admins` would lock the
    platform out of the tenant."""
    prefixes = " || ".join(f"request.name.startsWith({_cel(prefix)})" for prefix in PROTECTED_ROLE_PREFIXES)
    expression = f"!({prefixes} || request.name in {_cel(list(PROTECTED_ROLE_NAMES))})"
    rules = [_rule([RBAC_GROUP], ["clusterroles", "clusterrolebindings"], ["UPDATE", "DELETE"])]
    return _policy(PLATFORM_ROLES_POLICY, rules, [_validation(
        expression, "the cluster roles and bindings of Kubernetes, kubeadm and the platform (system:*, "
                    f"kubeadm:*, {PROJECT}:*, cluster-admin, admin, edit, view) are the platform's")],
        _tenant_side())


def volume_policy() -> list[dict[str, Any]]:
    """A tenant-side PersistentVolume may not be a host path or a local disk: a pod would mount the
    node's files through its claim without any hostPath in its own spec."""
    rules = [_rule([""], ["persistentvolumes"], ["CREATE", "UPDATE"])]
    expression = "!has(object.spec.hostPath) && !has(object.spec.local)"
    return _policy(VOLUME_POLICY, rules, [_validation(
        expression, "a tenant's PersistentVolume may not be a hostPath or local volume")], _tenant_side())


def admission_policies() -> list[dict[str, Any]]:
    return [*pod_policy(), *namespace_policy(), *role_policy(), *platform_roles_policy(), *volume_policy()]


# --- RBAC: what the tenant admin may do.

# Groups whose every resource a tenant admin manages (workloads, networking, storage, scheduling,
# CRDs, dynamic resources).
WHOLE_GROUPS = ("apps", "batch", "autoscaling", "policy", "networking.k8s.io", "discovery.k8s.io",
                "storage.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "events.k8s.io", "node.k8s.io",
                "apiextensions.k8s.io", "resource.k8s.io")
# Core resources a tenant admin manages everywhere; secrets and what reaches into a pod (exec,
# attach, port-forward, proxy) only where it bound NAMESPACE_ADMIN_ROLE.
CORE_RESOURCES = ("bindings", "configmaps", "endpoints", "events", "limitranges", "namespaces",
                  "persistentvolumeclaims", "persistentvolumes", "pods", "pods/log", "pods/eviction",
                  "pods/ephemeralcontainers", "podtemplates", "replicationcontrollers",
                  "replicationcontrollers/scale", "resourcequotas", "serviceaccounts",
                  "serviceaccounts/token", "services")
IN_NAMESPACE_ONLY = ("secrets", "pods/exec", "pods/attach", "pods/portforward", "pods/proxy",
                     "services/proxy")
READ_ONLY = (
    ("", ("nodes", "componentstatuses")),
    ("admissionregistration.k8s.io", ("*",)),
    ("apiregistration.k8s.io", ("*",)),
    ("certificates.k8s.io", ("clustertrustbundles",)),
    ("flowcontrol.apiserver.k8s.io", ("*",)),
)


def _grant(groups: list[str], resources: list[str], verbs: list[str],
           names: list[str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        rule["resourceNames"] = names
    return rule


def admin_rules() -> list[dict[str, Any]]:
    """The tenant admin's cluster-wide grant. Secrets: written anywhere (a chart's Secret), read only
    where NAMESPACE_ADMIN_ROLE is bound."""
    return [
        # Named verbs, never `*`: on serviceaccounts it would include `impersonate`.
        _grant([""], list(CORE_RESOURCES), list(ALL_VERBS)),
        _grant([""], ["secrets"], list(WRITE_VERBS)),
        _grant(list(WHOLE_GROUPS), ["*"], list(ALL_VERBS)),
        _grant([RBAC_GROUP], ["clusterroles", "roles"], [*ALL_VERBS, "escalate"]),
        _grant([RBAC_GROUP], ["clusterrolebindings", "rolebindings"], list(ALL_VERBS)),
        _grant([RBAC_GROUP], ["clusterroles"], ["bind"], [NAMESPACE_ADMIN_ROLE]),
        _grant(["authorization.k8s.io"], ["selfsubjectaccessreviews", "selfsubjectrulesreviews",
                                          "subjectaccessreviews", "localsubjectaccessreviews"], ["create"]),
        _grant(["authentication.k8s.io"], ["tokenreviews", "selfsubjectreviews"], ["create"]),
        # Read only: the platform issues the tenant admins' certificates by a request of a name it
        # chooses, which the tenant side must neither take first nor swap (delete and create again)
        # between its create and its approval.
        _grant(["certificates.k8s.io"], ["certificatesigningrequests"], list(READ_VERBS)),
        *(_grant([group], list(resources), list(READ_VERBS)) for group, resources in READ_ONLY),
    ]


def _cluster_role(name: str, rules: list[dict[str, Any]] | None = None,
                  aggregate: bool = False) -> dict[str, Any]:
    role: dict[str, Any] = {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": {"name": name}}
    if aggregate:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {AGGREGATE_LABEL: "true"}}]}
    else:
        role["rules"] = rules or []
    return role


def _group_binding(role: str) -> dict[str, Any]:
    return {"apiVersion": RBAC_API, "kind": "ClusterRoleBinding", "metadata": {"name": role},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": TENANT_ADMINS_GROUP}]}


def rbac_objects() -> list[dict[str, Any]]:
    """The tenant admin's roles and bindings: its own grant, the operators' roles it labels
    (aggregated), and the namespace role it binds where it wants secrets and exec."""
    namespace_admin = [_grant(["*"], ["*"], ["*"])]  # in one namespace only: RoleBindings alone
    return [
        _cluster_role(ADMIN_ROLE, admin_rules()),
        _group_binding(ADMIN_ROLE),
        _cluster_role(EXTENSIONS_ROLE, aggregate=True),
        _group_binding(EXTENSIONS_ROLE),
        _cluster_role(NAMESPACE_ADMIN_ROLE, namespace_admin),
    ]


def tenant_admin_objects() -> list[dict[str, Any]]:
    """Everything that bounds a tenant admin, in the order to apply it: the policies before any
    grant, so no moment has the grant without its bounds."""
    return [*admission_policies(), *rbac_objects()]
