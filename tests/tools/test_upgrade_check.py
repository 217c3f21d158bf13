"""The state check `make preview` and `make up` run first (kamaji_hami_platform/tools/
upgrade_check.py), on the dev stack's recorded state at commit 4dc9ef2 (tests/fixtures/upgrade-from/)
as `pulumi stack export` would give it, and through the command with a stand-in pulumi CLI."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kamaji_hami_platform.config import load_stack_file, parse_config
from kamaji_hami_platform.tools import upgrade_check
from tests.harness import dev_stack_config
from tests.recorded_state import recorded_state
from tests.standins import stand_in

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def export_of(commit: str, stack: str, protect: bool | None = None) -> dict:
    """A `pulumi stack export` of the recorded state (`protect=False`: as a release before
    protection wrote it)."""
    resources = [{"urn": reg.urn, "type": reg.type, "parent": reg.parent, "custom": reg.custom,
                  "protect": reg.options.get("protect", False) if protect is None else protect,
                  "inputs": reg.inputs}
                 for reg in recorded_state(commit, stack).registrations]
    return {"version": 3, "deployment": {"resources": resources}}


def shared(config: dict) -> dict:
    config = copy.deepcopy(config)
    for tenant in config["tenants"]:
        tenant["workerNetwork"] = "shared"  # the tenants 4dc9ef2 created
    return config


def test_a_state_of_this_platform_with_its_config_has_nothing_to_say():
    assert upgrade_check.problems(export_of("4dc9ef2", "dev"), parse_config(shared(dev_stack_config()))) == (
        [], [])


def test_a_state_written_before_protection_is_refused_naming_the_way_out():
    """What a review found: today's program planned a delete-first replacement of the kind cluster
    and both control planes for such a state, with no refusal."""
    fatal, _ = upgrade_check.problems(export_of("4dc9ef2", "dev", protect=False),
                                      parse_config(shared(dev_stack_config())))
    assert len(fatal) == 1
    assert "management-kind, tenant-a-control-plane, tenant-b-control-plane unprotected" in fatal[0]
    assert "make down with the release that deployed it" in fatal[0]


def test_a_changed_create_only_setting_is_named_with_both_values_and_the_way_out():
    config = shared(dev_stack_config())
    config["management"]["kamajiEtcdReplicas"] = 1
    _, refused = upgrade_check.problems(export_of("4dc9ef2", "dev"), parse_config(config))
    assert refused == [
        "management.kamajiEtcdReplicas is '1' in the config, but the running platform was created with '3', "
        "and it cannot change on a running platform (the engine refuses it at "
        "management-create-only-kamajiEtcdReplicas; do not remove `protect`, which would let it destroy "
        "what the setting guards). The way out: set the old value back, or rebuild the platform with "
        "the new one: make down, then make up (every tenant starts empty)."]


def test_a_tenant_of_the_shared_network_left_at_the_default_is_named():
    _, refused = upgrade_check.problems(export_of("4dc9ef2", "dev"), parse_config(dev_stack_config()))
    assert [m.split(" is ", 1)[0] for m in refused] == ["tenants[name=tenant-a].addressBlock",
                                                        "tenants[name=tenant-b].addressBlock"]
    assert "created with '0'" in refused[0] and "'0 own network 172.24.0.0/24'" in refused[0]


def run_check(tmp_path: Path, export: dict, mode: str, config: dict) -> subprocess.CompletedProcess[str]:
    (tmp_path / "export.json").write_text(json.dumps(export))
    stack = {"config": {f"kamaji-hami-platform:{key}": value for key, value in config.items()}}
    (tmp_path / "Pulumi.dev.yaml").write_text(json.dumps(stack))
    stand_in(tmp_path / "bin", "pulumi", f"""#!/bin/sh
[ "$1 $2" = "stack export" ] && exec cat {tmp_path}/export.json
exit 2
""")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run([sys.executable, "-m", "kamaji_hami_platform.tools.upgrade_check", "--stack", "dev",
                           "--mode", mode, "--root", str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_up_stops_and_preview_goes_on_to_show_the_engine_s_refusal_too(tmp_path):
    config = shared(dev_stack_config())
    config["management"]["kamajiEtcdReplicas"] = 1
    up = run_check(tmp_path, export_of("4dc9ef2", "dev"), "up", config)
    assert up.returncode == 1 and "management.kamajiEtcdReplicas is '1'" in up.stderr
    preview = run_check(tmp_path, export_of("4dc9ef2", "dev"), "preview", config)
    assert preview.returncode == 0 and "management.kamajiEtcdReplicas is '1'" in preview.stderr


def test_a_preview_leaves_the_message_to_the_program_once_it_exports_the_values(tmp_path):
    """The program reports a changed setting in the preview itself, from its last outputs
    (create_only_report.py): said once, not twice."""
    config = shared(dev_stack_config())
    config["management"]["kamajiEtcdReplicas"] = 1
    export = export_of("4dc9ef2", "dev")
    export["deployment"]["resources"].append({"urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev",
                                              "type": "pulumi:pulumi:Stack",
                                              "outputs": {"createOnlySettings": {}}})
    preview = run_check(tmp_path, export, "preview", config)
    assert preview.returncode == 0 and preview.stderr == ""
    assert run_check(tmp_path, export, "up", config).returncode == 1


def test_an_unprotected_state_stops_the_preview_too(tmp_path):
    result = run_check(tmp_path, export_of("4dc9ef2", "dev", protect=False), "preview",
                       shared(dev_stack_config()))
    assert result.returncode == 1 and "written before the platform protected" in result.stderr


def test_a_stack_never_deployed_has_nothing_to_say(tmp_path):
    result = run_check(tmp_path, {"version": 3, "deployment": {"manifest": {}}}, "up", dev_stack_config())
    assert result.returncode == 0 and result.stderr == ""


def test_a_stack_of_worker_hosts_has_nothing_to_say_for_its_own_config():
    """A hosts tenant's settings carry no addressBlock, so its guard recorded 0 whatever its
    position (a review found sandbox, the second, reported as changed and `make up` refused)."""
    platform = load_stack_file(ROOT / "examples" / "production" / "Pulumi.prod.yaml")
    for version in ("294ec8a", "4dc9ef2"):
        assert upgrade_check.problems(export_of(version, "production"), platform) == ([], []), version
