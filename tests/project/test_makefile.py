"""Makefile targets that guard a real run, exercised with stand-in tools on PATH."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform import versions
from tests.standins import stand_in

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def make(target: str, tools: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
    return subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), target, *args], env=env,
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    for tool in ("docker", "pulumi"):
        fake_tool(tmp_path, tool, "exit 0")
    return tmp_path


def fake_tool(tools: Path, name: str, script: str) -> None:
    stand_in(tools, name, f"#!/bin/sh\n{script}\n")


def fake_kind(tools: Path, version: str) -> None:
    fake_tool(tools, "kind", f'echo "kind {version} go1.25.5 linux/amd64"')


def test_up_warns_with_the_fix_when_kind_is_another_release(tools):
    fake_kind(tools, "v0.29.0")
    result = make("check-kind-version", tools)
    assert result.returncode == 0, result.stderr
    assert f"built by kind {versions.KIND_CLI_VERSION}" in result.stdout
    assert f"go install sigs.k8s.io/kind@{versions.KIND_CLI_VERSION}" in result.stdout


def test_no_warning_with_the_pinned_kind(tools):
    fake_kind(tools, versions.KIND_CLI_VERSION)
    result = make("check-kind-version", tools)
    assert result.returncode == 0 and "warning" not in result.stdout


@pytest.mark.parametrize("target, engine", [("preview", "pulumi preview"), ("up", "pulumi up")])
def test_preview_and_up_fetch_the_verified_kamaji_chart_first(tools, target, engine):
    """A deployed stack's Kamaji release loads its local chart in every Check (preview and up)."""
    lines = make(target, tools, "-n", "STACK=lab").stdout.splitlines()
    chart_module = "-m kamaji_hami_platform.management.kamaji_chart"
    fetch = next(i for i, line in enumerate(lines) if chart_module in line)
    assert fetch < next(i for i, line in enumerate(lines) if line.startswith(PRIVATE + engine))


# How the Makefile runs pulumi up, preview and destroy: in a TMPDIR of its own (tools/private_tmp.py).
PRIVATE = "python3 kamaji_hami_platform/tools/private_tmp.py "


def fake_pulumi(tools: Path, version: str) -> None:
    fake_tool(tools, "pulumi", f'[ "$1" = version ] && echo "v{version}"\nexit 0')


def test_an_old_pulumi_cli_is_refused_naming_the_version_needed(tools):
    """Before 3.207 the engine ignores replace_with: a new worker would come up without its GPUs."""
    fake_pulumi(tools, "3.200.0")
    result = make("check-pulumi", tools)
    assert result.returncode != 0
    assert f"older than {versions.PULUMI_CLI_MIN_VERSION}" in result.stdout


@pytest.mark.parametrize("version", [versions.PULUMI_CLI_MIN_VERSION, "3.300.1"])
def test_a_recent_pulumi_cli_passes(tools, version):
    fake_pulumi(tools, version)
    assert make("check-pulumi", tools).returncode == 0


def test_the_cli_minimum_is_the_sdk_pin():
    pins = dict(line.split("==") for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert pins["pulumi"] == versions.PULUMI_CLI_MIN_VERSION


def test_down_destroys_protected_resources_on_purpose_without_draining(tools, tmp_path):
    """The kind cluster, control planes and guards are protected; `make down` is the one place
    that removes them all (pulumi >= 3.256 `--ignore-protect`), and nothing is left to drain to.
    Run for real with stand-in docker, kind and pulumi (which records what it is asked)."""
    fake_tool(tools, "pulumi", f"""case "$1" in
  version) echo "v{versions.PULUMI_CLI_MIN_VERSION}" ;;
  destroy) echo "$* KHP_SKIP_DRAIN=${{KHP_SKIP_DRAIN:-}} TIMEOUT=${{PULUMI_K8S_CLIENT_TIMEOUT:-}}" \
             >> {tmp_path}/destroy ;;
esac
exit 0""")
    fake_kind(tools, versions.KIND_CLI_VERSION)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()  # newer than requirements.txt: make keeps it
    env_backend = f"PULUMI_BACKEND_URL=file://{tmp_path}/state"
    result = make("down", tools, "STACK=lab", f"VENV={venv}", env_backend)
    assert result.returncode == 0, result.stdout + result.stderr
    destroy = (tmp_path / "destroy").read_text().split()
    assert destroy[:2] == ["destroy", "--yes"] and "--ignore-protect" in destroy
    assert destroy[destroy.index("--stack") + 1] == "lab" and destroy[-2] == "KHP_SKIP_DRAIN=1"
    assert destroy[-1] == "TIMEOUT=30", "a lost cluster's providers configure within a bound"


def test_unprotect_tenant_names_the_tenant_or_says_how(tools):
    result = make("unprotect-tenant", tools, "-n", "STACK=lab", "TENANT=tenant-b")
    assert "-m kamaji_hami_platform.tools.protection --stack lab --tenant tenant-b" in result.stdout
    usage = make("unprotect-tenant", tools, "STACK=lab")
    assert usage.returncode != 0 and "usage: make unprotect-tenant TENANT=<name>" in usage.stdout


@pytest.mark.parametrize("target, engine", [("preview", "pulumi preview"), ("up", "pulumi up")])
def test_a_stack_marked_production_runs_the_pack_with_its_config(tools, target, engine):
    """policy/config/<stack>.json marks a stack production: its advisory guardrails become mandatory."""
    def command(stack: str) -> str:
        lines = make(target, tools, "-n", f"STACK={stack}").stdout.splitlines()
        return next(line for line in lines if line.startswith(PRIVATE + engine))

    assert command("prod").endswith("--policy-pack policy --policy-pack-config policy/config/prod.json")
    assert command("lab").rstrip().endswith("--policy-pack policy")
    assert (ROOT / "policy" / "config" / "prod.json").exists()


def planned(*args: str, env: dict[str, str] | None = None) -> list[str]:
    """The commands `make -n` would run."""
    result = subprocess.run(["make", "--no-print-directory", "-n", "-C", str(ROOT), *args],
                            env={**os.environ, **(env or {})}, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.parametrize("tier", ["engine", "sim", "ssh"])
def test_a_tier_requires_itself_and_lists_its_skips(tier):
    """A tier that skips proves nothing: make sets KHP_REQUIRE_TIER (tests/tiers.py), and -rs lists
    the reason of any skip that ALLOW_SKIP=1 lets through."""
    (run,) = [line for line in planned(tier) if " -m pytest " in line]
    assert run.startswith(f"KHP_REQUIRE_TIER={tier} ") and f"-m {tier} -rs" in run
    (allowed,) = [line for line in planned(tier, "ALLOW_SKIP=1") if " -m pytest " in line]
    assert allowed.startswith("KHP_REQUIRE_TIER= ") and "-rs" in allowed


def test_the_sim_tier_builds_its_programs_before_its_tests():
    """`make sim` builds the Kubernetes programs and HAMi's scheduler (from its upstream archive)
    before pytest runs, so a failed build fails the tier with the build's own error."""
    plan = planned("sim")
    run = next(index for index, line in enumerate(plan) if " -m pytest " in line)
    assert "bash toolchain/build.sh >/dev/null" in plan[:run]
    assert "bash toolchain/hami.sh >/dev/null" in plan[:run]


def test_the_unit_suite_requires_no_tier():
    (run,) = [line for line in planned("test", env={"KHP_REQUIRE_TIER": "ssh"}) if " -m pytest " in line]
    assert run.startswith("KHP_REQUIRE_TIER= ")


def test_ci_requires_every_tier_whatever_the_environment_says(tmp_path):
    """.ci/run overrides an ALLOW_SKIP of the environment with a make argument: run with a stand-in
    make that records its arguments, and the real make's plan for the same arguments."""
    fake_tool(tmp_path, "make", f'echo "$*" >> {tmp_path}/calls')
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "ALLOW_SKIP": "1"}
    result = subprocess.run([str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == ["test", "engine ALLOW_SKIP=", "sim ALLOW_SKIP=", "ssh ALLOW_SKIP=",
                     "live-engine-test ALLOW_SKIP=", "live-cluster-test ALLOW_SKIP=",
                     "live-images-test ALLOW_SKIP="]
    tiers_of = {"engine": "engine", "sim": "sim", "ssh": "ssh", "live-engine-test": "live",
                "live-cluster-test": "live", "live-images-test": "live"}
    for call in calls[1:]:
        target, *args = call.split()
        (run,) = [line for line in planned(target, *args, env={"ALLOW_SKIP": "1"}) if " -m pytest " in line]
        assert run.startswith(f"KHP_REQUIRE_TIER={tiers_of[target]} ")
