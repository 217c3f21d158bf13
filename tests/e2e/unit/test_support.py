"""The pure parts of the live suite: parsing HAMi's annotations and metrics, and the oracle."""

from __future__ import annotations

import os
import socket

import pytest

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import parse_config
from tests.e2e import conftest as e2e_conftest
from tests.e2e import support
from tests.e2e.test_lifecycle import lifecycle_config
from tests.standins import run_script, stand_in

pytestmark = pytest.mark.unit


def test_parse_allocation_annotation():
    value = "GPU-a,NVIDIA,20000,30:;"
    assert support.parse_allocation(value) == [[support.Allocation("GPU-a", "NVIDIA", 20000, 30)]]
    two = "GPU-a,NVIDIA,1000,10:GPU-b,NVIDIA,1000,10:;GPU-c,NVIDIA,5,0:;"
    assert [[a.card for a in c] for c in support.parse_allocation(two)] == [["GPU-a", "GPU-b"], ["GPU-c"]]


# Sample lines as HAMi v2.10.0 writes them (cmd/scheduler/metrics.go): labels node, device_uuid,
# device_index, device_cores, device_type, plus the constant zone="vGPU"; memory in bytes, cores as
# the raw percentage.
HAMI_METRICS = (
    '# HELP hami_gpu_memory_allocated_bytes GPU device memory allocated\n'
    '# TYPE hami_gpu_memory_allocated_bytes gauge\n'
    'hami_gpu_memory_allocated_bytes{device_cores="100",device_index="0",device_type="NVIDIA A100-SXM4-80GB",'
    'device_uuid="GPU-a",node="tenant-a-worker-0",zone="vGPU"} 6.291456e+10\n'
    'hami_gpu_memory_allocated_bytes{device_cores="100",device_index="1",device_type="NVIDIA A100-SXM4-80GB",'
    'device_uuid="GPU-a2",node="tenant-a-worker-0",zone="vGPU"} 0\n'
    'hami_gpu_core_allocated_ratio{device_index="0",device_type="NVIDIA A100-SXM4-80GB",'
    'device_uuid="GPU-a",node="tenant-a-worker-0",zone="vGPU"} 90\n'
    'hami_vgpu_memory_allocated_bytes{container_index="0",device_uuid="GPU-a",namespace="e2e-hami",'
    'node="tenant-a-worker-0",pod="share-1",zone="vGPU"} 2.097152e+10\n'
)


def test_card_totals_read_hami_2_10_metrics_exactly():
    assert support.card_totals(HAMI_METRICS, "GPU-a") == (60000.0, 90.0)
    # GPU-a2's label contains GPU-a: only an exact device_uuid counts.
    assert support.card_totals(HAMI_METRICS, "GPU-a2") == (0.0, None)
    assert support.card_totals(HAMI_METRICS, "GPU-zzz") == (None, None)


def test_legacy_labels_are_not_mistaken_for_a_card():
    legacy = 'hami_gpu_memory_allocated_bytes{deviceuuid="GPU-a",nodeid="n"} 6.291456e+10\n'
    assert support.card_totals(legacy, "GPU-a") == (None, None)


def test_node_lock_holder_and_age():
    lock = support.parse_node_lock("2026-12-02T10:00:00Z,e2e-hami,share-3")
    assert lock == support.NodeLock("2026-12-02T10:00:00Z", "e2e-hami", "share-3")
    now = support.datetime(2026, 12, 2, 10, 0, 42, tzinfo=support.UTC)
    assert support.lock_age_seconds(lock, now) == 42
    assert support.parse_node_lock(None) is None
    assert support.parse_node_lock("garbage") is None


def test_reads_are_not_changes():
    """Every `Secret.get` is a read on every preview; the engine's no-change ops are ignored."""
    summary = {"same": 40, "read": 2, "read-replacement": 0, "discard": 1}
    assert support.planned_changes(summary) == {}
    assert support.planned_changes({**summary, "update": 1, "create": 0}) == {"update": 1}


def test_leftovers_compare_every_kind_of_host_object():
    before = support.HostSnapshot(frozenset({"dev-w"}), frozenset({"v1"}), frozenset({"kind"}),
                                  frozenset({"kamaji"}))
    after = support.HostSnapshot(frozenset({"dev-w", "e2e1-a-worker-0"}), frozenset({"v1", "abc"}),
                                 frozenset({"kind"}), frozenset({"kamaji", "e2e1"}))
    assert support.leftovers(before, after) == [
        "container e2e1-a-worker-0", "volume abc", "kind cluster e2e1"]
    assert support.leftovers(after, after) == []


def test_pods_match_planned_cards_by_what_hami_recorded_in_any_order(dev_config):
    dev_config["tenants"][0]["gpus"]["perWorker"] = 2
    dev_config["tenants"][0]["hami"]["gpuSchedulerPolicy"] = "spread"
    platform = parse_config(dev_config)
    expected = support.expect(platform, platform.tenants[0], {"nvidia.com/gpumem": 20000}, 2)
    (planned,) = expected.outcomes
    assert len({cards for _, cards in planned}) == 2, "spread puts the two pods on two cards"
    annotations = [{"hami.io/vgpu-node": node, "hami.io/vgpu-devices-allocated":
                    "".join(f"{card},NVIDIA,20000,0:" for card in cards) + ";"}
                   for node, cards in reversed(planned)]
    assert support.explains(expected, support.recorded_cards(annotations))
    same_card = [dict(a) for a in annotations]
    same_card[0]["hami.io/vgpu-devices-allocated"] = annotations[1]["hami.io/vgpu-devices-allocated"]
    assert not support.explains(expected, support.recorded_cards(same_card))


def test_probe_results_and_reason_code():
    assert support.probe_results("own=open\nother=closed\n") == {"own": "open", "other": "closed"}
    assert support.reason_code("1/1 CardInsufficientCore") == "CardInsufficientCore"


def test_probe_pod_tries_every_target():
    pod = support.probe_pod("p", {"own": "10.0.0.1", "other": "10.0.0.2"}, 6443)
    script = pod["spec"]["containers"][0]["command"][-1]
    assert "other=10.0.0.2 own=10.0.0.1" in script and "-w 5 ${target#*=} 6443" in script
    assert "nc -z" not in script, "Debian's busybox nc has no -z"


def test_oracle_for_the_dev_stack(dev_config):
    platform = parse_config(dev_config)
    expected = support.expect(platform, platform.tenants[0],
                              {"nvidia.com/gpumem": 20000, "nvidia.com/gpucores": 30}, 4)
    assert len(expected.placed) == 3
    assert [support.reason_code(p.reason) for p in expected.refused] == ["CardInsufficientCore"]


def test_gpu_pod_has_no_scheduler_name_unless_asked():
    assert "schedulerName" not in support.gpu_pod("a", {"nvidia.com/gpumem": 1})["spec"]
    assert support.gpu_pod("a", {}, "x")["spec"]["schedulerName"] == "x"


def test_wait_for_names_what_it_waited_for_and_shows_evidence():
    with pytest.raises(AssertionError, match=r"waiting for the moon(.|\n)*evidence(.|\n)*none"):
        support.wait_for("the moon", lambda: None, timeout=0.01, interval=0.001, evidence=lambda: "none")


def test_lifecycle_stack_gets_its_own_cluster_tenant_names_and_network(monkeypatch, dev_config):
    monkeypatch.setenv("E2E_DOCKER_SUBNET", "172.28.0.0/16")
    config = lifecycle_config("e2e123")
    management = config["kamaji-hami-platform:management"]
    assert management["name"] == management["dockerNetwork"] == "e2e123"
    assert management["dockerSubnet"] == "172.28.0.0/16" != dev_config["management"]["dockerSubnet"]
    names = [t["name"] for t in config["kamaji-hami-platform:tenants"]]
    dev_names = [t["name"] for t in dev_config["tenants"]]
    assert not set(names) & set(dev_names), "worker containers are named after tenants"
    raw = {key.split(":", 1)[1]: value for key, value in config.items()}
    assert [t.name for t in parse_config(raw).tenants] == names


class TestStackAccess:
    """Skip only without a stack; fail when one exists but cannot be read."""

    @pytest.fixture(autouse=True)
    def prerequisites_present(self, monkeypatch):
        monkeypatch.setattr(e2e_conftest, "missing_prerequisite", lambda kind=True: None)
        monkeypatch.delenv(e2e_conftest.REQUIRE_STACK, raising=False)

    @staticmethod
    def raising(error):
        def connect(name):
            raise error
        return connect

    def test_a_missing_stack_skips_with_its_reason(self):
        from pulumi import automation as auto

        with pytest.raises(pytest.skip.Exception, match="'dev' does not exist"):
            e2e_conftest.open_live_stack("dev", self.raising(auto.StackNotFoundError(
                auto.CommandResult("", "no stack named 'dev' found", 255))))

    def test_a_missing_stack_fails_when_the_run_requires_one(self, monkeypatch):
        from pulumi import automation as auto

        monkeypatch.setenv(e2e_conftest.REQUIRE_STACK, "1")
        with pytest.raises(pytest.fail.Exception, match="E2E_REQUIRE_STACK=1 but stack 'dev' does not exist"):
            e2e_conftest.open_live_stack("dev", self.raising(auto.StackNotFoundError(
                auto.CommandResult("", "no stack", 255))))

    def test_missing_tools_fail_when_the_run_requires_a_stack(self, monkeypatch):
        monkeypatch.setattr(e2e_conftest, "missing_prerequisite", lambda kind=True: "kind is not installed")
        monkeypatch.setenv(e2e_conftest.REQUIRE_STACK, "1")
        with pytest.raises(pytest.fail.Exception, match="kind is not installed"):
            e2e_conftest.open_live_stack("dev")

    def test_an_unreadable_stack_fails_with_the_errors_text_not_a_skip(self):
        error = RuntimeError("\n\nerror: incorrect passphrase")
        with pytest.raises(pytest.fail.Exception, match="could not be read: RuntimeError: error: incorrect"):
            e2e_conftest.open_live_stack("dev", self.raising(error))


def test_missing_prerequisite_names_the_missing_tool(monkeypatch):
    monkeypatch.setattr(support.shutil, "which", lambda tool: None)
    assert "Pulumi CLI" in support.missing_prerequisite()


def test_a_stack_on_an_existing_cluster_needs_no_docker_or_kind_here(monkeypatch):
    monkeypatch.setattr(support.shutil, "which",
                        lambda tool: f"/usr/bin/{tool}" if tool == "pulumi" else None)
    assert support.missing_prerequisite(kind=False) is None
    assert support.missing_prerequisite(kind=True) == "docker is not installed"


def test_the_mode_is_read_from_the_stack_file(tmp_path, monkeypatch):
    monkeypatch.setattr(e2e_conftest, "ROOT", tmp_path)
    (tmp_path / "Pulumi.prod.yaml").write_text(
        "config:\n  kamaji-hami-platform:management:\n    mode: existing\n")
    assert e2e_conftest.stack_is_kind("prod") is False
    assert e2e_conftest.stack_is_kind("absent") is True


def test_probe_tells_open_refused_and_timed_out_apart_by_what_nc_says(tmp_path):
    """The probe's script, run here with a stand-in `nc` that answers as busybox's did in the first
    live run (tenant-a's pod: its own door, a closed port of its worker, the other tenant's door):
    the verdict is nc's reason, and a failure that is none of them (a usage error) is no verdict."""
    stand_in(tmp_path, "nc", '#!/bin/sh\ncase "$3" in '
             '10.0.0.1) exit 0;; '
             "10.0.0.2) echo \"nc: can't connect to remote host (10.0.0.2): Connection refused\" >&2; "
             "exit 1;; "
             '10.0.0.3) echo "nc: timed out" >&2; exit 1;; '
             '10.0.0.4) echo "nc: can\'t connect to remote host (10.0.0.4): No route to host" >&2; exit 1;; '
             "*) echo \"nc: invalid option -- 'z'\" >&2; exit 1;; esac\n")
    pod = support.probe_pod("p", {"a": "10.0.0.1", "b": "10.0.0.2", "c": "10.0.0.3", "d": "10.0.0.4",
                                  "e": "10.0.0.5"}, 6443)
    script = pod["spec"]["containers"][0]["command"][-1]
    result = run_script(script, shell="sh", tools=(tmp_path,), timeout=30)
    verdicts = support.probe_results(result.stdout)
    assert {k: v for k, v in verdicts.items() if k != "e"} == {
        "a": "open", "b": "closed:refused", "c": "closed:timeout", "d": "closed:unreachable"}, result.stdout
    assert verdicts["e"].startswith("error:nc:_invalid_option"), verdicts


def test_with_busyboxs_other_nc_the_probe_asks_it_to_say_why(tmp_path):
    """Upstream busybox's default nc (nc_bloaty) is silent on a failed connect unless verbose: a
    stand-in that answers as it does, its usage listing -v, its reasons only at -vv."""
    stand_in(tmp_path, "nc", '#!/bin/sh\n'
             'if [ "$1" = --help ]; then\n'
             '  printf "Usage: nc [OPTIONS] HOST PORT\\n\\t-v\\tVerbose\\n" >&2; exit 1\n'
             'fi\n'
             '[ "$1" = -vv ] || exit 1\n'
             'case "$4" in '
             '10.0.0.1) echo "(UNKNOWN) [10.0.0.1] 6443 (?) open" >&2; exit 0;; '
             '10.0.0.2) echo "(UNKNOWN) [10.0.0.2] 6443 (?) : Connection refused" >&2; exit 1;; '
             '*) echo "(UNKNOWN) [$4] 6443 (?) : Connection timed out" >&2; exit 1;; esac\n')
    pod = support.probe_pod("p", {"a": "10.0.0.1", "b": "10.0.0.2", "c": "10.0.0.3"}, 6443)
    script = pod["spec"]["containers"][0]["command"][-1]
    result = run_script(script, shell="sh", tools=(tmp_path,), timeout=30)
    assert support.probe_results(result.stdout) == {"a": "open", "b": "closed:refused", "c": "closed:timeout"}


@pytest.mark.parametrize(("exit_code", "stderr", "expected"), [
    (0, "", "open"), (124, "", "closed:timeout"), (1, "bash: connect: Connection refused", "closed:refused"),
    (1, "bash: connect: No route to host", "closed:unreachable"),
    (1, "bash: connect: Network is unreachable", "closed:unreachable"),
    (1, "bash: /dev/tcp/x/6443: Invalid argument", "error:bash: /dev/tcp/x/6443: Invalid argument"),
    (124, "bash: warning: something else", "error:bash: warning: something else"),
    (1, "bash: line 1: unreachable: command not found",
     "error:bash: line 1: unreachable: command not found")])
def test_a_probe_from_a_workers_own_network_tells_open_refused_and_dropped_apart(
        tmp_path, monkeypatch, exit_code, stderr, expected):
    """Run with a stand-in docker whose exec exits as `timeout bash -c 'exec 3<>/dev/tcp/..'` would:
    the verdict is bash's reason, a timeout only when the connect stayed silent, anything else no
    verdict at all."""
    stand_in(tmp_path, "docker",
             f"#!/bin/sh\necho \"$*\" > {tmp_path}/call\necho '{stderr}' >&2\nexit {exit_code}\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert support.host_network_probe("tenant-b-worker-0", "172.30.255.201", 6443) == expected
    assert (tmp_path / "call").read_text().split() == [
        "exec", "tenant-b-worker-0", "timeout", "5", "bash", "-c", "exec", "3<>/dev/tcp/172.30.255.201/6443"]


def test_a_docker_cli_error_that_mentions_a_refusal_is_no_verdict(tmp_path, monkeypatch):
    stand_in(tmp_path, "docker", "#!/bin/sh\necho 'error during connect: dial unix: connection refused' >&2\n"
             "exit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(RuntimeError, match="error during connect"):
        support.host_network_probe("x", "172.30.255.201", 6443)


def test_a_probe_that_cannot_reach_the_container_is_an_error_not_a_drop(tmp_path, monkeypatch):
    stand_in(tmp_path, "docker",
             "#!/bin/sh\necho 'Error response from daemon: No such container: x' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(RuntimeError, match="No such container"):
        support.host_network_probe("x", "172.30.255.201", 6443)


def test_a_stray_container_probes_from_the_platform_network_with_the_same_verdicts(tmp_path, monkeypatch):
    stand_in(tmp_path, "docker", f"#!/bin/sh\necho \"$*\" > {tmp_path}/call\nexit 124\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    image = "kindest/node:v1.35.0"
    assert support.stray_container_probe("kamaji-hami", image, "172.30.255.201", 8132) == "closed:timeout"
    assert (tmp_path / "call").read_text().split() == [
        "run", "--rm", "--network", "kamaji-hami", "--entrypoint", "timeout", image,
        "5", "bash", "-c", "exec", "3<>/dev/tcp/172.30.255.201/8132"]


def test_a_stray_container_that_cannot_start_is_an_error_not_a_drop(tmp_path, monkeypatch):
    stand_in(tmp_path, "docker", "#!/bin/sh\necho 'Unable to find image x locally' >&2\nexit 125\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(RuntimeError, match="Unable to find image"):
        support.stray_container_probe("kamaji-hami", "x", "172.30.255.201", 6443)


class FakeNamespaces:
    """The namespace calls of a CoreV1Api: name -> labels."""

    def __init__(self, existing: dict[str, dict[str, str]]) -> None:
        self.existing, self.deleted, self.created = dict(existing), [], []

    def read_namespace(self, name, _request_timeout=None):
        from types import SimpleNamespace

        from kubernetes.client.exceptions import ApiException

        if name not in self.existing:
            raise ApiException(status=404)
        return SimpleNamespace(metadata=SimpleNamespace(labels=self.existing[name]))

    def delete_namespace(self, name, _request_timeout=None):
        self.deleted.append(name)
        self.existing.pop(name)

    def create_namespace(self, body, _request_timeout=None):
        self.created.append(body)
        self.existing[body["metadata"]["name"]] = body["metadata"]["labels"]


class TestTheSuitesNamespaces:
    """The suite deletes only what it created (issue 30.4): its namespaces carry its label."""

    def test_a_namespace_of_that_name_that_is_not_the_suites_stops_the_run_untouched(self):
        api = FakeNamespaces({"e2e-hami": {"team": "theirs"}})
        with pytest.raises(support.NotTheSuites, match="e2e-hami exists and was not created by the live"):
            support.claim_namespace(api, "e2e-hami", lambda: None)
        assert api.deleted == [] and api.created == []
        assert support.release_namespace(api, "e2e-hami") is False and api.deleted == []

    def test_an_earlier_runs_namespace_is_made_afresh_and_a_new_one_is_labelled(self):
        waited = []
        api = FakeNamespaces({"e2e-hami": {support.SUITE_LABEL: "true"}})
        support.claim_namespace(api, "e2e-hami", lambda: waited.append(True))
        assert api.deleted == ["e2e-hami"] and waited == [True]
        support.claim_namespace(api, "e2e-unpoliced", lambda: waited.append(False))
        assert [b["metadata"] for b in api.created] == [
            {"name": name, "labels": {support.SUITE_LABEL: "true"}} for name in ("e2e-hami", "e2e-unpoliced")]
        assert waited == [True]

    def test_a_namespace_already_gone_is_nothing_to_release(self):
        assert support.release_namespace(FakeNamespaces({}), "e2e-hami") is False


def test_the_suites_pods_pull_from_the_stacks_mirror(tmp_path, monkeypatch):
    """Found by the first live run: an air-gapped stack's probes and GPU pods pulled busybox from
    Docker Hub (ErrImagePull); with images.mirror they pull it from the mirror, as the stack's pods do."""
    (tmp_path / "Pulumi.air.yaml").write_text(
        "config:\n  kamaji-hami-platform:images:\n    mirror: registry.example:5000\n")
    (tmp_path / "Pulumi.open.yaml").write_text("config:\n  kamaji-hami-platform:tenants: []\n")
    monkeypatch.setattr(support, "ROOT", tmp_path)
    monkeypatch.setenv("E2E_STACK", "air")
    assert support._stack_mirror() == "registry.example:5000"
    monkeypatch.setenv("E2E_STACK", "open")
    assert support._stack_mirror() is None
    monkeypatch.setenv("E2E_STACK", "absent")
    assert support._stack_mirror() is None
    assert support.mirrored(versions.E2E_PROBE_IMAGE, "registry.example:5000") == \
        "registry.example:5000/docker.io/library/busybox:1.36.1"


def listening_socket() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(512)
    return server


def test_a_burst_reports_each_connects_reason(tmp_path, monkeypatch):
    """The burst's script, run here through a stand-in `docker exec` (it runs the command locally):
    every connect to a listening port is `open`, every one to a closed port `closed:refused` (bash's
    reason), none read as a timeout."""
    stand_in(tmp_path, "docker", '#!/bin/sh\nshift 2\nexec "$@"\n')  # docker exec <container> cmd...
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with listening_socket() as server:
        port = server.getsockname()[1]
        assert support.burst_from_container("worker", "127.0.0.1", port, 40) == {"open": 40}
    assert support.burst_from_container("worker", "127.0.0.1", port, 40) == {"closed:refused": 40}


def test_a_burst_with_connects_missing_is_an_error(tmp_path, monkeypatch):
    """A connect that never reported (a fork that failed) must not pass as a drop."""
    stand_in(tmp_path, "docker", "#!/bin/sh\necho '124 '\necho '124 '\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(RuntimeError, match="reported 2 connects"):
        support.burst_from_container("worker", "10.0.0.1", 6443, 3)
    assert support.burst_from_container("worker", "10.0.0.1", 6443, 2) == {"closed:timeout": 2}


def test_a_burst_that_cannot_start_is_an_error_not_a_count_of_zero(tmp_path, monkeypatch):
    stand_in(tmp_path, "docker", "#!/bin/sh\necho 'Unable to find image x locally' >&2\nexit 125\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    with pytest.raises(RuntimeError, match="Unable to find image"):
        support.burst_from_network("kamaji-hami", "x", "172.30.255.201", 6443, 10)


def test_this_hosts_own_probe_tells_open_and_refused_apart():
    with listening_socket() as server:
        port = server.getsockname()[1]
        assert support.local_probe("127.0.0.1", port) == "open"
    assert support.local_probe("127.0.0.1", port) == "closed:refused"


def test_a_containers_networks_are_read_from_docker_sorted(tmp_path, monkeypatch):
    stand_in(tmp_path, "docker",
             f"#!/bin/sh\necho \"$*\" > {tmp_path}/call\necho 'kamaji-hami-b kamaji-hami '\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert support.container_networks("kamaji-control-plane") == ["kamaji-hami", "kamaji-hami-b"]
    assert "{{range $name, $_ := .NetworkSettings.Networks}}" in (tmp_path / "call").read_text()
