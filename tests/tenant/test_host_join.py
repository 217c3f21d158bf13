"""Worker hosts over SSH: what the rendered scripts promise, read from the text (the ssh tier,
tests/ssh, runs them against a real sshd)."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from kamaji_hami_platform.config import (
    BUILTIN_GPU_MODELS,
    GpuPoolConfig,
    HostConfig,
    SshEndpointConfig,
    TenantConfig,
)
from kamaji_hami_platform.tenant import host_join, node_join

pytestmark = pytest.mark.unit

HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKhostkeyhostkeyhostkeyhostkeyhostkeyhostk"
BASTION_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBbastionbastionbastionbastionbastionbast"
SECRET_ENVS = (host_join.KUBECONFIG_ENV, host_join.HOST_SSH_KEY_ENV, host_join.BASTION_SSH_KEY_ENV)


def tenant(*hosts: HostConfig, version: str = "v1.35.0", gpus: GpuPoolConfig | None = None) -> TenantConfig:
    return TenantConfig(name="team-a", kubernetes_version=version, control_plane_replicas=1,
                        pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16", workers=len(hosts),
                        gpus=gpus, hosts=hosts)


ROOT_HOST = HostConfig("node-1", SshEndpointConfig("10.0.0.2"))
SUDO_HOST = HostConfig("node-2", SshEndpointConfig("10.0.0.3", user="ops", port=2222, private_key="ops"))
PINNED_HOST = HostConfig("node-3", SshEndpointConfig("10.0.0.4", port=2222, host_key=HOST_KEY),
                         bastion=SshEndpointConfig("10.0.0.1", user="jump", port=2200, private_key="jump",
                                             host_key=BASTION_KEY))


def real_gpus(mock: bool = False) -> GpuPoolConfig:
    return GpuPoolConfig(BUILTIN_GPU_MODELS["A100-80GB"], per_worker=4, mock=mock)


class TestCommandLines:
    def test_root_runs_the_script_as_one_sh_argument(self):
        command = host_join.join_command(tenant(ROOT_HOST), ROOT_HOST)
        assert shlex.split(command) == ["/bin/sh", "-c", host_join.join_script(tenant(ROOT_HOST), ROOT_HOST),
                                        "node-1"]

    def test_another_user_runs_it_through_sudo_without_a_password_prompt(self):
        command = host_join.join_command(tenant(SUDO_HOST), SUDO_HOST)
        assert shlex.split(command)[:4] == ["sudo", "-n", "/bin/sh", "-c"]
        reset = host_join.leave_script(tenant(SUDO_HOST), SUDO_HOST)
        assert "\nsudo -n /bin/sh -c 'set -u\n" in reset
        assert ("'sudo kubeadm reset -f && sudo rm -f /etc/cni/net.d/10-kindnet.conflist "
                "/etc/kubernetes/kamaji-hami-platform-tenant'") in reset

    def test_the_join_takes_the_kubeconfig_from_stdin_only(self):
        script = host_join.join_script(tenant(ROOT_HOST), ROOT_HOST)
        assert not any(env in script for env in SECRET_ENVS)
        assert 'umask 077' in script and 'cat > "$kc"' in script

    def test_the_token_never_reaches_a_command_line(self):
        """kubeadm join reads it from a 0600 JoinConfiguration; only the token's public id is an
        argument (of token delete)."""
        script = host_join.join_script(tenant(ROOT_HOST), ROOT_HOST)
        (join_line,) = [line for line in script.splitlines() if "kubeadm join --" in line]
        assert 'kubeadm join --config "$tmp/join.yaml" --node-name node-1' in join_line
        assert "$token" not in join_line and "$join" not in join_line
        assert 'token: "$token"' in script and 'kubeadm token delete --kubeconfig "$kc" "$token_id"' in script

    @pytest.mark.parametrize("host", [ROOT_HOST, SUDO_HOST, PINNED_HOST])
    def test_secrets_from_the_environment_only_go_into_files(self, host):
        """The kubeconfig and private keys are read by shell builtins (printf, a test), never
        passed as an argument to a program."""
        config = tenant(host)
        for script in (host_join.leave_script(config, host), host_join.ready_script(config, host)):
            for line in script.splitlines():
                if any(env in line for env in SECRET_ENVS):
                    assert re.match(r"""^(printf '%s(\\n)?' "\$\{[A-Z_]+(:-|%\$'\\n')?\}" > "\$|"""
                                    r"""if \[ -z "\$\{TENANT_KUBECONFIG:-\}" \]; then$)""", line), line

    def test_the_kubeconfig_and_keys_are_private_temporary_files(self):
        script = host_join.leave_script(tenant(PINNED_HOST), PINNED_HOST)
        assert script.index("umask 077") < script.index("tmp=$(mktemp -d)") < script.index("printf")
        assert "trap 'rm -rf \"$tmp\"' EXIT" in script
        assert f'> "${host_join.SSH_DIR_ENV}/host.key"' in script
        assert f'> "${host_join.SSH_DIR_ENV}/bastion.key"' in script


class TestSsh:
    def test_options_as_pulumi_command_dials_without_a_host_key(self):
        words = host_join.ssh_words(ROOT_HOST)
        text = " ".join(words)
        for option in ("-F none", "-o BatchMode=yes", "-o ConnectTimeout=15", "-o ConnectionAttempts=2",
                       "-o IdentitiesOnly=yes", "-p 22", "-o StrictHostKeyChecking=no",
                       "-o UserKnownHostsFile=/dev/null", '-i "$KHP_SSH_DIR/host.key"'):
            assert option in text
        assert words[-1] == "root@10.0.0.2" and "ProxyCommand" not in text

    def test_a_pinned_host_key_is_strictly_checked_in_its_own_known_hosts(self):
        script = host_join.leave_script(tenant(PINNED_HOST), PINNED_HOST)
        assert f"'[10.0.0.4]:2222 {HOST_KEY}' > \"$KHP_SSH_DIR/host.known_hosts\"" in script
        assert '-o StrictHostKeyChecking=yes -o UserKnownHostsFile="$KHP_SSH_DIR/host.known_hosts"' in script
        assert "StrictHostKeyChecking=no" not in script

    def test_port_22_is_named_by_the_address_alone_in_known_hosts(self):
        line = host_join.known_hosts_line(SshEndpointConfig("10.0.0.9", host_key=HOST_KEY))
        assert line == f"10.0.0.9 {HOST_KEY}"

    def test_a_bastion_is_crossed_by_a_proxy_command_with_its_own_key_and_host_key(self):
        words = host_join.ssh_words(PINNED_HOST)
        (proxy,) = [shlex.split(word)[0] for word in words if "ProxyCommand=" in word]
        command = shlex.split(proxy.removeprefix("ProxyCommand="))
        assert command[0] == "ssh" and command[-3:] == ["-W", "%h:%p", "jump@10.0.0.1"]
        assert "$KHP_SSH_DIR/bastion.key" in command and "2200" in command
        assert "UserKnownHostsFile=$KHP_SSH_DIR/bastion.known_hosts" in command
        script = host_join.leave_script(tenant(PINNED_HOST), PINNED_HOST)
        assert f"'[10.0.0.1]:2200 {BASTION_KEY}' > \"$KHP_SSH_DIR/bastion.known_hosts\"" in script
        # The ProxyCommand's "$KHP_SSH_DIR" is expanded by /bin/sh, as ssh runs it with $SHELL.
        assert "SHELL=/bin/sh timeout" in script and 'export KHP_SSH_DIR' in script

    def test_no_bastion_key_without_a_bastion(self):
        assert host_join.BASTION_SSH_KEY_ENV not in host_join.leave_script(tenant(ROOT_HOST), ROOT_HOST)

    def test_the_manual_command_crosses_the_bastion(self):
        assert host_join.manual_reset_command(PINNED_HOST) == (
            "ssh -J jump@10.0.0.1:2200 -p 2222 root@10.0.0.4 "
            "'kubeadm reset -f && rm -f /etc/cni/net.d/10-kindnet.conflist "
            "/etc/kubernetes/kamaji-hami-platform-tenant'")

    def test_the_whole_reset_over_ssh_is_bounded(self):
        script = host_join.leave_script(tenant(ROOT_HOST), ROOT_HOST)
        assert f"timeout {host_join.HOST_RESET_TIMEOUT_SECONDS} ssh " in script
        assert "</dev/null" in script, "ssh must not read the engine's stdin"


class TestPrerequisites:
    @pytest.mark.parametrize("version, kubeadm, kubelet", [("v1.35.0", (35, 36), (32, 35)),
                                                            ("v1.30.4", (30, 31), (27, 30))])
    def test_version_skew_bounds(self, version, kubeadm, kubelet):
        script = host_join.prerequisites_script(tenant(ROOT_HOST, version=version), ROOT_HOST)
        assert f'[ "$kubeadm_minor" -lt {kubeadm[0]} ]' in script
        assert f'[ "$kubeadm_minor" -gt {kubeadm[1]} ]' in script
        assert f'[ "$kubelet_minor" -lt {kubelet[0]} ]' in script
        assert f'[ "$kubelet_minor" -gt {kubelet[1]} ]' in script
        assert '"$kubelet_minor" -lt $((kubeadm_minor - 3))' in script

    def test_every_check_is_there_and_all_are_reported_together(self):
        script = host_join.prerequisites_script(tenant(ROOT_HOST), ROOT_HOST)
        for check in ("command -v kubeadm", "command -v kubelet", "systemctl is-active --quiet \"$unit\"",
                      "for unit in containerd crio", "systemctl cat kubelet",
                      "for module in overlay br_netfilter",
                      f"{host_join.PROC_MODULES}", f"cat {host_join.IP_FORWARD}",
                      "for plugin in host-local loopback ptp portmap", f"[ -x {host_join.CNI_BIN_DIR}/"):
            assert check in script, check
        # One exit, after every check.
        assert script.count("exit") == 1 and script.rstrip().endswith("exit 1\nfi")

    def test_swap_is_a_note_not_a_missing_item(self):
        script = host_join.prerequisites_script(tenant(ROOT_HOST), ROOT_HOST)
        (swap,) = [line for line in script.splitlines() if "swap" in line.lower() and "echo" in line]
        assert "note: swap is on" in swap and "miss" not in swap

    @pytest.mark.parametrize("gpus", [None, real_gpus(mock=True)])
    def test_no_gpu_checks_without_real_gpus(self, gpus):
        script = host_join.prerequisites_script(tenant(ROOT_HOST, gpus=gpus), ROOT_HOST)
        assert "nvidia" not in script

    def test_real_gpus_need_the_driver_the_toolkit_and_nvidia_as_default_runtime(self):
        script = host_join.prerequisites_script(tenant(ROOT_HOST, gpus=real_gpus()), ROOT_HOST)
        assert "nvidia-smi -L" in script and '[ "${gpus:-0}" -ge 4 ]' in script
        assert "command -v nvidia-container-runtime" in script
        assert "containerd config dump" in script
        # Either quote: containerd 2.x prints 'nvidia', 1.x "nvidia".
        assert "default_runtime_name[[:space:]]*=[[:space:]]*[\"'\"'\"']nvidia[\"'\"'\"']" in script
        assert "nvidia-ctk runtime configure --runtime=containerd --set-as-default" in script

    def test_paths_are_module_constants(self, monkeypatch):
        """The ssh tier points what it cannot bind over at sandbox files."""
        monkeypatch.setattr(host_join, "PROC_MODULES", "/sandbox/modules")
        monkeypatch.setattr(host_join, "IP_FORWARD", "/sandbox/ip_forward")
        script = host_join.join_script(tenant(ROOT_HOST), ROOT_HOST)
        assert "/sandbox/modules" in script and "/sandbox/ip_forward" in script
        assert "/proc/modules" not in script


class TestJoinAndLeave:
    def test_already_joined_is_judged_by_the_tenant_ca(self):
        script = host_join.join_script(tenant(ROOT_HOST), ROOT_HOST)
        assert f"if [ -f {node_join.JOINED_KUBELET_CONFIG} ]; then" in script
        assert f"< {node_join.NODE_CA_CERT}" in script and "certificate-authority-data" in script
        assert "reset_host >&2 || exit 1" in script

    def test_a_failed_join_resets_and_redacts(self):
        script = host_join.join_script(tenant(ROOT_HOST), ROOT_HOST)
        failure = script[script.index("if ! output=$(kubeadm join"):]
        assert "reset_host" in failure and "| redact >&2" in failure and "exit 1" in failure
        assert f"redact() {{ {node_join.REDACT_SED}; }}" in script
        assert f"rm -f {host_join.KINDNET_CNI_CONFIG}" in script

    def test_the_token_is_created_as_for_container_workers(self):
        script = host_join.join_script(tenant(ROOT_HOST), ROOT_HOST)
        assert (f'kubeadm token create --kubeconfig "$kc" --ttl {node_join.BOOTSTRAP_TOKEN_TTL} \\\n'
                '      --description "join node-1" --print-join-command 2>"$tmp/err"') in script
        assert "--ignore-preflight-errors" not in script, "a real host must pass kubeadm's preflight"

    def test_every_kubectl_call_of_the_leave_is_bounded(self):
        script = host_join.leave_script(tenant(ROOT_HOST), ROOT_HOST)
        calls = [line for line in script.splitlines()
                 if re.search(r"\bkubectl\b", line) and not line.lstrip().startswith(("echo", "#"))]
        bound = f"--request-timeout={node_join.API_REQUEST_TIMEOUT}"
        assert len(calls) == 2 and all("timeout " in line and bound in line for line in calls), calls
        assert "--skip-wait-for-delete-timeout=" in script
        assert f"timeout {node_join.API_CALL_TIMEOUT_SECONDS} kubectl" in script

    def test_a_failed_drain_uncordons_and_fails_unless_drains_are_skipped(self):
        script = host_join.leave_script(tenant(ROOT_HOST), ROOT_HOST)
        assert f'[ "${{{node_join.SKIP_DRAIN_ENV}:-}}" = 1 ] && drain=""' in script
        drain = script[script.index('drain "$node"'):]
        drain = drain[:drain.index("exit 1")]
        assert 'k uncordon "$node"' in drain

    def test_an_unreachable_host_is_a_warning(self):
        script = host_join.leave_script(tenant(ROOT_HOST), ROOT_HOST)
        assert f"  {host_join.SSH_FAILED}) warn " in script and f"  {host_join.TIMED_OUT}) warn " in script
        assert script.rstrip().endswith("esac\nexit 0")

    def test_ready_waits_bounded(self):
        attempts, interval = node_join.NODE_READY_WAIT
        script = host_join.ready_script(tenant(ROOT_HOST), ROOT_HOST)
        assert f"deadline=$(( $(date +%s) + {attempts * interval} ))" in script
        assert "{.type}={.status} {.reason}" in script


@pytest.mark.parametrize("host", [ROOT_HOST, SUDO_HOST, PINNED_HOST])
def test_scripts_parse(host):
    """POSIX sh on the host (dash is Debian's /bin/sh), bash on the Pulumi host."""
    config = tenant(host, gpus=real_gpus())
    checks = [("sh", host_join.join_script(config, host)), ("sh", host_join.host_reset_script()),
              ("bash", host_join.leave_script(config, host)), ("bash", host_join.ready_script(config, host))]
    for shell, script in checks:
        result = subprocess.run([shell, "-n", "-c", script], capture_output=True, text=True, timeout=30,
                                check=False)
        assert result.returncode == 0, result.stderr
