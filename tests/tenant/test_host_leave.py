"""A worker host leaves (tenant/host_leave.py): drain, delete, reset over SSH, and only ever this
stack's node of the tenant. The ssh tier (tests/ssh) runs it against a real sshd."""

from __future__ import annotations

import re

import pytest

from kamaji_hami_platform.config import HostConfig, SshEndpointConfig, TenantConfig
from kamaji_hami_platform.tenant import host_join, host_leave, host_ssh, node_join

pytestmark = pytest.mark.unit

HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKhostkeyhostkeyhostkeyhostkeyhostkeyhostk"
OWNER = host_join.Ownership("platform", "prod", "mgmt")
ROOT_HOST = HostConfig("node-1", SshEndpointConfig("10.0.0.2", host_key=HOST_KEY))
SUDO_HOST = HostConfig("node-2", SshEndpointConfig("10.0.0.3", user="ops", port=2222, private_key="ops",
                                                   host_key=HOST_KEY),
                       bastion=SshEndpointConfig("10.0.0.1", user="jump", port=2200, host_key=HOST_KEY))
TENANT = TenantConfig(name="team-a", kubernetes_version="v1.35.0", control_plane_replicas=1,
                      pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16", workers=1, gpus=None,
                      hosts=(ROOT_HOST,))


def leave(host: HostConfig = ROOT_HOST) -> str:
    return host_leave.leave_script(TENANT, host, OWNER)


def test_the_reset_runs_through_sudo_and_the_manual_command_crosses_the_bastion():
    assert "\nsudo -n /bin/sh -c 'set -u\n" in leave(SUDO_HOST)
    assert host_leave.manual_reset_command(SUDO_HOST) == (
        "ssh -J jump@10.0.0.1:2200 -p 2222 ops@10.0.0.3 'sudo kubeadm reset -f && sudo rm -f "
        "/etc/cni/net.d/10-kindnet.conflist /etc/kubernetes/kamaji-hami-platform-tenant'")


def test_the_leave_passes_the_ca_pin_and_digest_it_knows():
    script = leave()
    assert f"ca_pin=${{{host_join.CA_HASH_ENV}:-none}}" in script
    assert 'remote="$remote $(printf \'%q %q\' "$ca_pin" "$ca_digest")"' in script


def test_every_kubectl_call_of_the_leave_is_bounded():
    script = leave()
    calls = [line for line in script.splitlines()
             if re.search(r"\bkubectl\b", line) and not line.lstrip().startswith(("echo", "#"))]
    bound = f"--request-timeout={node_join.API_REQUEST_TIMEOUT}"
    assert len(calls) == 2 and all("timeout " in line and bound in line for line in calls), calls
    assert "--skip-wait-for-delete-timeout=" in script


def test_a_failed_drain_uncordons_and_fails_unless_drains_are_skipped():
    script = leave()
    assert f'[ "${{{node_join.SKIP_DRAIN_ENV}:-}}" = 1 ] && drain=""' in script
    drain = script[script.index('drain "$node"'):]
    drain = drain[:drain.index("exit 1")]
    assert 'k uncordon "$node"' in drain


def test_an_unreachable_host_is_a_warning_and_the_reset_is_bounded():
    script = leave()
    assert f"  {host_ssh.SSH_FAILED}) warn " in script and f"  {host_ssh.TIMED_OUT}) warn " in script
    assert f"timeout {host_leave.HOST_RESET_TIMEOUT_SECONDS} ssh " in script
    assert "</dev/null" in script, "ssh must not read the script's stdin"
    assert script.rstrip().endswith('exit 0\n}\nmain "$@" < /dev/null')
