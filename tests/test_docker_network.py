"""The platform's Docker network: its layout, the config that uses it, and its create and delete
scripts run against a stand-in docker (tests/fakes/docker)."""

from __future__ import annotations

import ipaddress
import os
import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform import network
from kamaji_hami_platform.config import ConfigError, parse_config
from kamaji_hami_platform.management import docker_network

pytestmark = pytest.mark.unit
FAKES = Path(__file__).parent / "fakes"


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
        dev_config["management"]["dockerSubnet"] = "172.30.0.0/23"  # 2 blocks
        dev_config["tenants"][0]["addressBlock"] = 2
        problems = problems_of(dev_config)
        assert any(p.startswith("tenants[0].addressBlock: 2 is outside 0..1") for p in problems)
        dev_config["tenants"][0]["addressBlock"] = 1
        assert any(p.startswith("tenants[1].addressBlock: 1 is also tenants[0] (tenant-a)'s")
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


def run(script: str, state: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, timeout=30,
                          check=False, env={**os.environ, "PATH": f"{FAKES}:{os.environ['PATH']}",
                               "FAKE_DOCKER_STATE": str(state), **env})


def network_file(state: Path, name: str = "kamaji-hami") -> Path:
    return state / "networks" / name


CREATE = docker_network.create_script("kamaji-hami", "172.30.0.0/16", "kamaji")
DELETE = docker_network.delete_script("kamaji-hami", "kamaji")


class TestCreate:
    def test_creates_it_with_the_layout_and_its_owner(self, tmp_path):
        result = run(CREATE, tmp_path)
        assert result.returncode == 0, result.stderr
        calls = (tmp_path / "calls").read_text().splitlines()
        (create,) = [c for c in calls if c.startswith("network create")]
        assert "--subnet 172.30.0.0/16 --ip-range 172.30.0.0/18 --gateway 172.30.0.1" in create
        assert "--opt com.docker.network.driver.mtu=1500" in create, "the default bridge's MTU, as kind"
        assert network_file(tmp_path).read_text().split() == ["kamaji", "172.30.0.0/16"]

    def test_running_it_again_keeps_it(self, tmp_path):
        run(CREATE, tmp_path)
        result = run(CREATE, tmp_path)
        assert result.returncode == 0 and "exists" in result.stdout
        assert sum(c.startswith("network create") for c in (tmp_path / "calls").read_text().splitlines()) == 1

    def test_a_network_that_is_not_ours_is_refused_naming_the_way_out(self, tmp_path):
        network_file(tmp_path).parent.mkdir(parents=True)
        network_file(tmp_path).write_text("<no value> 172.18.0.0/16\n")  # kind's own `kind` network
        result = run(CREATE, tmp_path)
        assert result.returncode == 1 and "not created by this platform" in result.stderr
        assert "management.dockerNetwork" in result.stderr

    def test_ours_with_another_subnet_is_refused(self, tmp_path):
        run(docker_network.create_script("kamaji-hami", "172.29.0.0/16", "kamaji"), tmp_path)
        result = run(CREATE, tmp_path)
        assert result.returncode == 1 and "not 172.30.0.0/16 (management.dockerSubnet)" in result.stderr

    def test_an_overlapping_pool_says_which_setting_to_change(self, tmp_path):
        result = run(CREATE, tmp_path, FAKE_POOL_OVERLAP="1")
        assert result.returncode == 1
        assert "Pool overlaps" in result.stderr and "management.dockerSubnet" in result.stderr

    def test_a_docker_that_does_not_answer_creates_nothing(self, tmp_path):
        result = run(CREATE, tmp_path, FAKE_DOCKER_DOWN="1")
        assert result.returncode == 1 and "is Docker running?" in result.stderr
        assert not network_file(tmp_path).exists()


class TestDelete:
    def test_removes_it_when_nothing_is_attached(self, tmp_path):
        run(CREATE, tmp_path)
        result = run(DELETE, tmp_path)
        assert result.returncode == 0, result.stderr
        assert not network_file(tmp_path).exists()

    def test_containers_still_attached_stop_it_naming_them(self, tmp_path):
        run(CREATE, tmp_path)
        run("docker run -d --name stray --network kamaji-hami busybox", tmp_path)
        result = run(DELETE, tmp_path)
        assert result.returncode == 1 and "stray" in result.stderr
        assert network_file(tmp_path).exists()

    def test_one_that_is_not_ours_is_left_alone(self, tmp_path):
        run(docker_network.create_script("kamaji-hami", "172.30.0.0/16", "other-stack"), tmp_path)
        result = run(DELETE, tmp_path)
        assert result.returncode == 0 and "left alone" in result.stderr
        assert network_file(tmp_path).exists()

    def test_gone_is_fine_and_docker_down_is_an_error(self, tmp_path):
        assert run(DELETE, tmp_path).returncode == 0
        down = run(DELETE, tmp_path, FAKE_DOCKER_DOWN="1")
        assert down.returncode == 1 and "nothing removed" in down.stderr


@pytest.mark.parametrize("script", [CREATE, DELETE], ids=["create", "delete"])
def test_a_missing_docker_is_an_error_never_a_missing_network(tmp_path, script):
    """The shell's `docker: not found` must not read as the daemon's "network … not found"."""
    empty = tmp_path / "bin"
    empty.mkdir()
    result = subprocess.run(["/bin/sh", "-c", script], env={"PATH": str(empty)}, capture_output=True,
                            text=True, timeout=30, check=False)
    assert result.returncode == 1 and "docker is not installed" in result.stderr
    assert "already gone" not in result.stdout
