"""The live hosts run's configs and host states (tests/e2e/live_hosts.py): each stack's config is
one the program accepts, in mode existing with every host key pinned; the layout never puts a host
in a MetalLB range; a host's state reads back as a join and a reset leave it."""

from __future__ import annotations

import ipaddress

import pytest

from kamaji_hami_platform.config import ConfigError, parse_config, secret_values
from kamaji_hami_platform.tenant import host_join
from tests.e2e import live_hosts
from tests.harness import fake_private_key

pytestmark = pytest.mark.unit

PLAN = live_hosts.layout("hosts123456")
KEYS = {host.container: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{index:032d}"
        for index, host in enumerate(PLAN.hosts)}


def raw(config: dict) -> dict:
    """The program's view of a stack file: its keys without the project, and the secret the run
    sets with `pulumi config set --secret` (a stand-in key: only its name is checked here)."""
    return {**{key.split(":", 1)[1]: value for key, value in config.items()},
            "sshPrivateKeys": secret_values({live_hosts.KEY_NAME: fake_private_key("live-hosts")})}


def parsed(stack: str, hosts: tuple[live_hosts.Host, ...] | None = None):
    return parse_config(raw(live_hosts.stack_config(PLAN, stack, "/tmp/x.kubeconfig", KEYS, hosts)))


def test_each_stack_is_an_existing_cluster_with_its_hosts_pinned():
    for stack in ("a", "b"):
        platform = parsed(stack)
        assert not platform.management.is_kind
        assert platform.management.fail_cgroup_v1 is False
        hosts = {(tenant.name, host.name): host for tenant in platform.tenants for host in tenant.hosts}
        assert set(hosts) == {(h.tenant, h.name) for h in PLAN.stack_hosts(stack)}
        for host in PLAN.stack_hosts(stack):
            assert hosts[(host.tenant, host.name)].ssh.host_key == KEYS[host.container]
            assert hosts[(host.tenant, host.name)].address == host.address


def test_the_two_stacks_share_a_tenant_and_a_host_name_on_different_machines():
    a, b = PLAN.host("a", "node-1"), PLAN.host("b", "node-1")
    assert (a.tenant, a.name) == (b.tenant, b.name)
    assert a.address != b.address and a.container != b.container


def test_addresses_are_distinct_and_outside_both_metallb_ranges():
    ranges = []
    for stack in ("a", "b"):
        first, last = (ipaddress.IPv4Address(x) for x in PLAN.metallb_range(stack).split("-"))
        ranges.append((first, last))
        assert first in PLAN.subnet and last in PLAN.subnet
    (a1, a2), (b1, b2) = ranges
    assert a2 < b1 or b2 < a1
    addresses = [ipaddress.IPv4Address(host.address) for host in PLAN.hosts]
    assert len(set(addresses)) == len(addresses)
    for address in addresses:
        assert address in PLAN.subnet and address != ipaddress.IPv4Address(PLAN.gateway)
        assert not any(first <= address <= last for first, last in ranges)


def test_a_small_subnet_is_refused():
    with pytest.raises(ValueError, match="LIVE_HOSTS_SUBNET"):
        live_hosts.layout("r", "10.0.0.0/27")


def test_a_host_entry_of_another_stacks_address_is_still_a_valid_config():
    """The slip of the run (a's entry at b's host): the config is fine; only the host says no."""
    b = PLAN.host("b", "node-1")
    slip = live_hosts.Host("a", "team", "node-4", b.container, b.address)
    platform = parsed("a", (*PLAN.stack_hosts("a"), slip))
    team = next(t for t in platform.tenants if t.name == "team")
    assert [h.name for h in team.hosts] == ["node-1", "node-2", "node-4"]


def test_an_unpinned_host_is_refused_by_the_program():
    keys = dict(KEYS)
    config = live_hosts.stack_config(PLAN, "b", "/tmp/x", keys)
    del config["kamaji-hami-platform:tenants"][0]["hosts"][0]["hostKey"]
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.hosts\[0\]\.hostKey: is required"):
        parse_config(raw(config))


def state_output(marker: str, conf: str, active: str, enabled: str, cni: bool, tmp: str = "") -> str:
    sep = live_hosts.STATE_SEPARATOR
    return (f"{marker}\n{sep}\n{conf}\n{sep}\n{active}\n{sep}\n{enabled}\n{sep}\n"
            f"{'present' if cni else ''}\n{sep}\n{tmp}\n")


def test_a_joined_host_reads_back_joined_and_not_reset():
    marker = live_hosts.stack_marker("hosts123456", "a", "team")
    state = live_hosts.parse_state(state_output(marker, "0123456789abcdef", "active", "enabled", True))
    assert state.joined and not state.reset and state.marker == marker and state.tmp == ()


@pytest.mark.parametrize("left", ["marker", "conf", "active", "enabled", "cni"])
def test_anything_a_join_leaves_is_not_a_reset(left):
    values = {"marker": "", "conf": "", "active": "inactive", "enabled": "disabled", "cni": False}
    values[left] = {"marker": "m", "conf": "c", "active": "active", "enabled": "enabled", "cni": True}[left]
    state = live_hosts.parse_state(state_output(values["marker"], values["conf"], values["active"],
                                                values["enabled"], values["cni"]))
    assert not state.reset


def test_a_reset_host_reads_back_reset():
    state = live_hosts.parse_state(state_output("", "", "inactive", "disabled", False))
    assert state.reset and not state.joined


def test_the_marker_is_the_one_the_join_writes():
    owner = host_join.Ownership("kamaji-hami-platform", "hosts123456b", "hosts123456b")
    assert live_hosts.stack_marker("hosts123456", "b", "team") == \
        owner.marker(parsed("b").tenants[0])


def test_garbage_is_not_a_state():
    with pytest.raises(ValueError, match="not a host state"):
        live_hosts.parse_state("nothing")


def test_a_rewritten_config_keeps_the_secret_the_cli_set_and_takes_every_new_setting():
    """The slip's and the leave's rewrites: without the kept secret, the program refuses every host
    (`'live-hosts' is not in the secret sshPrivateKeys`), as the first live run found."""
    secret = {"live-hosts": {"secure": "v1:abc"}}
    first = live_hosts.stack_config(PLAN, "a", "/tmp/x", KEYS)
    stored = {**first, "kamaji-hami-platform:sshPrivateKeys": secret}
    fewer = live_hosts.stack_config(PLAN, "a", "/tmp/x", KEYS, PLAN.stack_hosts("a")[:1])
    merged = live_hosts.keep_secrets(stored, fewer)
    assert merged["kamaji-hami-platform:sshPrivateKeys"] == secret
    assert merged["kamaji-hami-platform:tenants"] == fewer["kamaji-hami-platform:tenants"]
    assert live_hosts.keep_secrets(None, fewer) == fewer
