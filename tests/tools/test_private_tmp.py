"""pulumi runs with a TMPDIR of its own, removed when it ends (kamaji_hami_platform/tools/
private_tmp.py), so the kubeconfigs pulumi-kubernetes writes there do not outlive the run. Run as
the Makefile runs it, with a stand-in `pulumi` that writes a kubeconfig where the provider does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.standins import stand_in

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
# What pulumi-kubernetes does on Configure (provider v4 pkg/provider/util.go: os.CreateTemp("",
# "kubeconfig") in $TMPDIR), then whatever the test asks of the run.
PULUMI = """#!/bin/sh
umask 077
printf 'users: [{name: admin, user: {token: secret}}]\\n' > "$(mktemp "${TMPDIR:-/tmp}/kubeconfigXXXXXX")"
echo "$TMPDIR" > "$RECORD"
eval "$THEN"
"""


def run(tmp_path: Path, then: str = "exit 0", **popen: object) -> subprocess.Popen[str]:
    tools = tmp_path / "bin"
    stand_in(tools, "pulumi", PULUMI)
    parent = tmp_path / "tmp"
    parent.mkdir(exist_ok=True)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(parent),
           "RECORD": str(tmp_path / "record"), "THEN": then, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "kamaji_hami_platform.tools.private_tmp", "pulumi", "up"],
                            env=env, text=True, **popen)


def test_the_run_s_kubeconfig_goes_with_its_private_folder(tmp_path):
    assert run(tmp_path).wait(timeout=60) == 0
    private = Path((tmp_path / "record").read_text().strip())
    assert private.parent == tmp_path / "tmp" and private.name.startswith("khp-pulumi-")
    assert not private.exists()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_failing_run_keeps_its_status_and_leaves_nothing(tmp_path):
    assert run(tmp_path, "exit 7").wait(timeout=60) == 7
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_terminated_run_is_passed_the_signal_and_leaves_nothing(tmp_path):
    started = tmp_path / "started"
    process = run(tmp_path, f"trap 'exit 143' TERM; touch {started}; while :; do sleep 0.1; done")
    for _ in range(100):
        if started.exists():
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 143
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_makefile_runs_every_pulumi_up_preview_and_destroy_through_it():
    """`make -n` prints what `up`, `preview` and `down` would run (prerequisites included)."""
    printed = subprocess.run(["make", "-n", "-B", "up", "preview", "down", "PYTHON=python3"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, check=True).stdout
    runs = [line for line in printed.splitlines()
            if any(f"pulumi {verb} " in line for verb in ("up", "preview", "destroy", "refresh"))]
    assert len(runs) == 3, printed
    assert all("kamaji_hami_platform/tools/private_tmp.py pulumi " in line for line in runs), runs
