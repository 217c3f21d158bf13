"""The MetalLB objects the platform renders, against MetalLB's own CRDs in a real kube-apiserver
1.35 (marker `sim`): every field exists at the pinned MetalLB (strict field validation refuses an
unknown one) and passes the CRDs' schemas.

The CRDs come from MetalLB's Go module at the pinned chart's version (go.universe.tf/metallb,
`config/crd/bases/`), which the Go module proxy serves and the checksum database verifies: the
module cache holds them, outside the repository. No MetalLB controller runs here: which address
a Service gets is upstream source read and cited (tenant/own_network.py), and the live suite's
TC-02 sees it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.management import render as management_render
from kamaji_hami_platform.tenant import own_network
from tests.harness import dev_stack_config
from tests.sim.cluster import TenantApi, metallb_crds, tenant_api, toolchain_or_skip

pytestmark = pytest.mark.sim

@pytest.fixture(scope="module")
def platform():
    return parse_config(dev_stack_config())


@pytest.fixture(scope="module")
def api(platform) -> Iterator[TenantApi]:
    bin_dir = toolchain_or_skip()
    crds = metallb_crds("sim")
    with tenant_api(platform.tenants[0], bin_dir) as running:
        running.apply(crds)
        running.wait_established(crds)
        running.apply([{"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": management_render.METALLB_NAMESPACE}}])
        yield running


def test_each_tenant_s_control_plane_address_pool_and_announcement_are_admitted(api, platform):
    objects = [obj for tenant in platform.tenants
               for obj in own_network.metallb_objects(tenant, platform.management)]
    api.apply(objects)
    pool = api.get("ipaddresspool", "tenant-tenant-b", "-n", management_render.METALLB_NAMESPACE)
    # tenant-b's control plane: its block (1) of the platform's network, the block's second address
    assert pool["spec"]["addresses"] == ["172.30.64.130/32"]
    assert pool["spec"]["autoAssign"] is False
    assert pool["spec"]["serviceAllocation"] == {"namespaces": ["tenant-b"]}


def test_the_shared_pool_is_admitted_as_before(api, platform):
    name, namespace = management_render.METALLB_POOL_NAME, management_render.METALLB_NAMESPACE
    api.apply([
        {"apiVersion": management_render.METALLB_API_VERSION, "kind": "IPAddressPool",
         "metadata": {"name": name, "namespace": namespace},
         "spec": management_render.metallb_pool_spec(platform.management.pool_range)},
        {"apiVersion": management_render.METALLB_API_VERSION, "kind": "L2Advertisement",
         "metadata": {"name": name, "namespace": namespace},
         "spec": management_render.metallb_l2_advertisement_spec()},
    ])


def test_a_field_metallb_does_not_have_is_refused(api, platform):
    """The control: strict field validation would refuse a misspelt field, so the test above
    proves the rendered names exist."""
    pool = copy.deepcopy(own_network.metallb_objects(platform.tenants[0], platform.management)[0])
    pool["metadata"]["name"] = "misspelt"
    pool["spec"]["serviceAllocations"] = pool["spec"].pop("serviceAllocation")
    result = api.try_apply([pool])
    assert result.returncode != 0 and "serviceAllocations" in result.stderr, result.stderr
