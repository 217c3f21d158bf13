"""The worker scripts, run for real against a stand-in docker CLI."""

from __future__ import annotations

import base64
import subprocess
import time
from pathlib import Path

import pytest

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ManagementConfig, parse_config
from kamaji_hami_platform.tenant import node_join
from tests.standins import docker_calls as calls
from tests.standins import run_script

pytestmark = pytest.mark.unit

KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- user: {token: s3cret-admin-token}\n"


@pytest.fixture
def worker(dev_config) -> node_join.Worker:
    tenant = parse_config(dev_config).tenants[0]
    return node_join.Worker(tenant, 0, ManagementConfig())


def run(script: str, state: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return run_script(script, docker_state=state, env={node_join.KUBECONFIG_ENV: KUBECONFIG, **extra_env})


class TestCreate:
    def test_starts_a_privileged_kindest_node_on_the_tenant_s_own_network(self, worker, tmp_path):
        result = run(node_join.create_script(worker), tmp_path)
        assert result.returncode == 0, result.stderr
        (docker_run,) = [c for c in calls(tmp_path) if c.startswith("run ")]
        assert "--name tenant-a-worker-0 --hostname tenant-a-worker-0" in docker_run
        assert "--network kamaji-hami-tenant-a --ip 172.24.0.16 " in docker_run
        assert "--privileged" in docker_run
        assert "--volume /lib/modules:/lib/modules:ro" in docker_run
        assert docker_run.endswith(f"kindest/node:v1.35.0@{versions.KIND_NODE_DIGESTS['v1.35.0']}")
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
        assert calls(tmp_path)[-1] == "rm -f -v tenant-a-worker-0", "the /var volume goes too"

    def test_rerun_after_a_failed_join_starts_clean(self, worker, tmp_path):
        run(node_join.create_script(worker), tmp_path, FAKE_JOIN_FAIL="1")
        assert run(node_join.create_script(worker), tmp_path).returncode == 0
        assert sum(c.startswith("run ") for c in calls(tmp_path)) == 2

    def test_join_uses_a_short_lived_token_and_deletes_it(self, worker):
        script = node_join.create_script(worker)
        assert "--ttl 10m" in script and "kubeadm token delete" in script
        assert "rm -f /etc/kubernetes/tenant-admin.conf" in script
        assert "swapoff" not in script, "never turn off the host's swap"


class TestWorkerImage:
    def test_the_image_is_pulled_once_and_found_when_the_create_runs_again(self, tmp_path):
        """An update runs the create again (issue 38, item 7): a present image is not pulled again
        (an air-gapped host that mirrored it keeps working)."""
        image = "kindest/node:v1.35.0"
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        (bin_dir / "docker").write_text(f"""#!/bin/sh
printf '%s\\n' "$*" >> {tmp_path}/calls
case "$1 $2" in
  "image inspect") [ -f {tmp_path}/pulled ] ;;
  "pull {image}") touch {tmp_path}/pulled ;;
esac
""")
        (bin_dir / "docker").chmod(0o755)
        first, again = (run_script(node_join.image_pull_script(image), shell="sh", tools=(bin_dir,))
                        for _ in range(2))
        assert first.returncode == again.returncode == 0, first.stderr + again.stderr
        assert again.stdout.strip() == f"image {image} present"
        assert [c for c in calls(tmp_path) if not c.startswith("image inspect")] == [f"pull {image}"]


class TestOtherStacksContainers:
    """Two stacks on one host whose tenants share a name must not adopt or delete each other's
    workers (the lifecycle run beside the dev stack)."""

    @pytest.fixture
    def foreign(self, worker, tmp_path):
        other = node_join.Worker(worker.tenant, 0, ManagementConfig(name="other-stack"))
        assert run(node_join.create_script(other), tmp_path).returncode == 0
        return tmp_path

    def test_create_refuses_a_container_of_another_cluster_and_leaves_it(self, worker, foreign):
        result = run(node_join.create_script(worker), foreign)
        assert result.returncode == 1
        assert "belongs to kind cluster 'other-stack'" in result.stderr
        assert (foreign / "containers" / "tenant-a-worker-0").exists()
        assert not any(c.startswith("rm") for c in calls(foreign))

    def test_delete_leaves_a_container_of_another_cluster_alone(self, worker, foreign):
        before = len(calls(foreign))
        result = run(node_join.delete_script(worker), foreign)
        assert result.returncode == 0
        assert "left alone" in result.stderr
        assert (foreign / "containers" / "tenant-a-worker-0").exists()
        assert [" ".join(c.split()[:2]) for c in calls(foreign)[before:]] == ["container inspect"]


def kubeconfig_with_ca(pem: str) -> str:
    data = base64.b64encode(pem.encode()).decode()
    return ("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"
            f"    certificate-authority-data: {data}\n    server: https://172.18.255.201:6443\n"
            "  name: tenant\nusers:\n- user: {token: s3cret-admin-token}\n")


CA_A = "-----BEGIN CERTIFICATE-----\nQUFB\nQUFB\n-----END CERTIFICATE-----\n"
CA_B = "-----BEGIN CERTIFICATE-----\nQkJC\nQkJC\n-----END CERTIFICATE-----\n"


class TestReplacedControlPlane:
    """A recreated TenantControlPlane has a new CA: its workers must join it, not stay
    "already joined" to the old one; workers of an unchanged control plane stay put."""

    def test_worker_joined_to_another_control_plane_is_created_again_and_joins(self, worker, tmp_path):
        """Created again, not `kubeadm reset`: a reset leaves the old cluster's CNI config and
        iptables rules on the node."""
        assert run(node_join.create_script(worker), tmp_path,
                   **{node_join.KUBECONFIG_ENV: kubeconfig_with_ca(CA_A)}).returncode == 0
        result = run(node_join.create_script(worker), tmp_path,
                     **{node_join.KUBECONFIG_ENV: kubeconfig_with_ca(CA_B)})
        assert result.returncode == 0, result.stderr
        assert "creating it again" in result.stdout and "joined tenant-a-worker-0" in result.stdout
        assert "rm -f -v tenant-a-worker-0" in calls(tmp_path)
        assert sum(c.startswith("run ") for c in calls(tmp_path)) == 2
        assert not any("reset" in c for c in calls(tmp_path))
        assert (tmp_path / "ca" / "tenant-a-worker-0").read_text() == CA_B

    def test_worker_of_the_same_control_plane_is_left_alone(self, worker, tmp_path):
        kubeconfig = {node_join.KUBECONFIG_ENV: kubeconfig_with_ca(CA_A)}
        run(node_join.create_script(worker), tmp_path, **kubeconfig)
        result = run(node_join.create_script(worker), tmp_path, **kubeconfig)
        assert "already joined" in result.stdout
        assert not any("reset" in call for call in calls(tmp_path))
        assert sum(c.startswith("exec tenant-a-worker-0 bash -c") for c in calls(tmp_path)) == 1


def test_token_command_stderr_never_becomes_part_of_the_join_command(worker, tmp_path):
    """The stand-in kubeadm warns on stderr while printing the join command on stdout (as
    kubeadm does on, e.g., a deprecated flag): only stdout becomes the join command."""
    assert run(node_join.create_script(worker), tmp_path).returncode == 0
    (join,) = [c for c in calls(tmp_path) if c.startswith("kubeadm join")]
    assert join.startswith("kubeadm join 172.18.255.201:6443 --token abcdef.0123456789abcdef "
                           "--discovery-token-ca-cert-hash sha256:")
    assert "--node-name tenant-a-worker-0" in join and "W1202" not in join


class TestReadiness:
    """The next worker of a rolling replacement starts only once this one's Node is Ready."""

    def test_create_returns_only_once_the_node_is_ready(self, worker, tmp_path):
        result = run(node_join.create_script(worker), tmp_path)
        assert result.returncode == 0, result.stderr
        assert "node tenant-a-worker-0 is Ready" in result.stdout
        ready_checks = [c for c in calls(tmp_path) if c.startswith("kubectl") and "Ready" in c]
        assert ready_checks and calls(tmp_path).index(ready_checks[0]) > \
            next(i for i, c in enumerate(calls(tmp_path)) if c.startswith("kubeadm join"))

    def test_a_node_that_never_gets_ready_fails_and_leaves_nothing_behind(self, worker, tmp_path,
                                                                           monkeypatch):
        monkeypatch.setattr(node_join, "NODE_READY_WAIT", (2, 0))
        result = run(node_join.create_script(worker), tmp_path, FAKE_NODE_NOT_READY="1")
        assert result.returncode == 1
        assert "joined but was not Ready within 0s" in result.stderr
        assert "NetworkUnavailable=True" in result.stderr, "the node's conditions say why"
        assert not (tmp_path / "nodes" / "tenant-a-worker-0").exists(), "deleted from the tenant"
        assert not (tmp_path / "containers" / "tenant-a-worker-0").exists(), "container removed"


class TestDelete:
    @pytest.fixture
    def joined(self, worker, tmp_path) -> Path:
        assert run(node_join.create_script(worker), tmp_path).returncode == 0
        return tmp_path

    def test_drains_deletes_node_and_removes_container(self, worker, joined):
        result = run(node_join.delete_script(worker), joined)
        assert result.returncode == 0, result.stderr
        removal = [verb for c in calls(joined) for verb in ("drain", "delete node")
                   if c.startswith("kubectl") and f" {verb} tenant-a-worker-0 " in c]
        assert removal == ["drain", "delete node"]
        assert "rm -f -v tenant-a-worker-0" in calls(joined), "kind removes volumes too (rm -f -v)"
        assert not (joined / "nodes" / "tenant-a-worker-0").exists()
        assert not (joined / "containers" / "tenant-a-worker-0").exists()

    def test_a_failed_drain_stops_and_keeps_the_node_and_its_container(self, worker, joined):
        """A PodDisruptionBudget that blocks the eviction stops a rolling replacement or a
        scale-down here: nothing is thrown away, and the message says how to go on."""
        result = run(node_join.delete_script(worker), joined, FAKE_DRAIN_FAIL="1")
        assert result.returncode == 1
        assert "the drain failed" in result.stderr and "disruption budget" in result.stderr
        assert f"{node_join.SKIP_DRAIN_ENV}=1" in result.stderr
        assert (joined / "nodes" / "tenant-a-worker-0").exists()
        assert not (joined / "nodes" / "tenant-a-worker-0.cordoned").exists(), "uncordoned again"
        assert (joined / "containers" / "tenant-a-worker-0").exists()
        assert not any(c.startswith("rm ") for c in calls(joined))

    def test_the_leave_drains_and_keeps_the_node_and_its_container(self, worker, joined):
        """`<worker>-leave`'s delete: the drain alone (the worker's delete removes the rest)."""
        result = run(node_join.drain_script(worker), joined)
        assert result.returncode == 0, result.stderr
        assert [c for c in calls(joined) if c.startswith("kubectl") and " drain tenant-a-worker-0 " in c]
        assert not [c for c in calls(joined) if c.startswith("kubectl") and " delete node " in c]
        assert (joined / "nodes" / "tenant-a-worker-0").exists()
        assert (joined / "containers" / "tenant-a-worker-0").exists()

    def test_the_leave_s_failed_drain_stops_before_anything_is_released(self, worker, joined):
        result = run(node_join.drain_script(worker), joined, FAKE_DRAIN_FAIL="1")
        assert result.returncode == 1 and "the drain failed" in result.stderr
        assert "uncordoned again, still registered" in result.stderr
        assert not (joined / "nodes" / "tenant-a-worker-0.cordoned").exists(), "uncordoned again"
        assert (joined / "containers" / "tenant-a-worker-0").exists()

    @pytest.mark.parametrize("status", [124, 137, 126])
    @pytest.mark.parametrize("script", [node_join.delete_script, node_join.drain_script])
    def test_a_drain_whose_docker_exec_timed_out_or_failed_keeps_the_node_and_its_container(
            self, worker, joined, script, status):
        """Issue 38, item 11: a `docker exec` the bounded docker function timed out (124) or killed
        (137), or that failed (126), says nothing of the drain: it is not "API unreachable", and
        the delete stops there, the node and its container kept."""
        result = run(script(worker), joined, FAKE_EXEC_STATUS=str(status))
        assert result.returncode == 1, result.stderr
        assert f"the drain did not finish (docker exec status {status})" in result.stderr
        assert "API unreachable" not in result.stderr
        assert f"{node_join.SKIP_DRAIN_ENV}=1" in result.stderr
        assert (joined / "nodes" / "tenant-a-worker-0").exists()
        assert (joined / "containers" / "tenant-a-worker-0").exists()
        assert not any(c.startswith("rm ") for c in calls(joined))

    def test_the_leave_has_nothing_to_do_for_a_container_gone_or_a_platform_going(self, worker, joined):
        result = run(node_join.drain_script(worker), joined, FAKE_DRAIN_FAIL="1",
                     **{node_join.SKIP_DRAIN_ENV: "1"})
        assert result.returncode == 0 and not [c for c in calls(joined) if " drain " in c]
        assert run(node_join.delete_script(worker), joined, **{node_join.SKIP_DRAIN_ENV: "1"}).returncode == 0
        assert run(node_join.drain_script(worker), joined).returncode == 0

    def test_skip_drain_removes_without_draining(self, worker, joined):
        result = run(node_join.delete_script(worker), joined, FAKE_DRAIN_FAIL="1",
                     **{node_join.SKIP_DRAIN_ENV: "1"})
        assert result.returncode == 0, result.stderr
        assert not any(c.startswith("kubectl") and " drain " in c for c in calls(joined))
        assert not (joined / "nodes" / "tenant-a-worker-0").exists()
        assert not (joined / "containers" / "tenant-a-worker-0").exists()

    def test_a_node_already_gone_from_the_tenant_is_not_drained(self, worker, joined):
        (joined / "nodes" / "tenant-a-worker-0").unlink()
        result = run(node_join.delete_script(worker), joined)
        assert result.returncode == 0, result.stderr
        assert "not in the tenant" in result.stdout
        assert not any(c.startswith("kubectl") and " drain " in c for c in calls(joined))
        assert not (joined / "containers" / "tenant-a-worker-0").exists()

    def test_tolerates_a_container_that_is_already_gone(self, worker, tmp_path):
        result = run(node_join.delete_script(worker), tmp_path)
        assert result.returncode == 0
        assert "already gone" in result.stdout

    def test_removes_the_container_even_when_the_tenant_api_is_down(self, worker, joined):
        result = run(node_join.delete_script(worker), joined, FAKE_API_DOWN="1")
        assert result.returncode == 0
        lookup = [c for c in calls(joined) if c.startswith("kubectl") and " get node " in c][-1]
        assert f"--request-timeout={node_join.API_REQUEST_TIMEOUT}" in lookup, "bounded, not the OS's"
        assert "could not remove node" in result.stderr and "no route to host" in result.stderr
        assert not (joined / "containers" / "tenant-a-worker-0").exists()


    def test_an_api_that_never_answers_holds_the_delete_only_for_the_bound(self, worker, joined,
                                                                            monkeypatch):
        """A lost cluster's API address may drop packets instead of refusing them."""
        monkeypatch.setattr(node_join, "API_CALL_TIMEOUT_SECONDS", 1)
        started = time.monotonic()
        result = run(node_join.delete_script(worker), joined, FAKE_API_BLACKHOLE="1",
                     **{node_join.SKIP_DRAIN_ENV: "1"})
        assert result.returncode == 0, result.stderr
        assert time.monotonic() - started < 20, "bounded by the call timeout, not kubectl's retries"
        assert "could not remove node" in result.stderr
        assert not (joined / "containers" / "tenant-a-worker-0").exists()


def test_scripts_hold_no_secret_only_the_variable_name(worker):
    for script in (node_join.create_script(worker), node_join.delete_script(worker)):
        assert f"${node_join.KUBECONFIG_ENV}" in script
        assert "set -x" not in script


class TestDockerHostAndState:
    def test_a_stopped_worker_is_started_not_thrown_away(self, worker, tmp_path):
        assert run(node_join.create_script(worker), tmp_path).returncode == 0
        (tmp_path / "containers" / "tenant-a-worker-0.stopped").touch()
        result = run(node_join.create_script(worker), tmp_path)
        assert result.returncode == 0, result.stderr
        assert "was stopped; starting it" in result.stdout and "already joined" in result.stdout
        assert "start tenant-a-worker-0" in calls(tmp_path)
        assert sum(c.startswith("run ") for c in calls(tmp_path)) == 1

    def test_an_update_reruns_create_and_a_joined_running_worker_is_left_as_it_is(self, worker, tmp_path):
        """pulumi-command has no update script: an update (a release that changes a worker's
        delete, as issue 38's does) runs the create again. On a running worker joined to the
        same control plane it must change nothing: no second container, no drain, no removal,
        no new join (issue 38, item 7)."""
        assert run(node_join.create_script(worker), tmp_path).returncode == 0
        before = len(calls(tmp_path))
        result = run(node_join.create_script(worker), tmp_path)
        assert result.returncode == 0, result.stderr
        again = calls(tmp_path)[before:]
        assert "already joined" in result.stdout
        assert not [c for c in again if c.startswith(("run ", "rm ", "start ", "stop "))], again
        assert not [c for c in again if "kubeadm join" in c or "kubeadm reset" in c or " drain " in c], again
        assert (tmp_path / "containers" / "tenant-a-worker-0").exists()
        assert (tmp_path / "joined" / "tenant-a-worker-0").exists()

    def test_a_joined_worker_that_does_not_start_is_kept_with_its_volume(self, worker, tmp_path):
        """Its /var volume holds the node's data: never removed on a start failure (issue 30.4);
        the message says how to recover."""
        assert run(node_join.create_script(worker), tmp_path).returncode == 0
        (tmp_path / "containers" / "tenant-a-worker-0.stopped").touch()
        result = run(node_join.create_script(worker), tmp_path, FAKE_START_FAIL="1")
        assert result.returncode == 1 and "docker start failed" in result.stderr
        assert "kept with its volume" in result.stderr and "docker start tenant-a-worker-0" in result.stderr
        assert (tmp_path / "containers" / "tenant-a-worker-0").exists()
        assert not [c for c in calls(tmp_path) if c.startswith("rm ")]

    def test_a_joined_worker_whose_ca_cannot_be_read_is_never_taken_for_another_control_planes(
            self, worker, tmp_path):
        """An empty CA read would look like another control plane's and remove the worker."""
        assert run(node_join.create_script(worker), tmp_path).returncode == 0
        result = run(node_join.create_script(worker), tmp_path, FAKE_CA_UNREADABLE="1")
        assert result.returncode == 1 and "cannot read the node's CA" in result.stderr
        assert "kept with its volume" in result.stderr
        assert not [c for c in calls(tmp_path) if c.startswith("rm ")]

    @pytest.mark.parametrize("script", [node_join.create_script, node_join.delete_script])
    def test_a_docker_that_does_not_answer_is_an_error_not_absent(self, worker, tmp_path, script):
        result = run(script(worker), tmp_path, FAKE_DOCKER_DOWN="1")
        assert result.returncode == 1 and "is Docker running?" in result.stderr
        assert "already gone" not in result.stdout

    def test_a_failed_docker_rm_fails_the_delete(self, worker, tmp_path):
        """Pulumi would otherwise forget a container that keeps running, which kind never removes."""
        assert run(node_join.create_script(worker), tmp_path).returncode == 0
        result = run(node_join.delete_script(worker), tmp_path, FAKE_RM_FAIL="1")
        assert result.returncode == 1 and "docker rm failed" in result.stderr
        assert (tmp_path / "containers" / "tenant-a-worker-0").exists()

    def test_a_stopped_worker_is_started_for_its_removal_from_the_tenant(self, worker, tmp_path):
        assert run(node_join.create_script(worker), tmp_path).returncode == 0
        (tmp_path / "containers" / "tenant-a-worker-0.stopped").touch()
        result = run(node_join.delete_script(worker), tmp_path)
        assert result.returncode == 0, result.stderr
        assert not (tmp_path / "nodes" / "tenant-a-worker-0").exists(), "deleted from the tenant"

    def test_the_hosts_flags_and_proxies_reach_docker_run_the_proxies_by_name_only(self, worker, tmp_path):
        result = run(node_join.create_script(worker), tmp_path,
                     KHP_HOST_FLAGS="--volume /dev/mapper:/dev/mapper --userns=host",
                     https_proxy="http://user:s3cret@proxy:3128", NO_PROXY="corp.example")
        assert result.returncode == 0, result.stderr
        (docker_run,) = [c for c in calls(tmp_path) if c.startswith("run ")]
        assert "--volume /dev/mapper:/dev/mapper --userns=host" in docker_run
        assert "-e HTTPS_PROXY" in docker_run and "-e no_proxy" in docker_run
        assert "s3cret" not in docker_run, "a proxy's credentials never on a command line"

    @pytest.mark.parametrize("environment, passed", [
        ({}, []),
        ({"NO_PROXY": "corp.example"}, ["NO_PROXY", "no_proxy"]),
        ({"http_proxy": "http://proxy:3128"}, ["HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"]),
    ])
    def test_proxy_variables_are_passed_as_kind_passes_them(self, worker, tmp_path, monkeypatch,
                                                           environment, passed):
        """kind v0.31.0 providers/common/proxy.go: any one set passes those set, NO_PROXY then
        extended; provision.go passes KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER always."""
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        assert run(node_join.create_script(worker), tmp_path, **environment).returncode == 0
        (docker_run,) = [c for c in calls(tmp_path) if c.startswith("run ")]
        flags = docker_run.split()
        names = [flags[i + 1] for i, flag in enumerate(flags) if flag == "-e"]
        assert names == ["KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER", *passed]

    def test_the_join_waits_for_everything_kamaji_sets_up_for_it(self, worker, tmp_path, monkeypatch):
        """Kamaji starts its four setup steps at once: the join waits until what it reads exists."""
        result = run(node_join.create_script(worker), tmp_path, FAKE_KAMAJI_SETUP_WAITS="2")
        assert result.returncode == 0, result.stderr
        checks = [i for i, c in enumerate(calls(tmp_path))
                  if c.startswith("kubectl") and "configmap/kubeadm-config" in c]
        assert len(checks) == 3, "checked until the third time found everything"
        first_join = next(i for i, c in enumerate(calls(tmp_path)) if c.startswith("kubeadm join"))
        assert max(checks) < first_join
        monkeypatch.setattr(node_join, "KAMAJI_SETUP_WAIT", (2, 0))
        stuck = run(node_join.create_script(worker), tmp_path / "stuck", FAKE_KAMAJI_SETUP_WAITS="9")
        assert stuck.returncode == 1
        assert "Kamaji has not set the tenant up for joins within 0s" in stuck.stderr
        assert 'configmaps "kubelet-config" not found' in stuck.stderr
