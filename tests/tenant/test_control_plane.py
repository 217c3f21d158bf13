"""The TenantControlPlane renderer: the fields the platform relies on."""

from __future__ import annotations

import copy
import json

import jsonpatch
import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.tenant.control_plane import tenant_control_plane

pytestmark = pytest.mark.unit


@pytest.fixture
def tcp(dev_config):
    dev_config["tenants"][0]["controlPlaneReplicas"] = 2
    return tenant_control_plane(parse_config(dev_config).tenants[0])


def test_identity_and_readiness_wait(tcp):
    assert tcp["apiVersion"] == "kamaji.clastix.io/v1alpha1" and tcp["kind"] == "TenantControlPlane"
    assert tcp["metadata"]["name"] == tcp["metadata"]["namespace"] == "tenant-a"
    conditions = json.loads(tcp["metadata"]["annotations"]["pulumi.com/waitFor"])
    assert all(c.startswith("jsonpath={.status.") for c in conditions)


def satisfied(conditions: list[str], obj: dict) -> bool:
    """All `jsonpath={.a.b}=value` conditions hold (pulumi-kubernetes awaits a JSON array as all)."""
    def holds(condition: str) -> bool:
        path, _, want = condition.removeprefix("jsonpath={").partition("}=")
        value = obj
        for key in path.strip(".").split("."):
            value = value.get(key, {}) if isinstance(value, dict) else {}
        return value == want
    return all(holds(c) for c in conditions)


@pytest.mark.parametrize(("status", "version", "done"), [
    ("Ready", "v1.35.0", False),      # an upgrade's update, before Kamaji has rolled anything
    ("Upgrading", "v1.35.0", False),
    ("Ready", "v1.36.0", True),       # Kamaji writes the version only once Ready at it
])
def test_an_upgrade_is_done_only_when_the_new_version_runs(dev_config, status, version, done):
    dev_config["tenants"][0]["kubernetesVersion"] = "v1.36.0"
    tcp = tenant_control_plane(parse_config(dev_config).tenants[0])
    conditions = json.loads(tcp["metadata"]["annotations"]["pulumi.com/waitFor"])
    reported = {"status": {"kubernetesResources": {"version": {"status": status, "version": version}}}}
    assert satisfied(conditions, reported) is done


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


# The KubeletConfiguration Kamaji patches, as JSON, for a TCP without the
# deprecated `kubelet.cgroupfs` field. Kamaji 26.8.2-edge
# (internal/kubeadm/uploadconfig.go, getKubeletConfigmapContent) starts from
# kubelet's SetDefaults_KubeletConfiguration (k8s.io/kubernetes v1.35
# pkg/kubelet/apis/config/v1beta1/defaults.go: failSwapOn true,
# imageGCHighThresholdPercent 85, no evictionHard, cgroupDriver "cgroupfs"),
# then overwrites cgroupDriver with the empty `cgroupfs` field, so the
# omitempty member is absent from the JSON the patches are applied to.
KAMAJI_KUBELET_CONFIGURATION = {
    "apiVersion": "kubelet.config.k8s.io/v1beta1",
    "kind": "KubeletConfiguration",
    "authentication": {"x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"}},
    "cgroupsPerQOS": True,
    "clusterDNS": ["10.37.0.10"],
    "clusterDomain": "cluster.local",
    "failSwapOn": True,
    "imageGCHighThresholdPercent": 85,
    "rotateCertificates": True,
    "staticPodPath": "/etc/kubernetes/manifests",
}


def test_kubelet_patches_apply_to_the_configuration_kamaji_generates(tcp):
    """Applied with a real RFC 6902 implementation (`jsonpatch`), as Kamaji applies them with
    evanphx/json-patch v5: a `replace` of the absent `/cgroupDriver` would raise here, as it
    fails in Kamaji (no kubelet-config ConfigMap, every `kubeadm join` fails; clastix/kamaji#1310)."""
    patches = tcp["spec"]["kubernetes"]["kubelet"]["configurationJSONPatches"]
    assert "cgroupDriver" not in KAMAJI_KUBELET_CONFIGURATION
    patched = jsonpatch.JsonPatch(patches).apply(copy.deepcopy(KAMAJI_KUBELET_CONFIGURATION))
    assert patched["cgroupDriver"] == "systemd", "kindest/node's containerd uses the systemd driver"
    assert patched["failSwapOn"] is False
    assert patched["evictionHard"] == {"imagefs.available": "0%", "nodefs.available": "0%",
                                       "nodefs.inodesFree": "0%"}
    assert patched["imageGCHighThresholdPercent"] == 100
    assert patched["clusterDNS"] == ["10.37.0.10"], "patches leave Kamaji's own fields alone"


@pytest.mark.parametrize("member", ["cgroupDriver", "failSwapOn", "evictionHard",
                                    "imageGCHighThresholdPercent"])
def test_kubelet_patches_apply_whether_or_not_a_member_is_present(tcp, member):
    """Kamaji's defaults may change between releases; the patches must not depend on them."""
    patches = tcp["spec"]["kubernetes"]["kubelet"]["configurationJSONPatches"]
    base = {k: v for k, v in KAMAJI_KUBELET_CONFIGURATION.items() if k != member}
    jsonpatch.JsonPatch(patches).apply(base)
    jsonpatch.JsonPatch(patches).apply({**base, member: "present"})


def test_kubelet_prefers_internal_ip(tcp):
    assert tcp["spec"]["kubernetes"]["kubelet"]["preferredAddressTypes"][0] == "InternalIP"


def test_addons_konnectivity_and_coredns_but_not_kamaji_kube_proxy(tcp):
    addons = tcp["spec"]["addons"]
    assert addons["konnectivity"]["server"]["port"] == 8132
    assert addons["konnectivity"]["agent"]["hostNetwork"] is True
    assert addons["coreDNS"] == {}
    assert "kubeProxy" not in addons, "kube-proxy is deployed by the platform (tenant/addons.py)"
