"""How the platform reaches a worker host: this host's OpenSSH client, the hop's private key from
the environment, its host key pinned (or, on purpose and visibly, not checked), a bastion crossed
with a ProxyCommand; and the command string sshd runs there.

Rationale: docs/design/worker-hosts.md.
"""

from __future__ import annotations

import shlex

from kamaji_hami_platform.config import HostConfig, SshEndpointConfig
from kamaji_hami_platform.shell_templates import Text
from kamaji_hami_platform.shell_templates import render as render_script

_PACKAGE = "kamaji_hami_platform.tenant"
# The private key (PEM) of the host's SSH user and, with a bastion, the bastion user's: in the
# environment of the host's join and leave (secrets), written to 0600 files for the OpenSSH client.
HOST_SSH_KEY_ENV = "KHP_SSH_KEY"
BASTION_SSH_KEY_ENV = "KHP_BASTION_SSH_KEY"
# Where the scripts keep the key files; exported, so the bastion's ProxyCommand (run by /bin/sh,
# not by the script) finds them too.
SSH_DIR_ENV = "KHP_SSH_DIR"
# Set on a host's join and leave when a hop's host key is not checked (insecureSkipHostKeyCheck):
# the hops it names; what the policy pack's `worker-host-keys-pinned` reads.
INSECURE_HOST_KEY_ENV = "KHP_INSECURE_HOST_KEY"
# As pulumi-command dials (per-dial timeout 15 s), a few attempts.
SSH_CONNECT_TIMEOUT_SECONDS = 15
SSH_CONNECTION_ATTEMPTS = 2
# OpenSSH's own exit status when it cannot connect or authenticate (a host key that is not the
# pinned one included), and coreutils timeout's.
SSH_FAILED, TIMED_OUT = 255, 124


def _q(text: str) -> str:
    return shlex.quote(text)


def known_hosts_line(endpoint: SshEndpointConfig) -> str:
    """The pinned host key in known_hosts form: OpenSSH names a host on port 22 by its address
    alone and on any other port as `[address]:port`."""
    assert endpoint.host_key is not None
    name = endpoint.address if endpoint.port == 22 else f"[{endpoint.address}]:{endpoint.port}"
    return f"{name} {endpoint.host_key}"


def ssh_options(endpoint: SshEndpointConfig, role: str) -> list[str]:
    """OpenSSH client options (shell words) reaching `endpoint`: only the given key, no agent, no
    ~/.ssh/config (-F none), never a prompt; its host key pinned (StrictHostKeyChecking=yes against
    a known_hosts file holding only that key), or, with insecureSkipHostKeyCheck, not checked.
    `role` names the key file ($KHP_SSH_DIR/<role>.key) and the pinned key's known_hosts file."""
    files = f"${SSH_DIR_ENV}/{role}"
    words = ["-F", "none", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT_SECONDS}",
             "-o", f"ConnectionAttempts={SSH_CONNECTION_ATTEMPTS}", "-o", "IdentitiesOnly=yes",
             "-o", "LogLevel=ERROR", "-i", f'"{files}.key"', "-p", str(endpoint.port)]
    if endpoint.host_key:
        # GlobalKnownHostsFile too: -F none reads no config file, but ssh still consults
        # /etc/ssh/ssh_known_hosts, whose key for the address would be accepted besides the pin.
        words += ["-o", "StrictHostKeyChecking=yes", "-o", f'UserKnownHostsFile="{files}.known_hosts"',
                  "-o", "GlobalKnownHostsFile=/dev/null"]
    else:
        words += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
    return words


def destination(endpoint: SshEndpointConfig) -> str:
    return f"{endpoint.user}@{endpoint.address}"


def ssh_words(host: HostConfig) -> list[str]:
    """The ssh command line (shell words, before the remote command). A bastion is crossed with a
    ProxyCommand: an ssh of its own, with the bastion's key and options, that forwards
    stdin/stdout to the host (-W). ssh runs the ProxyCommand with $SHELL, which the scripts set to
    /bin/sh, where "$KHP_SSH_DIR/..." expands."""
    words = ["ssh", *ssh_options(host.ssh, "host")]
    if host.bastion is not None:
        proxy = " ".join(["ssh", *ssh_options(host.bastion, "bastion"), "-W", "%h:%p",
                          _q(destination(host.bastion))])
        words += ["-o", _q(f"ProxyCommand={proxy}")]
    return [*words, _q(destination(host.ssh))]


def where(host: HostConfig) -> str:
    """The hops, for messages: `user@address:port` and the bastion's."""
    hops = f"{host.ssh.user}@{host.ssh.address}:{host.ssh.port}"
    if host.bastion is not None:
        hops += f" through {host.bastion.user}@{host.bastion.address}:{host.bastion.port}"
    return hops


def unchecked_hops(host: HostConfig) -> list[str]:
    """The hops whose host key is accepted whatever it is (insecureSkipHostKeyCheck)."""
    hops = [("host", host.ssh), ("bastion", host.bastion)]
    return [f"{role} {endpoint.address}" for role, endpoint in hops
            if endpoint is not None and endpoint.insecure_skip_host_key_check]


def remote_command(host: HostConfig, script: str) -> str:
    """The command string sshd runs with the user's login shell (`$SHELL -c <command>`): the
    POSIX sh script as one quoted argument of /bin/sh, so bash, dash or zsh as login shell do not
    matter; through `sudo -n` (never a password prompt: fails at once) for a user other than
    root. The node's name is its $0; arguments after it, its $1...; stdin passes through sudo."""
    command = f"/bin/sh -c {_q(script)} {_q(host.name)}"
    return command if host.ssh.user == "root" else f"sudo -n {command}"


def key_files(host: HostConfig) -> str:
    """bash: each hop's private key (from the environment) and pinned host key into
    $KHP_SSH_DIR. A PEM key needs its final newline; a secret may have lost it (or carry one):
    exactly one."""
    text = ""
    for role, env, endpoint in (("host", HOST_SSH_KEY_ENV, host.ssh),
                                ("bastion", BASTION_SSH_KEY_ENV, host.bastion)):
        if endpoint is None:
            continue
        text += render_script(_PACKAGE, "host_ssh_key.bash", key_env=Text(env),
                              ssh_dir_env=Text(SSH_DIR_ENV), role=Text(role))
        if endpoint.host_key:
            text += render_script(_PACKAGE, "host_ssh_known_hosts.sh",
                                  known_hosts_line=known_hosts_line(endpoint),
                                  ssh_dir_env=Text(SSH_DIR_ENV), role=Text(role))
    return text
