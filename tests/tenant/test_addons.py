"""kindnet and kube-proxy as rendered for a tenant."""

from __future__ import annotations

import pytest
import yaml

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.tenant import addons as tenant_addons

pytestmark = pytest.mark.unit
ENDPOINT = "172.18.255.201:6443"


@pytest.fixture
def tenant(dev_config):
    return parse_config(dev_config).tenants[0]


def by_kind(objects):
    return {obj["kind"]: obj for obj in objects}


class TestKindnet:
    def test_daemonset_runs_the_pinned_image_with_the_tenant_pod_cidr(self, tenant):
        ds = by_kind(tenant_addons.kindnet_objects(tenant, ENDPOINT))["DaemonSet"]
        (container,) = ds["spec"]["template"]["spec"]["containers"]
        assert container["image"] == versions.KINDNET_IMAGE
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["POD_SUBNET"] == "10.36.0.0/16"
        assert env["CONTROL_PLANE_ENDPOINT"] == ENDPOINT
        assert ds["spec"]["template"]["spec"]["hostNetwork"] is True
        assert ds["spec"]["template"]["spec"]["serviceAccountName"] == "kindnet"

    def test_runs_what_the_node_image_preloads_as_a_critical_pod_without_memory_limit(self, tenant):
        """kind v0.31.0 builds kindest/node:v1.35.0 with this kindnetd preloaded
        (pkg/build/nodeimage/const_cni.go): no pull per worker. The memory limit was
        dropped upstream after kubernetes-sigs/kind#4215 (kindnetd OOM-killed)."""
        ds = by_kind(tenant_addons.kindnet_objects(tenant, ENDPOINT))["DaemonSet"]
        pod = ds["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["image"] == "docker.io/kindest/kindnetd:v20251212-v0.29.0-alpha-105-g20ccfc88"
        assert "limits" not in container["resources"], "kind dropped both (kind#4215, 52e59600)"
        assert container["resources"]["requests"]["memory"]
        assert pod["priorityClassName"] == "system-node-critical"

    def test_rbac_lets_kindnet_watch_nodes_and_enforce_policies(self, tenant):
        objects = by_kind(tenant_addons.kindnet_objects(tenant, ENDPOINT))
        rules = objects["ClusterRole"]["rules"]
        assert {"nodes", "pods", "namespaces"} <= set(rules[0]["resources"])
        assert rules[1]["resources"] == ["networkpolicies"]
        binding = objects["ClusterRoleBinding"]
        assert binding["roleRef"]["name"] == "kindnet"
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "kindnet",
                                        "namespace": "kube-system"}]


class TestKubeProxy:
    def test_conntrack_is_left_alone_and_cluster_cidr_is_the_tenants(self, tenant):
        config = tenant_addons.kube_proxy_configuration(tenant)
        assert config["conntrack"] == {"maxPerCore": 0}
        assert config["clusterCIDR"] == "10.36.0.0/16"

    def test_configmap_points_at_the_tenant_endpoint(self, tenant):
        cm = by_kind(tenant_addons.kube_proxy_objects(tenant, ENDPOINT))["ConfigMap"]
        kubeconfig = yaml.safe_load(cm["data"]["kubeconfig.conf"])
        assert kubeconfig["clusters"][0]["cluster"]["server"] == f"https://{ENDPOINT}"
        assert yaml.safe_load(cm["data"]["config.conf"])["conntrack"]["maxPerCore"] == 0

    def test_image_matches_the_tenant_version(self, tenant):
        ds = by_kind(tenant_addons.kube_proxy_objects(tenant, ENDPOINT))["DaemonSet"]
        (container,) = ds["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "registry.k8s.io/kube-proxy:v1.35.0"

    def test_bound_to_the_node_proxier_role(self, tenant):
        binding = by_kind(tenant_addons.kube_proxy_objects(tenant, ENDPOINT))["ClusterRoleBinding"]
        assert binding["roleRef"]["name"] == "system:node-proxier"


def test_kube_proxy_pods_roll_when_their_configuration_changes(dev_config):
    """kube-proxy reads its ConfigMap once; the tenant provider updates the ConfigMap in place,
    and this pod-template annotation makes the DaemonSet roll its pods onto the new content."""
    from kamaji_hami_platform.config import parse_config

    tenant = parse_config(dev_config).tenants[0]

    def hash_for(endpoint: str) -> str:
        objects = tenant_addons.kube_proxy_objects(tenant, endpoint)
        (daemonset,) = [o for o in objects if o["kind"] == "DaemonSet"]
        return daemonset["spec"]["template"]["metadata"]["annotations"][tenant_addons.CONFIG_HASH_ANNOTATION]

    assert hash_for("172.18.255.201:6443") == hash_for("172.18.255.201:6443")
    assert hash_for("172.18.255.201:6443") != hash_for("172.18.255.202:6443")
