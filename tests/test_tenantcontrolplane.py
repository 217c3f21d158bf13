"""The TenantControlPlane renderer: the fields the platform relies on."""

from __future__ import annotations

import pytest

from components.config import parse_config
from components.tenantcontrolplane import tenant_control_plane

pytestmark = pytest.mark.unit


@pytest.fixture
def tcp(dev_config):
    dev_config["tenants"][0]["controlPlaneReplicas"] = 2
    return tenant_control_plane(parse_config(dev_config).tenants[0])


def test_identity_and_readiness_wait(tcp):
    assert tcp["apiVersion"] == "kamaji.clastix.io/v1alpha1" and tcp["kind"] == "TenantControlPlane"
    assert tcp["metadata"]["name"] == tcp["metadata"]["namespace"] == "tenant-a"
    assert tcp["metadata"]["annotations"]["pulumi.com/waitFor"] == \
        "jsonpath={.status.kubernetesResources.version.status}=Ready"


def test_version_replicas_and_load_balancer(tcp):
    spec = tcp["spec"]
    assert spec["kubernetes"]["version"] == "v1.35.0"
    assert spec["controlPlane"]["deployment"]["replicas"] == 2
    assert spec["controlPlane"]["service"] == {"serviceType": "LoadBalancer"}


def test_explicit_datastore_and_schema(tcp):
    assert tcp["spec"]["dataStore"] == "default"
    assert tcp["spec"]["dataStoreSchema"] == "tenant_a"


def test_tenant_networks_and_dns(tcp):
    profile = tcp["spec"]["networkProfile"]
    assert profile["podCidrs"] == ["10.36.0.0/16"]
    assert profile["serviceCidrs"] == ["10.37.0.0/16"]
    assert profile["dnsServiceIPs"] == ["10.37.0.10"]
    assert profile["port"] == 6443


def test_admission_plugins_keep_kamaji_defaults_and_add_node_restriction(tcp):
    plugins = tcp["spec"]["kubernetes"]["admissionControllers"]
    assert "NodeRestriction" in plugins
    assert {"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ResourceQuota",
            "ServiceAccount", "NamespaceLifecycle"} <= set(plugins)
    assert len(plugins) == len(set(plugins))


def test_kubelet_matches_kindest_node_workers(tcp):
    kubelet = tcp["spec"]["kubernetes"]["kubelet"]
    patches = {p["path"]: p for p in kubelet["configurationJSONPatches"]}
    assert patches["/cgroupDriver"] == {"op": "replace", "path": "/cgroupDriver", "value": "systemd"}
    assert patches["/failSwapOn"]["value"] is False
    assert kubelet["preferredAddressTypes"][0] == "InternalIP"


def test_addons_konnectivity_and_coredns_but_not_kamaji_kube_proxy(tcp):
    addons = tcp["spec"]["addons"]
    assert addons["konnectivity"]["server"]["port"] == 8132
    assert addons["konnectivity"]["agent"]["hostNetwork"] is True
    assert addons["coreDNS"] == {}
    assert "kubeProxy" not in addons, "kube-proxy is deployed by the platform (design §7)"
