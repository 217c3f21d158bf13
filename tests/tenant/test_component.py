"""The whole program under mocks: one KamajiTenant per configured tenant."""

from __future__ import annotations

import pulumi
import pytest

from tests.harness import (
    TENANT_KUBECONFIG_SENTINEL,
    PlatformMocks,
    Program,
    dev_stack_config,
    is_secret,
    run_program,
    spy_registrations,
)

pytestmark = pytest.mark.unit

TENANT = "kamaji-hami-platform:index:KamajiTenant"
TCP = "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane"
TENANTS = ("tenant-a", "tenant-b")


def children(program: Program, component_name: str):
    (component,) = [r for r in program.of_type(TENANT) if r.name == component_name]
    return [r for r in program.registrations if r.parent == component.urn]


def test_one_tenant_component_and_control_plane_per_tenant(dev_program):
    assert sorted(r.name for r in dev_program.of_type(TENANT)) == list(TENANTS)
    tcps = {r.inputs["metadata"]["name"]: r for r in dev_program.of_type(TCP)}
    assert sorted(tcps) == list(TENANTS)
    for name, tcp in tcps.items():
        assert tcp.inputs["spec"]["controlPlane"]["service"]["serviceType"] == "LoadBalancer"
        assert tcp.inputs["spec"]["dataStoreSchema"] == name.replace("-", "_")
        assert tcp.options["customTimeouts"]["create"] == "15m"


def test_control_plane_waits_for_kamaji_metallb_and_its_policies(dev_program):
    tcp = dev_program.named("tenant-a-control-plane")
    assert dev_program.depends_on(tcp, dev_program.named("management-kamaji"))
    assert dev_program.depends_on(tcp, dev_program.named("management-metallb-l2"))
    deny = dev_program.named("tenant-a-networkpolicy-tenant-a-default-deny")
    assert dev_program.depends_on(tcp, deny)


MANAGEMENT_SIDE = ("kubernetes:networking", "kubernetes:kamaji", "kubernetes:core/v1:Namespace",
                   "kubernetes:core/v1:Secret")


def test_management_resources_use_the_management_provider(dev_program):
    management = dev_program.named("management-k8s")
    for name in TENANTS:
        on_management = [r for r in children(dev_program, name) if r.type.startswith(MANAGEMENT_SIDE)]
        assert len(on_management) == 7  # namespace, 4 policies, TCP, admin kubeconfig
        for reg in on_management:
            assert reg.provider.startswith(management.urn + "::"), reg.name


def test_tenant_resources_use_their_own_tenant_provider(dev_program):
    for name in TENANTS:
        provider = dev_program.named(f"{name}-k8s")
        inside = [r for r in children(dev_program, name)
                  if "kindnet" in r.name or "kube-proxy" in r.name]
        assert len(inside) == 8  # kindnet: 4 objects, kube-proxy: 4
        for reg in inside:
            assert reg.provider.startswith(provider.urn + "::"), reg.name


def test_kubeconfig_is_read_from_the_admin_secret_after_the_tcp(dev_program):
    read = dev_program.named("tenant-a-admin-kubeconfig")
    assert read.options["read"] is True
    assert read.options["id"] == "tenant-a/tenant-a-admin-kubeconfig"
    assert dev_program.depends_on(read, dev_program.named("tenant-a-control-plane"))


def test_the_admin_secret_read_names_what_it_reads_so_refresh_reads_it_alike(dev_program):
    """A bare `Secret.get` (no inputs) made every `pulumi refresh` report the read as updated: the
    provider rebuilds a bare read's inputs one way in `up` and another in refresh (read_secret's
    docstring; the real engine's check: tests/engine/test_refresh.py). With these inputs, both
    keep exactly them."""
    read = dev_program.named("tenant-a-admin-kubeconfig")
    assert read.inputs == {"apiVersion": "v1", "kind": "Secret",
                           "metadata": {"name": "tenant-a-admin-kubeconfig", "namespace": "tenant-a"}}


class UntargetedNewControlPlanes(PlatformMocks):
    """What a targeted `up` (`--target <another resource>`) gives a program whose tenants do not
    exist yet: each new, untargeted TenantControlPlane comes back with its inputs as outputs and no
    id (pulumi v3.276.0 step_generator: an untargeted create is skipped), and reading a Secret that
    does not exist fails, as the engine's read does."""

    def new_resource(self, args):
        if args.typ.endswith(":TenantControlPlane"):
            return "", dict(args.inputs)
        if args.typ == "kubernetes:core/v1:Secret" and args.resource_id:
            raise RuntimeError(f"resource '{args.resource_id}' does not exist")
        return super().new_resource(args)


@pytest.mark.parametrize("preview", [True, False], ids=["preview --target", "up --target"])
def test_a_targeted_run_before_a_tenant_exists_registers_no_admin_secret_read(preview, monkeypatch):
    """Not even one the engine would skip: the real engine saves a skipped read, under a tenant
    component a targeted update never created, and then refuses its own state (tests/engine/
    test_targeted_up.py)."""
    registered = spy_registrations(monkeypatch)
    run_program(dev_stack_config(), mocks=UntargetedNewControlPlanes(), preview=preview)
    assert "tenant-a-control-plane" in registered
    assert not [name for name in registered if name.endswith("-admin-kubeconfig")], registered


def test_tenant_provider_gets_the_kubeconfig_as_a_secret(dev_program):
    provider = dev_program.named("tenant-a-k8s")
    assert is_secret(provider.wire["kubeconfig"])
    assert TENANT_KUBECONFIG_SENTINEL in provider.inputs["kubeconfig"]


def test_each_worker_has_create_and_delete_and_a_secret_kubeconfig(dev_program):
    for name in TENANTS:
        worker = dev_program.named(f"{name}-worker-0")
        assert "docker run" in worker.inputs["create"] and "kubeadm" in worker.inputs["create"]
        assert "docker rm -f" in worker.inputs["delete"]
        assert is_secret(worker.wire["environment"]["TENANT_KUBECONFIG"])
        assert worker.options["deleteBeforeReplace"] is True
        assert dev_program.depends_on(worker, dev_program.named(f"{name}-control-plane"))


def test_tenants_are_independent_so_one_failing_does_not_touch_the_other(dev_program):
    tenant_a = {r.urn for r in children(dev_program, "tenant-a")}
    for reg in children(dev_program, "tenant-b"):
        assert not any(dev_program.depends_on(reg, dev_program.by_urn[urn]) for urn in tenant_a), reg.name


def test_cni_uses_the_tenant_endpoint(dev_program):
    endpoint = dev_program.exports["tenants"]["tenant-a"]["endpoint"]
    ds = dev_program.named("tenant-a-kindnet-daemonset-kube-system-kindnet")
    env = {e["name"]: e.get("value")
           for e in ds.inputs["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert f"https://{env['CONTROL_PLANE_ENDPOINT']}" == endpoint


def test_stack_exports_a_tenants_map_and_secret_kubeconfigs(dev_program):
    tenants = dev_program.exports["tenants"]
    assert sorted(tenants) == list(TENANTS)
    assert tenants["tenant-a"]["nodes"] == ["tenant-a-worker-0"]
    assert tenants["tenant-a"]["endpoint"] != tenants["tenant-b"]["endpoint"]
    assert tenants["tenant-a"]["endpoint"].startswith("https://172.30.255.")
    assert "tenantKubeconfigs" in dev_program.secret_exports
    assert "tenants" not in dev_program.secret_exports


def test_more_workers_make_more_worker_commands(dev_config):
    dev_config["tenants"][1]["workers"] = 3
    program = run_program(dev_config)
    names = sorted(r.name for r in program.of_type("command:local:Command") if "-worker-" in r.name
                   and not r.name.endswith(("-image", "-leave")))
    assert names == ["tenant-a-worker-0", "tenant-b-worker-0", "tenant-b-worker-1", "tenant-b-worker-2"]


def test_providers_are_replaced_only_with_a_new_cluster(dev_program):
    assert dev_program.named("management-k8s").inputs["clusterIdentifier"] == "management-kind_id"
    tenant = dev_program.named("tenant-a-k8s").inputs["clusterIdentifier"]
    assert tenant == "tenant-a/uid-tenant-a-control-plane"


def test_control_planes_wait_until_kamajis_webhook_accepts_a_dry_run(dev_program):
    """Kamaji's Helm release is "ready" on a bare ping while its fail-closed TCP webhooks may not
    serve yet (clastix/kamaji 26.8.2-edge cmd/manager/cmd.go readyz = healthz.Ping)."""
    gate = dev_program.named("management-kamaji-webhook")
    assert dev_program.depends_on(gate, dev_program.named("management-kamaji"))
    assert "create --dry-run=server" in gate.inputs["create"]
    for name in TENANTS:
        assert dev_program.depends_on(dev_program.named(f"{name}-control-plane"), gate)


def test_nothing_is_created_in_a_tenant_before_its_admin_credentials_are_authorized(dev_program):
    """Kamaji binds kubeadm:cluster-admins after the TCP is Ready; a 403 is not retried by
    pulumi-kubernetes. Every tenant-side resource uses the tenant provider, which waits."""
    for name in TENANTS:
        gate = dev_program.named(f"{name}-admin-access")
        provider = dev_program.named(f"{name}-k8s")
        assert dev_program.depends_on(gate, dev_program.named(f"{name}-control-plane"))
        assert dev_program.depends_on(provider, gate)
        inside = [r for r in dev_program.registrations if r.provider.startswith(provider.urn + "::")]
        assert {r.type for r in inside} >= {"kubernetes:apps/v1:DaemonSet", "kubernetes:helm.sh/v3:Release",
                                            "kubernetes:core/v1:NodePatch", "kubernetes:batch/v1:CronJob"}
        assert dev_program.depends_on(dev_program.named(f"{name}-worker-0"), gate)
        assert is_secret(gate.wire["environment"]["TENANT_KUBECONFIG"])


def test_workers_follow_the_identity_of_their_control_plane(dev_program):
    """A recreated TCP has a new UID (and CA): the worker's triggers change, so it is
    replaced and joins the new control plane instead of staying joined to the old one."""
    worker = dev_program.named("tenant-a-worker-0")
    assert "uid-tenant-a-control-plane" in worker.inputs["triggers"]
    assert "uid-tenant-b-control-plane" in dev_program.named("tenant-b-worker-0").inputs["triggers"]
    assert worker.options["deleteBeforeReplace"] is True


def test_what_would_lose_a_tenants_data_is_protected_and_nothing_else(dev_program):
    """The kind cluster, each control plane, and one guard per create-only setting: the engine
    refuses to replace or delete them, in preview too."""
    protected = sorted(r.name for r in dev_program.registrations if r.options.get("protect"))
    guards = [f"management-create-only-{k}" for k in ("dockerNetwork", "dockerSubnet", "kamajiEtcdReplicas",
                                                      "metallbAddressRange", "name", "nodeImage")]
    per_tenant = [f"{t}-{what}" for t in TENANTS
                  for what in ("control-plane", "create-only-podCidr", "create-only-serviceCidr",
                               "create-only-addressBlock")]
    assert protected == sorted([*guards, "management-kind", *per_tenant])


def test_each_guard_carries_its_settings_value_as_its_only_trigger(dev_program):
    guard = dev_program.named("tenant-a-create-only-podCidr")
    assert guard.inputs["triggers"] == ["10.36.0.0/16"]
    assert guard.inputs["environment"] == {"SETTING_VALUE": "10.36.0.0/16"}
    assert "tenants[name=tenant-a].podCidr" in guard.inputs["create"]
    assert "make unprotect-tenant TENANT=tenant-a" in guard.inputs["create"]
    assert dev_program.depends_on(dev_program.named("tenant-a-control-plane"), guard)


def test_a_preview_that_gets_a_control_plane_back_without_its_uid_plans_no_new_tenant(dev_config):
    """pulumi-kubernetes returns only the inputs of a TCP update it cannot dry-run: no UID. The
    tenant's identity comes from the admin kubeconfig Secret's controller reference instead,
    which that preview reads for real: nothing inside the tenant, no worker is replaced."""
    from tests.harness import PlatformMocks
    from tests.plan_model import plan

    deployed = run_program(dev_config)
    preview = run_program(dev_config, preview=True, mocks=PlatformMocks(control_plane_uid=False))
    # The preview's one read of the stack's own last outputs (create_only_report.py) changes nothing.
    assert [str(step) for step in plan(deployed, preview)] == ["read previous-deployment"]


def test_a_missing_controller_reference_is_unknown_in_preview_and_an_error_in_up():
    """Never "": a known, changed identity would plan a new provider and new workers."""
    from types import SimpleNamespace

    from kamaji_hami_platform.tenant.component import control_plane_uid

    owner = SimpleNamespace(kind="TenantControlPlane", controller=True, uid="u-1")
    assert control_plane_uid(SimpleNamespace(owner_references=[owner]), dry_run=False) == "u-1"
    orphan = SimpleNamespace(owner_references=[])
    assert control_plane_uid(orphan, dry_run=True, tenant="tenant-a") is pulumi.output.UNKNOWN
    with pytest.raises(ValueError, match="no TenantControlPlane controller reference"):
        control_plane_uid(orphan, dry_run=False)


def test_a_preview_that_reads_no_uid_says_that_its_replacements_are_not_up_s(dev_config, monkeypatch):
    """The Secret read, its controller reference missing: the preview plans a new provider and
    replaced workers, and says so, naming the tenant (issue 30.4)."""
    class SecretsWithoutOwner(PlatformMocks):
        def new_resource(self, args):
            resource_id, outputs = super().new_resource(args)
            if args.typ == "kubernetes:core/v1:Secret" and args.resource_id:
                outputs["metadata"] = {k: v for k, v in outputs["metadata"].items() if k != "ownerReferences"}
            return resource_id, outputs

    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *_, **__: warned.append(message))
    run_program(dev_config, preview=True, mocks=SecretsWithoutOwner())
    from kamaji_hami_platform.tenant.component import uid_unknown_warning

    assert uid_unknown_warning("tenant-a") in warned and uid_unknown_warning("tenant-b") in warned
    warned.clear()
    run_program(dev_config, preview=True)
    assert not [message for message in warned if "could not read its control plane's UID" in message]


def test_each_worker_runs_its_control_planes_version_by_construction(dev_config):
    """What worker-version-matches-control-plane checks, built in: both come from the tenant's
    kubernetesVersion, for any version the config accepts."""
    dev_config["tenants"][1]["kubernetesVersion"] = "v1.34.2"
    program = run_program(dev_config)
    for name in TENANTS:
        version = program.named(f"{name}-control-plane").inputs["spec"]["kubernetes"]["version"]
        assert f"kindest/node:{version}" in program.named(f"{name}-worker-0").inputs["create"]
    assert "kindest/node:v1.34.2" in program.named("tenant-b-worker-0").inputs["create"]


def test_kube_proxy_pods_start_only_after_their_configmap(dev_program):
    """A rolled DaemonSet must not start pods that mount the ConfigMap before its update."""
    daemonset = dev_program.named("tenant-a-kube-proxy-daemonset-kube-system-kube-proxy")
    configmap = dev_program.named("tenant-a-kube-proxy-configmap-kube-system-kube-proxy")
    assert dev_program.depends_on(daemonset, configmap)
    assert dev_program.depends_on(daemonset, dev_program.named(
        "tenant-a-kube-proxy-clusterrolebinding-kube-proxy"))


def test_a_workers_ready_wait_cannot_wait_for_itself(dev_config):
    """A worker is done when its Node is Ready, which needs kindnet on it: kindnet must never wait
    for a worker (it is created beside them, through the tenant provider)."""
    dev_config["tenants"][0]["workers"] = 2
    program = run_program(dev_config)
    for cni in [r for r in program.registrations if r.name.startswith("tenant-a-kindnet-")]:
        for index in range(2):
            assert not program.depends_on(cni, program.named(f"tenant-a-worker-{index}")), cni.name


@pytest.mark.parametrize("program", ["dev_program", "production_program"])
def test_every_kubernetes_provider_of_the_platform_takes_its_fields_back_by_force(program, request):
    """A hand's `kubectl edit/patch/scale` owns what it wrote: without force, `make up REFRESH=1`
    failed with a Server-Side Apply conflict instead of putting the platform's value back (the real
    engine and provider: tests/engine/test_refresh.py). Each provider, management and tenants', in
    kind mode and on an existing cluster, asks for it."""
    providers = request.getfixturevalue(program).of_type("pulumi:providers:kubernetes")
    assert {reg.name for reg in providers} >= {"management-k8s"} and len(providers) >= 3
    assert {reg.name: reg.wire.get("enablePatchForce") for reg in providers} == {
        reg.name: "true" for reg in providers}
