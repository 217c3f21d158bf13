"""The worker scripts, run for real against a stand-in docker CLI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components import node_join
from components.config import ManagementConfig, parse_config

pytestmark = pytest.mark.unit

FAKES = Path(__file__).parent / "fakes"
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- user: {token: s3cret-admin-token}\n"


@pytest.fixture
def worker(dev_config) -> node_join.Worker:
    tenant = parse_config(dev_config).tenants[0]
    return node_join.Worker(tenant, 0, ManagementConfig())


def run(script: str, state: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{FAKES}:{os.environ['PATH']}", "FAKE_DOCKER_STATE": str(state),
           node_join.KUBECONFIG_ENV: KUBECONFIG, **extra_env}
    return subprocess.run(["/bin/bash", "-c", script], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def calls(state: Path) -> list[str]:
    return (state / "calls").read_text().splitlines()


class TestCreate:
    def test_starts_a_privileged_kindest_node_on_the_kind_network(self, worker, tmp_path):
        result = run(node_join.create_script(worker), tmp_path)
        assert result.returncode == 0, result.stderr
        (docker_run,) = [c for c in calls(tmp_path) if c.startswith("run ")]
        assert "--name tenant-a-worker-0 --hostname tenant-a-worker-0" in docker_run
        assert "--network kind" in docker_run and "--privileged" in docker_run
        assert "--volume /lib/modules:/lib/modules:ro" in docker_run
        assert docker_run.endswith("kindest/node:v1.35.0")
        assert "joined tenant-a-worker-0" in result.stdout

    def test_kubeconfig_enters_the_container_through_stdin_only(self, worker, tmp_path):
        run(node_join.create_script(worker), tmp_path)
        assert (tmp_path / "stdin" / "tenant-a-worker-0").read_text() == KUBECONFIG
        assert not any("s3cret" in call for call in calls(tmp_path)), "kubeconfig on a command line"

    def test_creating_twice_is_harmless(self, worker, tmp_path):
        first = run(node_join.create_script(worker), tmp_path)
        second = run(node_join.create_script(worker), tmp_path)
        assert first.returncode == second.returncode == 0
        assert sum(c.startswith("run ") for c in calls(tmp_path)) == 1
        assert sum(c.startswith("exec tenant-a-worker-0 bash -c") for c in calls(tmp_path)) == 1
        assert "already joined" in second.stdout

    def test_failed_join_reports_kubeadm_error_redacted_and_removes_the_container(
            self, worker, tmp_path):
        result = run(node_join.create_script(worker), tmp_path, FAKE_JOIN_FAIL="1")
        assert result.returncode != 0
        assert "kubeadm join failed" in result.stderr
        assert "<redacted-token>" in result.stderr and "sha256:<redacted>" in result.stderr
        assert "abcdef.0123456789abcdef" not in result.stderr + result.stdout
        assert not (tmp_path / "containers" / "tenant-a-worker-0").exists()
        assert calls(tmp_path)[-1] == "rm -f tenant-a-worker-0"

    def test_rerun_after_a_failed_join_starts_clean(self, worker, tmp_path):
        run(node_join.create_script(worker), tmp_path, FAKE_JOIN_FAIL="1")
        assert run(node_join.create_script(worker), tmp_path).returncode == 0
        assert sum(c.startswith("run ") for c in calls(tmp_path)) == 2

    def test_join_uses_a_short_lived_token_and_deletes_it(self, worker):
        script = node_join.create_script(worker)
        assert "--ttl 10m" in script and "kubeadm token delete" in script
        assert "rm -f /etc/kubernetes/tenant-admin.conf" in script
        assert "swapoff" not in script, "never turn off the host's swap"


class TestDelete:
    def test_drains_deletes_node_and_removes_container(self, worker, tmp_path):
        run(node_join.create_script(worker), tmp_path)
        result = run(node_join.delete_script(worker), tmp_path)
        assert result.returncode == 0, result.stderr
        inner = [c for c in calls(tmp_path) if c.startswith("exec tenant-a-worker-0 bash -c")][-1]
        assert "drain tenant-a-worker-0" in inner and "delete node tenant-a-worker-0" in inner
        assert not (tmp_path / "containers" / "tenant-a-worker-0").exists()

    def test_tolerates_a_container_that_is_already_gone(self, worker, tmp_path):
        result = run(node_join.delete_script(worker), tmp_path)
        assert result.returncode == 0
        assert "already gone" in result.stdout

    def test_removes_the_container_even_when_the_tenant_api_is_down(self, worker, tmp_path):
        run(node_join.create_script(worker), tmp_path)
        result = run(node_join.delete_script(worker), tmp_path, FAKE_API_DOWN="1")
        assert result.returncode == 0
        assert "could not remove node" in result.stderr
        assert not (tmp_path / "containers" / "tenant-a-worker-0").exists()


def test_scripts_hold_no_secret_only_the_variable_name(worker):
    for script in (node_join.create_script(worker), node_join.delete_script(worker)):
        assert f"${node_join.KUBECONFIG_ENV}" in script
        assert "set -x" not in script
