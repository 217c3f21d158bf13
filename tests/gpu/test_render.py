"""HAMi values, GPU node registration, capacity agent and quotas, as rendered."""

from __future__ import annotations

import json

import pytest

from kamaji_hami_platform.config import QUOTA_KEYS, ConfigError, load_stack_file, parse_config
from kamaji_hami_platform.gpu import render
from kamaji_hami_platform.gpu.devices import (
    GPU_CORES_RESOURCE,
    GPU_MEMORY_RESOURCE,
    GPU_RESOURCE,
    REGISTER_FIELDS,
    GpuCapacity,
    node_register_annotation,
    parse_node_register_annotation,
    tenant_devices,
)
from tests.harness import PRODUCTION_STACK
from tests.rbac_eval import rbac_allows

pytestmark = pytest.mark.unit

# HAMi 2.10.0 DeviceInfo JSON types (pkg/device/devices.go).
HAMI_FIELD_TYPES = {"id": str, "index": int, "count": int, "devmem": int, "devcore": int,
                    "type": str, "numa": int, "mode": str, "health": bool}


@pytest.fixture
def platform(dev_config):
    return parse_config(dev_config)


def value_at(values, path):
    for key in path.split("."):
        values = values[key]
    return values


class TestValues:
    @pytest.mark.parametrize(("path", "expected"), [
        ("scheduler.kubeScheduler.image.registry", "registry.k8s.io"),
        ("scheduler.kubeScheduler.image.repository", "kube-scheduler"),
        ("scheduler.kubeScheduler.image.tag", "v1.35.0"),
        ("scheduler.admissionWebhook.failurePolicy", "Fail"),
        ("scheduler.admissionWebhook.whitelistNamespaces", ["kube-system", "kube-public",
                                                            "kube-node-lease"]),
        ("scheduler.leaderElect", True),
        ("scheduler.replicas", 2),
        ("scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy", "binpack"),
        ("scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy", "binpack"),
        ("scheduler.extender.extraArgs", ["--debug", "-v=4", "--node-lock-timeout=5s"]),
        ("devicePlugin.enabled", False),
        # No node port for the unauthenticated extender or the monitor (issue 40).
        ("scheduler.service.type", "ClusterIP"),
        ("devicePlugin.service.type", "ClusterIP"),
    ])
    def test_mock_mode_values(self, platform, path, expected):
        assert value_at(render.hami_values(platform.tenants[0]), path) == expected

    def test_scheduler_replicas_from_config(self, dev_config):
        """The chart renders `scheduler.replicas` only with leaderElect (HAMi 2.10.0
        charts/hami/templates/scheduler/deployment.yaml), so both are set."""
        dev_config["tenants"][0]["hami"]["schedulerReplicas"] = 1
        values = render.hami_values(parse_config(dev_config).tenants[0])
        assert value_at(values, "scheduler.replicas") == 1
        assert value_at(values, "scheduler.leaderElect") is True
        dev_config["tenants"][0]["hami"]["schedulerReplicas"] = 4
        with pytest.raises(ConfigError, match=r"tenants\[0\]\.hami\.schedulerReplicas"):
            parse_config(dev_config)

    def test_every_namespace_the_platform_runs_pods_in_is_outside_the_webhook(self, platform):
        values = render.hami_values(platform.tenants[0])
        excluded = value_at(values, "scheduler.admissionWebhook.whitelistNamespaces")
        agent_namespaces = {o["metadata"]["namespace"] for o in render.capacity_agent_objects({"n": 10})
                            if "namespace" in o["metadata"]}
        assert agent_namespaces | {render.HAMI_NAMESPACE} <= set(excluded)

    def test_scheduler_tag_follows_the_tenant_version(self, dev_config):
        dev_config["tenants"][0]["kubernetesVersion"] = "v1.34.2"
        values = render.hami_values(parse_config(dev_config).tenants[0])
        assert value_at(values, "scheduler.kubeScheduler.image.tag") == "v1.34.2"

    def test_lock_timeout_from_config(self, dev_config):
        dev_config["tenants"][0]["hami"]["nodeLockTimeout"] = "20s"
        values = render.hami_values(parse_config(dev_config).tenants[0])
        assert "--node-lock-timeout=20s" in value_at(values, "scheduler.extender.extraArgs")

    def test_real_gpus_keep_plugin_and_default_lock(self):
        """Real cards (host workers, management mode existing): HAMi's device plugin registers them."""
        real = next(t for t in load_stack_file(PRODUCTION_STACK).tenants if t.gpus and not t.gpus.mock)
        values = render.hami_values(real)
        assert value_at(values, "scheduler.overwriteEnv") == "true"  # no card for a pod asking none
        assert value_at(values, "devicePlugin.deviceSplitCount") == real.gpus.model.split_count
        assert values["devicePlugin"]["enabled"] is True
        assert "extender" not in values["scheduler"]
        for service in ("scheduler.service.type", "devicePlugin.service.type"):
            assert value_at(values, service) == "ClusterIP"
        assert value_at(values, "scheduler.admissionWebhook.failurePolicy") == "Fail"


class TestNodeRegistration:
    def test_annotation_has_exactly_hamis_fields_and_types(self, platform):
        devices = tenant_devices(platform.tenants[0], "kamaji")["tenant-a-worker-0"]
        entries = json.loads(node_register_annotation(devices))
        assert len(entries) == 1
        (entry,) = entries
        assert set(entry) == set(HAMI_FIELD_TYPES)
        for field, type_ in HAMI_FIELD_TYPES.items():
            assert type(entry[field]) is type_, field
        assert entry["count"] == 10 and entry["devmem"] == 81920 and entry["devcore"] == 100
        assert "NVIDIA" in entry["type"] and entry["mode"] == "hami-core" and entry["health"] is True
        assert entry["id"].startswith("GPU-")

    def test_ids_are_unique_across_cards_nodes_and_tenants(self, dev_config):
        dev_config["tenants"][0]["workers"] = 3
        dev_config["tenants"][0]["gpus"]["perWorker"] = 4
        platform = parse_config(dev_config)
        ids = [d.id for t in platform.tenants for ds in tenant_devices(t, "kamaji").values() for d in ds]
        assert len(ids) == 3 * 4 + 1 and len(set(ids)) == len(ids)

    def test_ids_are_stable_between_runs(self, platform):
        first = tenant_devices(platform.tenants[0], "kamaji")
        assert first == tenant_devices(platform.tenants[0], "kamaji")

    def test_round_trip(self, platform):
        devices = tenant_devices(platform.tenants[1], "kamaji")["tenant-b-worker-0"]
        assert parse_node_register_annotation(node_register_annotation(devices)) == devices

    def test_node_metadata_mock_and_real(self, platform):
        devices = tenant_devices(platform.tenants[0], "kamaji")["tenant-a-worker-0"]
        mock = render.gpu_node_metadata("n", devices, mock=True)
        assert mock["labels"] == {"gpu": "on"}
        assert json.loads(mock["annotations"]["hami.io/node-nvidia-register"])[0]["index"] == 0
        real = render.gpu_node_metadata("n", devices, mock=False)
        assert "hami.io/node-nvidia-register" not in real["annotations"], "the device plugin registers"

    def test_node_patch_forces_back_exactly_the_platforms_own_fields(self, platform):
        """patchForce reclaims fields someone edited by hand; it must not claim what HAMi writes on
        a node (v2.10.0: hami.io/node-handshake in pkg/device/devices.go, hami.io/mutex.lock in
        pkg/util/nodelock/nodelock.go)."""
        devices = tenant_devices(platform.tenants[0], "kamaji")["tenant-a-worker-0"]
        metadata = render.gpu_node_metadata("n", devices, mock=True)
        assert metadata["annotations"]["pulumi.com/patchForce"] == "true"
        owned = {*metadata["labels"], *metadata["annotations"]} - {"pulumi.com/patchForce"}
        assert owned == {"gpu", "hami.io/node-nvidia-register"}
        assert not owned & {"hami.io/node-handshake", "hami.io/mutex.lock"}

    def test_register_fields_constant_matches_types(self):
        assert set(REGISTER_FIELDS) == set(HAMI_FIELD_TYPES)

    def test_capacity_totals(self, dev_config):
        dev_config["tenants"][0]["gpus"]["perWorker"] = 2
        tenant = parse_config(dev_config).tenants[0]
        devices = [d for ds in tenant_devices(tenant, "kamaji").values() for d in ds]
        assert GpuCapacity.of(devices).as_output() == {
            "cards": 2, "memoryMiB": 163840, "cores": 200, "slots": 20}


class TestCapacityAgent:
    def test_one_cronjob_per_gpu_node_patching_cards_times_split(self):
        objects = render.capacity_agent_objects({"n1": 10, "n2": 20})
        jobs = [o for o in objects if o["kind"] == "CronJob"]
        assert [j["metadata"]["name"] for j in jobs] == [
            "hami-mock-gpu-capacity-n1", "hami-mock-gpu-capacity-n2"]
        container = jobs[1]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == "registry.k8s.io/kubectl:v1.35.0"
        assert container["command"][:5] == ["/bin/kubectl", "patch", "node", "n2", "--subresource=status"]
        patch = json.loads(container["command"][-1])
        assert patch == [
            {"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "20"},
            {"op": "add", "path": "/status/allocatable/nvidia.com~1gpu", "value": "20"}]

    def test_rbac_allows_exactly_what_kubectl_patch_subresource_status_does(self):
        """`kubectl patch node N --subresource=status` GETs then PATCHes nodes/N/status
        (k8s.io/cli-runtime v0.35 pkg/resource/builder.go requireObject and visitor.go
        Info.Get with the subresource; k8s.io/kubectl v0.35 pkg/cmd/patch/patch.go)."""
        role = next(o for o in render.capacity_agent_objects({"n1": 10, "n2": 10})
                    if o["kind"] == "ClusterRole")
        job = next(o for o in render.capacity_agent_objects({"n1": 10}) if o["kind"] == "CronJob")
        node = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"][3]
        for verb in ("get", "patch"):
            assert rbac_allows(role["rules"], verb, "nodes", "status", node), verb

    @pytest.mark.parametrize(("verb", "resource", "subresource", "name"), [
        ("patch", "nodes", "status", "other-node"),   # only the GPU nodes
        ("get", "nodes", "", "n1"),                   # the node object itself is not needed
        ("patch", "nodes", "", "n1"),                 # nor writable: labels, taints stay safe
        ("update", "nodes", "status", "n1"),
        ("list", "nodes", "", ""),
        ("delete", "nodes", "", "n1"),
    ])
    def test_rbac_allows_nothing_else(self, verb, resource, subresource, name):
        role = next(o for o in render.capacity_agent_objects({"n1": 10, "n2": 10})
                    if o["kind"] == "ClusterRole")
        assert not rbac_allows(role["rules"], verb, resource, subresource, name)


class TestQuotas:
    def test_quota_uses_enforced_keys_and_creates_missing_namespaces(self, dev_config):
        dev_config["tenants"][0]["gpuQuotas"] = {
            "team-a": {"requests.nvidia.com/gpu": 2, "limits.nvidia.com/gpumem": 40000,
                       "limits.nvidia.com/gpucores": 60},
            "default": {"limits.nvidia.com/gpumem": 20000}}
        tenant = parse_config(dev_config).tenants[0]
        objects = render.quota_objects(tenant)
        assert [(o["kind"], o["metadata"]["namespace"]) for o in objects] == [
            ("ResourceQuota", "default"), ("ResourceQuota", "team-a")]
        assert objects[1]["spec"]["hard"] == {"limits.nvidia.com/gpucores": "60",
                                              "limits.nvidia.com/gpumem": "40000",
                                              "requests.nvidia.com/gpu": "2"}
        assert render.quota_namespaces(tenant) == ["team-a"], "built-in namespaces always exist"
        assert set(render.quota_namespace_metadata("team-a")) == {"name", "labels"}

    def test_hami_keys_are_the_ones_its_quota_manager_tracks(self, platform):
        """HAMi 2.10.0 pkg/device/quota.go managedQuotaName: a key counts only as
        `limits.` + the device's memory or core resource name (IsManagedQuota)."""
        hami_managed = {f"limits.{name}" for name in (GPU_MEMORY_RESOURCE, GPU_CORES_RESOURCE)}
        kubernetes_counted = {f"requests.{GPU_RESOURCE}"}
        assert set(QUOTA_KEYS) == hami_managed | kubernetes_counted

    def test_limits_gpu_is_refused_naming_the_key_that_works(self, dev_config):
        dev_config["tenants"][0]["gpuQuotas"] = {"team-a": {"limits.nvidia.com/gpu": 1}}
        with pytest.raises(ConfigError) as caught:
            parse_config(dev_config)
        (problem,) = caught.value.problems
        assert problem.startswith("tenants[0].gpuQuotas.team-a.limits.nvidia.com/gpu:")
        assert "enforced by nobody" in problem and "use requests.nvidia.com/gpu" in problem

    @pytest.mark.parametrize("namespace", render.WEBHOOK_EXCLUDED_NAMESPACES)
    @pytest.mark.parametrize("key", ["limits.nvidia.com/gpumem", "limits.nvidia.com/gpucores"])
    def test_hami_quota_keys_are_refused_where_the_webhook_never_sends_pods_to_hami(
            self, dev_config, namespace, key):
        """HAMi checks its quota only when its scheduler fits a pod (HAMi v2.10.0
        pkg/device/nvidia/device.go fitQuota); pods of the namespaces its webhook skips keep the
        default scheduler, so a HAMi quota there is enforced by nobody."""
        dev_config["tenants"][0]["gpuQuotas"] = {namespace: {key: 1, "requests.nvidia.com/gpu": 1}}
        with pytest.raises(ConfigError) as caught:
            parse_config(dev_config)
        (problem,) = caught.value.problems
        assert problem.startswith(f"tenants[0].gpuQuotas.{namespace}.{key}:")
        assert f"enforced by nobody in {namespace}" in problem and "webhook" in problem

    def test_the_kubernetes_counted_key_stays_allowed_in_system_namespaces(self, dev_config):
        dev_config["tenants"][0]["gpuQuotas"] = {"kube-system": {"requests.nvidia.com/gpu": 2}}
        quotas = parse_config(dev_config).tenants[0].gpu_quotas
        assert quotas == {"kube-system": {"requests.nvidia.com/gpu": 2}}

    @pytest.mark.parametrize("key", ["requests.nvidia.com/gpumem", "limits.nvidia.com/gpumem-percentage",
                                     "gpu"])
    def test_other_keys_are_refused_with_their_path(self, dev_config, key):
        dev_config["tenants"][0]["gpuQuotas"] = {"team-a": {key: 1}}
        with pytest.raises(ConfigError) as caught:
            parse_config(dev_config)
        assert any(p.startswith(f"tenants[0].gpuQuotas.team-a.{key}:") and "allowed:" in p
                   for p in caught.value.problems)

    def test_bad_namespace_name_is_refused(self, dev_config):
        dev_config["tenants"][0]["gpuQuotas"] = {"Team_A": {"limits.nvidia.com/gpu": 1}}
        with pytest.raises(ConfigError, match=r"tenants\[0\]\.gpuQuotas\.Team_A"):
            parse_config(dev_config)
