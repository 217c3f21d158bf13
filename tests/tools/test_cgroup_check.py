"""`make up` stops before anything is created on a cgroup v1 Docker host unless the stack sets
`management.failCgroupV1: false`; `make preview` says what it found and goes on. Run as the
Makefile runs it, with a stand-in `docker` that reports a cgroup version (or does not answer)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.standins import stand_in

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def run_check(tmp_path: Path, docker_body: str, mode: str, fail_cgroup_v1: bool | None = None,
              ) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    if fail_cgroup_v1 is not None:
        stack["config"]["kamaji-hami-platform:management"]["failCgroupV1"] = fail_cgroup_v1
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack))
    tools = tmp_path / "bin"
    stand_in(tools, "docker", f"#!/bin/sh\n{docker_body}\n")
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "kamaji_hami_platform.tools.cgroup_check", "--stack", "dev",
                           "--mode", mode, "--root", str(project)], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_up_stops_on_a_cgroup_v1_docker_host_naming_the_setting(tmp_path):
    result = run_check(tmp_path, 'echo 1', "up")
    assert result.returncode == 1
    assert result.stderr.startswith("error: the Docker host runs cgroup v1 (docker info: CgroupVersion 1)")
    assert "set management.failCgroupV1: false in Pulumi.dev.yaml" in result.stderr
    assert "nothing has been created" in result.stderr


def test_preview_warns_and_goes_on(tmp_path):
    result = run_check(tmp_path, 'echo 1', "preview")
    assert result.returncode == 0
    assert result.stderr.startswith("warning: the Docker host runs cgroup v1")


def test_with_the_setting_up_goes_on_and_says_so(tmp_path):
    result = run_check(tmp_path, 'echo 1', "up", fail_cgroup_v1=False)
    assert result.returncode == 0
    assert result.stderr == ("note: the Docker host runs cgroup v1; management.failCgroupV1 is false, so "
                             "the platform's kubelets start there (cgroup v1 is deprecated in Kubernetes "
                             "1.35)\n")


@pytest.mark.parametrize("docker_body", ['echo 2', 'echo "Cannot connect to the Docker daemon" >&2; exit 1'])
def test_cgroup_v2_or_no_answer_is_no_finding(tmp_path, docker_body):
    """No answer: `make up` checked Docker before (check-tools), and preview needs none."""
    result = run_check(tmp_path, docker_body, "up")
    assert (result.returncode, result.stderr) == (0, "")


def test_it_asks_docker_for_the_cgroup_version(tmp_path):
    log = tmp_path / "docker.args"
    run_check(tmp_path, f'echo "$@" > {log}; echo 2', "up")
    assert log.read_text() == "info --format {{.CgroupVersion}}\n"
