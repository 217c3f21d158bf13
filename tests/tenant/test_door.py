"""A tenant's door (kamaji_hami_platform/tenant/door.py): its HAProxy configuration and container
specification, rendered from the dev stack. What the door does on a real engine is the live tier's
(tests/live/test_door.py)."""

from __future__ import annotations

import re

import pytest

from kamaji_hami_platform.config import ConfigError, parse_config
from kamaji_hami_platform.tenant import door

pytestmark = pytest.mark.unit


@pytest.fixture
def dev(dev_config):
    platform = parse_config(dev_config)
    return platform.tenants[0], platform.management


def test_it_listens_on_the_tenant_address_only_and_forwards_each_port_to_the_control_plane(dev):
    config = door.haproxy_config(*dev)
    for port in (6443, 8132):
        assert f"    bind 172.24.0.250:{port}\n" in config
        assert f"    server control-plane 172.30.64.2:{port}\n" in config
    assert config.count("    bind ") == 2 and config.count("    server ") == 2
    assert "    mode tcp\n" in config


def test_its_threads_stay_within_its_pids_limit_on_any_host(dev):
    """HAProxy starts a thread per CPU (up to 64) unless told; the pids limit counts threads."""
    config = door.haproxy_config(*dev)
    assert f"    nbthread {door.THREADS}\n" in config and door.THREADS + 1 < door.PIDS // 2


# apiserver-network-proxy's agent and server keep an idle tunnel alive once an hour (their
# KeepaliveTime default): a shorter idle timeout in the door would cut every quiet tunnel.
KONNECTIVITY_KEEPALIVE_SECONDS = 3600
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _seconds(value: str) -> int:
    return int(value[:-1]) * _UNITS[value[-1]]


def test_idle_tunnels_outlive_konnectivity_s_keepalive_and_dead_peers_are_found(dev):
    timeouts = dict(re.findall(r"^    timeout (\S+) (\S+)$", door.haproxy_config(*dev), re.M))
    for side in ("client", "server"):
        assert _seconds(timeouts[side]) > KONNECTIVITY_KEEPALIVE_SECONDS, timeouts
    # Without keepalives a peer that vanished would hold a connection for the whole idle timeout.
    config = door.haproxy_config(*dev)
    assert "    option clitcpka\n" in config and "    option srvtcpka\n" in config
    args = door.docker_create_args(*dev, None)
    keepalive = {a for a in args if a.startswith("net.ipv4.tcp_keepalive_time=")}
    assert keepalive and all(int(a.split("=")[1]) < _seconds(timeouts["client"]) for a in keepalive)


def test_it_refuses_every_source_outside_the_tenant_network(dev):
    """Its tenant address is local to it, so the kernel delivers a packet for it from the platform
    side too: HAProxy, not the route, keeps the platform's network out."""
    config = door.haproxy_config(*dev)
    assert config.count("    tcp-request connection reject unless { src 172.24.0.0/24 }\n") == 2


def test_the_container_has_no_privilege_and_never_forwards(dev):
    args = door.docker_create_args(*dev, None)
    assert "--privileged" not in args and "--cap-add" not in args
    assert args[args.index("--cap-drop") + 1] == "ALL"
    assert args[args.index("--security-opt") + 1] == "no-new-privileges"
    sysctls = {args[i + 1] for i, arg in enumerate(args) if arg == "--sysctl"}
    # `default` too: an interface copies it when made, after the sysctls (moby v28.5.2 daemon/
    # start.go), and the kernel takes the larger of `all` and the interface's value.
    assert sysctls == {"net.ipv4.ip_forward=0", "net.ipv4.conf.all.rp_filter=1",
                       "net.ipv4.conf.default.rp_filter=1", "net.ipv4.tcp_keepalive_time=300"}
    assert args[args.index("--network") + 1] == "kamaji-hami-tenant-a"
    assert args[args.index("--ip") + 1] == "172.24.0.250"
    assert args[-1] == "docker.io/library/haproxy:3.0.11"


def test_its_platform_address_is_the_only_client_the_control_plane_admits(dev):
    assert door.platform_address(*dev) == "172.30.64.1"
    script = door.create_script(*dev, None)
    assert "--ip 172.30.64.1 kamaji-hami" in script


def test_the_image_comes_from_the_mirror_when_there_is_one(dev):
    assert door.docker_create_args(*dev, "localhost:5001")[-1] == \
        "localhost:5001/docker.io/library/haproxy:3.0.11"


def test_any_change_of_what_it_is_changes_its_trigger(dev, dev_config):
    before = door.spec_hash(*dev, None)
    assert door.spec_hash(*dev, None) == before
    assert door.spec_hash(*dev, "localhost:5001") != before
    dev_config["tenants"][0]["addressBlock"] = 5
    platform = parse_config(dev_config)
    assert door.spec_hash(platform.tenants[0], platform.management, None) != before


def test_a_block_with_no_room_for_a_door_on_the_platform_network_is_refused(dev_config):
    """A /20 platform network holds 16 blocks; tenantSubnet's /16 would hold 256 own networks."""
    dev_config["management"]["dockerSubnet"] = "172.30.0.0/20"
    dev_config["management"]["metallb"] = {"addressRange": "172.30.15.200-172.30.15.250"}
    dev_config["tenants"][0]["addressBlock"] = 20
    with pytest.raises(ConfigError) as refused:
        parse_config(dev_config)
    assert "tenants[0].addressBlock: 20 is outside 0..15: management.dockerSubnet 172.30.0.0/20 holds 16 " \
        "tenants' doors" in str(refused.value)
