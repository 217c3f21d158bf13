"""The bounded tenant admin of kind mode, judged by a real kube-apiserver 1.35 (marker `sim`).

The platform's rendered RBAC and ValidatingAdmissionPolicies (tenant/tenant_admin.py) are applied
with the platform's credential (a client certificate in `kubeadm:cluster-admins`, bound to
`cluster-admin` as Kamaji binds it), then a tenant admin (a client certificate in the tenant admins'
group) tries what a team does and what would reach the shared host or the platform. A
kube-controller-manager runs the controllers the bounds rely on: role aggregation (an operator's
ClusterRole joining the tenant admin's grant), ReplicaSets (pods created by a controller, not by the
tenant admin, are judged alike), CSR approval and the namespaces' default service accounts, with
service-account credentials as Kamaji runs it.

Policies are enforced once the API server has observed them: the fixture waits, bounded, until each
refuses what it must, with server-side dry runs that create nothing.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kamaji_hami_platform.config import load_stack_file, parse_config
from kamaji_hami_platform.tenant import admin_credential, node_join, tenant_admin
from tests.harness import PRODUCTION_STACK, dev_stack_config
from tests.sim.cluster import TenantApi, free_port, tenant_api, toolchain_or_skip

pytestmark = pytest.mark.sim

ENFORCED_WITHIN = 30  # seconds; the policy informer sees a change in well under a second
CONTROLLED_WITHIN = 60  # seconds for a controller (aggregation, ReplicaSet, CSR signing) to act
TEAM = "team-a"
PLATFORM_GROUP = "kubeadm:cluster-admins"  # Kamaji's admin.conf (kubeadm's cluster-admins group)
PAUSE = "registry.k8s.io/pause:3.10"
DEV_TENANT = parse_config(dev_stack_config()).tenants[0]


def denied(policy: str) -> str:
    return f"ValidatingAdmissionPolicy '{policy}' with binding '{policy}' denied request"


@dataclass
class Tenant:
    api: TenantApi
    platform: Path  # the platform's kubeconfig (kubeadm:cluster-admins)
    admin: Path  # the tenant admin's kubeconfig

    def as_platform(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.api.kubectl(*args, stdin=stdin, kubeconfig=self.platform)

    def as_admin(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return self.api.kubectl(*args, stdin=stdin, kubeconfig=self.admin)

    def create(self, obj: dict[str, Any], dry_run: bool = True,
               who: str = "admin") -> subprocess.CompletedProcess[str]:
        flags = ["--dry-run=server"] if dry_run else []
        run = self.as_admin if who == "admin" else self.as_platform
        return run("create", *flags, "-f", "-", stdin=json.dumps(obj))


def _start_controller_manager(api: TenantApi) -> subprocess.Popen:
    assert api.work is not None
    ca = api.work / "client-ca"
    log = api.work / "kube-controller-manager.log"
    return subprocess.Popen(
        [str(api.bin / "kube-controller-manager"), "--kubeconfig", str(api.kubeconfig),
         "--controllers=serviceaccount,clusterrole-aggregation,replicaset,csrapproving,csrsigning",
         "--use-service-account-credentials=true", "--leader-elect=false",
         "--cluster-signing-cert-file", f"{ca}.crt", "--cluster-signing-key-file", f"{ca}.key",
         "--bind-address=127.0.0.1", f"--secure-port={free_port()}"],
        stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=api.work, start_new_session=True)


def _wait(check: Callable[[], bool], what: str, within: int = ENFORCED_WITHIN) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"not within {within}s: {what}")


def pod(name: str, namespace: str = TEAM, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": PAUSE, **spec.pop("container", {})}
    metadata = {"name": name, "namespace": namespace, **spec.pop("metadata", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": [container], **spec}}


def cluster_role(name: str, rules: list[dict[str, Any]], labels: dict[str, str] | None = None,
                 **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": metadata,
            "rules": rules, **extra}


def rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


AGGREGATED = {tenant_admin.AGGREGATE_LABEL: "true"}
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


@pytest.fixture(scope="module")
def tenant() -> Iterator[Tenant]:
    bin_dir = toolchain_or_skip()
    with tenant_api(DEV_TENANT, bin_dir) as api:
        # As Kamaji binds its admin.conf's group (26.8.2-edge PhaseClusterAdminRBAC).
        api.apply([{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": "kubeadm:cluster-admins"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": "cluster-admin"},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                  "name": PLATFORM_GROUP}]}])
        platform = api.client_kubeconfig("kamaji-admin", (PLATFORM_GROUP,))
        admin = api.client_kubeconfig("alice", (tenant_admin.TENANT_ADMINS_GROUP,))
        running = Tenant(api, platform, admin)
        applied = api.kubectl("apply", "--server-side", "--field-manager=kamaji-hami-platform", "-f", "-",
                              stdin=json.dumps({"apiVersion": "v1", "kind": "List",
                                                "items": tenant_admin.tenant_admin_objects()}),
                              kubeconfig=platform)
        assert applied.returncode == 0, applied.stderr
        manager = _start_controller_manager(api)
        try:
            _wait_enforced(running)
            yield running
        finally:
            os.killpg(manager.pid, 15)
            manager.wait(timeout=30)


def _wait_enforced(tenant: Tenant) -> None:
    """Until the API server enforces every policy and the tenant admin's grant holds."""
    _wait(lambda: tenant.as_admin("create", "namespace", TEAM).returncode == 0
          or tenant.as_admin("get", "namespace", TEAM).returncode == 0, "the tenant admin's grant")
    probes = {
        tenant_admin.POD_POLICY: pod("probe", container={"securityContext": {"privileged": True}}),
        tenant_admin.NAMESPACE_POLICY: {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "probe", "namespace": "kube-system"}},
        tenant_admin.ROLE_POLICY: cluster_role("probe", [rule([""], ["nodes"], ["patch"])]),
        tenant_admin.VOLUME_POLICY: host_path_volume("probe"),
    }
    _wait(lambda: denied(tenant_admin.PLATFORM_ROLES_POLICY) in tenant.as_admin(
        "delete", "clusterrolebinding", PLATFORM_GROUP, "--dry-run=server").stderr,
        f"{tenant_admin.PLATFORM_ROLES_POLICY} enforced")
    for policy, obj in probes.items():
        _wait(lambda o=obj, p=policy: denied(p) in tenant.create(o).stderr, f"{policy} enforced")


def host_path_volume(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/var/lib"}}}


# --- What a team running its cluster does.

def test_the_tenant_admin_runs_its_cluster(tenant):
    """Namespaces, workloads, services, config and secrets written, roles inside a namespace,
    a GPU pod, an NFS volume, a CSR of its own: all admitted."""
    workloads = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": TEAM},
         "spec": {"selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "web", "image": PAUSE,
                                                        "ports": [{"containerPort": 8080}]}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": TEAM},
         "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": TEAM},
         "stringData": {"password": "not-a-real-one"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "reader", "namespace": TEAM}, "rules": [rule([""], ["configmaps"], ["get"])]},
        pod("train", container={"resources": {"limits": {"nvidia.com/gpu": "1",
                                                          "nvidia.com/gpumem": "20000",
                                                          "nvidia.com/gpucores": "30"}}}),
        pod("baseline", container={"securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]},
                                                       "seccompProfile": {"type": "RuntimeDefault"}}}),
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "shared"},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                  "nfs": {"server": "nfs.example", "path": "/exports"}}},
    ]
    for obj in workloads:
        created = tenant.create(obj, dry_run=False)
        assert created.returncode == 0, f"{obj['kind']}: {created.stderr}"


def test_an_operators_cluster_role_labelled_for_aggregation_lets_the_admin_use_its_crd(tenant):
    """A CRD, then the operator's ClusterRole for its group with the aggregation label: the
    clusterrole-aggregation controller adds it to the tenant admin's grant, which may then
    manage the custom resources and bind the role to the operator's service account."""
    assert tenant.create(CRD, dry_run=False).returncode == 0
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": TEAM}}
    _wait(lambda: tenant.as_platform("get", "crd", "widgets.example.com", "-o",
                                     "jsonpath={.status.acceptedNames.kind}").stdout == "Widget",
          "the CRD established", CONTROLLED_WITHIN)
    assert "forbidden" in tenant.create(widget).stderr
    role = cluster_role("widget-operator", [rule(["example.com"], ["*"], ["*"])], AGGREGATED)
    created = tenant.create(role, dry_run=False)
    assert created.returncode == 0, created.stderr
    _wait(lambda: tenant.create(widget).returncode == 0, "the aggregated grant", CONTROLLED_WITHIN)
    bound = tenant.as_admin("create", "clusterrolebinding", "widget-operator",
                            "--clusterrole=widget-operator", f"--serviceaccount={TEAM}:operator")
    assert bound.returncode == 0, bound.stderr


def test_the_namespace_admin_role_bound_in_a_namespace_gives_its_secrets_and_no_other(tenant):
    """Secrets are read only where the tenant admin bound the namespace role (a RoleBinding);
    never cluster-wide, never in a platform namespace."""
    assert tenant.as_admin("get", "secrets", "-n", TEAM).returncode != 0
    bound = tenant.as_admin("create", "rolebinding", "admins", "-n", TEAM,
                            f"--clusterrole={tenant_admin.NAMESPACE_ADMIN_ROLE}",
                            f"--group={tenant_admin.TENANT_ADMINS_GROUP}")
    assert bound.returncode == 0, bound.stderr
    _wait(lambda: tenant.as_admin("get", "secret", "db", "-n", TEAM).returncode == 0, "secrets in the team's")
    everywhere = tenant.as_admin("create", "clusterrolebinding", "admins-everywhere",
                                 f"--clusterrole={tenant_admin.NAMESPACE_ADMIN_ROLE}",
                                 f"--group={tenant_admin.TENANT_ADMINS_GROUP}")
    assert denied(tenant_admin.ROLE_POLICY) in everywhere.stderr
    in_platform = tenant.as_admin("create", "rolebinding", "admins", "-n", "kube-system",
                                  "--dry-run=server",
                                  f"--clusterrole={tenant_admin.NAMESPACE_ADMIN_ROLE}",
                                  f"--group={tenant_admin.TENANT_ADMINS_GROUP}")
    assert denied(tenant_admin.NAMESPACE_POLICY) in in_platform.stderr
    assert "forbidden" in tenant.as_admin("get", "secrets", "-n", "kube-system").stderr
    assert "forbidden" in tenant.as_admin("get", "secrets", "-A").stderr


# --- Pods: nothing that reaches the shared host, whoever creates the pod.

HOST_REACHING_PODS = {
    "privileged": {"container": {"securityContext": {"privileged": True}}},
    "host network": {"hostNetwork": True},
    "host PID": {"hostPID": True},
    "host IPC": {"hostIPC": True},
    "hostPath": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]},
    "SYS_ADMIN": {"container": {"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}},
    "hostPort": {"container": {"ports": [{"containerPort": 80, "hostPort": 80}]}},
    "seccomp Unconfined": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
    "AppArmor unconfined": {"metadata": {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/main": "unconfined"}}},
    "Unmasked proc": {"hostUsers": False, "container": {"securityContext": {"procMount": "Unmasked"}}},
    "privileged init container": {"initContainers": [{"name": "init", "image": PAUSE,
                                                      "securityContext": {"privileged": True}}]},
    "probe of a host": {"container": {"livenessProbe": {"httpGet": {"host": "127.0.0.1", "port": 10250,
                                                                    "path": "/pods"}}}},
    "hook to a host": {"container": {"lifecycle": {"postStart": {"tcpSocket": {"host": "172.30.0.2",
                                                                               "port": 2379}}}}},
}


@pytest.mark.parametrize("shape", sorted(HOST_REACHING_PODS))
def test_a_pod_that_reaches_the_host_is_refused(tenant, shape):
    name = shape.replace(" ", "-").replace("_", "-").lower()
    refused = tenant.create(pod(name, **json.loads(json.dumps(HOST_REACHING_PODS[shape]))))
    assert refused.returncode != 0
    assert denied(tenant_admin.POD_POLICY) in refused.stderr, refused.stderr


def test_an_ephemeral_container_cannot_be_privileged(tenant):
    """kubectl debug's way in (the pods/ephemeralcontainers subresource) is judged too."""
    created = tenant.create(pod("debug-me"), dry_run=False)
    assert created.returncode == 0, created.stderr
    patch = {"spec": {"ephemeralContainers": [{"name": "debugger", "image": PAUSE,
                                               "securityContext": {"privileged": True}}]}}
    refused = tenant.as_admin("patch", "pod", "debug-me", "-n", TEAM, "--subresource=ephemeralcontainers",
                              "--type=strategic", "-p", json.dumps(patch))
    assert denied(tenant_admin.POD_POLICY) in refused.stderr, refused.stderr


def test_a_controllers_pod_is_judged_alike(tenant):
    """A ReplicaSet's pods are created by kube-controller-manager (its replicaset-controller
    service account), not by the tenant admin: a privileged template gets no pod."""
    replica_set = {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "escape", "namespace": TEAM},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "escape"}},
                 "template": {"metadata": {"labels": {"app": "escape"}},
                              "spec": {"containers": [{"name": "main", "image": PAUSE,
                                                       "securityContext": {"privileged": True}}]}}}}
    created = tenant.create(replica_set, dry_run=False)
    assert created.returncode == 0, created.stderr

    def failure() -> str:
        got = tenant.as_platform("get", "replicaset", "escape", "-n", TEAM, "-o", "json")
        status = json.loads(got.stdout).get("status", {}) if got.returncode == 0 else {}
        return next((c["message"] for c in status.get("conditions", []) if c["type"] == "ReplicaFailure"), "")

    _wait(lambda: denied(tenant_admin.POD_POLICY) in failure(), "the ReplicaSet's refused pod",
          CONTROLLED_WITHIN)
    assert tenant.as_platform("get", "pods", "-n", TEAM, "-l", "app=escape", "-o", "name").stdout == ""


def test_the_platforms_own_pods_in_its_namespaces_are_not_judged(tenant):
    """kube-proxy, kindnet and HAMi run privileged on the host's network in kube-system."""
    own = pod("kube-proxy-probe", "kube-system", hostNetwork=True,
              container={"securityContext": {"privileged": True}})
    created = tenant.create(own, who="platform")
    assert created.returncode == 0, created.stderr


# --- The platform's namespaces, nodes, admission and certificates stay the platform's.

def test_the_platforms_namespaces_are_closed_to_the_tenant_admin(tenant):
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "x", "namespace": "kube-system"}}
    assert denied(tenant_admin.NAMESPACE_POLICY) in tenant.create(configmap).stderr
    deleted = tenant.as_admin("delete", "namespace", "kube-node-lease", "--dry-run=server")
    assert denied(tenant_admin.NAMESPACE_POLICY) in deleted.stderr
    labelled = tenant.as_admin("label", "namespace", "kube-system", "owner=tenant", "--dry-run=server")
    assert denied(tenant_admin.NAMESPACE_POLICY) in labelled.stderr
    assert tenant.as_platform("create", "serviceaccount", "hami", "-n", "kube-system").returncode == 0
    token = tenant.as_admin("create", "token", "hami", "-n", "kube-system")
    assert denied(tenant_admin.NAMESPACE_POLICY) in token.stderr
    assert tenant.as_admin("get", "pods", "-n", "kube-system").returncode == 0  # reads stay open


def test_the_tenant_admin_cannot_exec_into_the_platforms_pods(tenant):
    """RBAC: its cluster-wide role has no exec, attach or port-forward (the namespace role, which
    has, cannot be bound in a platform namespace)."""
    for subresource in ("exec", "attach", "portforward"):
        can = tenant.as_admin("auth", "can-i", "create", "pods", f"--subresource={subresource}",
                              "-n", "kube-system")
        assert can.stdout.strip() == "no", subresource


def test_whoever_the_tenant_side_is_given_is_judged_in_the_platforms_namespaces(tenant):
    """A tenant-side identity with every RBAC right (here the platform made one, a user outside the
    platform's groups bound to cluster-admin) still cannot exec into, write in, or run a privileged
    pod where the policies judge it: the policies do not rest on RBAC alone (CONNECT included)."""
    assert tenant.api.work is not None
    bob = tenant.api.client_kubeconfig("bob")
    bound = tenant.as_platform("create", "clusterrolebinding", "bob", "--clusterrole=cluster-admin",
                               "--user=bob")
    assert bound.returncode == 0, bound.stderr
    platform_pod = tenant.create(pod("hami-probe", "kube-system"), who="platform", dry_run=False)
    assert platform_pod.returncode == 0, platform_pod.stderr
    _wait(lambda: tenant.api.kubectl("auth", "can-i", "create", "pods", "--subresource=exec",
                                     "-n", "kube-system", kubeconfig=bob).stdout.strip() == "yes",
          "bob's binding")
    exec_in = tenant.api.kubectl("exec", "-n", "kube-system", "hami-probe", "--", "true", kubeconfig=bob)
    assert denied(tenant_admin.NAMESPACE_POLICY) in exec_in.stderr, exec_in.stderr
    write = tenant.api.kubectl("create", "configmap", "x", "-n", "kube-system", "--dry-run=server",
                               kubeconfig=bob)
    assert denied(tenant_admin.NAMESPACE_POLICY) in write.stderr, write.stderr
    escape = tenant.api.kubectl("create", "--dry-run=server", "-f", "-", kubeconfig=bob, stdin=json.dumps(
        pod("escape", container={"securityContext": {"privileged": True}})))
    assert denied(tenant_admin.POD_POLICY) in escape.stderr, escape.stderr


def test_admission_objects_nodes_csrs_and_impersonation_stay_out_of_reach(tenant):
    for kind in ("validatingadmissionpolicy", "validatingadmissionpolicybinding"):
        deleted = tenant.as_admin("delete", kind, tenant_admin.POD_POLICY, "--dry-run=server")
        assert "forbidden" in deleted.stderr, deleted.stderr
    webhook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
               "metadata": {"name": "hook"}, "webhooks": []}
    assert "forbidden" in tenant.create(webhook).stderr
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "tenant-a-worker-0"}}
    assert tenant.create(node, who="platform", dry_run=False).returncode == 0
    labelled = tenant.as_admin("label", "node", "tenant-a-worker-0", "gpu=mine")
    assert "forbidden" in labelled.stderr, labelled.stderr
    impersonated = tenant.as_admin("get", "secrets", "-n", "kube-system", "--as=kamaji-admin",
                                   f"--as-group={PLATFORM_GROUP}")
    assert "cannot impersonate" in impersonated.stderr, impersonated.stderr
    escalated = tenant.as_admin("create", "clusterrolebinding", "mine", "--clusterrole=cluster-admin",
                                "--user=alice", "--dry-run=server")
    assert "attempting to grant RBAC permissions not currently held" in escalated.stderr, escalated.stderr


def test_the_tenant_admin_can_neither_request_nor_approve_nor_swap_a_certificate(tenant):
    """A request in the platform's group, made by anyone, stays unapproved by the tenant admin; it
    may not create or delete requests either (a swap between the platform's create and approval)."""
    assert tenant.api.work is not None
    key, request = tenant.api.work / "evil.key", tenant.api.work / "evil.csr"
    subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-subj", f"/O={PLATFORM_GROUP}/CN=evil",
                    "-out", str(request)],
                   capture_output=True, check=True, timeout=60)
    csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
           "metadata": {"name": "evil"},
           "spec": {"request": base64.b64encode(request.read_bytes()).decode(),
                    "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}}
    assert "forbidden" in tenant.create(csr).stderr
    created = tenant.create(csr, who="platform", dry_run=False)
    assert created.returncode == 0, created.stderr
    approved = tenant.as_admin("certificate", "approve", "evil")
    assert "forbidden" in approved.stderr, approved.stderr
    assert "forbidden" in tenant.as_admin("delete", "csr", "evil").stderr
    status = tenant.as_platform("get", "csr", "evil", "-o", "jsonpath={.status.conditions}").stdout
    assert "Approved" not in status


FORBIDDEN_ROLES = {
    "node writes": [rule([""], ["nodes"], ["patch"])],
    "everything": [rule(["*"], ["*"], ["*"])],
    "admission writes": [rule(["admissionregistration.k8s.io"], ["validatingadmissionpolicies"], ["delete"])],
    "API services": [rule(["apiregistration.k8s.io"], ["apiservices"], ["update"])],
    "CSR approval": [rule(["certificates.k8s.io"], ["certificatesigningrequests/approval"], ["update"])],
    "signer approve": [rule(["certificates.k8s.io"], ["signers"], ["approve"])],
    "kubelet API": [rule([""], ["nodes/proxy"], ["get"])],
    "any proxy subresource": [rule([""], ["*/proxy"], ["get"])],
    "node client certificates": [rule(["certificates.k8s.io"], ["certificatesigningrequests/nodeclient"],
                                      ["create"])],
    "impersonation": [rule([""], ["groups"], ["impersonate"])],
    "every verb on service accounts": [rule([""], ["serviceaccounts"], ["*"])],
    "bind": [rule(["rbac.authorization.k8s.io"], ["clusterroles"], ["bind"])],
    "kubelet logs": [rule([""], ["nodes/log"], ["get"])],
    "constrained impersonation": [rule(["authentication.k8s.io"], ["users"], ["impersonate:user-info"])],
    "flow control": [rule(["flowcontrol.apiserver.k8s.io"], ["flowschemas"], ["create"])],
    "secrets reads": [rule([""], ["secrets"], ["list"])],
    "exec anywhere": [rule([""], ["pods/exec"], ["create"])],
    "debug URLs": [{"nonResourceURLs": ["/debug/flags/v"], "verbs": ["put"]}],
}


@pytest.mark.parametrize("shape", sorted(FORBIDDEN_ROLES))
def test_a_cluster_role_that_grants_past_the_bounds_is_refused(tenant, shape):
    """The tenant admin may write roles that grant what it lacks (escalate), never these."""
    refused = tenant.create(cluster_role(shape.replace(" ", "-"), FORBIDDEN_ROLES[shape]))
    assert denied(tenant_admin.ROLE_POLICY) in refused.stderr, refused.stderr


def test_a_role_bound_while_harmless_cannot_be_widened_after(tenant):
    """`escalate` lets an update skip RBAC's check: an empty ClusterRole bound to the tenant admins'
    group, then edited to read secrets, is refused at the edit; the tenant admin's own role and
    kubeadm's binding (the platform's way in) are not the tenant's to change or delete."""
    created = tenant.create(cluster_role("later", []), dry_run=False)
    assert created.returncode == 0, created.stderr
    bound = tenant.as_admin("create", "clusterrolebinding", "later", "--clusterrole=later",
                            f"--group={tenant_admin.TENANT_ADMINS_GROUP}")
    assert bound.returncode == 0, bound.stderr
    widened = tenant.as_admin("patch", "clusterrole", "later", "--type=json", "-p", json.dumps(
        [{"op": "add", "path": "/rules", "value": [rule([""], ["secrets"], ["get", "list", "watch"])]}]))
    assert denied(tenant_admin.ROLE_POLICY) in widened.stderr, widened.stderr
    own = tenant.as_admin("patch", "clusterrole", tenant_admin.ADMIN_ROLE, "--type=json", "-p", json.dumps(
        [{"op": "add", "path": "/rules/-", "value": rule(["apps"], ["deployments"], ["get"])}]))
    assert "denied request" in own.stderr, own.stderr  # its own rules hold a bind, refused too
    basic = tenant.as_admin("label", "clusterrole", "system:basic-user",
                            f"{tenant_admin.AGGREGATE_LABEL}=true", "--dry-run=server")
    assert denied(tenant_admin.PLATFORM_ROLES_POLICY) in basic.stderr, basic.stderr
    locked_out = tenant.as_admin("delete", "clusterrolebinding", PLATFORM_GROUP, "--dry-run=server")
    assert denied(tenant_admin.PLATFORM_ROLES_POLICY) in locked_out.stderr, locked_out.stderr
    assert "forbidden" in tenant.as_admin("get", "secrets", "-n", "kube-system").stderr


def test_no_aggregated_or_relabelled_role_brings_in_what_the_grant_lacks(tenant):
    """A ClusterRole of its own may not aggregate others; a labelled one reads no secrets and
    execs nowhere; the platform's roles cannot be labelled into the grant."""
    aggregating = cluster_role("collector", [], aggregationRule={"clusterRoleSelectors": [
        {"matchLabels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}]})
    assert denied(tenant_admin.ROLE_POLICY) in tenant.create(aggregating).stderr
    for rules in ([rule([""], ["secrets"], ["get"])], [rule([""], ["pods/exec"], ["create"])]):
        refused = tenant.create(cluster_role("reader", rules, AGGREGATED))
        assert denied(tenant_admin.ROLE_POLICY) in refused.stderr, refused.stderr
    for platform_role in ("cluster-admin", "system:node", "system:kube-controller-manager", "admin"):
        labelled = tenant.as_admin("label", "clusterrole", platform_role,
                                   f"{tenant_admin.AGGREGATE_LABEL}=true", "--dry-run=server")
        assert "denied request" in labelled.stderr, f"{platform_role}: {labelled.stderr}"


def test_a_host_path_volume_is_refused(tenant):
    for source in ({"hostPath": {"path": "/"}}, {"local": {"path": "/dev/vda"}}):
        volume = host_path_volume("host")
        volume["spec"].pop("hostPath")
        volume["spec"].update(source)
        if "local" in source:
            volume["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["tenant-a-worker-0"]}]}]}}
        refused = tenant.create(volume)
        assert denied(tenant_admin.VOLUME_POLICY) in refused.stderr, refused.stderr


def test_the_platform_is_not_judged(tenant):
    """The platform's credential writes where the tenant admin may not."""
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "platform", "namespace": "kube-system"}}
    node_writer = cluster_role("platform-nodes", [rule([""], ["nodes"], ["patch"])])
    for obj in (node_writer, host_path_volume("platform"), configmap):
        created = tenant.create(obj, who="platform")
        assert created.returncode == 0, created.stderr


# --- The credential the platform issues its tenant's admins.

def _embedded_kubeconfig(tenant: Tenant, kubeconfig: Path) -> str:
    """The platform's kubeconfig as Kamaji's admin.conf has it: the server, its CA, and the client
    certificate and key inline (the sim's own server signs its serving certificate itself)."""
    assert tenant.api.work is not None
    document = yaml.safe_load(kubeconfig.read_text())
    user = document["users"][0]["user"]
    inline = {f"{field}-data": base64.b64encode(Path(user[field]).read_bytes()).decode()
              for field in ("client-certificate", "client-key")}
    serving = (tenant.api.work / "certs" / "apiserver.crt").read_bytes()
    document["users"][0]["user"] = inline
    document["clusters"][0]["cluster"] = {"server": tenant.api.url,
                                          "certificate-authority-data": base64.b64encode(serving).decode()}
    return yaml.safe_dump(document)


def _issue(tenant: Tenant, name: str) -> tuple[Path, str]:
    """Run the platform's script (as on an existing cluster: this host's kubectl); the kubeconfig it
    printed, and what it said on stderr."""
    assert tenant.api.work is not None
    script = admin_credential.issue_script(DEV_TENANT, load_stack_file(PRODUCTION_STACK).management)
    environment = {**os.environ, "PATH": f"{tenant.api.bin}:{os.environ['PATH']}",
                   node_join.KUBECONFIG_ENV: _embedded_kubeconfig(tenant, tenant.platform)}
    issued = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=environment,
                            timeout=300, check=False)
    assert issued.returncode == 0, issued.stderr
    credential = tenant.api.work / f"{name}.kubeconfig"
    credential.write_text(issued.stdout)
    credential.chmod(0o600)
    return credential, issued.stderr


def _identity(tenant: Tenant, credential: Path) -> dict[str, Any]:
    whoami = tenant.api.kubectl("auth", "whoami", "-o", "json", kubeconfig=credential)
    assert whoami.returncode == 0, whoami.stderr  # the server verified against the CA it was given
    return json.loads(whoami.stdout)["status"]["userInfo"]


def test_the_issued_credential_is_a_bounded_tenant_admin(tenant):
    """The platform's script issues a kubeconfig whose certificate the tenant's
    kube-controller-manager signed: it authenticates in the tenant admins' group, verifies the
    server, and is bounded; its request is gone, and nothing it printed besides the kubeconfig
    holds the key."""
    credential, said = _issue(tenant, "issued")
    assert "PRIVATE KEY" not in said and "client-key-data" not in said
    assert "issued the tenant admin's client certificate (tenant-a-admin" in said
    user = _identity(tenant, credential)
    assert user["username"] == "tenant-a-admin"
    assert tenant_admin.TENANT_ADMINS_GROUP in user["groups"]
    escape = pod("escape", container={"securityContext": {"privileged": True}})
    refused = tenant.api.kubectl("create", "--dry-run=server", "-f", "-", kubeconfig=credential,
                                 stdin=json.dumps(escape))
    assert denied(tenant_admin.POD_POLICY) in refused.stderr, refused.stderr
    gone = tenant.as_platform("get", "csr", admin_credential.request_name(DEV_TENANT))
    assert "NotFound" in gone.stderr


def test_running_it_again_issues_another_working_credential(tenant):
    """An update of the Command runs its create again (tests/project/test_create_reruns.py): it
    issues a new key and certificate, and the one issued before keeps working until it expires."""
    first, _ = _issue(tenant, "first")
    second, _ = _issue(tenant, "second")
    assert yaml.safe_load(first.read_text())["users"] != yaml.safe_load(second.read_text())["users"]
    for credential in (first, second):
        assert _identity(tenant, credential)["username"] == "tenant-a-admin"
