"""A tenant's door on the live tier's engine (kamaji_hami_platform/tenant/door.py): the networks made
by the platform's own scripts, the door by its create script with HAProxy from the mirror, a
stand-in control plane (busybox httpd, which answers with the client address it sees) at the
control plane's address on the platform's network, and a worker on the tenant's network.

Each refusal is shown by its own reason: the door drops what it would forward (its InAddrErrors
counter, Linux net/ipv4/route.c `ip_error` with forwarding off: no ICMP, the counter only), and
HAProxy closes a connection from outside the tenant's network before any byte reaches the control
plane (the stand-in's log stays empty)."""

from __future__ import annotations

import contextlib
import copy
import re
import subprocess
import time
from collections.abc import Iterator

import pytest

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.management import docker_network
from kamaji_hami_platform.tenant import door, own_network
from tests.harness import dev_stack_config
from tests.live.conftest import Engine
from tests.live.test_images import MIRROR, Build, _in_mirror, build  # noqa: F401 (a fixture)

pytestmark = pytest.mark.live

CGI = "#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho \"client=$REMOTE_ADDR\"\n"


@pytest.fixture(scope="module")
def platform():
    """The dev stack's first tenant, under a management name and network of the test's own."""
    config = copy.deepcopy(dev_stack_config())
    config["management"].update(name="khpdoor", dockerNetwork="khpdoor")
    return parse_config(config)


def sh(engine: Engine, script: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    return engine.run("sh", "-c", script, check=check, timeout=timeout)


@pytest.fixture(scope="module")
def doorway(engine: Engine, build: Build, platform) -> Iterator[dict[str, str]]:  # noqa: F811
    tenant, management = platform.tenants[0], platform.management
    busybox = _in_mirror(versions.E2E_PROBE_IMAGE)
    engine.docker("pull", "-q", busybox, timeout=300)
    sh(engine, docker_network.create_script(management.docker_network, management.docker_subnet,
                                            management.name))
    sh(engine, own_network.create_script(tenant, management))
    plane = own_network.control_plane_address(tenant, management)
    # The stand-in control plane: both ports, each answering with the client address it sees.
    serve = ("mkdir -p /w/cgi-bin && printf %s \"$CGI\" > /w/cgi-bin/ip && chmod +x /w/cgi-bin/ip && "
             "{ httpd -f -vv -p 6443 -h /w & } && exec httpd -f -vv -p 8132 -h /w")
    engine.docker("run", "-d", "--name", "khpdoor-plane", "--network", management.docker_network,
                  "--ip", plane, "-e", f"CGI={CGI}", busybox, "sh", "-c", serve)
    engine.docker("run", "-d", "--name", "khpdoor-worker", "--cap-add", "NET_ADMIN",
                  "--network", own_network.network_name(tenant, management),
                  "--ip", own_network.tenant_network(tenant, management).worker_address(0),
                  busybox, "sleep", "3600")
    engine.docker("run", "-d", "--name", "khpdoor-stray", "--cap-add", "NET_ADMIN",
                  "--network", management.docker_network, busybox, "sleep", "3600")
    created = sh(engine, door.create_script(tenant, management, MIRROR))
    try:
        yield {"name": door.container_name(tenant, management),
               "api": door.tenant_address(tenant, management),
               "door": door.platform_address(tenant, management),
               "plane": plane, "created": created.stdout}
    finally:
        sh(engine, door.delete_script(tenant, management), check=False)
        engine.docker("rm", "-f", "khpdoor-plane", "khpdoor-worker", "khpdoor-stray", check=False)
        sh(engine, own_network.delete_script(tenant, management), check=False)
        sh(engine, docker_network.delete_script(management.docker_network, management.name), check=False)


def fetch(engine: Engine, container: str, address: str, port: int) -> tuple[str | None, float]:
    """GET the stand-in's /cgi-bin/ip from `container` (busybox nc: the static wget of Debian's
    busybox cannot run there): the client address the control plane saw, or None, and the seconds
    it took."""
    request = f"printf 'GET /cgi-bin/ip HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {address} {port}"
    started = time.monotonic()
    answer = engine.docker("exec", container, "sh", "-c", request, check=False, timeout=60)
    seen = re.search(r"client=\[?(?:::ffff:)?([0-9.]+)\]?", answer.stdout)
    return (seen.group(1) if seen else None), time.monotonic() - started


def counter(engine: Engine, name: str, field: str) -> int:
    """One of the door's IP counters, read in its own network namespace."""
    snmp = engine.docker("exec", name, "cat", "/proc/net/snmp").stdout.splitlines()
    header, values = [line.split() for line in snmp if line.startswith("Ip:")][:2]
    return int(values[header.index(field)])


@pytest.mark.parametrize("port", [6443, 8132])
def test_a_worker_reaches_its_control_plane_through_the_door(engine: Engine, doorway, port):
    """...and the control plane sees the door's platform address: the one client its source
    ranges and NetworkPolicy admit."""
    client, _ = fetch(engine, "khpdoor-worker", doorway["api"], port)
    assert client == doorway["door"]


def test_the_door_says_what_it_is_and_reads_its_settings_back(engine: Engine, doorway):
    assert f"door {doorway['name']}: {doorway['api']}" in doorway["created"]
    assert "(no forwarding, rp_filter 1, no IPv6)" in doorway["created"]
    for path, value in (("net/ipv4/ip_forward", "0"), ("net/ipv4/conf/all/rp_filter", "1"),
                        ("net/ipv4/conf/eth0/rp_filter", "1"), ("net/ipv4/conf/eth1/rp_filter", "1"),
                        ("net/ipv6/conf/eth0/disable_ipv6", "1"), ("net/ipv6/conf/eth1/disable_ipv6", "1")):
        assert engine.docker("exec", doorway["name"], "cat", f"/proc/sys/{path}").stdout.strip() == value
    status = engine.docker("exec", doorway["name"], "cat", "/proc/1/status").stdout
    assert re.search(r"^CapEff:\s+0+$", status, re.M), status


def raw_drops(engine: Engine, destination: str) -> int:
    """Packets Docker's own filter dropped on their way to a container from another bridge (moby
    v28.5.2's raw PREROUTING rule `-d <container> ! -i <its bridge> -j DROP`), read in the engine's
    namespace."""
    table = engine.run("iptables", "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n").stdout
    rows = [line.split() for line in table.splitlines() if f" {destination} " in f" {line} "]
    assert rows, table
    return sum(int(row[0]) for row in rows if row[2] == "DROP")


@contextlib.contextmanager
def without_bridge_filtering(engine: Engine) -> Iterator[None]:
    """Docker's filter sees bridged packets only while the bridge passes them to iptables
    (br_netfilter; per network namespace, so only the engine's changes): without it, what stands
    is the door itself."""
    engine.run("sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=0")
    try:
        yield
    finally:
        engine.run("sysctl", "-q", "-w", "net.bridge.bridge-nf-call-iptables=1")


def test_a_root_on_the_worker_cannot_route_through_the_door(engine: Engine, doorway):
    """Root on its worker routes the control plane's address through the door. Docker drops it
    first (its raw rule for a container reached from another bridge); without that filter the
    door drops it, not forwarding (InAddrErrors grows: Linux net/ipv4/route.c `ip_error` with
    forwarding off sends no ICMP). The control plane never sees a connection."""
    engine.docker("exec", "khpdoor-worker", "ip", "route", "add", doorway["plane"], "via", doorway["api"])
    seen, dropped = len(plane_log(engine)), raw_drops(engine, doorway["plane"])
    assert fetch(engine, "khpdoor-worker", doorway["plane"], 6443)[0] is None
    assert raw_drops(engine, doorway["plane"]) > dropped
    with without_bridge_filtering(engine):
        before = counter(engine, doorway["name"], "InAddrErrors")
        assert fetch(engine, "khpdoor-worker", doorway["plane"], 6443)[0] is None
        assert counter(engine, doorway["name"], "InAddrErrors") > before
    assert counter(engine, doorway["name"], "ForwDatagrams") == 0
    assert plane_log(engine)[seen:] == []


def test_the_platform_side_cannot_use_the_door(engine: Engine, doorway):
    """Anything on the platform's network (a root in the kind node, a 0.1.0 tenant's worker) that
    routes the tenant's API address through the door's platform side: Docker drops it first;
    without that filter it reaches HAProxy (the address is local to the door), which closes the
    connection at once, before a byte goes on. The door's platform address itself refuses."""
    engine.docker("exec", "khpdoor-stray", "ip", "route", "add", doorway["api"], "via", doorway["door"])
    seen, dropped = len(plane_log(engine)), raw_drops(engine, doorway["api"])
    assert fetch(engine, "khpdoor-stray", doorway["api"], 6443)[0] is None
    assert raw_drops(engine, doorway["api"]) > dropped
    with without_bridge_filtering(engine):
        client, seconds = fetch(engine, "khpdoor-stray", doorway["api"], 6443)
        assert client is None and seconds < 3, seconds  # closed at once: nc's -w 5 did not run out
    refused = engine.docker("exec", "khpdoor-stray", "nc", "-w", "5", doorway["door"], "6443", check=False)
    assert "Connection refused" in refused.stderr, refused.stderr
    assert plane_log(engine)[seen:] == []


def plane_log(engine: Engine) -> list[str]:
    """What the stand-in control plane logged (busybox httpd -vv: a line per connection)."""
    logs = engine.docker("logs", "khpdoor-plane")
    return (logs.stdout + logs.stderr).splitlines()


def test_running_the_create_again_keeps_the_door(engine: Engine, doorway, platform):
    tenant, management = platform.tenants[0], platform.management
    started = engine.docker("inspect", "--format", "{{.State.StartedAt}}", doorway["name"]).stdout
    again = sh(engine, door.create_script(tenant, management, MIRROR))
    assert "(no forwarding, rp_filter 1, no IPv6)" in again.stdout
    assert engine.docker("inspect", "--format", "{{.State.StartedAt}}", doorway["name"]).stdout == started
