"""The bounded tenant admin's objects (tenant/tenant_admin.py), as rendered. What they enforce is
judged by a real API server in tests/sim/test_tenant_admin.py; these check what the renderer
promises the components that use it."""

from __future__ import annotations

from kamaji_hami_platform.config import load_stack_file, parse_config
from kamaji_hami_platform.gpu import render as gpu_render
from kamaji_hami_platform.tenant import addons, admin_credential, tenant_admin
from tests.harness import PRODUCTION_STACK, PlatformMocks, dev_stack_config, run_program

POLICY = "ValidatingAdmissionPolicy"
BINDING = "ValidatingAdmissionPolicyBinding"


def _by_kind(kind: str) -> list[dict]:
    return [obj for obj in tenant_admin.tenant_admin_objects() if obj["kind"] == kind]


def test_every_policy_denies_and_fails_closed_through_its_own_binding():
    policies, bindings = _by_kind(POLICY), _by_kind(BINDING)
    names = {tenant_admin.POD_POLICY, tenant_admin.NAMESPACE_POLICY, tenant_admin.ROLE_POLICY,
             tenant_admin.PLATFORM_ROLES_POLICY, tenant_admin.VOLUME_POLICY}
    assert {p["metadata"]["name"] for p in policies} == names
    assert all(p["spec"]["failurePolicy"] == "Fail" for p in policies)
    assert {(b["spec"]["policyName"], tuple(b["spec"]["validationActions"])) for b in bindings} == {
        (p["metadata"]["name"], ("Deny",)) for p in policies}


def test_the_bounds_come_before_the_grant():
    """Applied in order, no moment has the tenant admin's grant without the policies."""
    kinds = [obj["kind"] for obj in tenant_admin.tenant_admin_objects()]
    last_policy = max(i for i, kind in enumerate(kinds) if kind in (POLICY, BINDING))
    assert all(kind not in (POLICY, BINDING) for kind in kinds[last_policy + 1:])
    assert kinds.index("ClusterRoleBinding") > last_policy


def test_every_pod_the_platform_runs_in_a_tenant_is_in_a_platform_namespace():
    """The pod policy judges every other namespace: kindnet, kube-proxy, HAMi and the capacity
    agent run privileged or on the host's network, so each must be in one the policy skips."""
    tenant = parse_config(dev_stack_config()).tenants[0]
    endpoint = "10.0.0.1:6443"
    rendered = [*addons.kindnet_objects(tenant, endpoint), *addons.kube_proxy_objects(tenant, endpoint),
                *gpu_render.capacity_agent_objects({"tenant-a-worker-0": 3})]
    namespaces = {obj["metadata"].get("namespace") for obj in rendered} - {None}
    assert namespaces <= set(tenant_admin.PLATFORM_NAMESPACES)
    assert gpu_render.HAMI_NAMESPACE in tenant_admin.PLATFORM_NAMESPACES


def test_the_tenant_admins_grant_names_its_verbs_and_has_no_secret_reads_or_connects():
    """`*` verbs on serviceaccounts would include `impersonate` (a kube-system service account is
    the platform); secrets reads and exec are for RoleBindings of the namespace role only."""
    rules = tenant_admin.admin_rules()
    assert all("*" not in rule["verbs"] for rule in rules)
    assert not any("impersonate" in rule["verbs"] for rule in rules)
    for rule in rules:
        if "" in rule["apiGroups"]:
            connects = set(rule["resources"]) & set(tenant_admin.IN_NAMESPACE_ONLY)
            assert not connects - {"secrets"}, rule
            if "secrets" in rule["resources"]:
                assert not set(rule["verbs"]) & set(tenant_admin.READ_VERBS), rule
    bind = [rule for rule in rules if "bind" in rule["verbs"]]
    assert bind == [{"apiGroups": [tenant_admin.RBAC_GROUP], "resources": ["clusterroles"], "verbs": ["bind"],
                     "resourceNames": [tenant_admin.NAMESPACE_ADMIN_ROLE]}]


def test_the_same_call_renders_the_same_objects():
    assert tenant_admin.tenant_admin_objects() == tenant_admin.tenant_admin_objects()


class TestTheWiring:
    """How the stack program wires the bounds and the credential (tenant/component.py)."""

    def test_kind_tenants_admins_get_the_issued_credential_the_platform_keeps_its_own(self, dev_program):
        dev = parse_config(dev_stack_config())
        for tenant in dev.tenants:
            credential = dev_program.named(f"{tenant.name}-tenant-admin-credential")
            assert credential.inputs["create"] == admin_credential.issue_script(tenant, dev.management)
            assert "stdout" in credential.options["additionalSecretOutputs"]
            assert credential.inputs["logging"] == "stderr"  # the kubeconfig is never logged
            # Issued only once every bound is in place (and Kamaji authorized the platform).
            for kind in (POLICY, BINDING, "ClusterRole", "ClusterRoleBinding"):
                bounds = [r for r in dev_program.of_type(f"kubernetes:{_type_path(kind)}")
                          if r.name.startswith(f"{tenant.name}-") and "kamaji-hami-platform" in r.name
                          and not r.name.endswith("-nodes")]
                assert bounds and all(dev_program.depends_on(credential, b) for b in bounds), kind
        assert {"tenantKubeconfigs", "platformTenantKubeconfigs"} <= dev_program.secret_exports
        tenants = dev_program.exports["tenants"]
        kinds = {t[admin_credential.CREDENTIAL_OUTPUT_KEY] for t in tenants.values()}
        assert kinds == {admin_credential.BOUNDED}

    def test_the_roles_wait_for_the_policies(self, dev_program):
        policies = [r for r in dev_program.of_type(f"kubernetes:{_type_path(POLICY)}")
                    if r.name.startswith("tenant-a-") and not r.name.endswith("-nodes")]
        for role in dev_program.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"):
            if role.name.startswith("tenant-a-clusterrolebinding-kamaji-hami-platform:"):
                assert all(dev_program.depends_on(role, policy) for policy in policies)

    def test_an_existing_clusters_tenants_keep_cluster_admin(self, production_program):
        assert not [r for r in production_program.of_type("command:local:Command")
                    if r.name.endswith("-tenant-admin-credential")]
        tenants = production_program.exports["tenants"].values()
        kinds = {t[admin_credential.CREDENTIAL_OUTPUT_KEY] for t in tenants}
        assert kinds == {admin_credential.CLUSTER_ADMIN}


def _type_path(kind: str) -> str:
    group = ("rbac.authorization.k8s.io/v1" if kind.startswith("Cluster")
             else "admissionregistration.k8s.io/v1")
    return f"{group}:{kind}"


class TestThePreviewSaysWhatChangesForTheCredentials:
    def changes(self, previous_tenants: object) -> list[str]:
        config = parse_config(dev_stack_config())
        return admin_credential.credential_changes(previous_tenants, config.management, list(config.tenants))

    def test_a_tenant_deployed_before_is_told_once_per_tenant_with_both_outputs(self):
        changes = self.changes({"tenant-a": {"endpoint": "x"}, "tenant-b": {"endpoint": "y"}})
        assert len(changes) == 2
        assert changes[0].startswith("tenant tenant-a: tenantKubeconfigs.tenant-a becomes a bounded tenant")
        assert "platformTenantKubeconfigs.tenant-a" in changes[0]

    def test_nothing_for_a_new_stack_a_new_tenant_or_one_already_bounded(self):
        assert self.changes({}) == [] and self.changes(None) == []
        bounded = {admin_credential.CREDENTIAL_OUTPUT_KEY: admin_credential.BOUNDED}
        assert self.changes({"tenant-a": bounded, "tenant-b": bounded}) == []
        existing = load_stack_file(PRODUCTION_STACK)
        before = {tenant.name: {"endpoint": "https://x"} for tenant in existing.tenants}
        assert admin_credential.credential_changes(before, existing.management, list(existing.tenants)) == []

    def test_the_stack_program_warns_in_a_preview_from_its_previous_outputs(self, monkeypatch):
        import pulumi

        warnings: list[str] = []
        monkeypatch.setattr(pulumi.log, "warn", lambda message, *_, **__: warnings.append(message))
        previous = {"tenants": {"tenant-a": {"endpoint": "https://x"}}}
        run_program(dev_stack_config(), preview=True, mocks=PlatformMocks(previous_outputs=previous))
        assert [w for w in warnings if "becomes a bounded tenant admin" in w] == [
            w for w in warnings if w.startswith("tenant tenant-a: tenantKubeconfigs.tenant-a")]
        assert any(w.startswith("tenant tenant-a: tenantKubeconfigs.tenant-a") for w in warnings)
