"""Day 2: what `pulumi up` plans for each config change of a running platform.

Each test runs the real program under mocks before and after a config change and
reads the plan the engine would make (tests/plan_model.py: which resources are
created, updated, replaced or deleted, and in which order).
"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.create_only_guards import GUARD_VALUE_ENV, CreateOnlySetting, guard_script
from kamaji_hami_platform.management import render as management_render
from kamaji_hami_platform.tenant import node_join
from tests import harness
from tests.harness import Program, run_program
from tests.plan_model import REFUSED, failed, ops, plan, refused, stopped
from tests.standins import run_script

pytestmark = pytest.mark.unit

REPLACED_AFTER_DELETE = "delete-replaced,create-replacement"
REPLACED_BEFORE_DELETE = "create-replacement,delete-replaced"


def changed(config: dict, edit) -> dict:
    after = copy.deepcopy(config)
    edit(after)
    return after


def provider_deletes(steps):
    """Deletes that call a provider: not those that go with their deleted_with resource."""
    return [s for s in steps if s.op == "delete" and not s.why.startswith("skipped")]


def position(steps, op: str, name: str) -> int:
    return next(i for i, s in enumerate(steps) if s.op == op and s.name == name)


@pytest.fixture(scope="module")
def two_workers(request) -> dict:
    from tests.harness import dev_stack_config

    config = dev_stack_config()
    config["tenants"][0]["workers"] = 2
    return config


@pytest.fixture(scope="module")
def before(two_workers):
    return run_program(two_workers)


def test_an_unchanged_config_plans_nothing(two_workers, before):
    assert plan(before, run_program(two_workers)) == []


class TestKubernetesUpgrade:
    """tenants[0].kubernetesVersion v1.35.0 -> v1.36.0."""

    @pytest.fixture(scope="class")
    def steps(self, two_workers, before):
        after = changed(two_workers, lambda c: c["tenants"][0].update(kubernetesVersion="v1.36.0"))
        return plan(before, run_program(after))

    def test_control_plane_first_then_workers_one_at_a_time(self, two_workers, steps):
        """The order holds because of dependencies: the SDK registers a resource only once its
        depends_on resources' steps are done (pulumi sdk/python/lib/pulumi/runtime/resource.py),
        and worker-1's own delete-then-create is planned only at its registration."""
        program = run_program(two_workers)
        assert program.depends_on(program.named("tenant-a-worker-1"), program.named("tenant-a-worker-0"))
        assert program.depends_on(program.named("tenant-a-worker-0"), program.named("tenant-a-control-plane"))
        planned = ops(steps)
        assert planned["tenant-a-control-plane"] == "update"
        assert planned["tenant-a-worker-0"] == planned["tenant-a-worker-1"] == REPLACED_AFTER_DELETE
        assert position(steps, "update", "tenant-a-control-plane") < \
            position(steps, "delete-replaced", "tenant-a-worker-0")
        # worker-1 goes only once worker-0's replacement exists: the tenant keeps a node.
        assert position(steps, "create-replacement", "tenant-a-worker-0") < \
            position(steps, "delete-replaced", "tenant-a-worker-1")

    def test_new_image_is_pulled_before_any_worker_goes(self, two_workers, steps):
        program = run_program(two_workers)
        assert program.depends_on(program.named("tenant-a-worker-0"), program.named("tenant-a-worker-image"))
        assert ops(steps)["tenant-a-worker-image"] == REPLACED_BEFORE_DELETE
        assert position(steps, "create-replacement", "tenant-a-worker-image") < \
            position(steps, "delete-replaced", "tenant-a-worker-0")

    def test_each_worker_is_drained_before_its_gpu_registration_is_released(self, steps):
        """The leave's delete drains first: a drain that fails stops the update with the node
        still registered (the registration names the worker in replace_with, so the worker's own
        replacement releases it before the worker's delete runs)."""
        for index in (0, 1):
            node = f"tenant-a-worker-{index}"
            assert ops(steps)[f"{node}-leave"] == REPLACED_AFTER_DELETE
            assert position(steps, "delete-replaced", f"{node}-leave") < \
                position(steps, "delete-replaced", f"tenant-a-gpus-{node}")
        # worker-1 is drained only once worker-0's replacement exists: the rolling order holds.
        assert position(steps, "create-replacement", "tenant-a-worker-0") < \
            position(steps, "delete-replaced", "tenant-a-worker-1-leave")

    def test_gpu_registration_follows_each_new_node(self, steps):
        """The old worker's delete removes its Node; the new Node must get label and cards again.
        With replace_with, the engine releases the patch before the worker goes (a delete-before-
        replace cascade) and applies it again once the new worker exists."""
        for index in (0, 1):
            node = f"tenant-a-worker-{index}"
            assert ops(steps)[f"{node.rsplit('-worker-', 1)[0]}-gpus-{node}"] == REPLACED_AFTER_DELETE
            assert position(steps, "delete-replaced", f"{node.rsplit('-worker-', 1)[0]}-gpus-{node}") < \
                position(steps, "delete-replaced", node)
            assert position(steps, "create-replacement", node) < \
                position(steps, "create-replacement", f"{node.rsplit('-worker-', 1)[0]}-gpus-{node}")

    def test_in_tenant_components_follow_the_version_and_tenant_b_is_untouched(self, steps):
        planned = ops(steps)
        assert planned["tenant-a-kube-proxy-daemonset-kube-system-kube-proxy"] == "update"
        assert planned["tenant-a-gpus-hami"] == "update"
        assert not [name for name in planned if name.startswith("tenant-b")]


class TestGpuQuotas:
    def test_adding_a_quota_never_creates_a_namespace_it_would_own(self, two_workers, before):
        after = changed(two_workers, lambda c: c["tenants"][0].update(
            gpuQuotas={"ml": {"requests.nvidia.com/gpu": 1}}))
        steps = plan(before, run_program(after))
        assert {(s.op, s.type) for s in steps} == {
            ("create", "kubernetes:core/v1:NamespacePatch"), ("create", "kubernetes:core/v1:ResourceQuota")}
        # A Patch is applied server-side: an existing namespace is adopted field by field, never
        # refused with AlreadyExists (pulumi-kubernetes provider/pkg/await/await.go, Patch resources).

    def test_removing_a_quota_deletes_the_quota_and_leaves_the_namespace(self, two_workers):
        with_quota = changed(two_workers, lambda c: c["tenants"][0].update(
            gpuQuotas={"ml": {"requests.nvidia.com/gpu": 1}}))
        steps = plan(run_program(with_quota), run_program(two_workers))
        assert {(s.op, s.type) for s in steps} == {
            ("delete", "kubernetes:core/v1:ResourceQuota"), ("delete", "kubernetes:core/v1:NamespacePatch")}
        # Deleting a Patch removes only the fields it applied (the platform's label), not the object.
        assert not [s for s in steps if s.type == "kubernetes:core/v1:Namespace"]


MANAGEMENT_CHANGES = {
    "nodeImage": ("management", "nodeImage", "kindest/node:v1.35.1"),
    "name": ("management", "name", "kamaji2"),
    "dockerNetwork": ("management", "dockerNetwork", "kind-b"),
    "dockerSubnet": ("management", "dockerSubnet", "172.31.0.0/16"),
}


def edit_setting(config: dict, section: str, key: str, value) -> None:
    config[section][key] = value


class TestNewManagementCluster:
    """A change that needs a new kind cluster (and so new control planes, empty tenants)."""

    @pytest.mark.parametrize("setting", sorted(MANAGEMENT_CHANGES))
    def test_preview_refuses_it_naming_the_setting(self, two_workers, before, setting):
        """The guard named after the setting is refused first (the kind command waits for it);
        then the kind cluster, itself or in the Docker network's delete-first cascade (a new
        network takes kind's node with it); a preview goes on into the kind cluster's own
        cascade, where the first control plane it meets stops the planning. (A new subnet also
        moves the default MetalLB range: its guard says so too.)"""
        after = run_program(changed(two_workers, lambda c: edit_setting(c, *MANAGEMENT_CHANGES[setting])))
        steps = plan(before, after)
        refusals = refused(steps)
        guard = f"management-create-only-{setting}"
        # Guards register side by side (no order among them); kind waits for all of them.
        assert refusals.index(guard) < refusals.index("management-kind"), refusals
        assert set(refusals) <= {guard, "management-kind", "management-create-only-metallbAddressRange",
                                 "tenant-a-control-plane", "tenant-b-control-plane"}, refusals
        assert stopped(steps), "nothing after it is planned"
        assert after.depends_on(after.named("management-kind"), after.named(guard))

    def test_ignore_protect_in_one_run_fails_in_its_preview(self, two_workers, before):
        """`pulumi up --ignore-protect` of it fails in its preview: the kind cluster's delete-first
        cascade deletes the management provider before the tenants' admin Secrets, read through
        it, go (a cascade never takes a read), and the engine refuses the state that leaves
        (`refers to unknown provider`; shown by the real engine:
        tests/engine/test_upgrades.py). So the way to a new cluster is `make down`, then
        `make up` (docs/operations/day-2.md). Everything planned before it is that cascade's
        deletes, which a preview only shows."""
        after = changed(two_workers, lambda c: c["management"].update(nodeImage="kindest/node:v1.35.1"))
        steps = plan(before, run_program(after), ignore_protect=True)
        assert failed(steps) == ["management-k8s"] and stopped(steps)
        cascade = [s for s in steps if s.why.startswith("cannot outlive")]
        assert {s.op for s in cascade} == {"delete-replaced"}
        assert {"tenant-a-control-plane", "management-kamaji", "management-k8s"} <= {s.name for s in cascade}


class TestCreateOnlySettings:
    """Settings a running platform cannot take: refused in preview, setting by setting."""

    @pytest.mark.parametrize(("edit", "guard", "waiting"), [
        (lambda c: c["management"].update(kamajiEtcdReplicas=1),
         "management-create-only-kamajiEtcdReplicas", ("management-kamaji",)),
        (lambda c: c["management"].update(metallbAddressRange="172.30.254.100-172.30.254.150"),
         "management-create-only-metallbAddressRange", ("management-metallb-pool",)),
        (lambda c: c["tenants"][0].update(podCidr="10.40.0.0/16"),
         "tenant-a-create-only-podCidr", ("tenant-a-control-plane",)),
        (lambda c: c["tenants"][0].update(serviceCidr="10.41.0.0/16"),
         "tenant-a-create-only-serviceCidr", ("tenant-a-control-plane",)),
    ])
    def test_a_change_is_refused_by_its_own_guard_before_what_it_would_break(
            self, two_workers, before, edit, guard, waiting):
        after = run_program(changed(two_workers, edit))
        assert refused(plan(before, after)) == [guard]
        for dependent in waiting:
            assert after.depends_on(after.named(dependent), after.named(guard))

    def test_a_setting_a_later_release_adds_refuses_no_existing_stack(self, two_workers, before, monkeypatch):
        """A new guard is a create, never a changed trigger of an existing one."""
        added = CreateOnlySetting("newSetting", "management.newSetting", "it is new")
        monkeypatch.setattr(management_render, "MANAGEMENT_CREATE_ONLY",
                            (*management_render.MANAGEMENT_CREATE_ONLY, added))
        original = management_render.management_create_only_values
        monkeypatch.setattr(management_render, "management_create_only_values",
                            lambda m: {**original(m), "newSetting": "x"})
        steps = plan(before, run_program(two_workers))
        assert [str(s) for s in steps] == ["create management-create-only-newSetting"]

    def test_a_release_that_creates_kind_clusters_otherwise_replaces_no_running_one(
            self, two_workers, before, monkeypatch):
        """The kind cluster's trigger list is ignored after its create: a later release that renders
        another kind config (or lists other triggers) plans nothing for a running cluster; its
        replacement comes only from the guards of the settings kind creates it with."""
        original = management_render.kind_cluster_config
        monkeypatch.setattr(management_render, "kind_cluster_config",
                            lambda m, mirror=None: original(m, mirror) + "# a later release's kind config\n")
        assert plan(before, run_program(two_workers)) == []

    def test_the_kind_cluster_is_replaced_with_the_guards_of_what_kind_creates_it_with(self, before):
        kind = before.named("management-kind")
        guards = {before.named(f"management-create-only-{key}").urn
                  for key in management_render.KIND_CLUSTER_SETTINGS}
        assert guards <= set(kind.options["replaceWith"])
        assert kind.options["ignoreChanges"] == ["triggers", "stdin"]
        assert kind.options["replacementTrigger"] == {
            key: before.named(f"management-create-only-{key}").inputs["triggers"][0]
            for key in management_render.KIND_CLUSTER_SETTINGS}
        etcd_guard = before.named("management-create-only-kamajiEtcdReplicas")
        assert etcd_guard.urn not in kind.options["replaceWith"]

    @pytest.mark.parametrize("setting", sorted(MANAGEMENT_CHANGES))
    def test_a_guard_replaced_once_leaves_the_cluster_refusing_in_every_later_run(
            self, two_workers, before, setting):
        """Issue 38, item 5: after `pulumi state unprotect` of a guard and an `up` that replaced
        it and was refused at the kind cluster, the state holds the guard with the new value and
        the cluster as it was. The next run must refuse the cluster again (its own
        replacement_trigger), not plan nothing while the outputs show a value it does not have
        (real engine: tests/engine/test_upgrades.py)."""
        config = changed(two_workers, lambda c: edit_setting(c, *MANAGEMENT_CHANGES[setting]))
        after = run_program(config)
        guard = f"management-create-only-{setting}"
        state = copy.deepcopy(before)
        replaced_guard = after.named(guard)
        state.registrations = [replaced_guard if reg.name == guard else reg for reg in state.registrations]
        steps = plan(state, after)
        assert "management-kind" in refused(steps), steps
        assert guard not in refused(steps)

    def test_a_state_without_the_clusters_trigger_takes_it_without_a_replacement(self, two_workers, before):
        """A cluster recorded before it had a replacement_trigger (0.1.0): a null old trigger is
        no trigger (step_generator.go `shouldTriggerReplace`), so the run records it and changes
        nothing; a changed setting in that same run is still refused at its guard."""
        state = copy.deepcopy(before)
        state.named("management-kind").options["replacementTrigger"] = None
        assert plan(state, run_program(two_workers)) == []
        new_image = changed(two_workers, lambda c: edit_setting(c, *MANAGEMENT_CHANGES["nodeImage"]))
        assert "management-create-only-nodeImage" in refused(plan(state, run_program(new_image)))

    def test_the_guard_names_the_setting_its_value_and_the_way_out(self):
        setting = next(s for s in management_render.MANAGEMENT_CREATE_ONLY if s.key == "kamajiEtcdReplicas")
        script = guard_script(setting, management_render.MANAGEMENT_WAY_OUT)
        result = run_script(script, shell="sh", tools=(), env={GUARD_VALUE_ENV: "3"})
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("management.kamajiEtcdReplicas=3 is create-only: ")
        assert setting.reason in result.stdout and management_render.MANAGEMENT_WAY_OUT in result.stdout

    def test_a_new_kind_cluster_takes_any_value(self, two_workers, before):
        after = changed(two_workers, lambda c: c["management"].update(
            nodeImage="kindest/node:v1.35.1", kamajiEtcdReplicas=1))
        planned = ops(plan(before, run_program(after), ignore_protect=True))
        assert planned["management-create-only-kamajiEtcdReplicas"] == REPLACED_BEFORE_DELETE


def unprotected(program: Program, prefix: str) -> Program:
    """The program as the state holds it after `make unprotect-tenant` of tenant `prefix`."""
    copy_ = copy.deepcopy(program)
    for reg in copy_.registrations:
        if reg.name.startswith(f"{prefix}-"):
            reg.options["protect"] = False
    return copy_


class TestDriftAndTeardown:
    def test_destroy_is_refused_for_what_is_protected(self, before):
        steps = plan(before, SimpleNamespace(registrations=[]))
        assert set(refused(steps)) == {
            "management-kind", "tenant-a-control-plane", "tenant-b-control-plane",
            *(f"management-create-only-{k}" for k in ("name", "nodeImage", "dockerNetwork", "dockerSubnet",
                                                        "kamajiEtcdReplicas", "metallbAddressRange")),
            *(f"{t}-create-only-{k}" for t in ("tenant-a", "tenant-b")
              for k in ("podCidr", "serviceCidr", "addressBlock"))}

    def test_make_down_deletes_only_what_outlives_its_cluster(self, before):
        """`make down` ignores protect on purpose. Objects in the kind cluster go with it
        (deleted_with the kind command), objects inside a tenant with its control plane:
        destroy runs only the host-side deletes and the kind delete."""
        steps = plan(before, SimpleNamespace(registrations=[]), ignore_protect=True)
        deleted = {s.type for s in provider_deletes(steps)}
        assert not [t for t in deleted if t.startswith("kubernetes:")], deleted
        deleted_names = [s.name for s in provider_deletes(steps)]
        assert {"management-kind", "tenant-a-worker-0", "tenant-a-worker-1", "tenant-b-worker-0"} <= \
            set(deleted_names)
        assert deleted_names.index("tenant-a-worker-0") < deleted_names.index("management-kind")

    def test_removing_a_tenant_is_refused_until_it_is_unprotected(self, two_workers, before):
        after = run_program(changed(two_workers, lambda c: c.update(tenants=c["tenants"][:1])))
        assert set(refused(plan(before, after))) == {
            "tenant-b-control-plane", "tenant-b-create-only-podCidr", "tenant-b-create-only-serviceCidr",
            "tenant-b-create-only-addressBlock"}

    def test_removing_a_tenant_ahead_of_another_moves_nobodys_addresses(self, two_workers, before):
        """tenant-b's workers and its control plane's admission live in its address block, by
        default its position in `tenants`: removing tenant-a would move it, so its guard refuses
        that until the block is pinned."""
        shifted = changed(two_workers, lambda c: c.update(tenants=c["tenants"][1:]))
        assert "tenant-b-create-only-addressBlock" in refused(plan(unprotected(before, "tenant-a"),
                                                                   run_program(shifted)))
        pinned = changed(shifted, lambda c: c["tenants"][0].update(addressBlock=1))
        steps = plan(unprotected(before, "tenant-a"), run_program(pinned))
        assert refused(steps) == [] and not [s for s in steps if s.name.startswith("tenant-b")]

    def test_an_unprotected_tenant_is_deleted_with_its_control_plane_not_object_by_object(
            self, two_workers, before):
        after = changed(two_workers, lambda c: c.update(tenants=c["tenants"][:1]))
        steps = plan(unprotected(before, "tenant-b"), run_program(after))
        assert refused(steps) == []
        deleted = {s.name for s in provider_deletes(steps)}
        assert {"tenant-b-control-plane", "tenant-b-worker-0", "tenant-b-namespace"} <= deleted
        assert "tenant-b-gpus-hami" not in deleted, "it goes with tenant-b's control plane"
        assert {s.op for s in steps} == {"delete", "discard"}, "nothing of tenant-a changes"

    def test_a_removed_workers_gpu_registration_stays_until_its_drain_has_run(self, two_workers, before):
        """Issue 38, item 9: a scale-down deletes dependents first, the GPU registration before the
        worker whose delete drains. Its delete goes with the worker (no provider call): the
        annotations stay on the Node until the worker's delete removes it after the drain, and
        stay there when the drain fails."""
        steps = plan(before, run_program(changed(two_workers, lambda c: c["tenants"][0].update(workers=1))))
        registration = next(s for s in steps if s.name == "tenant-a-gpus-tenant-a-worker-1")
        assert registration.op == "delete" and registration.why.startswith("skipped"), steps
        assert {"tenant-a-worker-1", "tenant-a-worker-1-leave"} <= {s.name for s in provider_deletes(steps)}

    def test_a_pool_removed_without_its_workers_takes_its_registrations_off(self, two_workers, before):
        def no_gpus(config: dict) -> None:
            for key in ("gpus", "gpuWorkloads", "gpuQuotas"):
                config["tenants"][0].pop(key, None)

        steps = plan(before, run_program(changed(two_workers, no_gpus)))
        deleted = {s.name for s in provider_deletes(steps)}
        assert {"tenant-a-gpus-tenant-a-worker-0", "tenant-a-gpus-tenant-a-worker-1"} <= deleted, steps

    def test_a_release_that_detects_the_docker_host_otherwise_rolls_no_worker(self, two_workers, before,
                                                                            monkeypatch):
        """Issue 38, item 7: every worker's replacement trigger holds what `<name>-docker-host`
        printed. A release whose detection script differs must not run it again on a running
        cluster (its output, unknown in the preview of an update, would replace every worker
        delete-first, its /var volume with it): the command ignores a new `create`."""
        from kamaji_hami_platform.management import docker_host
        from tests.plan_model import preview_plan

        original = docker_host.host_flags_script
        monkeypatch.setattr(docker_host, "host_flags_script",
                            lambda node: original(node) + "# a later release's detection\n")
        steps = preview_plan(before, lambda mocks: run_program(two_workers, preview=True, mocks=mocks))
        assert not [s for s in steps if s.op != "read"], steps

    def test_without_ignoring_its_new_script_the_detection_would_roll_every_worker(self, two_workers, before,
                                                                                 monkeypatch):
        """The test above can fail: the same release with the detection run again (an update,
        whose output a preview cannot know) replaces each worker in the preview."""
        from tests.plan_model import preview_plan

        assert before.named("management-docker-host").options["ignoreChanges"] == ["create"]
        updated = harness.PlatformMocks(updated_commands=frozenset({"management-docker-host"}))
        steps = preview_plan(before, lambda _: run_program(two_workers, preview=True, mocks=updated))
        replaced = {s.name for s in steps if s.op == "create-replacement"}
        assert {"tenant-a-worker-0", "tenant-a-worker-1"} <= replaced, steps

    def test_a_changed_container_spec_rolls_the_workers(self, two_workers, before, monkeypatch):
        original = node_join.docker_run_args
        monkeypatch.setattr(node_join, "docker_run_args",
                            lambda worker: ["--memory=8g", *original(worker)])
        steps = plan(before, run_program(two_workers))
        planned = ops(steps)
        assert planned["tenant-a-worker-0"] == planned["tenant-a-worker-1"] == REPLACED_AFTER_DELETE
        assert position(steps, "create-replacement", "tenant-a-worker-0") < \
            position(steps, "delete-replaced", "tenant-a-worker-1")


DAY2_CHANGES = {
    "kubernetesVersion": lambda c: c["tenants"][0].update(kubernetesVersion="v1.36.0"),
    "workers up": lambda c: c["tenants"][0].update(workers=3),
    "workers down": lambda c: c["tenants"][0].update(workers=1),
    "hami": lambda c: c["tenants"][0].update(hami={"gpuSchedulerPolicy": "spread", "nodeLockTimeout": "10s"}),
    "gpus.perWorker": lambda c: c["tenants"][0]["gpus"].update(perWorker=2),
    "gpuQuotas": lambda c: c["tenants"][0].update(gpuQuotas={"ml": {"requests.nvidia.com/gpu": 1}}),
    "referencePod": lambda c: c.update(referencePod={"gpumem": 10000, "gpucores": 10}),
    "controlPlaneReplicas": lambda c: c["tenants"][0].update(controlPlaneReplicas=2),
}


class TestFixedNamesSurviveDay2:
    """pulumi-kubernetes replaces an object when one of its kind's forced-replacement fields
    changes, and deletes a fixed-name object before re-creating it (provider/pkg/provider/
    diff.go, provider.go v4.32.0): no day-2 change may do that to an object a tenant runs on."""

    @staticmethod
    def replaced_objects(steps) -> list[str]:
        return sorted({s.name for s in steps if s.op in ("delete-replaced", "create-replacement", REFUSED)
                       and s.type.startswith("kubernetes:") and not s.type.endswith("NodePatch")})

    @pytest.mark.parametrize("change", sorted(DAY2_CHANGES))
    def test_no_object_is_deleted_and_recreated(self, two_workers, before, change):
        steps = plan(before, run_program(changed(two_workers, DAY2_CHANGES[change])))
        assert refused(steps) == []
        assert self.replaced_objects(steps) == []

    def test_a_new_tenant_endpoint_updates_kube_proxys_configmap_in_place_and_rolls_its_pods(
            self, two_workers, before, monkeypatch):
        monkeypatch.setattr(harness, "tenant_lb_address", lambda name: "172.30.255.249")
        steps = plan(before, run_program(two_workers))
        planned = ops(steps)
        assert planned["tenant-a-kube-proxy-configmap-kube-system-kube-proxy"] == "update"
        daemonset = next(s for s in steps if s.name == "tenant-a-kube-proxy-daemonset-kube-system-kube-proxy")
        assert daemonset.op == "update" and "spec" in daemonset.why
        assert self.replaced_objects(steps) == []

    def test_without_a_mutable_configmap_provider_it_would_be_deleted_first(self, two_workers, before,
                                                                            monkeypatch):
        """What the provider flag prevents: the model plans the provider's default."""
        monkeypatch.setattr(harness, "tenant_lb_address", lambda name: "172.30.255.249")
        after = run_program(two_workers)
        for reg in (before, after):
            for provider in reg.of_type("pulumi:providers:kubernetes"):
                provider.inputs.pop("enableConfigMapMutable", None)
        steps = plan(before, after)
        assert ops(steps)["tenant-a-kube-proxy-configmap-kube-system-kube-proxy"] == REPLACED_AFTER_DELETE


class TestThePlatformsOwnWordsInThePreview:
    """`pulumi preview` itself, not only `make preview`, names a changed create-only setting with
    its recorded and configured value and the safe way out, next to the engine's refusal
    (kamaji_hami_platform/create_only_report.py): from its stack's previous outputs."""

    def errors_of(self, config: dict, previous: dict, monkeypatch) -> list[str]:
        import pulumi

        errors: list[str] = []
        monkeypatch.setattr(pulumi.log, "error", lambda message, *_, **__: errors.append(message))
        run_program(config, preview=True, mocks=harness.PlatformMocks(previous_outputs=previous))
        return errors

    def test_a_changed_setting_is_named_with_both_values_and_the_way_out(
            self, two_workers, before, monkeypatch):
        previous = {"createOnlySettings": before.exports["createOnlySettings"]}
        errors = self.errors_of(changed(two_workers, lambda c: c["management"].update(kamajiEtcdReplicas=1)),
                                previous, monkeypatch)
        assert errors == [
            "management.kamajiEtcdReplicas is '1' in the config, but the running platform was created "
            "with '3', and it cannot change on a running platform (the engine refuses it at "
            "management-create-only-kamajiEtcdReplicas; do not remove `protect`, which would let it "
            "destroy what the setting guards). The way out: set the old value back, or rebuild the "
            "platform with the new one: make down, then make up (every tenant starts empty)."]

    def test_a_kind_setting_is_said_refused_at_its_guard_and_at_the_cluster(self, two_workers, before,
                                                                          monkeypatch):
        """The kind cluster keeps the settings kind creates it with (its replacement trigger): the
        message names both resources the engine refuses the change at."""
        previous = {"createOnlySettings": before.exports["createOnlySettings"]}
        new_image = changed(two_workers, lambda c: edit_setting(c, *MANAGEMENT_CHANGES["nodeImage"]))
        errors = self.errors_of(new_image, previous, monkeypatch)
        assert len(errors) == 1
        assert ("(the engine refuses it at management-create-only-nodeImage and management-kind; "
                in errors[0]), errors

    def test_the_message_is_said_before_the_engine_gets_a_resource_that_refuses_the_change(
            self, two_workers, before, monkeypatch):
        """The engine's refusal at a guard or at the kind cluster stops the preview: the message
        must reach it first. Each such resource waits for the report (issue 38, item 10): its
        registration comes after the message and names the StackReference among its
        dependencies. Without the wait, every guard was registered before the message."""
        import pulumi

        from kamaji_hami_platform import create_only_report

        events: list[str] = []
        monkeypatch.setattr(pulumi.log, "error", lambda message, *_, **__: events.append("message"))
        original = harness.RecordingMonitor.RegisterResource
        dependencies: dict[str, list[str]] = {}

        def spy(monitor, request):
            events.append(request.name)
            dependencies[request.name] = list(request.dependencies)
            return original(monitor, request)

        monkeypatch.setattr(harness.RecordingMonitor, "RegisterResource", spy)
        previous = {"createOnlySettings": before.exports["createOnlySettings"]}
        new_image = changed(two_workers, lambda c: edit_setting(c, *MANAGEMENT_CHANGES["nodeImage"]))
        run_program(new_image, preview=True, mocks=harness.PlatformMocks(previous_outputs=previous))
        refusing = create_only_report.refusing_resources(parse_config(new_image))
        assert "management-kind" in refusing and "management-create-only-nodeImage" in refusing
        said = events.index("message")
        for name in refusing:
            assert events.index(name) > said, (name, events[:said + 1])
            assert any(urn.endswith("::previous-deployment") for urn in dependencies[name]), name
        # Only those wait: the rest of the preview does not queue behind the stack's own outputs.
        assert not any(urn.endswith("::previous-deployment") for name, deps in dependencies.items()
                       if name not in refusing for urn in deps)

    def test_the_stack_is_named_as_its_backend_names_it(self, monkeypatch, tmp_path):
        """A DIY backend (by PULUMI_BACKEND_URL, the project file's backend.url or the stored
        login, in pulumi's order) gets the bare name both of its layouts take; Pulumi Cloud the
        full name, also for an organization literally named `organization`, which a bare name
        would look up in the user's default organization."""
        import pulumi

        from kamaji_hami_platform import state_backend

        home, project = tmp_path / "home", tmp_path / "project"
        home.mkdir()
        project.mkdir()
        monkeypatch.setattr(pulumi, "get_project", lambda: "kamaji-hami-platform")
        monkeypatch.setattr(pulumi, "get_stack", lambda: "dev")
        monkeypatch.setenv("PULUMI_HOME", str(home))
        monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)

        def name(organization: str) -> str:
            monkeypatch.setattr(pulumi, "get_organization", lambda: organization)
            return state_backend.own_stack_name(project)

        full = "organization/kamaji-hami-platform/dev"
        assert name("acme") == "acme/kamaji-hami-platform/dev"
        assert name("organization") == full  # no login stored: Pulumi Cloud
        (home / "credentials.json").write_text(json.dumps({"current": "https://api.pulumi.com"}))
        assert name("organization") == full
        (home / "credentials.json").write_text(json.dumps({"current": "file://~"}))
        assert name("organization") == "dev"
        (project / "Pulumi.yaml").write_text("name: p\nruntime: python\nbackend:\n  url: https://pulumi.example.com\n")
        assert name("organization") == full  # the project's backend before the stored login
        monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://state-bucket/platform")
        assert name("organization") == "dev"  # the environment before both
        assert name("acme") == "acme/kamaji-hami-platform/dev"

    def test_an_unchanged_config_or_a_stack_never_deployed_says_nothing(
            self, two_workers, before, monkeypatch):
        previous = {"createOnlySettings": before.exports["createOnlySettings"]}
        assert self.errors_of(two_workers, previous, monkeypatch) == []
        changed_config = changed(two_workers, lambda c: c["management"].update(kamajiEtcdReplicas=1))
        assert self.errors_of(changed_config, {}, monkeypatch) == []
