"""How the platform reaches a worker host (tenant/host_ssh.py): OpenSSH options, pinned host keys,
a bastion, the command string sshd runs. The ssh tier (tests/ssh) runs them against a real sshd."""

from __future__ import annotations

import shlex

import pytest

from kamaji_hami_platform.config import HostConfig, SshEndpointConfig
from kamaji_hami_platform.tenant import host_ssh

pytestmark = pytest.mark.unit

HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKhostkeyhostkeyhostkeyhostkeyhostkeyhostk"
BASTION_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBbastionbastionbastionbastionbastionbast"
ROOT_HOST = HostConfig("node-1", SshEndpointConfig("10.0.0.2", host_key=HOST_KEY))
SUDO_HOST = HostConfig("node-2", SshEndpointConfig("10.0.0.3", user="ops", port=2222, private_key="ops",
                                                   host_key=HOST_KEY))
BASTION_HOST = HostConfig("node-3", SshEndpointConfig("10.0.0.4", port=2222, host_key=HOST_KEY),
                          bastion=SshEndpointConfig("10.0.0.1", user="jump", port=2200, private_key="jump",
                                                    host_key=BASTION_KEY))
UNCHECKED_HOST = HostConfig("node-4", SshEndpointConfig("10.0.0.5", insecure_skip_host_key_check=True))


def test_root_runs_the_script_as_one_sh_argument_named_after_the_node():
    words = shlex.split(host_ssh.remote_command(ROOT_HOST, "echo $0"))
    assert words == ["/bin/sh", "-c", "echo $0", "node-1"]


def test_another_user_runs_it_through_sudo_without_a_password_prompt():
    assert shlex.split(host_ssh.remote_command(SUDO_HOST, "true"))[:4] == ["sudo", "-n", "/bin/sh", "-c"]


def test_options_never_prompt_and_use_only_the_given_key():
    text = " ".join(host_ssh.ssh_words(ROOT_HOST))
    for option in ("-F none", "-o BatchMode=yes", "-o ConnectTimeout=15", "-o ConnectionAttempts=2",
                   "-o IdentitiesOnly=yes", "-p 22", '-i "$KHP_SSH_DIR/host.key"'):
        assert option in text
    assert host_ssh.ssh_words(ROOT_HOST)[-1] == "root@10.0.0.2" and "ProxyCommand" not in text


def test_a_pinned_host_key_is_strictly_checked_in_its_own_known_hosts():
    text = " ".join(host_ssh.ssh_words(ROOT_HOST))
    assert '-o StrictHostKeyChecking=yes -o UserKnownHostsFile="$KHP_SSH_DIR/host.known_hosts"' in text
    assert "StrictHostKeyChecking=no" not in text
    # Only that key: not also one the Pulumi host's /etc/ssh/ssh_known_hosts lists for the address.
    assert '"$KHP_SSH_DIR/host.known_hosts" -o GlobalKnownHostsFile=/dev/null' in text
    files = host_ssh.key_files(BASTION_HOST)
    assert f"'[10.0.0.4]:2222 {HOST_KEY}' > \"$KHP_SSH_DIR/host.known_hosts\"" in files
    assert f"'[10.0.0.1]:2200 {BASTION_KEY}' > \"$KHP_SSH_DIR/bastion.known_hosts\"" in files


def test_an_unchecked_host_key_is_only_ever_the_configs_explicit_choice():
    text = " ".join(host_ssh.ssh_words(UNCHECKED_HOST))
    assert "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null" in text
    assert "known_hosts" not in host_ssh.key_files(UNCHECKED_HOST)
    assert host_ssh.unchecked_hops(UNCHECKED_HOST) == ["host 10.0.0.5"]
    assert host_ssh.unchecked_hops(BASTION_HOST) == []


def test_port_22_is_named_by_the_address_alone_in_known_hosts():
    assert host_ssh.known_hosts_line(ROOT_HOST.ssh) == f"10.0.0.2 {HOST_KEY}"


def test_a_bastion_is_crossed_by_a_proxy_command_with_its_own_key_and_host_key():
    words = host_ssh.ssh_words(BASTION_HOST)
    (proxy,) = [shlex.split(word)[0] for word in words if "ProxyCommand=" in word]
    command = shlex.split(proxy.removeprefix("ProxyCommand="))
    assert command[0] == "ssh" and command[-3:] == ["-W", "%h:%p", "jump@10.0.0.1"]
    assert "$KHP_SSH_DIR/bastion.key" in command and "2200" in command
    assert "UserKnownHostsFile=$KHP_SSH_DIR/bastion.known_hosts" in command
    assert host_ssh.where(BASTION_HOST) == "root@10.0.0.4:2222 through jump@10.0.0.1:2200"


def test_keys_come_from_the_environment_into_private_files_only():
    """A private key is read by a shell builtin (printf) into a file, never passed as an argument."""
    files = host_ssh.key_files(BASTION_HOST)
    for line in files.splitlines():
        if "SSH_KEY" in line:
            assert line.startswith("printf '%s\\n' \"${KHP_") and line.endswith('.key"'), line
    assert host_ssh.BASTION_SSH_KEY_ENV not in host_ssh.key_files(ROOT_HOST)
