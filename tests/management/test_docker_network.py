"""The platform's Docker network's create and delete scripts, run against a stand-in docker
(tests/fakes/docker)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform.management import docker_network
from tests.standins import run_script

pytestmark = pytest.mark.unit


def run(script: str, state: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_script(script, shell="sh", docker_state=state, env=env)


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
    result = run_script(script, shell="sh", tools=(), env={"PATH": str(empty)})
    assert result.returncode == 1 and "docker is not installed" in result.stderr
    assert "already gone" not in result.stdout
