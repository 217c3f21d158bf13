"""The ssh tier's sshd (one per session) and a clean host for each test."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from kamaji_hami_platform.tenant import host_join
from tests import tiers
from tests.ssh import sandbox
from tests.ssh.sandbox import Sandbox

# A tenant admin kubeconfig: the token stands for the credential that must never show.
ADMIN_CREDENTIAL = "s3cret-admin-token"


def missing_prerequisite() -> str | None:
    """Why the sandbox cannot run here, if it cannot."""
    if os.geteuid() != 0:
        return ("the ssh tier runs sshd in a mount namespace of its own (bind mounts over /etc, /opt "
                "and /proc files): it needs root")
    if shutil.which("unshare") is None:
        return "the ssh tier needs unshare (util-linux) for the sandbox's mount namespace"
    tools = (("openssl", "openssl"), ("ssh", "openssh-client"), ("ssh-keygen", "openssh-client"))
    for tool, package in tools:
        if shutil.which(tool) is None:
            return f"the ssh tier needs {tool} ({package}): the test CAs, the client, the keys"
    return None


@pytest.fixture(scope="session")
def sshd() -> Iterator[Sandbox]:
    reason = missing_prerequisite()
    if reason:
        tiers.unavailable("ssh", reason)  # a skip, or the run's end when the tier is required
    box = sandbox.start(sandbox.openssh_root())
    try:
        yield box
    finally:
        sandbox.remove(box)


@pytest.fixture
def box(sshd: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A host with every prerequisite and nothing joined; afterwards, no secret in anything the
    test's commands printed, the stand-ins logged or the host's join was given."""
    sshd.reset()
    sshd.runs.clear()
    # No /proc/modules on this kernel to bind over (no module support): the sandbox's file.
    monkeypatch.setattr(host_join, "PROC_MODULES", str(sshd.host / "modules"))
    monkeypatch.setattr(host_join, "MODULES_BUILTIN", str(sshd.host / "modules.builtin"))
    # This kernel has overlay and br_netfilter built in: the marks are the sandbox's files.
    monkeypatch.setattr(host_join, "KERNEL_MODULE_MARKS",
                        {name: str(sshd.module_mark(name)) for name in host_join.KERNEL_MODULES})
    # The host's tools are the stand-ins and sysbin only, sudo's secure_path included.
    monkeypatch.setattr(host_join, "HOST_PATH_EXTRA", str(sshd.sysbin))
    # A kubelet set up by another installer: the sandbox's file, which a test may write.
    monkeypatch.setattr(host_join, "KUBELET_NODE_CONFIG", str(sshd.host / "kubelet-config.yaml"))
    yield sshd
    secrets = {"the admin credential": ADMIN_CREDENTIAL}
    for number, minted in enumerate(sshd.minted()):
        secrets[f"bootstrap token secret {number}"] = minted.split('token-secret: "')[1].split('"')[0]
    for user in sshd.keys:
        # A line from the middle of each private key's PEM body.
        secrets[f"{user}'s private key"] = sshd.key_text(user).splitlines()[2]
    texts = {f"output of {run.argv[:2]}": run.output for run in sshd.runs}
    texts["the host's argv log"] = "\n".join(sshd.argv_log())
    texts["the local kubectl's argv log"] = "\n".join(sshd.kubectl_log())
    texts["sshd's log"] = sshd.sshd_log.read_text()
    for given in ("join-caller", "join-env"):
        if (sshd.state / given).exists():
            texts[f"the host's {given}"] = (sshd.state / given).read_text()
    for where, text in texts.items():
        for what, secret in secrets.items():
            assert secret not in text, f"{what} shows in {where}"
    assert list(sshd.local_tmp.iterdir()) == [], "a local script left files behind"
