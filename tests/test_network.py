"""The platform's Docker network as addresses (kamaji_hami_platform/network.py): its quarters,
the workers' blocks, MetalLB's range, and the config's rules over them."""

from __future__ import annotations

import ipaddress

import pytest

from kamaji_hami_platform import network
from kamaji_hami_platform.config import ConfigError, parse_config

pytestmark = pytest.mark.unit


class TestTenantNetwork:
    def test_the_tenants_own_network_is_its_block_th_slash_24(self):
        assert network.tenant_networks("172.29.0.0/16") == 256
        own = network.tenant_network("172.29.0.0/16", 3)
        assert str(own.subnet) == "172.29.3.0/24"
        assert str(own.gateway) == "172.29.3.1"
        assert str(own.dynamic_range) == "172.29.3.0/28"
        assert own.worker_address(0) == "172.29.3.16"
        assert own.worker_address(98) == "172.29.3.114"
        assert own.api_address == "172.29.3.250"

    def test_workers_the_api_and_docker_s_own_addresses_never_meet(self):
        own = network.tenant_network("10.200.0.0/20", 15)
        workers = {ipaddress.IPv4Address(own.worker_address(i)) for i in range(99)}
        api = ipaddress.IPv4Address(own.api_address)
        assert len(workers) == 99 and api not in workers
        assert all(a in own.subnet and a not in own.dynamic_range for a in (*workers, api))
        assert own.gateway in own.dynamic_range

    def test_outside_the_subnet_is_an_error(self):
        with pytest.raises(ValueError, match=r"outside 0\.\.0"):
            network.tenant_network("172.29.0.0/24", 1)
        with pytest.raises(ValueError, match=r"outside 0\.\.98"):
            network.tenant_network("172.29.0.0/24", 0).worker_address(99)

    def test_source_ranges_are_the_fewest_cidrs_holding_exactly_the_clients(self):
        assert network.source_ranges(["10.20.1.12", "10.20.1.13"], ["10.20.0.0/24"]) == [
            "10.20.0.0/24", "10.20.1.12/31"]
        assert network.source_ranges(["10.0.0.5"], ["10.0.0.0/24"]) == ["10.0.0.0/24"]


class TestLayout:
    def test_a_slash_16_in_quarters(self):
        net = network.layout("172.30.0.0/16")
        assert str(net.gateway) == "172.30.0.1"
        assert str(net.dynamic_range) == "172.30.0.0/18"
        assert [str(a) for a in net.worker_region] == ["172.30.64.0", "172.30.191.255"]
        assert net.blocks == 256
        assert net.block_cidrs(1) == ["172.30.64.128/25"]
        assert net.worker_address(1, 0) == "172.30.64.129"
        assert net.default_pool_range() == "172.30.255.200-172.30.255.250"

    def test_a_slash_24_holds_one_tenant_and_still_every_worker(self):
        net = network.layout("192.168.49.0/24")
        assert net.blocks == 1
        assert net.block_cidrs(0) == ["192.168.49.64/26", "192.168.49.128/26"]
        assert net.worker_address(0, 98) == "192.168.49.163"
        assert net.default_pool_range() == "192.168.49.200-192.168.49.250"

    def test_no_two_workers_of_any_tenants_share_an_address_and_none_leaves_its_block(self):
        net = network.layout("172.30.0.0/20")
        seen = set()
        for block in range(net.blocks):
            first, last = net.block(block)
            for index in range(99):
                address = net.worker_address(block, index)
                assert first <= ipaddress.IPv4Address(address) <= last
                assert address not in seen
                seen.add(address)
        dynamic, pool = net.dynamic_range, net.pool_quarter
        assert not any(ipaddress.IPv4Address(a) in dynamic or
                       ipaddress.IPv4Address(a) in pool for a in seen)

    def test_outside_the_blocks_is_an_error(self):
        net = network.layout("172.30.0.0/24")
        with pytest.raises(ValueError, match=r"outside 0\.\.0"):
            net.block(1)
        with pytest.raises(ValueError, match=r"outside 0\.\.98"):
            net.worker_address(0, 99)


def problems_of(raw) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    return caught.value.problems


class TestConfig:
    def test_tenants_take_their_position_as_address_block_unless_pinned(self, dev_config):
        assert [t.address_block for t in parse_config(dev_config).tenants] == [0, 1]
        dev_config["tenants"][0]["addressBlock"] = 7
        assert [t.address_block for t in parse_config(dev_config).tenants] == [7, 1]

    def test_a_block_outside_the_subnet_or_taken_twice_is_refused(self, dev_config):
        for tenant in dev_config["tenants"]:
            tenant["workerNetwork"] = "shared"
        dev_config["management"]["dockerSubnet"] = "172.30.0.0/23"  # 2 blocks
        dev_config["tenants"][0]["addressBlock"] = 2
        problems = problems_of(dev_config)
        assert any(p.startswith("tenants[0].addressBlock: 2 is outside 0..1") for p in problems)
        dev_config["tenants"][0]["addressBlock"] = 1
        assert any(p.startswith("tenants[1].addressBlock: 1 is also tenants[0] (tenant-a)'s")
                   for p in problems_of(dev_config))

    def test_an_own_network_outside_the_tenant_subnet_or_taken_twice_is_refused(self, dev_config):
        dev_config["management"]["tenantSubnet"] = "172.29.0.0/23"  # 2 networks
        dev_config["tenants"][0]["addressBlock"] = 2
        problems = problems_of(dev_config)
        assert any(p.startswith("tenants[0].addressBlock: 2 is outside 0..1: management.tenantSubnet "
                                "172.29.0.0/23 holds 2 tenants' own networks") for p in problems), problems
        dev_config["tenants"][0]["addressBlock"] = 1
        assert any(p.startswith("tenants[1].addressBlock: 1 is also tenants[0] (tenant-a)'s")
                   for p in problems_of(dev_config))

    def test_own_and_shared_tenants_never_share_a_block_number(self, dev_config):
        """One numbering for both: a tenant moved to its own network keeps its number free."""
        dev_config["tenants"][0]["workerNetwork"] = "shared"
        dev_config["tenants"][1]["addressBlock"] = 0
        assert any(p.startswith("tenants[1].addressBlock: 0 is also tenants[0] (tenant-a)'s")
                   for p in problems_of(dev_config))

    @pytest.mark.parametrize(("subnet", "fragment"), [
        ("172.29.0.0/25", "prefix between /16 and /24"),
        ("172.30.0.0/20", "overlaps management.dockerSubnet"),
        ("10.36.0.0/16", "overlaps"), ("10.96.0.0/16", "overlaps the management cluster's service CIDR")])
    def test_a_tenant_subnet_too_small_or_overlapping_is_refused(self, dev_config, subnet, fragment):
        dev_config["management"]["tenantSubnet"] = subnet
        problems = problems_of(dev_config)
        where = ("management.tenantSubnet", "podCidr")
        assert any(fragment in p and any(w in p for w in where) for p in problems), problems

    def test_worker_network_is_a_kind_setting_of_own_or_shared(self, dev_config):
        dev_config["tenants"][0]["workerNetwork"] = "private"
        assert any(p.startswith("tenants[0].workerNetwork: 'private' must be one of own, shared")
                   for p in problems_of(dev_config))

    def test_a_metallb_range_outside_the_last_quarter_is_refused(self, dev_config):
        dev_config["management"]["metallbAddressRange"] = "172.30.64.10-172.30.64.20"  # worker addresses
        assert any(p.startswith("management.metallbAddressRange:") and "172.30.192.0/18" in p
                   for p in problems_of(dev_config))

    @pytest.mark.parametrize(("subnet", "fragment"), [
        ("172.30.0.0/25", "prefix between /16 and /24"), ("10.36.0.0/16", "overlaps"),
        ("10.244.0.0/16", "overlaps the management cluster's pod CIDR")])
    def test_a_subnet_too_small_or_overlapping_is_refused(self, dev_config, subnet, fragment):
        dev_config["management"]["dockerSubnet"] = subnet
        problems = problems_of(dev_config)
        where = ("management.dockerSubnet", "podCidr")
        assert any(fragment in p and any(w in p for w in where) for p in problems), problems
