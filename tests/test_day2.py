"""Day 2: what `pulumi up` plans for each config change of a running platform.

Each test runs the real program under mocks before and after a config change and
reads the plan the engine would make (tests/plan_model.py: which resources are
created, updated, replaced or deleted, and in which order).
"""

from __future__ import annotations

import copy
import os
import subprocess
from types import SimpleNamespace

import pytest

from components import management_render, node_join
from components.config import ManagementConfig
from tests.harness import run_program
from tests.plan_model import ops, plan

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

    def test_gpu_registration_follows_each_new_node(self, steps):
        """The old worker's delete removes its Node; the new Node must get label and cards again.
        With replace_with, the engine releases the patch before the worker goes (a delete-before-
        replace cascade) and applies it again once the new worker exists."""
        for index in (0, 1):
            node = f"tenant-a-worker-{index}"
            assert ops(steps)[f"{node}-gpus"] == REPLACED_AFTER_DELETE
            assert position(steps, "delete-replaced", f"{node}-gpus") < \
                position(steps, "delete-replaced", node)
            assert position(steps, "create-replacement", node) < \
                position(steps, "create-replacement", f"{node}-gpus")

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


class TestNewManagementCluster:
    """management.nodeImage changes: a new kind cluster, so new control planes."""

    @pytest.fixture(scope="class")
    def steps(self, two_workers, before):
        after = changed(two_workers, lambda c: c["management"].update(nodeImage="kindest/node:v1.35.1"))
        return plan(before, run_program(after))

    def test_everything_on_it_is_deleted_first_then_recreated(self, steps):
        planned = ops(steps)
        assert planned["management-kind"] == REPLACED_AFTER_DELETE
        kind_deleted = position(steps, "delete-replaced", "management-kind")
        for name in ("management-k8s", "kamaji", "tenant-a-control-plane", "tenant-b-control-plane",
                     "tenant-a-k8s", "tenant-a-gpus-hami"):
            assert planned[name] == REPLACED_AFTER_DELETE, name
            assert position(steps, "delete-replaced", name) < kind_deleted, name

    def test_workers_and_their_registration_follow_their_new_control_plane(self, steps):
        planned = ops(steps)
        for node in ("tenant-a-worker-0", "tenant-a-worker-1", "tenant-b-worker-0"):
            assert planned[node] == REPLACED_AFTER_DELETE, node
            assert planned[f"{node}-gpus"] == REPLACED_AFTER_DELETE, node
        tcp = position(steps, "create-replacement", "tenant-a-control-plane")
        assert tcp < position(steps, "create-replacement", "tenant-a-worker-0")


class TestCreateOnlySettings:
    """kamajiEtcdReplicas and the MetalLB range: only a new management cluster takes them."""

    @pytest.mark.parametrize("edit", [
        lambda c: c["management"].update(kamajiEtcdReplicas=1),
        lambda c: c["management"].update(metallbAddressRange="172.18.254.100-172.18.254.150"),
    ])
    def test_a_change_is_an_update_of_the_guard_that_kamaji_and_metallb_wait_for(
            self, two_workers, before, edit):
        after = run_program(changed(two_workers, edit))
        steps = plan(before, after)
        assert ops(steps)["management-create-only-settings"] == "update"
        guard = after.named("management-create-only-settings")
        for dependent in ("kamaji", "management-metallb-pool"):
            assert after.depends_on(after.named(dependent), guard)

    def test_a_new_kind_cluster_takes_any_value(self, two_workers, before):
        after = changed(two_workers, lambda c: c["management"].update(
            nodeImage="kindest/node:v1.35.1", kamajiEtcdReplicas=1))
        assert ops(plan(before, run_program(after)))["management-create-only-settings"] == \
            REPLACED_AFTER_DELETE

    @staticmethod
    def run_guard(script: str, previous: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=30,
                              env={**os.environ, "PULUMI_COMMAND_STDOUT": previous, **env}, check=False)

    def test_the_guard_refuses_naming_the_setting_and_the_way_out(self):
        management = ManagementConfig()
        record = subprocess.run(["/bin/sh", "-c", management_render.create_only_record_script()],
                                capture_output=True, text=True, timeout=30, check=True,
                                env={**os.environ, "KAMAJI_ETCD_REPLICAS": "3",
                                     "METALLB_ADDRESS_RANGE": "172.18.255.200-172.18.255.250"}).stdout.strip()
        refusal = management_render.create_only_refusal_script(management)
        same = self.run_guard(refusal, record, KAMAJI_ETCD_REPLICAS="3",
                              METALLB_ADDRESS_RANGE="172.18.255.200-172.18.255.250")
        assert same.returncode == 0
        changed_size = self.run_guard(refusal, record, KAMAJI_ETCD_REPLICAS="1",
                                      METALLB_ADDRESS_RANGE="172.18.255.200-172.18.255.250")
        assert changed_size.returncode == 1
        assert "management.kamajiEtcdReplicas=1" in changed_size.stderr
        assert "management.kamajiEtcdReplicas=3" in changed_size.stderr
        assert "--replace" in changed_size.stderr and "set the old value back" in changed_size.stderr


class TestDriftAndTeardown:
    def test_destroy_deletes_only_what_outlives_its_cluster(self, before):
        """Objects in the kind cluster go with it (deleted_with the kind command), objects inside a
        tenant with its control plane: destroy runs only the host-side deletes and the kind delete."""
        steps = plan(before, SimpleNamespace(registrations=[]))
        deleted = {s.type for s in provider_deletes(steps)}
        assert not [t for t in deleted if t.startswith("kubernetes:")], deleted
        deleted_names = [s.name for s in provider_deletes(steps)]
        assert {"management-kind", "tenant-a-worker-0", "tenant-a-worker-1", "tenant-b-worker-0"} <= \
            set(deleted_names)
        assert deleted_names.index("tenant-a-worker-0") < deleted_names.index("management-kind")

    def test_removing_a_tenant_deletes_its_control_plane_and_workers_not_each_object_inside(
            self, two_workers, before):
        after = changed(two_workers, lambda c: c.update(tenants=c["tenants"][:1]))
        steps = plan(before, run_program(after))
        deleted = {s.name for s in provider_deletes(steps)}
        assert {"tenant-b-control-plane", "tenant-b-worker-0", "tenant-b-namespace"} <= deleted
        assert "tenant-b-gpus-hami" not in deleted, "it goes with tenant-b's control plane"
        assert {s.op for s in steps} == {"delete", "discard"}, "nothing of tenant-a changes"

    def test_a_changed_container_spec_rolls_the_workers(self, two_workers, before, monkeypatch):
        original = node_join.docker_run_args
        monkeypatch.setattr(node_join, "docker_run_args",
                            lambda worker: ["--memory=8g", *original(worker)])
        steps = plan(before, run_program(two_workers))
        planned = ops(steps)
        assert planned["tenant-a-worker-0"] == planned["tenant-a-worker-1"] == REPLACED_AFTER_DELETE
        assert position(steps, "create-replacement", "tenant-a-worker-0") < \
            position(steps, "delete-replaced", "tenant-a-worker-1")
