"""The TenantControlPlane the platform renders, against Kamaji's own CRD at the pinned tag in a real
kube-apiserver 1.35 (marker `sim`): every field exists (strict field validation refuses an unknown
one) and passes the CRD's schema and CEL rules, the door's `networkProfile.advertiseAddress`
included (`self == '' || isIP(self)`). No Kamaji runs here: what it does with the fields is its
source, read and cited (tenant/control_plane.py, docs/design/network-isolation.md).

The CRD comes from toolchain/upstream-data.sh (Kamaji's chart at 26.8.2-edge), as the engine tier
takes it.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.tenant import control_plane
from tests import tiers
from tests.harness import ROOT, dev_stack_config
from tests.sim.cluster import TenantApi, tenant_api, toolchain_or_skip

pytestmark = pytest.mark.sim

TCP_CRD = "kamaji/crd-tenantcontrolplanes.yaml"


@pytest.fixture(scope="module")
def platform():
    return parse_config(dev_stack_config())


def kamaji_crd() -> dict:
    result = subprocess.run(["bash", str(ROOT / "toolchain" / "upstream-data.sh")], capture_output=True,
                            text=True, timeout=60, check=False)
    if result.returncode != 0:
        tiers.unavailable("sim", result.stderr.strip())
    return yaml.safe_load((Path(result.stdout.strip().splitlines()[-1]) / TCP_CRD).read_text())


@pytest.fixture(scope="module")
def api(platform) -> Iterator[TenantApi]:
    bin_dir = toolchain_or_skip()
    crd = kamaji_crd()
    with tenant_api(platform.tenants[0], bin_dir) as running:
        running.apply([crd])
        running.wait_established([crd])
        running.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": tenant.namespace}}
                       for tenant in platform.tenants])
        yield running


def test_each_tenant_s_control_plane_is_admitted_with_the_door_s_advertise_address(api, platform):
    objects = [control_plane.tenant_control_plane(tenant, platform.management, "localhost:5001")
               for tenant in platform.tenants]
    api.apply(objects)
    stored = api.get("tenantcontrolplane", "tenant-b", "-n", "tenant-b")
    profile = stored["spec"]["networkProfile"]
    assert profile["advertiseAddress"] == "172.24.1.250"
    assert profile["loadBalancerSourceRanges"] == ["172.30.64.129/32"]
    assert "address" not in profile or profile["address"] == ""


def test_an_advertise_address_that_is_no_ip_is_refused(api, platform):
    """The control: the CRD's own rule judges the field, so the test above proves it passes."""
    tcp = copy.deepcopy(control_plane.tenant_control_plane(platform.tenants[0], platform.management))
    tcp["metadata"]["name"] = "not-an-ip"
    tcp["spec"]["networkProfile"]["advertiseAddress"] = "door.example"
    result = api.try_apply([tcp])
    assert result.returncode != 0 and "advertiseAddress must be a valid IP address" in result.stderr, \
        result.stderr
