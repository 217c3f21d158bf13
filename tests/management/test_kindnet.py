"""kindnet in the management cluster loses kind v0.31.0's limits (kamaji_hami_platform/management/kindnet.py),
run against the stand-in docker playing the kind node."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management import kindnet as management_kindnet
from tests.standins import docker_calls as calls
from tests.standins import run_script

pytestmark = pytest.mark.unit



def run(state: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """The script against a running kind node `kamaji-control-plane`."""
    (state / "containers").mkdir(exist_ok=True)
    (state / "containers" / "kamaji-control-plane").write_text("kamaji\n")
    return run_script(management_kindnet.remove_limits_script(ManagementConfig()), shell="sh",
                      docker_state=state, env=extra)


def test_the_limits_are_removed_and_the_pods_rolled(tmp_path):
    result = run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "kindnet limits removed" in result.stdout
    (patch,) = [c for c in calls(tmp_path) if " patch daemonset kindnet " in c]
    assert patch.startswith("exec kamaji-control-plane kubectl --kubeconfig /etc/kubernetes/admin.conf")
    assert '"path": "/spec/template/spec/containers/0/resources/limits"' in patch
    assert any(" rollout status daemonset kindnet " in c for c in calls(tmp_path))


def test_a_second_run_changes_nothing(tmp_path):
    assert run(tmp_path).returncode == 0
    again = run(tmp_path)
    assert again.returncode == 0 and "runs without limits" in again.stdout
    assert sum(" patch " in c for c in calls(tmp_path)) == 1


def test_another_kindnet_is_left_alone_and_named(tmp_path):
    result = run(tmp_path, FAKE_KINDNET_CONTAINER="cilium-agent")
    assert result.returncode == 1
    assert "found 'cilium-agent'" in result.stderr and "nothing changed" in result.stderr
    assert not any(" patch " in c for c in calls(tmp_path))
