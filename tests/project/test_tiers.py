"""A tier that skips proves nothing (tests/tiers.py): with KHP_REQUIRE_TIER=<tier>, as `make sim`,
`make ssh` and `.ci/run` set it, a skip of that tier fails the run, and so does a run that collects
none of its tests; without it the tier skips, saying why. Run for real: pytest on a throwaway test
module with the plugin, and the ssh tier's own fixture logic with a faked non-root user."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import tiers
from tests.ssh import conftest as ssh_conftest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]

FIXTURE_CANNOT_SET_UP = """
import pytest
from tests import tiers

pytestmark = pytest.mark.ssh

@pytest.fixture(scope="session")
def box():
    tiers.unavailable("ssh", "the sandbox needs root")

def test_one(box):
    pass

def test_two(box):
    pass
"""
A_TEST_SKIPS = """
import pytest

pytestmark = pytest.mark.ssh

def test_runs():
    pass

def test_skips():
    pytest.skip("no bastion here")
"""
ALL_PASS = """
import pytest

pytestmark = pytest.mark.ssh

def test_runs():
    pass
"""
NOT_OF_THE_TIER = """
def test_unit():
    pass
"""


def pytest_run(tmp_path: Path, module: str, required: str | None) -> subprocess.CompletedProcess[str]:
    """`pytest -m ssh -rs` on one test module, with the plugin, as `make ssh` runs the tier."""
    (tmp_path / "test_tier.py").write_text(textwrap.dedent(module))
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    ssh: the tier\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(tiers.REQUIRE_TIER, None)
    if required is not None:
        env[tiers.REQUIRE_TIER] = required
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.tiers", "-p", "no:cacheprovider",
                           "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-m", "ssh", "-rs",
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_without_the_variable_a_tier_that_cannot_run_skips_saying_why(tmp_path):
    result = pytest_run(tmp_path, FIXTURE_CANNOT_SET_UP, None)
    assert result.returncode == 0, result.stdout
    assert "2 skipped" in result.stdout and "the sandbox needs root" in result.stdout


def test_with_the_variable_a_tier_that_cannot_run_fails_once_with_its_reason(tmp_path):
    result = pytest_run(tmp_path, FIXTURE_CANNOT_SET_UP, "ssh")
    assert result.returncode == 1
    out = result.stdout + result.stderr
    assert ("KHP_REQUIRE_TIER=ssh: the ssh tier cannot run here: the sandbox needs root. A tier that "
            "skips proves nothing") in out
    assert "make ssh ALLOW_SKIP=1" in out and "skipped" not in result.stdout.splitlines()[-1]


def test_with_the_variable_a_test_that_skips_is_a_failure(tmp_path):
    result = pytest_run(tmp_path, A_TEST_SKIPS, "ssh")
    assert result.returncode == 1
    assert "1 failed, 1 passed" in result.stdout
    assert "KHP_REQUIRE_TIER=ssh: a test of the tier skipped (Skipped: no bastion here)" in result.stdout
    assert pytest_run(tmp_path, A_TEST_SKIPS, None).returncode == 0


def test_with_the_variable_a_run_that_collects_no_test_of_the_tier_fails(tmp_path):
    result = pytest_run(tmp_path, NOT_OF_THE_TIER, "ssh")
    assert result.returncode == 1
    assert "KHP_REQUIRE_TIER=ssh: no test of the ssh tier was collected" in result.stdout + result.stderr


def test_with_the_variable_a_tier_that_runs_in_full_passes(tmp_path):
    result = pytest_run(tmp_path, ALL_PASS, "ssh")
    assert result.returncode == 0, result.stdout
    assert "1 passed" in result.stdout


class TestTheSshTiersFixture:
    """The ssh tier's own fixture logic, without root (a faked effective user)."""

    def test_without_root_it_says_why(self, monkeypatch):
        monkeypatch.setattr(os, "geteuid", lambda: 1000)
        assert "it needs root" in ssh_conftest.missing_prerequisite()

    def test_without_unshare_it_says_why(self, monkeypatch):
        monkeypatch.setattr(os, "geteuid", lambda: 0)
        monkeypatch.setattr(ssh_conftest.shutil, "which", lambda name: None)
        assert "needs unshare" in ssh_conftest.missing_prerequisite()

    def test_as_root_with_unshare_nothing_is_missing(self, monkeypatch):
        monkeypatch.setattr(os, "geteuid", lambda: 0)
        monkeypatch.setattr(ssh_conftest.shutil, "which", lambda name: f"/usr/bin/{name}")
        assert ssh_conftest.missing_prerequisite() is None

    def test_required_it_ends_the_run_not_a_skip(self, monkeypatch):
        monkeypatch.setattr(os, "geteuid", lambda: 1000)
        monkeypatch.setenv(tiers.REQUIRE_TIER, "ssh")
        with pytest.raises(pytest.exit.Exception) as ended:
            tiers.unavailable("ssh", ssh_conftest.missing_prerequisite())
        assert ended.value.returncode == 1 and "it needs root" in str(ended.value)
        monkeypatch.delenv(tiers.REQUIRE_TIER)
        with pytest.raises(pytest.skip.Exception, match="it needs root"):
            tiers.unavailable("ssh", ssh_conftest.missing_prerequisite())


def ssh_tier_as_another_user(required: str | None) -> subprocess.CompletedProcess[str]:
    """The real ssh tier, as `make ssh` runs it, by a user who is not root (geteuid faked)."""
    env = {key: value for key, value in os.environ.items() if key != tiers.REQUIRE_TIER}
    if required is not None:
        env[tiers.REQUIRE_TIER] = required
    run = ("import os, sys, pytest; os.geteuid = lambda: 1000; "
           "sys.exit(pytest.main(['-m', 'ssh', '-rs', '-q', 'tests/ssh']))")
    return subprocess.run([sys.executable, "-c", run], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_ssh_tier_without_root_skips_only_when_allowed():
    allowed = ssh_tier_as_another_user(None)
    assert allowed.returncode == 0, allowed.stdout
    assert "skipped" in allowed.stdout.splitlines()[-1] and "it needs root" in allowed.stdout
    required = ssh_tier_as_another_user("ssh")
    assert required.returncode == 1
    assert "KHP_REQUIRE_TIER=ssh: the ssh tier cannot run here: the ssh tier runs sshd in a mount " \
           "namespace" in required.stdout + required.stderr
    assert "sudo make ssh" in required.stdout + required.stderr


def test_the_sim_tier_without_its_toolchain_skips_only_when_allowed(monkeypatch):
    from tests.sim import cluster

    def no_go() -> Path:
        raise RuntimeError("toolchain build failed:\ngo: command not found")

    monkeypatch.setattr(cluster, "toolchain", no_go)
    monkeypatch.delenv(tiers.REQUIRE_TIER, raising=False)
    with pytest.raises(pytest.skip.Exception, match="sim toolchain is not available here: toolchain build"):
        cluster.toolchain_or_skip()
    monkeypatch.setenv(tiers.REQUIRE_TIER, "sim")
    with pytest.raises(pytest.exit.Exception, match="KHP_REQUIRE_TIER=sim: the sim tier cannot run here"):
        cluster.toolchain_or_skip()


def live_tier_as_another_user(required: str | None) -> subprocess.CompletedProcess[str]:
    """The real live tier, as `make live-engine-test` runs it, by a user who is not root."""
    env = {key: value for key, value in os.environ.items() if key != tiers.REQUIRE_TIER}
    if required is not None:
        env[tiers.REQUIRE_TIER] = required
    run = ("import os, sys, pytest; os.geteuid = lambda: 1000; "
           "sys.exit(pytest.main(['-m', 'live', '-rs', '-q', 'tests/live']))")
    return subprocess.run([sys.executable, "-c", run], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_live_tier_without_root_skips_only_when_allowed():
    allowed = live_tier_as_another_user(None)
    assert allowed.returncode == 0, allowed.stdout
    # Every test of the tier skips (however many there are), none runs: "<n> skipped in <t>s".
    assert re.fullmatch(r"\d+ skipped in [\d.]+s", allowed.stdout.splitlines()[-1]), allowed.stdout
    assert "it needs root" in allowed.stdout
    required = live_tier_as_another_user("live")
    assert required.returncode == 1
    assert "KHP_REQUIRE_TIER=live: the live tier cannot run here: the live engine runs dockerd in a " \
           "network namespace" in required.stdout + required.stderr
    assert "sudo make live-engine-test" in required.stdout + required.stderr
