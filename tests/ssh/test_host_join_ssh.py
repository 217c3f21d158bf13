"""Worker hosts over SSH, for real: the join, the leave and the readiness wait as pulumi-command's
local Command runs them (bash, the environment, the join's and leave's script on stdin), with this
machine's OpenSSH client against sshd in a sandbox, and the tenant's API as the stand-in kubectl
keeps it (tests/ssh/sandbox.py)."""

from __future__ import annotations

import base64
import os
import re
import signal
import time
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from kamaji_hami_platform.config import (
    BUILTIN_GPU_MODELS,
    GpuPoolConfig,
    HostConfig,
    SshEndpointConfig,
    TenantConfig,
)
from kamaji_hami_platform.tenant import ca_pin, host_join, host_leave, host_ssh
from tests.ssh import sandbox
from tests.ssh.conftest import ADMIN_CREDENTIAL
from tests.ssh.sandbox import Sandbox

pytestmark = pytest.mark.ssh
# TEST-NET-1 (RFC 5737): never routed, so a connection there gets no answer.
BLACKHOLE = "192.0.2.1"
OWNER = host_join.Ownership("kamaji-hami-platform", "dev", "dev")
# The same project's prod stack, with a tenant of the same name.
OTHER_STACK = host_join.Ownership("kamaji-hami-platform", "prod", "prod")
REAL_GPUS = GpuPoolConfig(BUILTIN_GPU_MODELS["A100-80GB"], per_worker=2, mock=False)


def kubeconfig(box: Sandbox, ca: str | None = None) -> str:
    data = base64.b64encode((ca or box.ca).encode()).decode()
    return ("apiVersion: v1\nkind: Config\ncurrent-context: admin\ncontexts:\n- name: admin\n"
            "  context:\n    cluster: t\n    user: admin\nclusters:\n- cluster:\n"
            f"    certificate-authority-data: {data}\n    server: https://{box.endpoint}\n"
            "  name: t\nusers:\n- name: admin\n  user:\n"
            f"    token: {ADMIN_CREDENTIAL}\n")


def tenant_config(*hosts: HostConfig, gpus: GpuPoolConfig | None = None) -> TenantConfig:
    return TenantConfig(name="team-a", kubernetes_version="v1.35.0", control_plane_replicas=1,
                        pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16", workers=len(hosts),
                        gpus=gpus, hosts=hosts)


def endpoint(box: Sandbox, user: str = "root", **overrides: object) -> SshEndpointConfig:
    """A hop to the sandbox's sshd, its host key pinned unless `host_key` is given (None with
    insecure_skip_host_key_check=True: not checked)."""
    values: dict[str, object] = {"address": "127.0.0.1", "user": user, "port": box.port, "private_key": user,
                                 "host_key": box.host_key}
    values.update(overrides)
    return SshEndpointConfig(**values)  # type: ignore[arg-type]


def worker(box: Sandbox, user: str = "root", bastion: SshEndpointConfig | None = None,
           name: str = "gpu-host-1", **ssh: object) -> HostConfig:
    return HostConfig(name, endpoint(box, user, **ssh), bastion)


def wrong_host_key(box: Sandbox) -> str:
    return " ".join(box.keys["wrong"].with_suffix(".pub").read_text().split()[:2])


def environment(box: Sandbox, host: HostConfig, bastion_key: str | None = None, **env: str) -> dict[str, str]:
    """The join's and leave's environment, as the component gives it (tenant/component.py)."""
    variables = {host_join.KUBECONFIG_ENV: kubeconfig(box),
                 host_join.CA_HASH_ENV: ca_pin.kubeconfig_ca_hash(kubeconfig(box)),
                 host_ssh.HOST_SSH_KEY_ENV: box.key_text(host.ssh.private_key), **env}
    if host.bastion is not None:
        variables[host_ssh.BASTION_SSH_KEY_ENV] = bastion_key or box.key_text(host.bastion.private_key)
    return variables


def join_script(box: Sandbox, host: HostConfig, gpus: GpuPoolConfig | None = None,
                owner: host_join.Ownership = OWNER) -> str:
    return host_join.join_script(tenant_config(host, gpus=gpus), host, owner, box.konnectivity.port)


def join(box: Sandbox, host: HostConfig, gpus: GpuPoolConfig | None = None,
         owner: host_join.Ownership = OWNER, bastion_key: str | None = None, **env: str) -> sandbox.Run:
    return box.local(host_join.RUN_STDIN_SCRIPT, join_script(box, host, gpus, owner),
                     **environment(box, host, bastion_key, **env))


def leave(box: Sandbox, host: HostConfig, bastion_key: str | None = None,
          owner: host_join.Ownership = OWNER, **env: str) -> sandbox.Run:
    return box.local(host_join.RUN_STDIN_SCRIPT, host_leave.leave_script(tenant_config(host), host, owner),
                     **environment(box, host, bastion_key, **env))


def marker(owner: host_join.Ownership, node: str, ca: str, join_id: str = "20261201T090000Z-0a1b2c3d") -> str:
    """A marker as a join writes it."""
    return f"{owner.marker(tenant_config())}\nnode={node}\nca={ca_pin.ca_cert_hash(ca)}\njoin={join_id}\n"


def marked(box: Sandbox) -> tuple[str, str]:
    """The host's marker but its join id, and its join id."""
    lines = (box.marker() or "").splitlines()
    assert lines and lines[-1].startswith("join="), lines
    return "\n".join(lines[:-1]) + "\n", lines[-1].removeprefix("join=")


def owned(owner: host_join.Ownership, node: str, ca: str) -> str:
    """What `marked` gives for a host `owner` joined as `node` to the control plane of `ca`."""
    return marker(owner, node, ca).rsplit("join=", 1)[0]


def host_files(box: Sandbox) -> dict[str, str]:
    """Everything on the sandboxed host a join could change."""
    return {str(path.relative_to(box.host)): path.read_text() if path.is_file() else "<dir>"
            for path in sorted(box.host.rglob("*"))}


def kubeadm_calls(box: Sandbox, verb: str) -> list[str]:
    return [line for line in box.argv_log() if line.startswith(f"kubeadm {verb}")]


def kubectl_verbs(box: Sandbox) -> list[str]:
    """The verb of each kubectl call: `get node`, `create`, `delete secret`..."""
    verbs = []
    for line in box.kubectl_log():
        words = [word for word in line.split()[1:] if not word.startswith("-")]
        words = words[1:]  # the kubeconfig's path
        if words[:2] == ["kube-system", "delete"]:
            words = words[1:]
        verbs.append(" ".join(words[:2]) if words[0] in ("get", "delete") else words[0])
    return verbs


def is_joined(box: Sandbox) -> bool:
    return (box.host / "kubernetes" / "kubelet.conf").exists()


def assert_token_gone(box: Sandbox) -> None:
    assert box.live_tokens() == [], "a bootstrap token outlived the join"


class TestJoin:
    def test_the_host_gets_a_token_for_minutes_and_never_a_kubeconfig(self, box):
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "joined gpu-host-1 to tenant team-a" in result.stdout
        # One token, minted here as a bootstrap token Secret that expires within minutes.
        (secret,) = box.minted()
        assert "type: bootstrap.kubernetes.io/token" in secret and "namespace: kube-system" in secret
        assert f'auth-extra-groups: "{host_join.BOOTSTRAP_TOKEN_GROUP}"' in secret
        assert 'usage-bootstrap-authentication: "true"' in secret
        expires = re.search(r'expiration: "(.*)"', secret).group(1)
        expiration = datetime.strptime(expires, "%Y-%m-%dT%H:%M:%SZ")
        left = expiration.replace(tzinfo=UTC) - datetime.now(UTC)
        assert timedelta(minutes=9) < left <= timedelta(minutes=host_join.BOOTSTRAP_TOKEN_MINUTES)
        token_id = re.search(r'token-id: "([a-z0-9]{6})"', secret).group(1)
        token = token_id + "." + re.search(r'token-secret: "([a-z0-9]{16})"', secret).group(1)
        # It is gone after the join; the tenant API was asked for the Node, the token, the
        # token's certificate requests while the host joined (one approved), the token's delete.
        assert_token_gone(box)
        verbs = kubectl_verbs(box)
        assert verbs[:3] == ["get node", "create", "get csr"] and verbs[-1] == "delete secret"
        assert set(verbs[3:-1]) <= {"get csr", "certificate"} and verbs.count("certificate") == 1
        (approved,) = [line for line in box.kubectl_log() if " certificate " in line]
        assert " certificate approve node-csr-" in approved
        assert re.search(r"host gpu-host-1: approved certificate request node-csr-[0-9a-f]{8} "
                         r"\(CN=system:node:gpu-host-1,O=system:nodes\)", result.stdout), result.stdout
        assert f"bootstrap-token-{token_id}" in box.kubectl_log()[-1]
        # The host got the endpoint, the token (stdin, into a 0600 JoinConfiguration) and the CA's
        # pin; no kubeconfig, no admin credential: not in its arguments, environment or files.
        mode, config = (box.state / "join-config").read_text().split("\n", 1)
        assert mode == "600"
        assert f'token: "{token}"' in config
        assert f'- "{ca_pin.ca_cert_hash(box.ca)}"' in config
        assert f'apiServerEndpoint: "{box.endpoint}"' in config
        assert "apiVersion: kubeadm.k8s.io/v1beta4" in config and "name: gpu-host-1" in config
        # The runtime the prerequisites found, and the address SSH reaches as the node's IP.
        assert f"  criSocket: {host_join.CRI_SOCKETS['containerd']}\n" in config
        assert '  kubeletExtraArgs:\n  - name: node-ip\n    value: "127.0.0.1"\n' in config
        given = (box.state / "join-caller").read_text() + (box.state / "join-env").read_text()
        assert token not in given and "client-key-data" not in given and "users:" not in given
        assert not any(ADMIN_CREDENTIAL in text for text in host_files(box).values())
        (joined,) = kubeadm_calls(box, "join")
        assert joined.endswith("--node-name gpu-host-1")
        # Nothing of the session stays on the host; the marker says whose node it is.
        assert list(box.remote_tmp.iterdir()) == []
        text, join_id = marked(box)
        assert text == owned(OWNER, "gpu-host-1", box.ca)
        assert re.fullmatch(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}", join_id)
        assert host_join.join_id(result.stdout) == join_id
        assert (box.host / "kubernetes" / "pki" / "ca.crt").read_text() == box.ca

    def test_a_host_that_asks_for_another_nodes_certificate_is_denied_and_its_join_stops(self, box):
        """The token's group has no auto-approval: the join approves only this host's kubelet's
        request; another identity is denied, the join fails saying so, the token is deleted and
        the host is not joined."""
        box.write_state("csr-subject", "/O=system:nodes/CN=system:node:gpu-host-2")
        result = join(box, worker(box))
        assert result.returncode != 0
        refused = "host gpu-host-1: a certificate request made with this join's token, node-csr-"
        assert refused in result.stderr
        assert ("(signer kubernetes.io/kube-apiserver-client-kubelet, subject CN=system:node:gpu-host-2,"
                "O=system:nodes), is not for this host's kubelet" in result.stderr), result.output
        decisions = [line.split()[-2] for line in box.kubectl_log() if " certificate " in line]
        assert decisions == ["deny"]
        assert not any(" certificate approve " in line for line in box.kubectl_log())
        assert_token_gone(box)
        assert not is_joined(box)

    def test_a_kubelet_that_is_not_enabled_is_enabled_so_the_node_survives_a_reboot(self, box):
        (box.state / "enabled-kubelet").unlink()
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "systemctl enable kubelet" in box.argv_log()

    @pytest.mark.parametrize(("offset", "said"), [(-120, "ahead of"), (120, "behind")])
    def test_a_clock_off_the_tenant_apis_by_over_a_minute_stops_the_join_before_the_host(
            self, box, offset, said):
        """The token's expiry is set by this host's clock and judged by the API server's: a skew
        over a minute (either way) deletes the token and sends the host nothing."""
        (box.tenant / "clock-offset").write_text(str(offset))
        result = join(box, worker(box))
        assert result.returncode != 0
        assert f"host gpu-host-1: this host's clock is {abs(offset)}s {said} the tenant API server's" \
            in result.stderr or f"{abs(offset) - 1}s {said}" in result.stderr, result.output
        assert "set this host's clock right (NTP)" in result.stderr
        assert_token_gone(box)
        assert box.argv_log() == []

    def test_a_clock_within_a_minute_of_the_tenant_apis_joins(self, box):
        (box.tenant / "clock-offset").write_text("-50")
        result = join(box, worker(box))
        assert result.returncode == 0, result.output

    @pytest.mark.parametrize(("offset", "said"), [(-200, "behind"), (200, "ahead of")])
    def test_a_host_clock_off_the_tenant_apis_by_over_a_minute_is_refused_on_the_host(
            self, box, offset, said):
        """The host's clock is judged against the API server's stamp on this join's token, which
        the host is given: certificates and the token are judged by both clocks."""
        box.write_state("host-clock-offset", str(offset))
        before = host_files(box)
        result = join(box, worker(box))
        assert result.returncode == 1
        # Off by the offset, give or take the seconds between the token's stamp and the host's
        # check (the SSH session, the stand-ins; whole seconds on both sides).
        said_as = (f"  - the clock is {seconds}s {said} the tenant API server's (at most 60s"
                   for seconds in range(abs(offset) - 5, abs(offset) + 6))
        assert any(line in result.stderr for line in said_as), result.output
        assert host_files(box) == before
        assert_token_gone(box)

    def test_a_host_no_daemon_synchronizes_joins_when_its_clock_agrees_and_is_told(self, box):
        """NTPSynchronized is what a daemon reports, not whether the clock is right: a VM whose clock
        the hypervisor keeps (this project's CI) reports no, and agrees with the API server."""
        box.write_state("clock-unsynchronized", "")
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "note: host gpu-host-1's clock is not reported synchronized" in result.stdout

    def test_a_kernel_with_the_modules_built_in_and_no_module_list_joins(self, box):
        """A kernel without module support has no /proc/modules, and one booted from outside its
        disk no modules.builtin (this project's CI): what the modules make is there instead."""
        box.modules([])
        for module in host_join.KERNEL_MODULES:
            box.module_mark(module).write_text("")
        result = join(box, worker(box))
        assert result.returncode == 0, result.output

    def test_a_warning_kubectl_prints_on_the_tokens_create_is_not_read_as_the_stamp(self, box):
        (box.tenant / "create-warning").write_text("a policy warned about this Secret")
        result = join(box, worker(box))
        assert result.returncode == 0, result.output

    def test_a_second_run_is_harmless(self, box):
        host = worker(box)
        assert join(box, host).returncode == 0
        again = join(box, host)
        assert again.returncode == 0, again.output
        assert "already joined" in again.stdout
        assert len(kubeadm_calls(box, "join")) == 1 and not kubeadm_calls(box, "reset")
        assert_token_gone(box)
        # The same join: `<tenant>-<host>` and the GPU registration stay as they are.
        assert host_join.join_id(again.stdout) == host_join.join_id(box.runs[0].stdout) != ""

    def test_a_tenant_api_that_does_not_answer_stops_before_a_token_or_the_host(self, box):
        (box.tenant / "unreachable").write_text("")
        result = join(box, worker(box))
        assert result.returncode == 1
        assert result.stderr.startswith("host gpu-host-1: the tenant API does not answer this host")
        assert "management.apiClientCidrs" in result.stderr
        assert box.minted() == [] and box.argv_log() == []

    def test_a_token_the_tenant_refuses_stops_before_the_host(self, box):
        (box.tenant / "create-fails").write_text("")
        result = join(box, worker(box))
        assert result.returncode == 1
        refused = "host gpu-host-1: cannot create a bootstrap token in the tenant: Error from server"
        assert refused in result.stderr
        assert box.argv_log() == []

    def test_a_user_other_than_root_joins_and_leaves_through_sudo_with_the_token_on_stdin(self, box):
        host = worker(box, user="deploy")
        result = join(box, host)
        assert result.returncode == 0, result.output
        assert box.argv_log()[0] == "sudo -n /bin/sh"
        assert 'token: "' in (box.state / "join-config").read_text(), "stdin did not pass through sudo"
        gone = leave(box, host)
        assert gone.returncode == 0, gone.output
        assert "host reset" in gone.stdout and not is_joined(box)
        # The reset runs as root through sudo: kubeadm's, then the kubelet it stopped disabled.
        log = box.argv_log()
        last_sudo = len(log) - 1 - log[::-1].index("sudo -n /bin/sh")
        assert log[last_sudo:last_sudo + 2] == ["sudo -n /bin/sh", "kubeadm reset -f"], log

    def test_a_failed_join_resets_the_host_deletes_the_token_and_says_why_first(self, box):
        box.write_state("join-fails", "")
        before = host_files(box)
        (box.host / "cni-net.d" / "10-kindnet.conflist").write_text("{}\n")
        result = join(box, worker(box))
        assert result.returncode == 1
        assert result.stderr.startswith("host gpu-host-1: the join failed: kubeadm join of host gpu-host-1 "
                                        "failed (the host was reset, so the next run starts clean)")
        assert "token <redacted-token> (sha256:<redacted>) rejected" in result.stderr
        assert kubeadm_calls(box, "reset") == ["kubeadm reset -f"]
        assert_token_gone(box)
        # What the join left (the CA it wrote before failing) and kindnet's CNI config are gone.
        assert host_files(box) == before
        (box.state / "join-fails").unlink()
        assert join(box, worker(box)).returncode == 0, "the next run does not start clean"

    def test_a_join_kubeadm_refused_in_its_preflight_resets_nothing(self, box):
        box.write_state("preflight-fails", "")
        result = join(box, worker(box))
        assert result.returncode == 1
        assert "kubeadm join of host gpu-host-1 failed (kubeadm stopped before changing the host)" \
            in result.stderr
        assert not kubeadm_calls(box, "reset")
        assert_token_gone(box)

    def test_kubeadms_files_there_before_the_join_are_not_reset_when_its_preflight_refuses(self, box):
        """Another cluster's CA (or bootstrap kubeconfig) on a host without kubelet.conf: a host
        mid-join of another stack, one repurposed. kubeadm's preflight refuses it (the stand-in
        models its FileAvailable checks), and the failure path must not reset what kubeadm did
        not write (issue 38)."""
        other = sandbox.make_ca(box.root / "other-ca.pem", "another cluster's CA")
        kubernetes = box.host / "kubernetes"
        for written in ("pki/ca.crt", "bootstrap-kubelet.conf"):
            (kubernetes / written).parent.mkdir(parents=True, exist_ok=True)
            (kubernetes / written).write_text(other)
            before = host_files(box)
            result = join(box, worker(box))
            assert result.returncode == 1
            assert f"[ERROR FileAvailable--etc-kubernetes-{written.replace('/', '-')}]" in result.stderr
            assert f"the host had /etc/kubernetes/{written} before kubeadm ran, so nothing was reset" \
                in result.stderr
            assert not kubeadm_calls(box, "reset") and host_files(box) == before
            assert_token_gone(box)
            (kubernetes / written).unlink()

    def test_a_ca_pin_that_is_not_the_tenants_fails_the_join(self, box):
        """kubeadm's discovery refuses a control plane whose CA is not pinned (here: the pin of
        another CA): what stops a host from joining an impostor at the tenant's address."""
        other = sandbox.make_ca(box.root / "impostor-ca.pem", "an impostor's CA")
        result = join(box, worker(box), **{host_join.CA_HASH_ENV: ca_pin.ca_cert_hash(other)})
        assert result.returncode == 1
        assert "none of the public keys" in result.stderr and "are pinned" in result.stderr
        assert not is_joined(box)
        assert_token_gone(box)


class TestHostKeys:
    def test_the_join_runs_with_a_pinned_host_key(self, box):
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "Accepted publickey for root" in box.sshd_log.read_text()

    def test_a_wrong_host_key_fails_before_anything_is_sent(self, box):
        log_start = len(box.sshd_log.read_text())
        result = join(box, worker(box, host_key=wrong_host_key(box)))
        assert result.returncode == 1
        assert result.stderr.startswith("host gpu-host-1: the SSH session to root@127.0.0.1:")
        assert "Host key verification failed" in result.stderr
        # The client never authenticated: no command, no stdin (the token) went to the host.
        assert "Accepted publickey" not in box.sshd_log.read_text()[log_start:]
        assert box.argv_log() == [] and not (box.state / "join-config").exists()
        assert_token_gone(box)

    def test_a_wrong_bastion_host_key_fails_before_the_host_is_reached(self, box):
        log_start = len(box.sshd_log.read_text())
        host = worker(box, bastion=endpoint(box, "jump", host_key=wrong_host_key(box)))
        result = join(box, host)
        assert result.returncode == 1 and "Host key verification failed" in result.stderr
        assert "Accepted publickey" not in box.sshd_log.read_text()[log_start:]
        assert box.argv_log() == []
        assert_token_gone(box)

    def test_through_a_bastion_both_keys_pinned(self, box):
        log_start = len(box.sshd_log.read_text())
        result = join(box, worker(box, bastion=endpoint(box, "jump")))
        assert result.returncode == 0, result.output
        log = box.sshd_log.read_text()[log_start:]
        assert "Accepted publickey for jump" in log and "Accepted publickey for root" in log

    def test_an_unchecked_host_key_is_the_configs_explicit_choice(self, box):
        host = worker(box, host_key=None, insecure_skip_host_key_check=True)
        result = join(box, host)
        assert result.returncode == 0, result.output
        assert host_ssh.unchecked_hops(host) == ["host 127.0.0.1"]


class TestADroppedSession:
    def test_killing_the_ssh_client_mid_join_leaves_no_secret_on_the_host(self, box):
        """The review's case: the SSH client killed while kubeadm join runs (its discovery done,
        the kubelet starting). The join ends, and the host's script dies of SIGPIPE at its next
        write to the session (no terminal: sshd sends no SIGHUP); dash skips the EXIT trap when a
        signal ends it (dash src/trap.c), so without a trap on PIPE the JoinConfiguration, with
        the token, stayed in the host's TMPDIR. Checked: this test fails without it."""
        box.write_state("join-slow", "3")
        # Nobody approves the kubelet's request once the local join is gone: kubeadm waits for it
        # until its TLS bootstrap timeout, here 2 s (5 min by default), holding a deleted token.
        box.write_state("tls-bootstrap-seconds", "2")
        host = worker(box)
        started = time.monotonic()
        process = box.start_local(host_join.RUN_STDIN_SCRIPT, join_script(box, host),
                                  **environment(box, host))
        deadline = time.monotonic() + sandbox.RUN_TIMEOUT
        while not (box.state / "join-started").exists():
            assert process.poll() is None and time.monotonic() < deadline, "the join never started"
            time.sleep(0.05)
        assert any(box.remote_tmp.rglob("join.yaml")), "the JoinConfiguration is not where it is expected"
        clients = [pid for pid in sandbox.descendants(process.pid)
                   if sandbox.command_line(pid)[:1] == ["ssh"]
                   and "root@127.0.0.1" in sandbox.command_line(pid)]
        assert clients, "no ssh client under the join"
        for pid in clients:
            os.kill(pid, signal.SIGKILL)
        result = box.finish(process, started)
        assert result.returncode == 1
        assert result.stderr.startswith("host gpu-host-1: the")
        assert_token_gone(box)
        # The host's script ends when kubeadm returns (3 s + 2 s): nothing of the session left.
        deadline = time.monotonic() + 20
        while list(box.remote_tmp.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(box.remote_tmp.iterdir()) == [], "the session's files (the token) stayed on the host"


class TestWhoseHost:
    def test_a_host_of_another_stacks_same_named_tenant_is_refused_untouched(self, box):
        """The prod stack's team-a node listed by a typo in the dev stack's team-a."""
        prod_ca = sandbox.make_ca(box.root / "prod-ca.pem", "prod team-a CA")
        box.joined(marker(OTHER_STACK, "gpu-host-1", prod_ca), ca=prod_ca)
        before = host_files(box)
        result = join(box, worker(box))
        assert result.returncode == 1
        assert "host gpu-host-1 is a node of something else" in result.stderr
        assert f"({host_join.JOIN_MARKER}: {OTHER_STACK.marker(tenant_config())})" in result.stderr
        assert host_files(box) == before
        assert not kubeadm_calls(box, "reset") and not kubeadm_calls(box, "join")
        assert_token_gone(box)
        # Nor does this stack's leave reset it.
        gone = leave(box, worker(box))
        assert gone.returncode == 0, gone.output
        assert "the host is not this stack's node of the tenant's control plane" in gone.stderr
        assert host_files(box) == before

    def test_another_stacks_marker_with_another_pin_is_refused_even_with_this_ca_on_disk(self, box):
        other = sandbox.make_ca(box.root / "other-ca.pem", "another control plane's CA")
        box.joined(marker(OTHER_STACK, "gpu-host-1", other))
        result = join(box, worker(box))
        assert result.returncode == 1 and "is a node of something else" in result.stderr
        assert not kubeadm_calls(box, "reset")

    def test_after_a_stack_rename_this_control_planes_host_is_kept_and_remarked(self, box):
        """`pulumi stack rename`: the marker names the old stack, but the tenant, the node and the
        control plane's pin are this stack's: the host is adopted, not reset."""
        box.joined(marker(OTHER_STACK, "gpu-host-1", box.ca, "20261101T000000Z-00aa11bb"))
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert f"(its marker named {OTHER_STACK.marker(tenant_config())}; now this stack)" in result.stdout
        assert not kubeadm_calls(box, "reset") and not kubeadm_calls(box, "join")
        assert marked(box) == (owned(OWNER, "gpu-host-1", box.ca), "20261101T000000Z-00aa11bb")
        # And such a host's leave resets it.
        box.joined(marker(OTHER_STACK, "gpu-host-1", box.ca))
        gone = leave(box, worker(box))
        assert gone.returncode == 0 and not is_joined(box), gone.output

    def test_a_node_of_another_cluster_is_never_reset(self, box):
        """Joined, but not by this platform (no marker: a mistyped address, a machine in use), or
        by 0.1.0 to another control plane: refused, nothing touched."""
        other = sandbox.make_ca(box.root / "other-ca.pem", "another cluster's CA")
        for legacy in (None, host_join.legacy_marker(tenant_config()) + "\n"):
            box.joined(legacy, ca=other)
            result = join(box, worker(box))
            assert result.returncode == 1
            assert "host gpu-host-1 is a node of something else" in result.stderr
            assert "reset it by hand first (kubeadm reset -f)" in result.stderr
            assert not kubeadm_calls(box, "reset") and not kubeadm_calls(box, "join")
            assert (box.host / "kubernetes" / "pki" / "ca.crt").read_text() == other

    def test_this_stacks_node_of_a_replaced_control_plane_is_reset_then_joined(self, box):
        old = sandbox.make_ca(box.root / "old-ca.pem", "the replaced control plane's CA")
        box.joined(marker(OWNER, "gpu-host-1", old), ca=old)
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "resetting it to join again" in result.stdout
        log = box.argv_log()
        assert log.index("kubeadm reset -f") < log.index(kubeadm_calls(box, "join")[0])
        assert marked(box)[0] == owned(OWNER, "gpu-host-1", box.ca)

    def test_a_node_the_tenant_lost_is_reset_and_joins_again(self, box):
        """kubernetes/kubernetes#116485: a kubelet whose Node was deleted never registers it
        again; a join that only compared the CA waited forever in `-ready`."""
        box.joined(marker(OWNER, "gpu-host-1", box.ca))
        (box.tenant / "node-missing").write_text("")
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "or its Node is gone (absent); resetting it to join again" in result.stdout
        assert kubeadm_calls(box, "reset") and kubeadm_calls(box, "join")
        # A new join: `<tenant>-<host>` is replaced, and the GPU registration with it.
        assert host_join.join_id(result.stdout) not in ("", "20261201T090000Z-0a1b2c3d")

    def test_a_renamed_host_joins_as_its_new_name_and_the_old_names_leave_leaves_it(self, box):
        """Renamed in the config: the new name's resources join it first, then the old name's
        leave is deleted, at the end of the same `up`: it must not reset the node just joined."""
        box.joined(marker(OWNER, "gpu-host-1", box.ca))
        result = join(box, worker(box, name="gpu-host-2"))
        assert result.returncode == 0, result.output
        assert "host gpu-host-2 was joined to tenant team-a as gpu-host-1" in result.stdout
        assert marked(box)[0] == owned(OWNER, "gpu-host-2", box.ca)
        gone = leave(box, worker(box))
        assert gone.returncode == 0, gone.output
        assert "the host is not this stack's node of the tenant's control plane" in gone.stderr
        assert is_joined(box) and marked(box)[0] == owned(OWNER, "gpu-host-2", box.ca)

    def test_a_host_0_1_0_joined_gets_the_new_marker_and_is_left_joined(self, box):
        box.joined(host_join.legacy_marker(tenant_config()) + "\n")
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        legacy = host_join.legacy_marker(tenant_config())
        assert f"already joined to tenant team-a (its marker named {legacy}; now this stack)" in result.stdout
        assert not kubeadm_calls(box, "reset") and not kubeadm_calls(box, "join")
        assert marked(box) == (owned(OWNER, "gpu-host-1", box.ca), "adopted")

    def test_an_already_joined_node_is_not_checked_again(self, box):
        """A re-run (an input of the join changed) on a working node whose tools changed since."""
        box.joined(marker(OWNER, "gpu-host-1", box.ca))
        (box.bin / "kubelet").unlink()
        result = join(box, worker(box))
        assert result.returncode == 0, result.output
        assert "already joined" in result.stdout


class TestPrerequisites:
    def test_everything_missing_is_listed_at_once_and_the_host_is_left_as_it_was(self, box, monkeypatch):
        box.write_state("kubeadm-version", "v1.37.0")
        box.write_state("kubelet-version", "v1.31.2")
        box.write_state("cri-disabled", "")
        (box.state / "unit-kubelet").unlink()
        # Not cgroup2fs: the sandbox's own folder.
        monkeypatch.setattr(host_join, "CGROUP_ROOT", str(box.host / "cni-bin"))
        (box.bin / "iptables").unlink()
        box.write_state("host-clock-offset", "-300")
        box.konnectivity.close()
        box.modules([])
        box.write_host("ip_forward", "0\n")
        box.write_host("swaps", "Filename\tType\tSize\tUsed\tPriority\n/swapfile\tfile\t1048572\t0\t-2\n")
        for plugin in ("ptp", "portmap"):
            (box.host / "cni-bin" / plugin).unlink()
        before = host_files(box)
        try:
            result = join(box, worker(box))
        finally:
            box.konnectivity = sandbox.Listener()
        assert result.returncode == 1
        message = result.stderr
        assert "host gpu-host-1 cannot join tenant team-a; nothing was changed on it. Missing:" in message
        for missing in (
                "kubeadm is v1.37.0, the tenant runs v1.35.0: install kubeadm v1.35 or v1.36",
                "kubelet is Kubernetes v1.31.2, the tenant runs v1.35.0: install kubelet v1.32..v1.35",
                "containerd runs without its CRI plugin",
                "the kubelet service is not installed",
                "the host runs cgroup v1",
                "not on PATH: iptables (the kubelet and kube-proxy use them)",
                "the host does not reach 127.0.0.1:",
                "kernel module overlay is not loaded: modprobe overlay",
                "kernel module br_netfilter is not loaded: modprobe br_netfilter",
                "net.ipv4.ip_forward is not 1",
                "CNI plugins missing from /opt/cni/bin: ptp portmap",
                "swap is on: swapoff -a"):
            assert f"  - {missing}" in message, missing
        # Whole seconds on both sides: 300 off, give or take one.
        assert re.search(r"  - the clock is (29[5-9]|30[0-5])s behind the tenant API server's \(at most 60s",
                         message), message
        # The API server answers; Konnectivity does not.
        assert f"reach 127.0.0.1:{box.api.port} " not in message
        assert host_files(box) == before
        assert [line.split()[1] for line in box.argv_log() if line.startswith("kubeadm")] == ["version"]
        assert list(box.remote_tmp.iterdir()) == []
        assert_token_gone(box)

    def test_a_cgroup_v1_host_joins_only_when_the_platform_lets_kubelets_start_there(self, box, monkeypatch):
        """management.failCgroupV1: false (kamaji_hami_platform/cgroup_v1.py): the prerequisites
        accept the host, and kubeadm's SystemVerification, which fails on cgroup v1 since v1.35, is
        skipped in the JoinConfiguration the host's kubeadm reads."""
        monkeypatch.setattr(host_join, "CGROUP_ROOT", str(box.host / "cni-bin"))  # not cgroup2fs
        host = worker(box)
        refused = join(box, host)
        assert refused.returncode == 1 and "  - the host runs cgroup v1" in refused.stderr
        assert not kubeadm_calls(box, "join")
        script = host_join.join_script(tenant_config(host), host, OWNER, box.konnectivity.port,
                                       cgroup_v1_allowed=True)
        allowed = box.local(host_join.RUN_STDIN_SCRIPT, script, **environment(box, host))
        assert allowed.returncode == 0, allowed.output
        _, config = (box.state / "join-config").read_text().split("\n", 1)
        registration = yaml.safe_load(config)["nodeRegistration"]
        assert registration["ignorePreflightErrors"] == ["SystemVerification"]
        assert registration["criSocket"] == host_join.CRI_SOCKETS["containerd"]
        assert registration["kubeletExtraArgs"] == [{"name": "node-ip", "value": "127.0.0.1"}]

    def test_a_kubelet_kubeadm_did_not_join_here_is_refused_untouched(self, box, monkeypatch):
        """Another installer's node at a mistyped address: its kubelet configuration, or something
        on the kubelet's port, and no kubeadm kubelet.conf."""
        (box.host / "kubelet-config.yaml").write_text("kind: KubeletConfiguration\n")
        result = join(box, worker(box))
        assert result.returncode == 1
        assert f"  - a kubelet is set up on the host ({box.host}/kubelet-config.yaml) that kubeadm did not " \
            "join here" in result.stderr
        (box.host / "kubelet-config.yaml").unlink()
        listener = sandbox.Listener()
        monkeypatch.setattr(host_join, "KUBELET_PORT", listener.port)
        try:
            result = join(box, worker(box))
        finally:
            listener.close()
        assert f"  - something listens on the kubelet's port {listener.port}" in result.stderr
        assert not kubeadm_calls(box, "join") and not kubeadm_calls(box, "reset")

    def test_no_container_runtime_and_no_tools(self, box):
        (box.state / "active-containerd").unlink()
        for tool in ("kubeadm", "kubelet", "ip", "nsenter", "iptables"):
            (box.bin / tool).unlink()
        result = join(box, worker(box))
        assert result.returncode == 1
        for missing in ("kubeadm is not on PATH: install kubeadm v1.35 or v1.36",
                        "kubelet is not on PATH: install kubelet v1.32..v1.35",
                        "no container runtime is active", "not on PATH: iptables ip nsenter"):
            assert f"  - {missing}" in result.stderr, missing

    def test_kubeadm_one_minor_ahead_joins(self, box):
        box.write_state("kubeadm-version", "v1.36.1")
        result = join(box, worker(box))
        assert result.returncode == 0, result.output

    def test_containerd_1_needs_systemd_cgroups(self, box):
        box.write_state("containerd-version", "1.7.25")
        result = join(box, worker(box))
        assert result.returncode == 1
        missing = "  - containerd 1.x runs runc with cgroupfs, the tenant's kubelets use systemd"
        assert missing in result.stderr
        box.write_state("systemd-cgroup", "")
        assert join(box, worker(box)).returncode == 0

    def test_real_gpus_of_another_model_and_no_toolkit_are_listed_with_the_fix(self, box):
        box.write_state("gpus", "2")
        box.write_state("gpu-name", "NVIDIA H100 80GB HBM3\n")
        (box.bin / "nvidia-container-runtime").unlink()
        result = join(box, worker(box), gpus=REAL_GPUS)
        assert result.returncode == 1
        for missing in ("nvidia-smi lists 0 A100-80GB card(s) (NVIDIA A100-SXM4-80GB), each worker of the "
                        "tenant carries 2; it lists: NVIDIA H100 80GB HBM3;NVIDIA H100 80GB HBM3: "
                        "check the driver",
                        "the NVIDIA container toolkit is not installed",
                        "containerd's default runtime is not nvidia (HAMi requires it): nvidia-ctk runtime "
                        "configure --runtime=containerd --set-as-default"):
            assert f"  - {missing}" in result.stderr, missing
        assert not kubeadm_calls(box, "join")

    @pytest.mark.parametrize("containerd_2", [False, True])
    @pytest.mark.parametrize("name", ["NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"])
    def test_a_host_with_its_gpus_ready_joins(self, box, containerd_2, name):
        """Older drivers print the card without "NVIDIA " (NVIDIA/CUDALibrarySamples#104)."""
        box.write_state("gpus", "2")
        box.write_state("gpu-name", name + "\n")
        box.write_state("containerd-default-runtime", "nvidia")
        if containerd_2:  # prints default_runtime_name = 'nvidia'
            box.write_state("containerd-2", "")
        result = join(box, worker(box), gpus=REAL_GPUS)
        assert result.returncode == 0, result.output
        assert "nvidia-smi --query-gpu=name --format=csv,noheader" in box.argv_log()


class TestLeave:
    def joined(self, box: Sandbox) -> None:
        box.joined(marker(OWNER, "gpu-host-1", box.ca))

    def test_drains_deletes_the_node_and_resets_the_host(self, box):
        self.joined(box)
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert kubectl_verbs(box) == ["get node", "get node", "drain", "delete node"]
        assert "--skip-wait-for-delete-timeout=30" in box.kubectl_log()[2]
        assert all("--request-timeout=30s" in line for line in box.kubectl_log())
        assert "node gpu-host-1 removed from tenant team-a" in result.stdout
        assert kubeadm_calls(box, "reset") == ["kubeadm reset -f"] and not is_joined(box)
        assert not (box.host / "cni-net.d" / "10-kindnet.conflist").exists()
        assert box.marker() is None

    def test_the_kubelet_the_reset_stopped_is_disabled_too(self, box):
        """kubeadm reset stops the kubelet but leaves it enabled (cleanupnode.go): at the next boot
        it would start without a config, again and again (issue 38, item 4)."""
        self.joined(box)
        box.write_state("enabled-kubelet", "")
        box.write_state("active-kubelet", "")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "systemctl disable kubelet" in box.argv_log()
        assert not (box.state / "enabled-kubelet").exists() and not (box.state / "active-kubelet").exists()
        assert "kubelet.service disabled" in result.stdout

    def test_a_host_0_1_0_joined_is_reset_by_its_ca(self, box):
        box.joined(host_join.legacy_marker(tenant_config()) + "\n")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert not is_joined(box)

    def test_a_host_this_stack_joined_to_another_control_plane_is_left_alone(self, box):
        other = sandbox.make_ca(box.root / "other-ca.pem", "a later control plane's CA")
        box.joined(marker(OWNER, "gpu-host-1", other), ca=other)
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "the host is not this stack's node of the tenant's control plane" in result.stderr
        assert is_joined(box) and not kubeadm_calls(box, "reset")

    def test_a_host_without_this_stacks_marker_is_left_as_it_is_kubelet_conf_or_not(self, box):
        """No kubelet.conf, a foreign CA, no marker (a machine repurposed as another installer's
        node, another stack's host mid-join): the leave changes nothing (issue 38)."""
        other = sandbox.make_ca(box.root / "other-ca.pem", "another cluster's CA")
        (box.host / "kubernetes" / "pki").mkdir(parents=True)
        (box.host / "kubernetes" / "pki" / "ca.crt").write_text(other)
        (box.host / "cni-net.d" / "10-kindnet.conflist").write_text("{}\n")
        markers = (None, marker(OTHER_STACK, "gpu-host-1", other), marker(OWNER, "gpu-host-2", box.ca))
        for marked_as in markers:
            if marked_as is not None:
                (box.host / "kubernetes" / "kamaji-hami-platform-tenant").write_text(marked_as)
            before = host_files(box)
            result = leave(box, worker(box))
            assert result.returncode == 0, result.output
            assert "the host is not this stack's node of the tenant's control plane" in result.stderr
            assert "left as it is" in result.stderr
            assert not kubeadm_calls(box, "reset") and host_files(box) == before

    def test_a_marked_host_without_kubelet_conf_keeps_another_kubelet(self, box, monkeypatch):
        """This stack's marker, but kubeadm's kubelet.conf gone and a kubelet set up or listening
        since: the join's guards hold for the leave too. Without either, the leave cleans up."""
        self.joined(box)
        (box.host / "kubernetes" / "kubelet.conf").unlink()
        (box.host / "kubelet-config.yaml").write_text("kind: KubeletConfiguration\n")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert ("the host has no /etc/kubernetes/kubelet.conf but a kubelet set up "
                f"({box.host}/kubelet-config.yaml)") in result.stderr
        assert not kubeadm_calls(box, "reset")
        (box.host / "kubelet-config.yaml").unlink()
        listener = sandbox.Listener()
        monkeypatch.setattr(host_join, "KUBELET_PORT", listener.port)
        try:
            result = leave(box, worker(box))
        finally:
            listener.close()
        assert result.returncode == 0, result.output
        assert f"something listens on the kubelet's port {listener.port}" in result.stderr
        assert not kubeadm_calls(box, "reset") and box.marker() is not None
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert kubeadm_calls(box, "reset") == ["kubeadm reset -f"] and box.marker() is None

    def test_skip_drain_deletes_without_draining(self, box):
        self.joined(box)
        result = leave(box, worker(box), **{host_leave.SKIP_DRAIN_ENV: "1"})
        assert result.returncode == 0, result.output
        assert kubectl_verbs(box) == ["get node", "get node", "delete node"]
        assert not is_joined(box)

    def test_a_node_that_is_not_ready_is_deleted_without_a_drain(self, box):
        """A dead host's kubelet never confirms an eviction: a drain would wait out its timeout and
        fail the destroy (kubectl pkg/drain waitForDelete), so the node goes undrained."""
        self.joined(box)
        (box.tenant / "ready").write_text("Unknown\n")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "the node is not Ready (Ready=Unknown): not drained, its pods go with it" in result.stderr
        assert kubectl_verbs(box) == ["get node", "get node", "delete node"]
        assert not is_joined(box)

    def test_a_failed_drain_uncordons_and_keeps_node_and_host(self, box):
        self.joined(box)
        (box.tenant / "drain-fails").write_text("")
        result = leave(box, worker(box))
        assert result.returncode == 1
        assert "the drain failed, so the node stays and the host is not reset" in result.stderr
        assert "disruption budget" in result.stderr and f"{host_leave.SKIP_DRAIN_ENV}=1" in result.stderr
        assert kubectl_verbs(box) == ["get node", "get node", "drain", "uncordon"]
        assert is_joined(box) and not kubeadm_calls(box, "reset")

    def test_a_node_already_gone_still_resets_the_host(self, box):
        self.joined(box)
        (box.tenant / "node-missing").write_text("")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "node gpu-host-1 is not in tenant team-a" in result.stdout
        assert not is_joined(box)

    def test_an_unreachable_tenant_api_warns_and_still_resets_the_host(self, box):
        self.joined(box)
        (box.tenant / "unreachable").write_text("")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "warning: host gpu-host-1: could not remove the node from tenant team-a (API unreachable?)" \
            in result.stderr
        assert not is_joined(box)

    def test_a_host_nothing_answers_on_gives_the_manual_command(self, box):
        self.joined(box)
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
        monkeypatch.setattr(host_ssh, "SSH_CONNECT_TIMEOUT_SECONDS", 2)
        result = leave(box, worker(box, address=BLACKHOLE, port=22))
        assert result.returncode == 0, result.output
        assert f"could not reach root@{BLACKHOLE}:22 over SSH" in result.stderr
        # Two attempts of 2 s each, and ssh's second between attempts.
        assert result.seconds < 10

    def test_a_failed_reset_is_a_warning(self, box):
        self.joined(box)
        box.write_state("reset-fails", "")
        result = leave(box, worker(box))
        assert result.returncode == 0, result.output
        assert "the reset failed (kubeadm reset -f failed: failed to stop the kubelet). Run by hand: ssh" \
            in result.stderr

    def test_through_a_bastion_with_its_own_key(self, box):
        self.joined(box)
        log_start = len(box.sshd_log.read_text())
        result = leave(box, worker(box, bastion=endpoint(box, "jump")))
        assert result.returncode == 0, result.output
        assert not is_joined(box)
        log = box.sshd_log.read_text()[log_start:]
        assert "Accepted publickey for jump" in log and "Accepted publickey for root" in log

    def test_a_bastion_that_refuses_the_key_leaves_the_host_joined(self, box):
        self.joined(box)
        host = worker(box, bastion=endpoint(box, "jump"))
        result = leave(box, host, bastion_key=box.key_text("wrong"))
        assert result.returncode == 0, result.output
        assert "could not reach root@127.0.0.1" in result.stderr and "through jump@127.0.0.1" in result.stderr
        assert f"ssh -J jump@127.0.0.1:{box.port} -p {box.port} root@127.0.0.1" in result.stderr
        assert is_joined(box)

    def test_another_host_key_than_the_pinned_one_stops_the_reset(self, box):
        self.joined(box)
        result = leave(box, worker(box, host_key=wrong_host_key(box)))
        assert result.returncode == 0, result.output
        assert "Host key verification failed" in result.stderr
        assert is_joined(box)

    def test_a_pinned_bastion_host_key_is_checked_too(self, box):
        self.joined(box)
        host = worker(box, bastion=endpoint(box, "jump", host_key=wrong_host_key(box)))
        result = leave(box, host)
        assert result.returncode == 0 and "Host key verification failed" in result.stderr
        assert is_joined(box)


class TestReady:
    def ready(self, box: Sandbox) -> sandbox.Run:
        host = worker(box)
        return box.local(host_join.ready_script(tenant_config(host), host),
                         **{host_join.KUBECONFIG_ENV: kubeconfig(box)})

    def test_a_ready_node_passes_and_reports_its_kubelet(self, box):
        result = self.ready(box)
        assert result.returncode == 0, result.output
        assert f"node gpu-host-1 is Ready (kubelet {sandbox.NODE_VERSION})" in result.stdout
        host = worker(box)
        assert host_join.kubelet_skew_problem(tenant_config(host), host, result.stdout) is None

    def test_running_it_again_only_reads_the_node(self, box):
        """An update runs the create again (issue 38, item 7): the wait only reads the Node."""
        first, again = self.ready(box), self.ready(box)
        assert first.returncode == again.returncode == 0, first.output + again.output
        assert first.stdout == again.stdout
        assert kubectl_verbs(box) and {verb.split()[0] for verb in kubectl_verbs(box)} == {"get"}

    def test_what_it_reports_holds_a_later_tenant_version_to_the_skew_policy(self, box):
        (box.tenant / "kubelet-version").write_text("v1.31.9\n")
        result = self.ready(box)
        host = worker(box)
        problem = host_join.kubelet_skew_problem(tenant_config(host), host, result.stdout)
        assert problem is not None and problem.startswith("host gpu-host-1 runs kubelet v1.31, more than 3")

    def test_a_node_that_does_not_get_ready_fails_with_its_conditions_in_time(self, box, monkeypatch):
        monkeypatch.setattr(host_join, "READY_WAIT", (2, 1))
        (box.tenant / "ready").write_text("False\n")
        result = self.ready(box)
        assert result.returncode == 1
        assert "host gpu-host-1 joined tenant team-a but its node was not Ready within 2s: " \
               "Ready=False KubeletNotReady;" in result.stderr
        assert result.seconds < 10
