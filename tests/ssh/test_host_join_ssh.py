"""Worker hosts over SSH, for real: the join as pulumi-command's remote Command runs it (ssh, the
command string, the kubeconfig on stdin) against sshd in a sandbox; the leave and the readiness
wait as its local Command runs them (bash -c, the environment), with the OpenSSH client."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from kamaji_hami_platform.config import (
    BUILTIN_GPU_MODELS,
    GpuPoolConfig,
    HostConfig,
    SshEndpointConfig,
    TenantConfig,
)
from kamaji_hami_platform.tenant import host_join
from tests.ssh import sandbox
from tests.ssh.conftest import ADMIN_CREDENTIAL
from tests.ssh.sandbox import Sandbox

pytestmark = pytest.mark.ssh
# TEST-NET-1 (RFC 5737): never routed, so a connection there gets no answer.
BLACKHOLE = "192.0.2.1"


def kubeconfig(ca: str) -> str:
    data = base64.b64encode(ca.encode()).decode()
    return ("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"
            f"    certificate-authority-data: {data}\n    server: https://{sandbox.JOIN_ENDPOINT}\n"
            "  name: t\nusers:\n- name: admin\n  user:\n"
            f"    token: {ADMIN_CREDENTIAL}\n")


def tenant_config(*hosts: HostConfig, gpus: GpuPoolConfig | None = None) -> TenantConfig:
    return TenantConfig(name="team-a", kubernetes_version="v1.35.0", control_plane_replicas=1,
                        pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16", workers=len(hosts),
                        gpus=gpus, hosts=hosts)


def endpoint(box: Sandbox, user: str = "root", **overrides: object) -> SshEndpointConfig:
    values: dict[str, object] = {"address": "127.0.0.1", "user": user, "port": box.port, "private_key": user}
    values.update(overrides)
    return SshEndpointConfig(**values)  # type: ignore[arg-type]


def worker(box: Sandbox, user: str = "root", bastion: SshEndpointConfig | None = None,
           **ssh: object) -> HostConfig:
    return HostConfig("gpu-host-1", endpoint(box, user, **ssh), bastion)


REAL_GPUS = GpuPoolConfig(BUILTIN_GPU_MODELS["A100-80GB"], per_worker=2, mock=False)


def tenant_ca(box: Sandbox) -> str:
    return (box.root / "ca.pem").read_text()


def join(box: Sandbox, host: HostConfig, gpus: GpuPoolConfig | None = None,
         ca: str | None = None) -> sandbox.Run:
    tenant = tenant_config(host, gpus=gpus)
    return box.ssh(host.ssh.user, host_join.join_command(tenant, host), kubeconfig(ca or tenant_ca(box)))


def leave(box: Sandbox, host: HostConfig, bastion_key: str | None = None, **env: str) -> sandbox.Run:
    variables = {host_join.KUBECONFIG_ENV: kubeconfig(tenant_ca(box)),
                 host_join.HOST_SSH_KEY_ENV: box.key_text(host.ssh.private_key), **env}
    if host.bastion is not None:
        variables[host_join.BASTION_SSH_KEY_ENV] = bastion_key or box.key_text(host.bastion.private_key)
    return box.local(host_join.leave_script(tenant_config(host), host), **variables)


def host_files(box: Sandbox) -> dict[str, str]:
    """Everything on the sandboxed host a join could change."""
    return {str(path.relative_to(box.host)): path.read_text() if path.is_file() else "<dir>"
            for path in sorted(box.host.rglob("*"))}


def kubeadm_calls(box: Sandbox, verb: str) -> list[str]:
    return [line for line in box.argv_log() if line.startswith(f"kubeadm {verb}")]


def is_joined(box: Sandbox) -> bool:
    return (box.host / "kubernetes" / "kubelet.conf").exists()


class TestJoin:
    def test_first_join_mints_a_token_joins_by_name_and_removes_token_and_kubeconfig(self, box):
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "joined gpu-host-1 to tenant team-a" in result.stdout
        log = box.argv_log()
        (create,) = kubeadm_calls(box, "token create")
        assert "--ttl 10m --description join gpu-host-1 --print-join-command" in create
        (joined,) = kubeadm_calls(box, "join")
        assert joined.endswith("--node-name gpu-host-1") and "--config " in joined
        assert log.index(create) < log.index(joined) < log.index("kubeadm token delete --kubeconfig "
                                                                  f"{create.split()[4]} abcdef")
        assert not (box.state / "token-live").exists(), "the bootstrap token outlived the join"
        # The kubeconfig reached kubeadm whole, in a 0600 file that is gone afterwards.
        path, mode, digest = (box.state / "kubeconfig-seen").read_text().split()
        assert (mode, digest) == ("600", hashlib.sha256(kubeconfig(tenant_ca(box)).encode()).hexdigest())
        assert not Path(path).exists() and list(box.remote_tmp.iterdir()) == []
        # The token reached kubeadm join in a 0600 JoinConfiguration, the CA pinned by its hash.
        mode, config = (box.state / "join-config").read_text().split("\n", 1)
        assert mode == "600"
        assert f'token: "{sandbox.TOKEN}"' in config and f'- "{sandbox.CA_HASH}"' in config
        assert f'apiServerEndpoint: "{sandbox.JOIN_ENDPOINT}"' in config
        assert "apiVersion: kubeadm.k8s.io/v1beta4" in config and "name: gpu-host-1" in config
        assert (box.host / "kubernetes" / "pki" / "ca.crt").read_text() == tenant_ca(box)
        # Marked as this platform's node of team-a: only such a node is ever reset by a join.
        marker = (box.host / "kubernetes" / "kamaji-hami-platform-tenant").read_text()
        assert marker == "kamaji-hami-platform tenant team-a\n"

    def test_a_kubelet_that_is_not_enabled_is_enabled_so_the_node_survives_a_reboot(self, box):
        (box.state / "enabled-kubelet").unlink()
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "systemctl enable kubelet" in box.argv_log()

    def test_a_second_run_is_harmless(self, box):
        host = worker(box)
        assert join(box, host).returncode == 0
        again = join(box, host)
        assert again.returncode == 0, again.output
        assert "already joined" in again.stdout
        assert len(kubeadm_calls(box, "token create")) == len(kubeadm_calls(box, "join")) == 1
        assert not kubeadm_calls(box, "reset")

    def test_missing_prerequisites_are_listed_at_once_and_the_host_is_left_as_it_was(self, box):
        box.write_state("kubeadm-version", "v1.37.0")
        box.write_state("kubelet-version", "v1.31.2")
        (box.state / "active-containerd").unlink()
        (box.state / "unit-kubelet").unlink()
        box.modules([])
        box.write_host("ip_forward", "0\n")
        for plugin in ("ptp", "portmap"):
            (box.host / "cni-bin" / plugin).unlink()
        before = host_files(box)
        result = join(box, worker(box))
        assert result.returncode == 1
        message = result.stderr
        assert "host gpu-host-1 cannot join tenant team-a; nothing was changed on it" in message
        for missing in ("kubeadm is v1.37.0, the tenant runs v1.35.0: install kubeadm v1.35 or v1.36",
                        "kubelet is Kubernetes v1.31.2, the tenant runs v1.35.0: "
                        "install kubelet v1.32..v1.35",
                        "no container runtime is active", "the kubelet service is not installed",
                        "kernel module overlay is not loaded: modprobe overlay",
                        "kernel module br_netfilter is not loaded: modprobe br_netfilter",
                        "net.ipv4.ip_forward is not 1", "CNI plugins missing from /opt/cni/bin: ptp portmap"):
            assert f"  - {missing}" in message, missing
        assert host_files(box) == before
        assert [line.split()[1] for line in box.argv_log() if line.startswith("kubeadm")] == ["version"]
        assert list(box.remote_tmp.iterdir()) == [], "the kubeconfig stayed on the host"

    def test_missing_tools_are_named_with_what_to_install(self, box):
        for tool in ("kubeadm", "kubelet"):
            (box.bin / tool).unlink()
        result = join(box, worker(box))
        assert result.returncode == 1
        assert "  - kubeadm is not on PATH: install kubeadm v1.35 or v1.36" in result.stderr
        assert "  - kubelet is not on PATH: install kubelet v1.32..v1.35" in result.stderr

    def test_kubeadm_one_minor_ahead_and_swap_on_still_join(self, box):
        box.write_state("kubeadm-version", "v1.36.1")
        box.write_host("swaps", "Filename\tType\tSize\tUsed\tPriority\n/swapfile\tfile\t1048572\t0\t-2\n")
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "note: swap is on; fine, the tenant's kubelet runs with failSwapOn: false" in result.stdout

    def test_a_failed_join_resets_the_host_deletes_the_token_and_redacts_its_output(self, box):
        box.write_state("join-fails", "")
        before = host_files(box)
        (box.host / "cni-net.d" / "10-kindnet.conflist").write_text("{}\n")
        result = join(box, worker(box))
        assert result.returncode == 1
        assert "kubeadm join of host gpu-host-1 failed (the host was reset" in result.stderr
        assert "token <redacted-token> (sha256:<redacted>) rejected" in result.stderr
        assert kubeadm_calls(box, "reset") == ["kubeadm reset -f"]
        assert not (box.state / "token-live").exists()
        # What the join left (the CA it wrote before failing) and kindnet's CNI config are gone.
        assert host_files(box) == before
        (box.state / "join-fails").unlink()
        assert join(box, worker(box)).returncode == 0, "the next run does not start clean"

    def test_a_host_joined_to_a_replaced_control_plane_is_reset_then_joined(self, box):
        box.joined(ca=sandbox.make_ca(box.root / "old-ca.pem", "the replaced control plane's CA"))
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "was joined to another control plane of tenant team-a; resetting it" in result.stdout
        log = box.argv_log()
        assert log.index("kubeadm reset -f") < log.index(kubeadm_calls(box, "join")[0])
        assert not (box.host / "cni-net.d" / "10-kindnet.conflist").exists()
        assert (box.host / "kubernetes" / "pki" / "ca.crt").read_text() == tenant_ca(box)

    def test_a_node_of_another_cluster_is_never_reset(self, box):
        """Joined, but not by this platform to this tenant (no marker: a mistyped address, a
        machine in use): the join refuses and touches nothing."""
        other = sandbox.make_ca(box.root / "other-ca.pem", "another cluster's CA")
        for marker in (None, "kamaji-hami-platform tenant team-b"):
            box.joined(ca=other, marker=marker)
            result = join(box, worker(box))
            assert result.returncode == 1
            assert "host gpu-host-1 is a node of another cluster" in result.stderr
            assert "reset it by hand first (kubeadm reset -f)" in result.stderr
            assert not kubeadm_calls(box, "reset") and not kubeadm_calls(box, "join")
            assert (box.host / "kubernetes" / "pki" / "ca.crt").read_text() == other

    def test_containerd_1_needs_systemd_cgroups(self, box):
        box.write_state("containerd-version", "1.7.25")
        result = join(box, worker(box))
        assert result.returncode == 1
        missing = "  - containerd 1.x runs runc with cgroupfs, the tenant's kubelets use systemd"
        assert missing in result.stderr
        box.write_state("systemd-cgroup", "")
        assert join(box, worker(box)).returncode == 0

    def test_an_already_joined_node_is_not_checked_again(self, box):
        """A re-run (an input of the join changed) on a working node whose tools changed since."""
        box.joined()
        (box.bin / "kubelet").unlink()
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "already joined" in result.stdout

    def test_real_gpus_missing_are_listed_with_the_fix(self, box):
        box.write_state("gpus", "1")
        (box.bin / "nvidia-container-runtime").unlink()
        result = join(box, worker(box), gpus=REAL_GPUS)
        assert result.returncode == 1
        for missing in ("nvidia-smi -L lists 1 GPU(s), each worker of the tenant carries 2 A100-80GB",
                        "the NVIDIA container toolkit is not installed",
                        "containerd's default runtime is not nvidia (HAMi requires it): nvidia-ctk runtime "
                        "configure --runtime=containerd --set-as-default"):
            assert f"  - {missing}" in result.stderr, missing
        assert not kubeadm_calls(box, "join")

    @pytest.mark.parametrize("containerd_2", [False, True])
    def test_a_host_with_its_gpus_ready_joins(self, box, containerd_2):
        box.write_state("gpus", "2")
        box.write_state("containerd-default-runtime", "nvidia")
        if containerd_2:  # prints default_runtime_name = 'nvidia'
            box.write_state("containerd-2", "")
        result = join(box, worker(box), gpus=REAL_GPUS)
        assert result.returncode == 0, result.output
        assert "nvidia-smi -L" in box.argv_log()

    def test_a_user_other_than_root_joins_and_leaves_through_sudo(self, box):
        host = worker(box, user="deploy")
        result = join(box, host)
        assert result.returncode == 0, result.output
        assert box.argv_log()[0] == "sudo -n /bin/sh"
        assert (box.state / "kubeconfig-seen").read_text().split()[2] == hashlib.sha256(
            kubeconfig(tenant_ca(box)).encode()).hexdigest(), "stdin did not pass through sudo"
        gone = leave(box, host)
        assert gone.returncode == 0, gone.output
        assert "host reset" in gone.stdout and not is_joined(box)
        assert box.argv_log()[-2:] == ["sudo -n /bin/sh", "kubeadm reset -f"]


class TestLeave:
    def test_drains_deletes_the_node_and_resets_the_host(self, box):
        box.joined()
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        verbs = [line.split()[4] for line in box.kubectl_log()]
        assert verbs == ["get", "get", "drain", "delete"]  # the node, its Ready condition
        assert "--skip-wait-for-delete-timeout=30" in box.kubectl_log()[2]
        assert all("--request-timeout=30s" in line for line in box.kubectl_log())
        assert "node gpu-host-1 removed from tenant team-a" in result.stdout
        assert kubeadm_calls(box, "reset") == ["kubeadm reset -f"] and not is_joined(box)
        assert not (box.host / "cni-net.d" / "10-kindnet.conflist").exists()
        assert not (box.host / "kubernetes" / "kamaji-hami-platform-tenant").exists()
        path, mode, _ = (box.kubectl_state / "kubeconfig-seen").read_text().split()
        assert mode == "600" and not Path(path).exists()

    def test_skip_drain_deletes_without_draining(self, box):
        box.joined()
        result = leave(box, worker(box), **{host_join.SKIP_DRAIN_ENV: "1"})
        assert result.returncode == 0, result.output
        assert [line.split()[4] for line in box.kubectl_log()] == ["get", "get", "delete"]
        assert not is_joined(box)

    def test_a_node_that_is_not_ready_is_deleted_without_a_drain(self, box):
        """A dead host's kubelet never confirms an eviction: a drain would wait out its timeout and
        fail the destroy (kubectl pkg/drain waitForDelete), so the node goes undrained."""
        box.joined()
        (box.kubectl_state / "ready").write_text("Unknown\n")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "the node is not Ready (Ready=Unknown): not drained, its pods go with it" in result.stderr
        assert [line.split()[4] for line in box.kubectl_log()] == ["get", "get", "delete"]
        assert not is_joined(box)

    def test_a_failed_drain_uncordons_and_keeps_node_and_host(self, box):
        box.joined()
        (box.kubectl_state / "drain-fails").write_text("")
        result = leave(box, worker(box))
        assert result.returncode == 1
        assert "the drain failed, so the node stays and the host is not reset" in result.stderr
        assert "disruption budget" in result.stderr and f"{host_join.SKIP_DRAIN_ENV}=1" in result.stderr
        assert [line.split()[4] for line in box.kubectl_log()] == ["get", "get", "drain", "uncordon"]
        assert is_joined(box) and not kubeadm_calls(box, "reset")

    def test_a_node_already_gone_still_resets_the_host(self, box):
        box.joined()
        (box.kubectl_state / "node-missing").write_text("")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "node gpu-host-1 is not in tenant team-a" in result.stdout
        assert not is_joined(box)

    def test_an_unreachable_tenant_api_warns_and_still_resets_the_host(self, box):
        box.joined()
        (box.kubectl_state / "unreachable").write_text("")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "warning: host gpu-host-1: could not remove the node from tenant team-a (API unreachable?)" \
            in result.stderr
        assert not is_joined(box)

    def test_a_host_nothing_answers_on_gives_the_manual_command(self, box):
        box.joined()
        closed = sandbox.free_port()
        result = leave(box, worker(box, port=closed))
        assert result.returncode == 0, result.output
        assert f"could not reach root@127.0.0.1:{closed} over SSH" in result.stderr
        assert "Connection refused" in result.stderr
        manual = (f"Run by hand: ssh -p {closed} root@127.0.0.1 'kubeadm reset -f && rm -f "
                  "/etc/cni/net.d/10-kindnet.conflist /etc/kubernetes/kamaji-hami-platform-tenant'")
        assert manual in result.stderr
        assert is_joined(box)

    def test_a_host_that_does_not_answer_at_all_gives_up_within_the_connect_timeout(self, box, monkeypatch):
        monkeypatch.setattr(host_join, "SSH_CONNECT_TIMEOUT_SECONDS", 2)
        result = leave(box, worker(box, address=BLACKHOLE, port=22))
        assert result.returncode == 0, result.output
        assert f"could not reach root@{BLACKHOLE}:22 over SSH" in result.stderr
        # Two attempts of 2 s each, and ssh's second between attempts.
        assert result.seconds < 10

    def test_a_host_joined_to_another_control_plane_is_left_alone(self, box):
        box.joined(ca=sandbox.make_ca(box.root / "other-ca.pem", "another tenant's CA"))
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "the host is joined to another control plane: left as it is" in result.stderr
        assert is_joined(box) and not kubeadm_calls(box, "reset")

    def test_a_failed_reset_is_a_warning(self, box):
        box.joined()
        box.write_state("reset-fails", "")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "the reset failed (kubeadm reset -f failed: failed to stop the kubelet). Run by hand: ssh" \
            in result.stderr

    def test_through_a_bastion_with_its_own_key(self, box):
        box.joined()
        log_start = len(box.sshd_log.read_text())
        host = worker(box, bastion=endpoint(box, "jump"))
        result = leave(box, host)
        assert result.returncode == 0, result.output
        assert not is_joined(box)
        log = box.sshd_log.read_text()[log_start:]
        assert "Accepted publickey for jump" in log and "Accepted publickey for root" in log

    def test_a_bastion_that_refuses_the_key_leaves_the_host_joined(self, box):
        box.joined()
        host = worker(box, bastion=endpoint(box, "jump"))
        result = leave(box, host, bastion_key=box.key_text("wrong"))
        assert result.returncode == 0, result.output
        assert "could not reach root@127.0.0.1" in result.stderr and "through jump@127.0.0.1" in result.stderr
        assert f"ssh -J jump@127.0.0.1:{box.port} -p {box.port} root@127.0.0.1" in result.stderr
        assert is_joined(box)

    def test_a_pinned_host_key_is_checked(self, box):
        box.joined()
        result = leave(box, worker(box, host_key=box.host_key))
        assert result.returncode == 0, result.output
        assert not is_joined(box)

    def test_another_host_key_than_the_pinned_one_stops_the_reset(self, box):
        box.joined()
        other_key = (box.keys["wrong"].with_suffix(".pub")).read_text().split()[:2]
        result = leave(box, worker(box, host_key=" ".join(other_key)))
        assert result.returncode == 0, result.output
        assert "Host key verification failed" in result.stderr
        assert is_joined(box)

    def test_a_pinned_bastion_host_key_is_checked_too(self, box):
        box.joined()
        other_key = " ".join((box.keys["wrong"].with_suffix(".pub")).read_text().split()[:2])
        host = worker(box, bastion=endpoint(box, "jump", host_key=other_key))
        result = leave(box, host)
        assert result.returncode == 0 and "Host key verification failed" in result.stderr
        assert is_joined(box)


class TestReady:
    def test_a_ready_node_passes(self, box):
        host = worker(box)
        result = box.local(host_join.ready_script(tenant_config(host), host),
                           **{host_join.KUBECONFIG_ENV: kubeconfig(tenant_ca(box))})
        assert result.returncode == 0, result.output
        assert "node gpu-host-1 is Ready" in result.stdout

    def test_a_node_that_does_not_get_ready_fails_with_its_conditions_in_time(self, box, monkeypatch):
        monkeypatch.setattr(host_join, "READY_WAIT", (2, 1))
        (box.kubectl_state / "ready").write_text("False\n")
        host = worker(box)
        result = box.local(host_join.ready_script(tenant_config(host), host),
                           **{host_join.KUBECONFIG_ENV: kubeconfig(tenant_ca(box))})
        assert result.returncode == 1
        assert "host gpu-host-1 joined tenant team-a but its node was not Ready within 2s: " \
               "Ready=False KubeletNotReady;" in result.stderr
        assert result.seconds < 10
