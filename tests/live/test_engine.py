"""The live tier's own engine: built from Go modules, privileged containers through the runtime
wrapper, a network namespace with no route off the machine (read back, never probed by sending
traffic out), and a stop that leaves nothing mounted. Tests run in file order; the last one stops
and restarts the session's engine."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.conftest import ROOT, Engine

pytestmark = pytest.mark.live

BUSYBOX_IMAGE = "khp-live/busybox:test"


def _bounding_set() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"^CapBnd:\s*([0-9a-f]+)$", status, re.M).group(1), 16)


@pytest.fixture(scope="module")
def busybox(engine: Engine) -> str:
    """Debian's busybox-static as an image on the engine, imported from a rootfs (no registry)."""
    built = subprocess.run(["bash", str(ROOT / "toolchain/live/scripts/busybox-rootfs.sh")],
                           capture_output=True, text=True, timeout=300, check=True)
    rootfs = built.stdout.strip().splitlines()[-1]
    engine.run("bash", "-c", f'tar -C "{rootfs}" -c . | docker import - {BUSYBOX_IMAGE} >/dev/null')
    return BUSYBOX_IMAGE


def test_the_engine_is_its_own_and_new_enough(engine: Engine):
    """Docker >= 27 (endpoint sysctls), its data in the tier's folder, the wrapper as default runtime."""
    info = engine.docker("info", "-f", "{{.ServerVersion}} {{.DockerRootDir}} {{.DefaultRuntime}}").stdout
    version, data_root, runtime = info.split()
    assert int(version.split(".")[0]) >= 27, version
    assert Path(data_root) == engine.root / "data"
    assert runtime == "khp-runc"
    assert Path(f"/proc/{engine.pid}/ns/net").readlink() != Path("/proc/self/ns/net").readlink()


def test_the_namespace_has_no_route_off_the_machine(engine: Engine, busybox: str):
    """Read back after a container made a veth: every route is a bridge's own subnet, no default."""
    engine.docker("run", "-d", "--name", "route-probe", busybox, "sleep", "60")
    try:
        checked = engine.script("engine-check.sh", str(engine.root))
        assert "no default route" in checked.stderr
        routes = engine.run("ip", "-o", "route", "show", "table", "all").stdout.splitlines()
        assert not [route for route in routes if route.startswith("default") or " via " in route], routes
        links = engine.run("ip", "-o", "link", "show").stdout
        names = {re.split(r"[@:]", line.split(": ")[1])[0] for line in links.splitlines()}
        assert names >= {"lo", "docker0"} and any(name.startswith("veth") for name in names), names
        assert {name for name in names if not re.fullmatch(r"lo|docker0|br-[0-9a-f]+|veth[0-9a-f]+", name)} \
            == set()
    finally:
        engine.docker("rm", "-f", "route-probe", check=False)


def test_the_check_names_a_way_out(engine: Engine):
    """A link and default route added to the namespace (nothing sent on it) fail the check, named."""
    engine.run("ip", "link", "add", "khp-way-out", "type", "veth", "peer", "name", "khp-way-back")
    try:
        engine.run("ip", "link", "set", "khp-way-out", "up")
        engine.run("ip", "route", "add", "default", "dev", "khp-way-out")
        checked = engine.script("engine-check.sh", str(engine.root), check=False)
        assert checked.returncode == 1
        assert "khp-way-out" in checked.stderr and "default dev khp-way-out" in checked.stderr
    finally:
        engine.run("ip", "link", "del", "khp-way-out", check=False)
    engine.script("engine-check.sh", str(engine.root))


def test_a_container_reaches_its_bridge_gateway(engine: Engine, busybox: str):
    """Bridges work inside the namespace: a container pings its gateway (an address of the engine)."""
    gateway = engine.docker("network", "inspect", "bridge", "-f",
                            "{{(index .IPAM.Config 0).Gateway}}").stdout.strip()
    pinged = engine.docker("run", "--rm", busybox, "ping", "-c", "1", "-W", "5", gateway, check=False)
    assert pinged.returncode == 0, pinged.stdout + pinged.stderr


def test_a_privileged_container_runs_with_every_capability_the_machine_has(engine: Engine, busybox: str):
    """kind's nodes are privileged: the wrapper drops only what the machine's bounding set lacks."""
    status = engine.docker("run", "--rm", "--privileged", busybox, "cat", "/proc/self/status").stdout
    effective = int(re.search(r"^CapEff:\s*([0-9a-f]+)$", status, re.M).group(1), 16)
    missing = _bounding_set() & ~effective
    assert missing == 0, f"capabilities the machine has but the container lacks: {missing:x}"
    assert effective & ~_bounding_set() == 0
    plain = engine.docker("run", "--rm", busybox, "cat", "/proc/self/status").stdout
    assert int(re.search(r"^CapEff:\s*([0-9a-f]+)$", plain, re.M).group(1), 16) < effective


def test_the_platforms_cgroup_check_reads_the_real_engine(engine: Engine):
    """`make up`'s check (tools/cgroup_check.py) asks a real dockerd, which answers the machine's
    cgroup version: 2 where /sys/fs/cgroup is cgroup2fs, else 1 (this CI machine: hybrid, 1)."""
    asked = engine.run(sys.executable, "-c", "from kamaji_hami_platform.tools import cgroup_check; "
                       "print(cgroup_check.docker_cgroup_version())", check=True)
    machine = subprocess.run(["stat", "-fc", "%T", "/sys/fs/cgroup"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert asked.stdout.strip() == ("2" if machine == "cgroup2fs" else "1")


def test_stop_leaves_nothing_mounted_and_a_restart_keeps_the_images(engine: Engine, busybox: str):
    engine.docker("run", "-d", "--name", "running-at-stop", busybox, "sleep", "600")
    pid = engine.pid
    stopped = engine.stop()
    assert "engine stopped" in stopped.stderr
    assert not Path(f"/proc/{pid}").exists()
    root = str(engine.root.resolve()) + "/"
    assert not [line for line in Path("/proc/mounts").read_text().splitlines() if root in line]
    assert "engine stopped" in engine.stop().stderr  # a stopped engine stops again: a no-op
    engine.start()
    assert engine.docker("image", "inspect", "-f", "{{.Id}}", busybox).stdout.startswith("sha256:")
    engine.docker("rm", "-f", "running-at-stop")

