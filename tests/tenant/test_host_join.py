"""Worker hosts over SSH: what the join scripts promise, read from their text (the ssh tier,
tests/ssh, runs them against a real sshd; shellcheck and the golden files hold the rest)."""

from __future__ import annotations

import re
import subprocess

import pytest

from kamaji_hami_platform.config import (
    BUILTIN_GPU_MODELS,
    GpuPoolConfig,
    HostConfig,
    SshEndpointConfig,
    TenantConfig,
)
from kamaji_hami_platform.tenant import host_join, host_ssh, node_join

pytestmark = pytest.mark.unit

HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKhostkeyhostkeyhostkeyhostkeyhostkeyhostk"
OWNER = host_join.Ownership("platform", "prod", "mgmt")
SECRET_ENVS = (host_join.KUBECONFIG_ENV, host_ssh.HOST_SSH_KEY_ENV, host_ssh.BASTION_SSH_KEY_ENV)
ROOT_HOST = HostConfig("node-1", SshEndpointConfig("10.0.0.2", host_key=HOST_KEY))


def tenant(*hosts: HostConfig, version: str = "v1.35.0", gpus: GpuPoolConfig | None = None) -> TenantConfig:
    return TenantConfig(name="team-a", kubernetes_version=version, control_plane_replicas=1,
                        pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16", workers=len(hosts),
                        gpus=gpus, hosts=hosts)


def real_gpus(mock: bool = False) -> GpuPoolConfig:
    return GpuPoolConfig(BUILTIN_GPU_MODELS["A100-80GB"], per_worker=4, mock=mock)


def join(config: TenantConfig | None = None) -> str:
    return host_join.join_script(config or tenant(ROOT_HOST), ROOT_HOST, OWNER, 8132)


def remote(config: TenantConfig | None = None) -> str:
    return host_join.remote_join_script(config or tenant(ROOT_HOST), ROOT_HOST, OWNER)


class TestWhatTheHostGets:
    def test_the_host_gets_no_kubeconfig_and_no_secret_of_this_host(self):
        script = remote()
        assert not any(env in script for env in SECRET_ENVS)
        assert "kubeconfig" not in script.lower() and "kubeadm token" not in script

    def test_the_token_comes_on_stdin_and_reaches_kubeadm_in_a_private_file(self):
        script = remote()
        assert "IFS= read -r token || true\nexec </dev/null" in script
        assert script.index("umask 077") < script.index('} > "$tmp/join.yaml"')
        (join_line,) = [line for line in script.splitlines() if "kubeadm join --" in line]
        assert join_line.strip().startswith(
            'if ! output=$(kubeadm join --config "$tmp/join.yaml" --node-name "$node"')
        assert "$token" not in join_line and 'token: "$token"' in script

    def test_nothing_written_on_the_host_outlives_a_dropped_session(self):
        """dash skips the EXIT trap when a signal ends it (a dropped session is SIGHUP, or SIGPIPE
        on a write): each signal exits through it."""
        script = remote()
        assert "trap 'rm -rf \"$tmp\"' EXIT\ntrap 'exit 1' HUP INT TERM PIPE" in script


class TestWhoseNodeIsTheHost:
    """Which host is reset, adopted or refused: the ssh tier's TestWhoseHost runs it."""

    def test_the_marker_names_the_stack_the_management_cluster_and_the_tenant(self):
        assert OWNER.marker(tenant(ROOT_HOST)) == (
            "kamaji-hami-platform stack=platform/prod management=mgmt tenant=team-a")
        script = remote()
        assert "marker='kamaji-hami-platform stack=platform/prod management=mgmt tenant=team-a'" in script


class TestTheJoinFromHere:
    def test_the_token_is_minted_here_for_minutes_and_deleted_on_every_exit(self):
        script = join()
        assert f'date -u -d "+{host_join.BOOTSTRAP_TOKEN_MINUTES} minutes"' in script
        assert "type: bootstrap.kubernetes.io/token" in script
        assert f'auth-extra-groups: "{host_join.BOOTSTRAP_TOKEN_GROUP}"' in script
        assert 'usage-bootstrap-authentication: "true"' in script
        assert 'usage-bootstrap-signing: "true"' in script
        assert "trap cleanup EXIT\ntrap 'exit 1' HUP INT TERM PIPE" in script
        cleanup = script[script.index("cleanup() {"):script.index("trap cleanup EXIT")]
        assert 'k -n kube-system delete secret "bootstrap-token-$token_id"' in cleanup

    def test_the_token_never_reaches_a_command_line(self):
        """kubectl reads the Secret from a heredoc; ssh gets the token on its stdin from a builtin."""
        script = join()
        create = "k create -f - -o 'jsonpath={.metadata.creationTimestamp}' 2>\"$tmp/token.err\" <<EOF"
        assert create in script
        assert "  printf '%s.%s\\n' \"$token_id\" \"$token_secret\" \\\n    | SHELL=/bin/sh timeout" in script
        for line in script.splitlines():
            if "$token_secret" in line:
                assert line.strip().startswith(("token-secret:", "printf '%s.%s\\n' \"$token_id\"",
                                                "token_secret=$(")), line

    def test_the_admin_kubeconfig_stays_in_a_private_file_here(self):
        script = join()
        assert script.index("umask 077") < script.index("tmp=$(mktemp -d)")
        assert 'printf \'%s\' "${TENANT_KUBECONFIG:-}" > "$kc"' in script

    def test_the_script_reads_nothing_from_its_own_stdin(self):
        """bash reads the script on stdin (`exec /bin/bash -s`): it runs as one function, whose
        stdin is /dev/null, so no command can eat the rest of the script."""
        script = join()
        assert script.startswith("# ") and "\nmain() {\n" in script
        assert script.endswith('main "$@" < /dev/null\n')
        assert host_join.RUN_STDIN_SCRIPT == "exec /bin/bash -s"

    def test_a_failure_says_first_why(self):
        script = join()
        assert f"  {host_ssh.SSH_FAILED}) fail \"the SSH session to root@10.0.0.2:22 failed" in script
        assert "a host key other than the pinned one" in script
        assert '  *) fail "the join failed: $out" ;;' in script

    def test_every_kubectl_call_is_bounded(self):
        script = join()
        assert f'k() {{ timeout {node_join.API_CALL_TIMEOUT_SECONDS} kubectl --kubeconfig "$kc" ' \
               f'--request-timeout={node_join.API_REQUEST_TIMEOUT} "$@"; }}' in script
        assert not re.search(r"^\s*kubectl ", script, re.M)


class TestPrerequisites:
    @pytest.mark.parametrize("version, kubeadm, kubelet", [("v1.35.0", (35, 36), (32, 35)),
                                                            ("v1.30.4", (30, 31), (27, 30))])
    def test_version_skew_bounds(self, version, kubeadm, kubelet):
        script = host_join.prerequisites_script(tenant(ROOT_HOST, version=version), ROOT_HOST)
        assert f'[ "$kubeadm_minor" -lt {kubeadm[0]} ]' in script
        assert f'[ "$kubeadm_minor" -gt {kubeadm[1]} ]' in script
        assert f'[ "$kubelet_minor" -lt {kubelet[0]} ]' in script
        assert f'[ "$kubelet_minor" -gt {kubelet[1]} ]' in script

    def test_every_check_is_there_and_all_are_reported_together(self):
        script = host_join.prerequisites_script(tenant(ROOT_HOST), ROOT_HOST)
        for check in ("command -v kubeadm", "command -v kubelet", "for unit in containerd crio",
                      "systemctl cat kubelet", "for module in overlay br_netfilter",
                      f"cat {host_join.IP_FORWARD}", f"[ -x {host_join.CNI_BIN_DIR}/",
                      f"stat -fc %T {host_join.CGROUP_ROOT}", "for tool in iptables ip nsenter",
                      '[ "$api_time" -gt $(( now + 1 + 60 )) ]', "disabled_plugins",
                      'for target in "$endpoint" "$konnectivity"', f"awk 'NR > 1' {host_join.PROC_SWAPS}"):
            assert check in script, check
        # One exit, after every check; only the clock's note follows it, never a refusal.
        assert script.count("exit") == 1
        _, note = script.split("exit 1\nfi\n")
        assert "miss " not in note and "timedatectl show -p NTPSynchronized --value" in note

    def test_swap_is_missing_on_a_host(self):
        script = host_join.prerequisites_script(tenant(ROOT_HOST), ROOT_HOST)
        assert "miss 'swap is on: swapoff -a" in script

    @pytest.mark.parametrize("gpus", [None, real_gpus(mock=True)])
    def test_no_gpu_checks_without_real_gpus(self, gpus):
        assert "nvidia" not in host_join.prerequisites_script(tenant(ROOT_HOST, gpus=gpus), ROOT_HOST)

    def test_real_gpus_of_the_configured_model_with_the_toolkit_as_default_runtime(self):
        script = host_join.prerequisites_script(tenant(ROOT_HOST, gpus=real_gpus()), ROOT_HOST)
        assert "nvidia-smi --query-gpu=name --format=csv,noheader" in script
        assert "grep -ciF A100-SXM4-80GB" in script and '[ "${gpus:-0}" -ge 4 ]' in script
        assert "command -v nvidia-container-runtime" in script
        assert "nvidia-ctk runtime configure --runtime=containerd --set-as-default" in script

    def test_paths_are_module_constants(self, monkeypatch):
        """The ssh tier points what it cannot bind over at sandbox files."""
        for name, path in (("PROC_MODULES", "/sandbox/modules"), ("IP_FORWARD", "/sandbox/ip_forward"),
                           ("CGROUP_ROOT", "/sandbox/cgroup")):
            monkeypatch.setattr(host_join, name, path)
        monkeypatch.setattr(host_join, "KERNEL_MODULE_MARKS", {"overlay": "/sandbox/overlay",
                                                               "br_netfilter": "/sandbox/br_netfilter"})
        script = remote()
        assert all(path in script for path in ("/sandbox/modules", "/sandbox/ip_forward", "/sandbox/cgroup",
                                               "/sandbox/overlay", "/sandbox/br_netfilter"))
        assert all(path not in script for path in ("/proc/modules", "/sys/module", "/proc/sys/net/bridge"))


class TestJoinId:
    def test_the_last_join_line_is_the_id(self):
        output = "host node-1 already joined to tenant team-a\njoin: 20261203T120102Z-3fa9c2d1\n"
        assert host_join.join_id(output) == "20261203T120102Z-3fa9c2d1"
        assert host_join.join_id("") == "" and host_join.join_id("joined node-1\n") == ""


class TestKubeletSkew:
    @pytest.mark.parametrize(("version", "kubelet", "refused"), [
        ("v1.35.0", "v1.35.4", False), ("v1.36.0", "v1.33.1", False), ("v1.36.0", "v1.32.9", True),
        ("v1.34.0", "v1.35.4", True)])
    def test_a_tenant_version_the_hosts_kubelet_cannot_serve_is_refused(self, version, kubelet, refused):
        output = f"node node-1 is Ready (kubelet {kubelet})\n"
        problem = host_join.kubelet_skew_problem(tenant(ROOT_HOST, version=version), ROOT_HOST, output)
        assert (problem is not None) == refused
        if refused:
            assert problem.startswith(f"host node-1 runs kubelet v1.{kubelet.split('.')[1]},")
            assert "docs/operations/upgrades.md" in problem

    def test_a_host_that_never_reported_is_not_judged(self):
        assert host_join.kubelet_skew_problem(tenant(ROOT_HOST), ROOT_HOST, "node node-1 is Ready") is None


def test_scripts_parse():
    """POSIX sh on the host (dash is Debian's /bin/sh), bash on the Pulumi host."""
    config = tenant(ROOT_HOST, gpus=real_gpus())
    for shell, script in (("sh", remote(config)), ("bash", join(config)),
                          ("bash", host_join.ready_script(config, ROOT_HOST))):
        result = subprocess.run([shell, "-n", "-c", script], capture_output=True, text=True, timeout=30,
                                check=False)
        assert result.returncode == 0, result.stderr
