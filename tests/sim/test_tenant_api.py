"""The platform's tenant-side objects against a real kube-apiserver 1.35 (marker `sim`).

A partial simulation tier: the real API server, with the platform's admission plugins and
authorization modes, validates and admits what the program renders and enforces RBAC and
quotas for real. HAMi's scheduler is not here: tests/sim/test_hami_parallel.py runs it (built
from its upstream source archive, tests/sim/hami.py); see docs/development/testing.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kamaji_hami_platform import names
from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.gpu import render as hami_render
from kamaji_hami_platform.gpu.devices import GPU_RESOURCE, tenant_devices
from kamaji_hami_platform.tenant import addons as tenant_addons
from tests.harness import dev_stack_config
from tests.sim.cluster import TenantApi, tenant_api, toolchain_or_skip

pytestmark = pytest.mark.sim

ENDPOINT = "172.18.255.201:6443"
KUBELET_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}
AGENT_SA = f"system:serviceaccount:{hami_render.HAMI_NAMESPACE}:{hami_render.CAPACITY_AGENT}"


@pytest.fixture(scope="module")
def platform():
    config = dev_stack_config()
    config["tenants"][0]["gpuQuotas"] = {
        "ml": {"requests.nvidia.com/gpu": 1, "limits.nvidia.com/gpumem": 40000}
    }
    return parse_config(config)


@pytest.fixture(scope="module")
def api(platform) -> Iterator[TenantApi]:
    bin_dir = toolchain_or_skip()
    with tenant_api(platform.tenants[0], bin_dir) as running:
        yield running


@pytest.fixture(scope="module")
def nodes(api, platform) -> dict[str, int]:
    """The tenant's GPU workers as Node objects (no kubelet: the objects alone), name -> slots."""
    tenant = platform.tenants[0]
    devices = tenant_devices(tenant, platform.management.name)
    api.apply(
        [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}} for node in devices],
        manager="sim-kubelet",
    )
    for node in devices:
        # What a kubelet reports at registration: the capacity maps the JSON patch adds to.
        status = {"status": {"capacity": KUBELET_CAPACITY, "allocatable": KUBELET_CAPACITY}}
        result = api.kubectl(
            "patch", "node", node, "--subresource=status", "--type=merge", "-p", json.dumps(status)
        )
        assert result.returncode == 0, result.stderr
    return {node: sum(d.count for d in cards) for node, cards in devices.items()}


def capacity_command(node: str, slots: int) -> list[str]:
    """The capacity CronJob's own container command, arguments only (the built kubectl runs them)."""
    job = next(o for o in hami_render.capacity_agent_objects({node: slots}) if o["kind"] == "CronJob")
    (container,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return container["command"][1:]


def namespace(name: str, labels: dict[str, str] | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, **({"labels": labels} if labels else {})},
    }


def default_service_account(ns: str) -> dict:
    """What the service-account controller would create (this tier runs no controller-manager)."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}}


def test_every_tenant_object_the_program_renders_is_admitted(api, platform, nodes):
    """kindnet, kube-proxy, the capacity agent, quota namespaces and quotas, and the GPU node
    registration, applied server-side: the real 1.35 API server validates the schemas, the
    platform's admission plugins admit them (e.g. system-node-critical exists, quota keys parse)."""
    tenant = platform.tenants[0]
    devices = tenant_devices(tenant, platform.management.name)
    objects = [
        *tenant_addons.kindnet_objects(tenant, ENDPOINT),
        *tenant_addons.kube_proxy_objects(tenant, ENDPOINT),
        *hami_render.capacity_agent_objects(nodes),
    ]
    namespaces = [
        namespace(ns, hami_render.quota_namespace_metadata(ns)["labels"])
        for ns in hami_render.quota_namespaces(tenant)
    ]
    api.apply(namespaces + objects)
    api.apply(hami_render.quota_objects(tenant))
    for node, cards in devices.items():
        metadata = hami_render.gpu_node_metadata(node, cards, mock=True)
        api.apply([{"apiVersion": "v1", "kind": "Node", "metadata": metadata}], manager="platform-gpus")
        live = api.get("node", node)["metadata"]
        assert live["labels"]["gpu"] == "on"
        assert json.loads(live["annotations"]["hami.io/node-nvidia-register"])[0]["id"] == cards[0].id
    quota = api.get("resourcequota", hami_render.QUOTA_NAME, "-n", "ml")
    assert quota["spec"]["hard"] == {"limits.nvidia.com/gpumem": "40k", "requests.nvidia.com/gpu": "1"}


def test_the_capacity_job_runs_as_its_own_service_account(api, nodes):
    """The CronJob's command, run as its ServiceAccount (impersonation): RBAC allows it and the
    node status gets the capacity HAMi checks."""
    api.apply(hami_render.capacity_agent_objects(nodes))
    for node, slots in nodes.items():
        result = api.kubectl(*capacity_command(node, slots), as_user=AGENT_SA)
        assert result.returncode == 0, result.stderr
        status = api.get("node", node)["status"]
        assert status["capacity"][GPU_RESOURCE] == status["allocatable"][GPU_RESOURCE] == str(slots)


def test_the_rule_before_the_fix_is_refused_by_the_real_api_server(api, nodes):
    """`get` on nodes plus `patch` on nodes/status (the earlier rule) cannot run the command:
    kubectl first GETs nodes/<n>/status, a resource of its own for RBAC."""
    role = "sim-old-capacity-rule"
    api.apply(
        [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": role},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["nodes"],
                        "verbs": ["get"],
                        "resourceNames": sorted(nodes),
                    },
                    {
                        "apiGroups": [""],
                        "resources": ["nodes/status"],
                        "verbs": ["patch"],
                        "resourceNames": sorted(nodes),
                    },
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": "old-agent", "namespace": "kube-system"}],
            },
        ]
    )
    node, slots = next(iter(nodes.items()))
    result = api.kubectl(
        *capacity_command(node, slots), as_user="system:serviceaccount:kube-system:old-agent"
    )
    assert result.returncode != 0
    assert 'cannot get resource "nodes/status"' in result.stderr


def seed_quota_status(api: TenantApi, namespace: str, name: str) -> None:
    """What kube-controller-manager's resourcequota controller does first (this tier runs no
    controller-manager): status.hard from spec, nothing used. Without a status, ResourceQuota
    admission refuses every pod ("status unknown for quota")."""
    hard = api.get("resourcequota", name, "-n", namespace)["spec"]["hard"]
    status = {"status": {"hard": hard, "used": {key: "0" for key in hard}}}
    result = api.kubectl(
        "patch",
        "resourcequota",
        name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )
    assert result.returncode == 0, result.stderr


def gpu_pod(name: str, gpus: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "docker.io/library/busybox:1.36.1",
                    "resources": {"limits": {GPU_RESOURCE: str(gpus)}},
                }
            ]
        },
    }


def test_the_card_quota_key_the_platform_accepts_is_enforced(api, platform, nodes):
    """`requests.nvidia.com/gpu` is Kubernetes' own quota for an extended resource: the real
    ResourceQuota admission refuses a pod over it (HAMi's gpumem/gpucores keys are HAMi's to
    enforce, which this tier cannot run)."""
    tenant = platform.tenants[0]
    api.apply(
        [namespace("ml", hami_render.quota_namespace_metadata("ml")["labels"]), default_service_account("ml")]
    )
    api.apply(hami_render.quota_objects(tenant))
    seed_quota_status(api, "ml", hami_render.QUOTA_NAME)
    over = api.kubectl("create", "-f", "-", stdin=json.dumps(gpu_pod("two-cards", 2)))
    assert over.returncode != 0 and "exceeded quota" in over.stderr, over.stderr
    within = api.kubectl("create", "-f", "-", stdin=json.dumps(gpu_pod("one-card", 1)))
    assert within.returncode == 0, within.stderr


def test_a_pending_pod_counts_and_the_next_is_refused_with_the_planners_words(api, platform):
    """After the test above: `one-card` was created and, with no scheduler here, stays Pending; it
    still counts toward requests.nvidia.com/gpu (every non-terminal pod), so the next pod is
    refused at creation, word for word as the planner says it (issue 31: pods created together)."""
    from kamaji_hami_platform.gpu.card_fit import GpuRequest
    from kamaji_hami_platform.gpu.placement import CountQuota, count_refusal

    limit = platform.tenants[0].gpu_quotas["ml"]["requests.nvidia.com/gpu"]
    result = api.kubectl("create", "-f", "-", stdin=json.dumps(gpu_pod("next-card", 1)))
    planned = count_refusal(CountQuota(hami_render.QUOTA_NAME, limit), GpuRequest(nums=1), used=limit)
    assert result.returncode != 0 and planned.replace("<pod>", "next-card") in result.stderr, result.stderr


def test_the_key_the_platform_refuses_is_enforced_by_nobody(api):
    """`limits.nvidia.com/gpu` is accepted by the API server and enforced by nobody: a pod over
    it is admitted. This is why the config refuses it, naming requests.nvidia.com/gpu."""
    api.apply(
        [
            namespace("unguarded"),
            default_service_account("unguarded"),
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "q", "namespace": "unguarded"},
                "spec": {"hard": {"limits.nvidia.com/gpu": "1"}},
            },
        ]
    )
    seed_quota_status(api, "unguarded", "q")
    pod = gpu_pod("two-cards", 2)
    pod["metadata"]["namespace"] = "unguarded"
    result = api.kubectl("create", "-f", "-", stdin=json.dumps(pod))
    assert result.returncode == 0, result.stderr


QUOTA_NS_MANAGER = "pulumi-namespacepatch"  # a Patch resource's own field manager


def test_a_quota_namespace_that_exists_is_adopted_and_outlives_its_quota(api):
    """What a NamespacePatch does: server-side apply of the platform's label to a namespace someone
    else created (no AlreadyExists), and on delete a relinquishing apply (pulumi-kubernetes
    provider/pkg/ssa Relinquish) that removes only that label: the namespace and its contents stay."""
    created = api.kubectl("create", "namespace", "team-x")
    assert created.returncode == 0, created.stderr
    assert api.kubectl("label", "namespace", "team-x", "owner=team-x").returncode == 0
    api.apply([default_service_account("team-x")], manager="team-x")
    labels = hami_render.quota_namespace_metadata("team-x")["labels"]
    api.apply([namespace("team-x", labels)], manager=QUOTA_NS_MANAGER)
    assert api.get("namespace", "team-x")["metadata"]["labels"].items() >= labels.items()

    api.apply([namespace("team-x")], manager=QUOTA_NS_MANAGER)  # relinquish: own no field
    live = api.get("namespace", "team-x")["metadata"]["labels"]
    assert not set(labels) & set(live), live
    assert live["owner"] == "team-x"
    assert api.get("serviceaccount", "default", "-n", "team-x")["metadata"]["name"] == "default"


def test_patch_force_takes_back_exactly_the_platforms_node_fields(api, platform, nodes):
    """A label edited by hand conflicts with the platform's next server-side apply (Patch resources
    do not force by default: every later `up` would fail); with pulumi.com/patchForce the
    platform's own fields come back, and what HAMi writes on the node stays."""
    tenant = platform.tenants[0]
    node, cards = next(iter(tenant_devices(tenant, platform.management.name).items()))
    metadata = hami_render.gpu_node_metadata(node, cards, mock=True)
    node_object = {"apiVersion": "v1", "kind": "Node", "metadata": metadata}
    api.apply([node_object], manager="platform-gpus")
    assert api.kubectl("label", "node", node, "gpu=off", "--overwrite").returncode == 0
    handshake = {"metadata": {"annotations": {"hami.io/node-handshake": "Requesting_2026-12-02 10:00:00"}}}
    assert api.kubectl("patch", "node", node, "--type=merge", "-p", json.dumps(handshake)).returncode == 0

    plain = api.try_apply([node_object], manager="platform-gpus")
    assert plain.returncode != 0 and "conflict" in plain.stderr.lower(), plain.stderr
    assert metadata["annotations"]["pulumi.com/patchForce"] == "true"
    api.apply([node_object], manager="platform-gpus", force=True)
    live = api.get("node", node)["metadata"]
    assert live["labels"]["gpu"] == "on"
    assert live["annotations"]["hami.io/node-handshake"].startswith("Requesting_")


LONGEST_TENANT = "t" + "x" * 38 + "a"  # 40 characters, the longest tenants[].name accepted


def longest_names_config() -> dict:
    """The dev stack with the longest names and most workers the config accepts."""
    config = dev_stack_config()
    config["management"]["name"] = "k" * 40
    config["tenants"][0].update(name=LONGEST_TENANT, workers=99)
    return config


def test_the_longest_names_the_config_accepts_are_accepted_by_the_real_api_server(api):
    """Every name derived from the longest accepted config, in the objects that carry it
    (kamaji_hami_platform/names.py): the namespace, the Service and label Kamaji derive from the tenant,
    its Secrets, the workers' Nodes and their capacity CronJobs (52 characters at most)."""
    platform = parse_config(longest_names_config())
    tenant = platform.tenants[0]
    nodes = {node: 10 for node in tenant.worker_names()[-2:]}  # the longest worker names
    label = {"kamaji.clastix.io/name": tenant.name}
    api.apply([namespace(tenant.name)])
    api.apply([
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": tenant.name, "namespace": tenant.name,
                                                             "labels": label},
         "spec": {"ports": [{"port": 6443}]}},
        *({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret, "namespace": tenant.name}}
          for secret in (names.admin_kubeconfig_secret(tenant.name),
                         f"{tenant.name}-{names.KAMAJI_LONGEST_SUFFIX}")),
        *({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": label}}
          for node in nodes),
        *hami_render.capacity_agent_objects(nodes),
    ])
    cronjobs = [o["metadata"]["name"] for o in hami_render.capacity_agent_objects(nodes)
                if o["kind"] == "CronJob"]
    assert all(api.get("cronjob", name, "-n", hami_render.HAMI_NAMESPACE) for name in cronjobs)


def test_a_capacity_cronjob_named_after_a_long_node_as_before_is_refused(api):
    """The name before names.capacity_cronjob_name: the real API server refuses it (its Jobs
    add 11 characters to a name that must stay a 63-character label value)."""
    node = names.worker_name(LONGEST_TENANT, 98)
    job = next(o for o in hami_render.capacity_agent_objects({node: 10}) if o["kind"] == "CronJob")
    job["metadata"]["name"] = f"{hami_render.CAPACITY_AGENT}-{node}"
    result = api.try_apply([job])
    assert result.returncode != 0 and "must be no more than 52 characters" in result.stderr, result.stderr
