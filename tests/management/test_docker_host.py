"""What a worker needs from its Docker host, detected as kind detects it
(kamaji_hami_platform/management/docker_host.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kamaji_hami_platform.management import docker_host
from tests.standins import run_script, stand_in

pytestmark = pytest.mark.unit


NODE = "kamaji-control-plane"
NODE_IMAGE_ID = "sha256:" + "5" * 64


def fake_docker_info(tmp_path: Path, driver: str, driver_status: str, security: str,
                     forwarding: str = "1") -> Path:
    """A folder with a stand-in docker whose `info` reports these facts, whose kind node runs the
    image NODE_IMAGE_ID, and where a new container of that image reads `forwarding`."""
    stand_in(tmp_path / "bin", "docker", f"""#!/bin/sh
[ -z "${{DOCKER_CALLS:-}}" ] || printf '%s\\n' "$*" >> "$DOCKER_CALLS"
case "$*" in
  *SecurityOptions*) echo '{security}' ;;
  *DriverStatus*) echo '{driver_status}' ;;
  *Driver*) echo '{driver}' ;;
  "inspect --format {{{{.Image}}}} {NODE}") echo '{NODE_IMAGE_ID}' ;;
  "run --rm --network none --entrypoint cat {NODE_IMAGE_ID} /proc/sys/net/ipv4/ip_forward")
    echo '{forwarding}' ;;
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
    result = run_script(docker_host.host_flags_script(NODE), shell="sh", tools=(tools,))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == flags


def test_a_host_whose_containers_get_no_ipv4_forwarding_gives_workers_the_sysctl(tmp_path):
    """Found by the first live `make up` (a Docker in a network namespace of its own): each worker's
    kubeadm join failed its preflight (ip_forward is not 1). A new container of the node's image,
    with no network, is what a worker's namespace starts as."""
    tools = fake_docker_info(tmp_path, "overlay2", OVERLAY_XFS, PLAIN, forwarding="0")
    result = run_script(docker_host.host_flags_script(NODE), shell="sh", tools=(tools,))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "--volume /dev/mapper:/dev/mapper --sysctl net.ipv4.ip_forward=1"


def test_running_the_check_again_prints_the_same_and_leaves_nothing(tmp_path):
    """An update runs the create again (issue 38, item 7): the detection asks `docker info`, the kind
    node's image, and runs one probe that removes itself."""
    tools = fake_docker_info(tmp_path, "overlay2", OVERLAY_XFS, PLAIN)
    recorded = tmp_path / "calls"
    first, again = (run_script(docker_host.host_flags_script(NODE), shell="sh", tools=(tools,),
                               env={"DOCKER_CALLS": str(recorded)}) for _ in range(2))
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert first.stdout == again.stdout == "--volume /dev/mapper:/dev/mapper\n"
    calls = recorded.read_text().splitlines()
    probes = [call for call in calls if call.startswith("run ")]
    assert len(probes) == 2 and all(call.startswith("run --rm --network none ") for call in probes), calls
    assert all(call.startswith(("info ", "inspect ", "run --rm ")) for call in calls), calls


def test_a_docker_that_does_not_answer_fails_the_check(tmp_path):
    stand_in(tmp_path, "docker", "#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    result = run_script(docker_host.host_flags_script(NODE), shell="sh", tools=(tmp_path,))
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
