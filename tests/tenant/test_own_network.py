"""A tenant's own Docker network (kamaji_hami_platform/tenant/own_network.py): its create and
delete scripts against the stand-in docker (tests/fakes/docker), its MetalLB pool and what the
TenantControlPlane asks MetalLB for."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.tenant import control_plane, own_network
from tests.standins import run_script

pytestmark = pytest.mark.unit

NETWORK, NODE = "kamaji-hami-tenant-a", "kamaji-control-plane"


@pytest.fixture
def dev(dev_config):
    platform = parse_config(dev_config)
    return platform.tenants[0], platform.management


def run(script: str, state: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_script(script, shell="sh", docker_state=state, env=env)


def with_kind_node(state: Path) -> Path:
    (state / "containers").mkdir(parents=True, exist_ok=True)
    (state / "containers" / NODE).write_text("kamaji\n")
    return state


def calls(state: Path) -> list[str]:
    return (state / "calls").read_text().splitlines()


class TestCreate:
    def test_creates_it_with_no_platform_node_on_it(self, dev, tmp_path):
        state = with_kind_node(tmp_path)
        result = run(own_network.create_script(*dev), state)
        assert result.returncode == 0, result.stderr
        (create,) = [c for c in calls(state) if c.startswith("network create")]
        assert "--subnet 172.24.0.0/24 --ip-range 172.24.0.0/28 --gateway 172.24.0.1" in create
        assert "--label io.kamaji-hami-platform/network=kamaji/tenant-a" in create
        assert create.endswith(NETWORK)
        assert not [c for c in calls(state) if c.startswith("network connect")]
        assert f"Docker network {NETWORK}: no platform node on it" in result.stdout

    def test_running_it_again_creates_nothing(self, dev, tmp_path):
        state = with_kind_node(tmp_path)
        run(own_network.create_script(*dev), state)
        result = run(own_network.create_script(*dev), state)
        assert result.returncode == 0 and "exists" in result.stdout
        assert sum(c.startswith(("network create", "network connect")) for c in calls(state)) == 1

    def test_a_kind_node_an_earlier_build_attached_is_detached(self, dev, tmp_path):
        """Builds before the door attached the kind node to each tenant network: the network's
        create (which an upgrade runs again, its script having changed) takes it off."""
        state = with_kind_node(tmp_path)
        run(own_network.create_script(*dev), state)
        run(f"docker network connect {NETWORK} {NODE}", state)
        result = run(own_network.create_script(*dev), state)
        assert result.returncode == 0, result.stderr
        assert f"network disconnect --force {NETWORK} {NODE}" in calls(state)
        assert f"kind node {NODE} detached from {NETWORK}" in result.stdout

    def test_a_network_with_ipv6_is_refused(self, dev, tmp_path):
        """Created without IPv6, unless the daemon's default network options turn it on."""
        result = run(own_network.create_script(*dev), with_kind_node(tmp_path), FAKE_NETWORK_IPV6="1")
        assert result.returncode == 1 and "has IPv6 enabled" in result.stderr

    def test_a_network_of_that_name_that_is_not_this_tenant_s_is_refused(self, dev, tmp_path):
        state = with_kind_node(tmp_path)
        (state / "networks").mkdir(parents=True)
        (state / "networks" / NETWORK).write_text("other-stack/tenant-a 172.24.0.0/24\n")
        result = run(own_network.create_script(*dev), state)
        assert result.returncode == 1 and "is not tenant tenant-a's network (owner: 'other-stack/tenant-a')" \
            in result.stderr
        assert not [c for c in calls(state) if c.startswith("network connect")]

    def test_this_tenant_s_with_another_subnet_names_the_settings(self, dev, tmp_path):
        state = with_kind_node(tmp_path)
        (state / "networks").mkdir(parents=True)
        (state / "networks" / NETWORK).write_text("kamaji/tenant-a 172.24.7.0/24\n")
        result = run(own_network.create_script(*dev), state)
        assert result.returncode == 1
        assert "management.tenantSubnet, tenants[name=tenant-a].addressBlock" in result.stderr

    def test_an_overlapping_subnet_says_which_setting_to_change(self, dev, tmp_path):
        result = run(own_network.create_script(*dev), with_kind_node(tmp_path), FAKE_POOL_OVERLAP="1")
        assert result.returncode == 1
        assert "Pool overlaps" in result.stderr and "set management.tenantSubnet" in result.stderr

    def test_a_docker_that_does_not_answer_stops_it(self, dev, tmp_path):
        result = run(own_network.create_script(*dev), with_kind_node(tmp_path), FAKE_DOCKER_DOWN="1")
        assert result.returncode == 1 and "is Docker running?" in result.stderr


class TestDelete:
    def test_detaches_a_kind_node_an_earlier_build_attached_and_removes_the_network(self, dev, tmp_path):
        state = with_kind_node(tmp_path)
        run(own_network.create_script(*dev), state)
        run(f"docker network connect {NETWORK} {NODE}", state)
        result = run(own_network.delete_script(*dev), state)
        assert result.returncode == 0, result.stderr
        assert f"network disconnect --force {NETWORK} {NODE}" in calls(state)
        assert not (state / "networks" / NETWORK).exists()

    def test_a_container_still_attached_stops_it_naming_it(self, dev, tmp_path):
        state = with_kind_node(tmp_path)
        run(own_network.create_script(*dev), state)
        (state / "containers" / "someone-else").write_text("\n")
        (state / "containers" / "someone-else.network").write_text(f"{NETWORK}\n")
        result = run(own_network.delete_script(*dev), state)
        assert result.returncode == 1 and "still has containers attached: someone-else" in result.stderr
        assert (state / "networks" / NETWORK).exists()

    def test_a_network_that_is_not_this_tenant_s_is_left_alone(self, dev, tmp_path):
        (tmp_path / "networks").mkdir(parents=True)
        (tmp_path / "networks" / NETWORK).write_text("other-stack/tenant-a 172.24.0.0/24\n")
        result = run(own_network.delete_script(*dev), tmp_path)
        assert result.returncode == 0 and "left alone" in result.stderr
        assert (tmp_path / "networks" / NETWORK).exists()

    def test_a_network_already_gone_is_fine(self, dev, tmp_path):
        result = run(own_network.delete_script(*dev), tmp_path)
        assert result.returncode == 0 and "already gone" in result.stdout


class TestApiAddress:
    def test_a_pool_of_the_one_address_only_the_tenant_s_namespace_may_use(self, dev):
        """On the platform's network, in the tenant's block (tenant-a's is 0: 172.30.64.0/25),
        after its door's address (.1)."""
        pool, l2 = own_network.metallb_objects(*dev)
        assert pool["metadata"] == {"name": "tenant-tenant-a", "namespace": "metallb-system"}
        assert pool["spec"] == {"addresses": ["172.30.64.2/32"], "autoAssign": False,
                                "serviceAllocation": {"namespaces": ["tenant-a"]}}
        assert l2["kind"] == "L2Advertisement" and l2["spec"] == {"ipAddressPools": ["tenant-tenant-a"]}

    def test_the_control_plane_s_service_asks_for_it_and_gets_no_node_ports(self, dev):
        service = control_plane.tenant_control_plane(*dev)["spec"]["controlPlane"]["service"]
        annotations = {"metallb.io/loadBalancerIPs": "172.30.64.2"}
        assert service == {"serviceType": "LoadBalancer", "allocateLoadBalancerNodePorts": False,
                           "additionalMetadata": {"annotations": annotations}}

    def test_only_the_tenant_s_door_passes_kube_proxy_s_source_filter(self, dev):
        """The LoadBalancer address filters by source in kube-proxy too, so the isolation does not
        rest on kindnetd's policy engine alone (which fails open while it is down)."""
        profile = control_plane.tenant_control_plane(*dev)["spec"]["networkProfile"]
        assert profile["loadBalancerSourceRanges"] == ["172.30.64.1/32"]

    def test_the_control_plane_advertises_the_door_s_address(self, dev):
        """Kamaji 26.8.2-edge `networkProfile.advertiseAddress`: the API server's --advertise-address
        (the tenant's `kubernetes` Service), kubeadm's control plane endpoint, cluster-info,
        admin.conf and the Konnectivity agents' server (api/v1alpha1/tenantcontrolplane_funcs.go,
        internal/builders/controlplane/deployment.go, internal/resources/konnectivity/agent.go);
        `address` stays empty, so the Service's MetalLB address is the management one."""
        profile = control_plane.tenant_control_plane(*dev)["spec"]["networkProfile"]
        assert profile["advertiseAddress"] == "172.24.0.250" and "address" not in profile

    def test_a_tenant_on_the_shared_network_keeps_its_service(self, dev_config):
        dev_config["tenants"][0]["workerNetwork"] = "shared"
        platform = parse_config(dev_config)
        service = control_plane.tenant_control_plane(platform.tenants[0], platform.management)
        assert service["spec"]["controlPlane"]["service"] == {"serviceType": "LoadBalancer",
                                                              "allocateLoadBalancerNodePorts": False}
        assert service["spec"]["networkProfile"]["loadBalancerSourceRanges"] == [
            "172.30.0.1/32", "172.30.64.0/25"]  # what its policy admits


class TestCreateOnly:
    def test_a_shared_tenant_s_guard_value_is_the_bare_block_as_in_0_1_0(self, dev_config):
        dev_config["tenants"][0]["workerNetwork"] = "shared"
        platform = parse_config(dev_config)
        values = control_plane.create_only_values(platform.tenants[0], platform.management)
        assert values["addressBlock"] == "0"

    def test_an_own_network_tenant_s_guard_names_its_network_so_moving_it_is_refused(self, dev):
        value = control_plane.create_only_values(*dev)["addressBlock"]
        assert value == "0 own network 172.24.0.0/24"
