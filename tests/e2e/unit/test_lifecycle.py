"""The lifecycle run never harms another stack: its name, its subnet, its bounds, its cleanup
(tests/e2e/lifecycle_support.py), with real files, real subprocesses and real callables."""

from __future__ import annotations

import ipaddress
import json
import os
import sys
import time
from pathlib import Path

import pytest
import yaml

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.tenant import node_join
from tests.e2e import lifecycle_support as life
from tests.e2e.support import ROOT, HostSnapshot, leftovers
from tests.e2e.test_lifecycle import lifecycle_config

pytestmark = pytest.mark.unit


# --- the name and the stack file -------------------------------------------------------------

@pytest.mark.parametrize("name", ["dev", "prod", "my-e2e", "E2E1", "e2e_1", "e2e-", "e2e/../dev",
                                  "e2e" + "x" * 38])
def test_only_throwaway_e2e_names_are_accepted(tmp_path, name):
    with pytest.raises(life.LifecycleRefused, match=f"{life.STACK_ENV}=.*must start with 'e2e'"):
        life.check_stack_name(name, tmp_path)


@pytest.mark.parametrize("name", ["e2e", "e2e12345", "e2e-mine"])
def test_a_fresh_e2e_name_passes(tmp_path, name):
    life.check_stack_name(name, tmp_path)
    assert life.check_stack_name(life.default_stack_name(time.time()), tmp_path) is None


def test_a_name_whose_stack_file_exists_is_refused_and_the_file_is_left_alone(tmp_path):
    kept = life.stack_file(tmp_path, "e2e-kept")
    kept.write_text("config:\n  kamaji-hami-platform:management: {name: mine}\n")
    refusal = rf"{life.STACK_ENV}='e2e-kept'.*Pulumi\.e2e-kept\.yaml exists"
    with pytest.raises(life.LifecycleRefused, match=refusal):
        life.check_stack_name("e2e-kept", tmp_path)
    assert kept.read_text() == "config:\n  kamaji-hami-platform:management: {name: mine}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Pulumi.e2e-kept.yaml"]


def test_the_dev_stack_is_refused_by_name_before_its_file_is_read():
    before = (ROOT / "Pulumi.dev.yaml").read_bytes()
    with pytest.raises(life.LifecycleRefused, match=life.STACK_ENV):
        life.check_stack_name("dev", ROOT)
    assert (ROOT / "Pulumi.dev.yaml").read_bytes() == before


def test_the_stack_is_created_never_selected():
    """`stack init` refuses an existing stack; the run has no path that adopts one."""
    assert life.init_command("e2e1")[:4] == ["pulumi", "stack", "init", "e2e1"]
    source = (ROOT / "tests/e2e/test_lifecycle.py").read_text()
    assert "select" not in source and "Pulumi.dev.yaml\").write" not in source
    assert "E2E_LIFECYCLE_STACK" in life.stack_exists_message("e2e1")


def test_the_config_goes_into_the_file_stack_init_wrote(tmp_path):
    path = life.stack_file(tmp_path, "e2e1")
    path.write_text("encryptionsalt: v1:abc:def\n")
    life.write_stack_config(path, {"kamaji-hami-platform:management": {"name": "e2e1"}})
    assert yaml.safe_load(path.read_text()) == {
        "encryptionsalt": "v1:abc:def", "config": {"kamaji-hami-platform:management": {"name": "e2e1"}}}


# --- subnets ------------------------------------------------------------------------------------

def write_stack(root: Path, name: str, management: dict | None) -> None:
    config = {} if management is None else {"kamaji-hami-platform:management": management}
    life.stack_file(root, name).write_text(yaml.safe_dump({"config": config}))


def nets(*values: str) -> list[ipaddress.IPv4Network]:
    return [ipaddress.ip_network(v) for v in values]


def test_a_stack_file_claims_its_subnet_the_default_one_and_its_metallb_range(tmp_path):
    write_stack(tmp_path, "dev", {"dockerSubnet": "172.30.0.0/16"})
    write_stack(tmp_path, "bare", None)  # the program's defaults, 172.30.0.0/16 and 172.24.0.0/16
    write_stack(tmp_path, "lab", {"dockerSubnet": "10.50.0.0/16", "tenantSubnet": "10.51.0.0/16",
                                  "metallbAddressRange": "10.50.255.200-10.50.255.203"})
    claims = life.stack_file_claims(tmp_path)
    assert [(c.owner, c.network) for c in claims] == [
        ("Pulumi.bare.yaml management.dockerSubnet", nets("172.30.0.0/16")[0]),
        ("Pulumi.bare.yaml management.tenantSubnet", nets("172.24.0.0/16")[0]),
        ("Pulumi.dev.yaml management.dockerSubnet", nets("172.30.0.0/16")[0]),
        ("Pulumi.dev.yaml management.tenantSubnet", nets("172.24.0.0/16")[0]),
        ("Pulumi.lab.yaml management.dockerSubnet", nets("10.50.0.0/16")[0]),
        ("Pulumi.lab.yaml management.tenantSubnet", nets("10.51.0.0/16")[0]),
        ("Pulumi.lab.yaml management.metallbAddressRange", nets("10.50.255.200/30")[0]),
    ]


def test_an_overlap_with_any_stack_file_is_refused_naming_each(tmp_path):
    write_stack(tmp_path, "bare", None)
    write_stack(tmp_path, "lab", {"dockerSubnet": "10.50.0.0/16",
                                  "metallbAddressRange": "172.29.9.1-172.29.9.2"})
    claims = life.stack_file_claims(tmp_path)
    with pytest.raises(life.LifecycleRefused) as refused:
        life.check_subnet(ipaddress.IPv4Network("172.29.0.0/16"), claims)
    assert "Pulumi.lab.yaml management.metallbAddressRange: 172.29.9.1/32" in str(refused.value)
    assert life.SUBNET_ENV in str(refused.value) and "bare" not in str(refused.value)
    with pytest.raises(life.LifecycleRefused) as refused:
        life.check_subnet(ipaddress.IPv4Network("172.30.128.0/24"), claims)
    assert "Pulumi.bare.yaml management.dockerSubnet: 172.30.0.0/16" in str(refused.value)
    life.check_subnet(ipaddress.IPv4Network("172.28.0.0/16"), claims)


def test_an_unreadable_stack_file_is_refused(tmp_path):
    write_stack(tmp_path, "odd", {"dockerSubnet": "not-a-subnet"})
    with pytest.raises(life.LifecycleRefused, match=r"Pulumi\.odd\.yaml"):
        life.stack_file_claims(tmp_path)


def test_docker_networks_are_claims_and_kinds_ipv6_subnet_is_no_overlap():
    output = "bridge 172.17.0.0/16\nhost\nnone\n\nkind fc00:f853:ccd:e793::/64 172.18.0.0/16\n"
    claims = life.docker_network_claims(output)
    assert [(c.owner, str(c.network)) for c in claims] == [
        ("Docker network bridge", "172.17.0.0/16"), ("Docker network kind", "fc00:f853:ccd:e793::/64"),
        ("Docker network kind", "172.18.0.0/16")]
    with pytest.raises(life.LifecycleRefused) as refused:
        life.check_subnet(ipaddress.IPv4Network("172.16.0.0/12"), claims)
    assert "Docker network kind: 172.18.0.0/16" in str(refused.value)
    assert "Docker network bridge: 172.17.0.0/16" in str(refused.value)
    assert life.overlapping(ipaddress.IPv4Network("172.29.0.0/16"), claims) == []


def test_the_subnet_comes_from_the_environment_or_is_refused():
    assert str(life.lifecycle_subnet({})) == "172.29.0.0/16"
    assert str(life.lifecycle_subnet({life.SUBNET_ENV: "172.28.0.0/16"})) == "172.28.0.0/16"
    with pytest.raises(life.LifecycleRefused, match=life.SUBNET_ENV):
        life.lifecycle_subnet({life.SUBNET_ENV: "172.28.0.1/16"})


def test_the_lifecycle_stack_announces_only_from_its_own_subnet(monkeypatch):
    """Its MetalLB range is the default of its own subnet, which no stack file of the repo claims."""
    monkeypatch.delenv(life.SUBNET_ENV, raising=False)
    config = lifecycle_config("e2e1")
    platform = parse_config({key.split(":", 1)[1]: value for key, value in config.items()})
    first, last = (ipaddress.IPv4Address(a) for a in platform.management.pool_range.split("-"))
    subnet = ipaddress.IPv4Network(platform.management.docker_subnet)
    assert first in subnet and last in subnet
    life.check_subnet(subnet, life.stack_file_claims(ROOT))


# --- leftovers ---------------------------------------------------------------------------------

def snapshot(containers=(), networks=(), clusters=()) -> HostSnapshot:
    return HostSnapshot(frozenset(containers), frozenset(), frozenset(networks), frozenset(clusters))


def test_kinds_own_network_is_no_leftover_but_the_stacks_network_is():
    before = snapshot(["dev-w"], ["bridge", "host", "none", "kamaji-hami"], ["kamaji"])
    after = snapshot(["dev-w"], ["bridge", "host", "none", "kamaji-hami", "kind", "e2e1"], ["kamaji"])
    assert "network kind" in leftovers(before, after), "today's comparison fails every clean host"
    assert life.lifecycle_leftovers(before, after) == ["network e2e1"]
    clean = snapshot(["dev-w"], ["bridge", "host", "none", "kamaji-hami", "kind"], ["kamaji"])
    assert life.lifecycle_leftovers(before, clean) == []


def test_only_the_network_named_kind_is_taken_out():
    before = snapshot(networks=["bridge"])
    after = snapshot(["e2e1-control-plane"], ["bridge", "kind", "kind-e2e1"], ["e2e1"])
    assert life.lifecycle_leftovers(before, after) == [
        "container e2e1-control-plane", "network kind-e2e1", "kind cluster e2e1"]


# --- bounded commands ------------------------------------------------------------------------

def test_destroy_ignores_protection_and_stack_rm_never_forces():
    private = [sys.executable, str(ROOT / "kamaji_hami_platform" / "tools" / "private_tmp.py")]
    destroy = life.destroy_command("e2e1")
    assert destroy[:6] == [*private, "pulumi", "destroy", "--yes", "--ignore-protect"] and "e2e1" in destroy
    remove = life.remove_command("e2e1")
    assert "--force" not in remove and "-f" not in remove and "--preserve-config" in remove
    assert life.up_command("e2e1")[:5] == [*private, "pulumi", "up", "--yes"]
    assert life.preview_command("e2e1")[:5] == [*private, "pulumi", "preview", "--json"]
    assert (life.UP_TIMEOUT, life.DESTROY_TIMEOUT, life.PREVIEW_TIMEOUT) == (2700, 1200, 600)


def test_the_environment_is_the_backend_without_drain_or_streaming_preview():
    env = life.pulumi_env({"PATH": "/bin", life.STREAMING_JSON_PREVIEW_ENV: "true"},
                          {"PULUMI_BACKEND_URL": "file:///x"})
    assert env == {"PATH": "/bin", "PULUMI_BACKEND_URL": "file:///x", node_join.SKIP_DRAIN_ENV: "1",
                   life.K8S_CLIENT_TIMEOUT_ENV: life.K8S_CLIENT_TIMEOUT}
    assert life.pulumi_env({life.K8S_CLIENT_TIMEOUT_ENV: "5"}, {})[life.K8S_CLIENT_TIMEOUT_ENV] == "5"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_timeout_stops_the_whole_group_and_names_the_phase_and_bound(tmp_path):
    """The command ignores SIGTERM and leaves a grandchild behind: both are gone afterwards."""
    script = f"trap '' TERM; sleep 300 & echo $! > {tmp_path}/child; sleep 300"
    start = time.monotonic()
    with pytest.raises(life.PhaseTimeout, match=r"pulumi up did not finish within its bound of 1s"):
        life.run_bounded("pulumi up", ["sh", "-c", script], 1, env=os.environ, cwd=tmp_path, grace=0.5)
    assert time.monotonic() - start < 30
    child = int((tmp_path / "child").read_text())
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the grandchild outlived the timeout"


def test_a_command_that_takes_sigterm_ends_within_the_grace(tmp_path):
    with pytest.raises(life.PhaseTimeout, match="pulumi destroy"):
        life.run_bounded("pulumi destroy", [sys.executable, "-c", "import time; time.sleep(300)"], 0.5,
                         env=os.environ, cwd=tmp_path, grace=60)


def test_a_failing_command_names_its_phase_and_exit_status(tmp_path):
    with pytest.raises(life.PhaseFailed, match=r"stack init failed: `sh -c 'exit 255'` exited with 255"):
        life.run_bounded("stack init", ["sh", "-c", "exit 255"], 10, env=os.environ, cwd=tmp_path)


def test_captured_output_and_the_environment_reach_the_command(tmp_path):
    out = life.run_bounded("preview", ["sh", "-c", 'echo "$KHP_SKIP_DRAIN"; pwd'], 10,
                           env={**os.environ, "KHP_SKIP_DRAIN": "1"}, cwd=tmp_path, capture=True)
    assert out.split() == ["1", str(tmp_path)]


# pulumi v3.276.0 pkg/display/json.go PreviewDigest: steps, then changeSummary by op.
def digest(summary: dict[str, int] | None, steps: list[dict[str, str]] = ()) -> str:
    document = {"steps": list(steps), "duration": 1}
    if summary is not None:
        document["changeSummary"] = summary
    return json.dumps(document, indent=4)


def test_the_second_preview_counts_only_real_changes():
    assert life.preview_changes(digest({"same": 80, "read": 3})) == ({}, [])
    assert life.preview_changes(digest(None)) == ({}, [])
    changed = digest({"same": 79, "update": 1},
                     [{"op": "same", "urn": "urn:a"}, {"op": "update", "urn": "urn:b"}])
    assert life.preview_changes(changed) == ({"update": 1}, ["update urn:b"])
    with pytest.raises(life.PhaseFailed, match="no JSON"):
        life.preview_changes("error: no stack named e2e1")


# --- cleanup -----------------------------------------------------------------------------------

class Steps:
    """Real cleanup steps that record their calls and fail where told."""

    def __init__(self, *failing: str) -> None:
        self.failing = set(failing)
        self.calls: list[str] = []

    def step(self, name: str):
        def action() -> None:
            self.calls.append(name)
            if name in self.failing:
                raise RuntimeError(f"{name} broke")
        return action

    def cleanup(self) -> life.Cleanup:
        return life.Cleanup("e2e1", self.step("destroy"), self.step("remove"), self.step("delete"),
                            self.step("leftovers"))


def test_a_clean_cleanup_runs_every_step_in_order():
    steps = Steps()
    assert life.clean_up(steps.cleanup()) == []
    assert steps.calls == ["destroy", "remove", "delete", "leftovers"]


def test_a_failed_destroy_keeps_the_stack_and_its_file_and_says_how_to_finish(capsys):
    steps = Steps("destroy")
    errors = life.clean_up(steps.cleanup())
    assert steps.calls == ["destroy"]
    assert [str(e) for e in errors] == ["destroy broke"]
    assert any("make down STACK=e2e1" in note for note in errors[0].__notes__)
    assert "make down STACK=e2e1" in capsys.readouterr().out


def test_later_steps_are_tried_after_one_fails():
    steps = Steps("remove", "leftovers")
    errors = life.clean_up(steps.cleanup())
    assert steps.calls == ["destroy", "remove", "delete", "leftovers"]
    assert [str(e) for e in errors] == ["remove broke", "leftovers broke"]
    assert "(lifecycle cleanup step: remove stack)" in errors[0].__notes__


def test_every_error_is_reported_with_the_runs_own():
    original = life.PhaseTimeout("pulumi up did not finish within its bound of 2700s (45 min)")
    errors = life.clean_up(Steps("destroy").cleanup())
    with pytest.raises(BaseExceptionGroup) as group:
        life.raise_all(original, errors)
    assert group.value.exceptions[0] is original and group.value.exceptions[1] is errors[0]
    assert "pulumi up did not finish" in str(group.value) and "destroy broke" in str(group.value)


def test_the_runs_own_error_alone_when_cleanup_succeeded():
    original = AssertionError("a second preview plans changes")
    with pytest.raises(AssertionError) as raised:
        life.raise_all(original, [])
    assert raised.value is original
    assert life.raise_all(None, []) is None
    with pytest.raises(BaseExceptionGroup, match="cleanup failed: RuntimeError: remove broke"):
        life.raise_all(None, life.clean_up(Steps("remove").cleanup()))
