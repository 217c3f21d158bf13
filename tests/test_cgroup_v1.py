"""`management.failCgroupV1: false` (kamaji_hami_platform/cgroup_v1.py): every kubelet the platform
configures may start on a cgroup v1 host, and a stack that does not set it renders what it did."""

from __future__ import annotations

import copy

import jsonpatch
import pytest
import yaml

from kamaji_hami_platform import cgroup_v1
from kamaji_hami_platform.config import ConfigError, parse_config
from kamaji_hami_platform.management import render
from kamaji_hami_platform.tenant import host_join
from kamaji_hami_platform.tenant.control_plane import tenant_control_plane
from tests.tenant.test_control_plane import KAMAJI_KUBELET_CONFIGURATION
from tests.tenant.test_host_join import OWNER, ROOT_HOST
from tests.tenant.test_host_join import tenant as host_tenant

pytestmark = pytest.mark.unit


def _platform(dev_config, fail_cgroup_v1: object = None, version: str | None = None):
    if fail_cgroup_v1 is not None:
        dev_config["management"]["failCgroupV1"] = fail_cgroup_v1
    if version:
        dev_config["tenants"][0]["kubernetesVersion"] = version
    return parse_config(dev_config)


def _kubelet_patches(platform) -> list[dict]:
    tcp = tenant_control_plane(platform.tenants[0], platform.management)
    return tcp["spec"]["kubernetes"]["kubelet"]["configurationJSONPatches"]


def test_the_default_is_the_kubelets_own_and_renders_nothing_new(dev_config):
    """A stack without the key keeps its kind config and its kubelet patches (no upgrade diff)."""
    platform = _platform(dev_config)
    assert platform.management.fail_cgroup_v1 is True
    assert "kubeadmConfigPatches" not in yaml.safe_load(render.kind_cluster_config(platform.management))
    assert not any(patch["path"] == "/failCgroupV1" for patch in _kubelet_patches(platform))
    assert cgroup_v1.preview_note(platform.management) is None
    assert _kubelet_patches(platform) == _kubelet_patches(_platform(copy.deepcopy(dev_config), True))


def test_anything_but_a_boolean_is_refused_naming_the_key(dev_config):
    with pytest.raises(ConfigError) as caught:
        _platform(dev_config, "no")
    assert any(problem.startswith("management.failCgroupV1") for problem in caught.value.problems)


def test_the_kind_node_gets_the_kubelet_patch(dev_config):
    """kind applies a patch without apiVersion to every KubeletConfiguration it renders
    (kind v0.31.0 pkg/internal/patch/kubeyaml.go) and skips kubeadm's preflight itself."""
    config = yaml.safe_load(render.kind_cluster_config(_platform(dev_config, False).management))
    (patch,) = config["kubeadmConfigPatches"]
    assert yaml.safe_load(patch) == {"kind": "KubeletConfiguration", "failCgroupV1": False}


@pytest.mark.parametrize("present", [None, True])
def test_every_tenant_kubelet_gets_fail_cgroup_v1_false(dev_config, present):
    """Applied as Kamaji applies configurationJSONPatches, whether Kamaji's kubelet-config has the
    member (defaulted true) or not."""
    patches = _kubelet_patches(_platform(dev_config, False))
    base = copy.deepcopy(KAMAJI_KUBELET_CONFIGURATION)
    if present is not None:
        base["failCgroupV1"] = present
    patched = jsonpatch.JsonPatch(patches).apply(base)
    assert patched["failCgroupV1"] is False
    assert patched["cgroupDriver"] == "systemd"


def test_a_kubelet_older_than_the_field_gets_no_patch(dev_config):
    """failCgroupV1 exists from kubelet v1.31 (k8s.io/kubelet v0.31.0); a v1.30 kubelet runs on
    cgroup v1 without it."""
    patches = _kubelet_patches(_platform(dev_config, False, "v1.30.14"))
    assert not any(patch["path"] == "/failCgroupV1" for patch in patches)


def test_worker_hosts_skip_system_verification_and_the_cgroup_v2_check():
    """Run against a real sshd in tests/ssh (test_a_cgroup_v1_host_joins_only_when_the_platform_...)."""
    tenant = host_tenant(ROOT_HOST)
    allowed = host_join.remote_join_script(tenant, ROOT_HOST, OWNER, cgroup_v1_allowed=True)
    refused = host_join.remote_join_script(tenant, ROOT_HOST, OWNER)
    assert "cgroup2fs" in refused and "cgroup2fs" not in allowed
    assert "ignorePreflightErrors" not in refused
    assert "  ignorePreflightErrors:\n  - SystemVerification\n" in allowed


def test_the_preview_says_what_the_setting_does(dev_config):
    note = cgroup_v1.preview_note(_platform(dev_config, False).management)
    assert note.startswith("management.failCgroupV1 is false: the kind node (when it is created), the "
                           "worker containers and worker hosts run their kubelets with failCgroupV1: false")
    assert "SystemVerification" in note and "KEP-5573" in note
