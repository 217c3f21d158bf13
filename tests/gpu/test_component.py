"""The whole program under mocks: one HamiNodePool per tenant."""

from __future__ import annotations

import json

import pytest

from tests.harness import production_config, run_program

pytestmark = pytest.mark.unit

POOL = "kamaji-hami-platform:index:HamiNodePool"
RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_PATCH = "kubernetes:core/v1:NodePatch"


def test_one_hami_release_per_tenant_through_the_tenant_provider(dev_program):
    assert sorted(r.name for r in dev_program.of_type(POOL)) == ["tenant-a-gpus", "tenant-b-gpus"]
    for tenant in ("tenant-a", "tenant-b"):
        release = dev_program.named(f"{tenant}-gpus-hami")
        assert release.type == RELEASE
        assert (release.inputs["chart"], release.inputs["version"]) == ("hami", "2.10.0")
        assert release.inputs["namespace"] == "kube-system"
        assert release.provider.startswith(dev_program.named(f"{tenant}-k8s").urn + "::")
        values = release.inputs["values"]
        assert values["scheduler"]["admissionWebhook"]["failurePolicy"] == "Fail"
        assert values["devicePlugin"]["enabled"] is False


def test_release_waits_for_workers_cni_and_registration(dev_program):
    release = dev_program.named("tenant-a-gpus-hami")
    for dependency in ("tenant-a-worker-0", "tenant-a-kindnet-daemonset-kube-system-kindnet",
                       "tenant-a-kube-proxy-daemonset-kube-system-kube-proxy",
                       "tenant-a-gpus-tenant-a-worker-0"):
        assert dev_program.depends_on(release, dev_program.named(dependency)), dependency


def test_each_gpu_node_is_patched_after_it_joined(dev_program):
    for tenant in ("tenant-a", "tenant-b"):
        patch = dev_program.named(f"{tenant}-gpus-{tenant}-worker-0")
        assert patch.type == NODE_PATCH
        assert patch.inputs["metadata"]["name"] == f"{tenant}-worker-0"
        assert patch.inputs["metadata"]["labels"] == {"gpu": "on"}
        devices = json.loads(patch.inputs["metadata"]["annotations"]["hami.io/node-nvidia-register"])
        assert [d["devmem"] for d in devices] == [81920]
        assert dev_program.depends_on(patch, dev_program.named(f"{tenant}-worker-0"))


def test_card_ids_are_unique_across_the_platform(dev_program):
    ids = [d["id"] for patch in dev_program.of_type(NODE_PATCH)
           for d in json.loads(patch.inputs["metadata"]["annotations"]["hami.io/node-nvidia-register"])]
    assert len(ids) == 2 and len(set(ids)) == 2


def test_capacity_agent_per_gpu_node(dev_program):
    jobs = dev_program.of_type("kubernetes:batch/v1:CronJob")
    assert sorted(j.inputs["metadata"]["name"] for j in jobs) == [
        "hami-mock-gpu-capacity-tenant-a-worker-0", "hami-mock-gpu-capacity-tenant-b-worker-0"]


def test_lock_release_agent_per_mock_tenant(dev_program):
    """Each mock tenant gets the agent that releases HAMi's node lock after a bind
    (gpu/lock_release.py), on its own GPU nodes only."""
    deployments = [d for d in dev_program.of_type("kubernetes:apps/v1:Deployment")
                   if d.inputs["metadata"]["name"] == "hami-mock-lock-release"]
    assert sorted(d.name for d in deployments) == [
        "tenant-a-gpus-lock-release-deployment-kube-system-hami-mock-lock-release",
        "tenant-b-gpus-lock-release-deployment-kube-system-hami-mock-lock-release"]
    roles = {r.name: r.inputs["rules"][1]["resourceNames"]
             for r in dev_program.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
             if r.inputs["metadata"]["name"] == "hami-mock-lock-release"}
    assert sorted(roles.values()) == [["tenant-a-worker-0"], ["tenant-b-worker-0"]]


def test_outputs_cards_and_capacity(dev_program):
    tenant = dev_program.exports["tenants"]["tenant-a"]
    (card,) = tenant["gpuCards"]["tenant-a-worker-0"]
    assert card.startswith("GPU-")
    assert tenant["gpuCapacity"] == {"cards": 1, "memoryMiB": 81920, "cores": 100, "slots": 10,
                                     "referencePodsThatFit": 3}


def test_reference_pod_shape_is_configurable(dev_config):
    dev_config["referencePod"] = {"gpumem": 8000, "gpucores": 10}
    program = run_program(dev_config)
    assert program.exports["tenants"]["tenant-a"]["gpuCapacity"]["referencePodsThatFit"] == 10


def test_tenant_without_gpus_still_gets_hami_but_no_registration(dev_config):
    del dev_config["tenants"][1]["gpus"]
    del dev_config["tenants"][1]["gpuWorkloads"]  # a tenant without cards declares none
    program = run_program(dev_config)
    assert program.named("tenant-b-gpus-hami").type == RELEASE
    assert [p.name for p in program.of_type(NODE_PATCH)] == ["tenant-a-gpus-tenant-a-worker-0"]
    assert program.exports["tenants"]["tenant-b"]["gpuCapacity"]["cards"] == 0


def test_real_gpu_mode_labels_without_mock_registration():
    """Real cards on host workers: the node label HAMi's device plugin selects, no mock device list,
    no capacity job; the mock tenant of the same stack keeps both."""
    config, secret_keys = production_config()
    program = run_program(config, secret_keys=secret_keys)
    patch = program.named("ml-prod-gpus-gpu-node-1")
    assert patch.inputs["metadata"]["labels"] == {"gpu": "on"}
    assert "hami.io/node-nvidia-register" not in patch.inputs["metadata"]["annotations"]
    assert not [j for j in program.of_type("kubernetes:batch/v1:CronJob") if "ml-prod" in j.name]
    assert not [d for d in program.of_type("kubernetes:apps/v1:Deployment") if "ml-prod-gpus-lock" in d.name]
    mock_patch = program.named("sandbox-gpus-cpu-node-1")
    assert "hami.io/node-nvidia-register" in mock_patch.inputs["metadata"]["annotations"]
    assert [j for j in program.of_type("kubernetes:batch/v1:CronJob") if "sandbox" in j.name]


def test_quotas_are_created_in_the_tenant(dev_config):
    dev_config["tenants"][0]["gpuQuotas"] = {"ml": {"requests.nvidia.com/gpu": 1}}
    program = run_program(dev_config)
    quota = program.named("tenant-a-gpus-quota-resourcequota-ml-hami-gpu-quota")
    assert quota.inputs["spec"]["hard"] == {"requests.nvidia.com/gpu": "1"}
    assert quota.provider.startswith(program.named("tenant-a-k8s").urn + "::")
