"""What a worker needs from its Docker host, detected as kind detects it
(kamaji_hami_platform/management/docker_host.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kamaji_hami_platform.management import docker_host
from tests.standins import run_script, stand_in

pytestmark = pytest.mark.unit


def fake_docker_info(tmp_path: Path, driver: str, driver_status: str, security: str) -> Path:
    """A folder with a stand-in docker whose `info` reports these facts."""
    stand_in(tmp_path / "bin", "docker", f"""#!/bin/sh
[ -z "${{DOCKER_CALLS:-}}" ] || printf '%s\\n' "$*" >> "$DOCKER_CALLS"
case "$*" in
  *SecurityOptions*) echo '{security}' ;;
  *DriverStatus*) echo '{driver_status}' ;;
  *Driver*) echo '{driver}' ;;
  *) exit 2 ;;
esac
""")
    return tmp_path / "bin"


OVERLAY_EXT4 = '[["Backing Filesystem","extfs"],["Supports d_type","true"]]'
OVERLAY_XFS = '[["Backing Filesystem","xfs"],["Supports d_type","true"]]'
PLAIN = '["name=seccomp,profile=builtin","name=cgroupns"]'


@pytest.mark.parametrize(("driver", "status", "security", "flags"), [
    ("overlay2", OVERLAY_EXT4, PLAIN, ""),                                   # Debian/Ubuntu defaults
    ("overlay2", OVERLAY_XFS, PLAIN, "--volume /dev/mapper:/dev/mapper"),    # RHEL family
    ("btrfs", "[]", PLAIN, "--volume /dev/mapper:/dev/mapper"),
    ("ZFS", "[]", PLAIN, "--volume /dev/mapper:/dev/mapper"),
    ("overlay2", OVERLAY_EXT4, '["name=seccomp","name=userns"]', "--userns=host"),
    ("fuse-overlayfs", "[]", '["name=seccomp","name=rootless","name=cgroupns"]', "--device /dev/fuse"),
])
def test_the_host_check_prints_what_kind_would_add(tmp_path, driver, status, security, flags):
    tools = fake_docker_info(tmp_path, driver, status, security)
    result = run_script(docker_host.host_flags_script(), shell="sh", tools=(tools,))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == flags


def test_running_the_check_again_prints_the_same_and_only_reads(tmp_path):
    """An update runs the create again (issue 38, item 7): the detection only asks `docker info`."""
    tools = fake_docker_info(tmp_path, "overlay2", OVERLAY_XFS, PLAIN)
    recorded = tmp_path / "calls"
    first, again = (run_script(docker_host.host_flags_script(), shell="sh", tools=(tools,),
                               env={"DOCKER_CALLS": str(recorded)}) for _ in range(2))
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert first.stdout == again.stdout == "--volume /dev/mapper:/dev/mapper\n"
    calls = recorded.read_text().splitlines()
    assert calls and all(call.startswith("info ") for call in calls), calls


def test_a_docker_that_does_not_answer_fails_the_check(tmp_path):
    stand_in(tmp_path, "docker", "#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    result = run_script(docker_host.host_flags_script(), shell="sh", tools=(tmp_path,))
    assert result.returncode == 1 and "is Docker running?" in result.stderr


def test_proxies_upper_case_first_and_a_digest_that_reveals_nothing():
    env = {"http_proxy": "http://a:3128", "HTTP_PROXY": "http://b:3128", "no_proxy": "x", "PATH": "/bin"}
    assert docker_host.proxy_settings(env) == {"HTTP_PROXY": "http://b:3128", "NO_PROXY": "x"}
    digest = docker_host.environment_digest(env)
    assert digest and "3128" not in digest
    assert docker_host.environment_digest({"PATH": "/bin"}) == "", "nothing passed: the spec is unchanged"
    assert docker_host.environment_digest({**env, "HTTP_PROXY": "http://c:3128"}) != digest
    assert docker_host.environment_digest({"NO_PROXY": "x"}), "NO_PROXY alone is passed, as kind does"
    snapshotter = {docker_host.SNAPSHOTTER_VARIABLE: "fuse-overlayfs"}
    assert docker_host.environment_digest(snapshotter), "the snapshotter the node's containerd uses"
