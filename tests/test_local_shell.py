"""Local commands that hold a secret start their shell without the caller's BASH_ENV, ENV,
SHELLOPTS and BASHOPTS (kamaji_hami_platform/local_shell.py; issue 38, item 4): an exported
`SHELLOPTS=xtrace` printed every expanded line of the join, its bootstrap token included, and
pulumi-command logs what a command prints."""

from __future__ import annotations

import os
import subprocess

import pytest

from kamaji_hami_platform import local_shell
from kamaji_hami_platform.management.access import MANAGEMENT_KUBECONFIG_ENV
from kamaji_hami_platform.tenant.host_ssh import BASTION_SSH_KEY_ENV, HOST_SSH_KEY_ENV
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV
from tests.harness import dev_stack_config, production_config, run_program

pytestmark = pytest.mark.unit

SECRET_ENVIRONMENT = {KUBECONFIG_ENV, MANAGEMENT_KUBECONFIG_ENV, HOST_SSH_KEY_ENV, BASTION_SSH_KEY_ENV}
TOKEN = "abcdef.0123456789abcdef"


@pytest.mark.parametrize("interpreter", [local_shell.BASH, local_shell.SH])
def test_the_interpreter_neither_sources_bash_env_nor_takes_xtrace_from_the_environment(
        interpreter, tmp_path):
    sourced = tmp_path / "bash_env"
    sourced.write_text("echo SOURCED\n")
    environment = {**os.environ, "BASH_ENV": str(sourced), "ENV": str(sourced), "SHELLOPTS": "xtrace",
                   "BASHOPTS": "xpg_echo", "TOKEN": TOKEN}
    result = subprocess.run([*interpreter, 'printf "%s" "${TOKEN%%.*}" >/dev/null; echo done'],
                            env=environment, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "done\n"
    assert "SOURCED" not in result.stdout + result.stderr
    assert TOKEN.split(".")[0] not in result.stderr, "xtrace printed an expanded line"


def test_a_bare_bash_would_have_printed_it(tmp_path):
    """The test above can fail: without the interpreter, bash takes xtrace from SHELLOPTS."""
    environment = {**os.environ, "SHELLOPTS": "xtrace", "TOKEN": TOKEN}
    result = subprocess.run(["/bin/bash", "-c", 'printf "%s" "$TOKEN" >/dev/null'], env=environment,
                            capture_output=True, text=True, timeout=30)
    assert TOKEN in result.stderr


@pytest.mark.parametrize("stack", ["dev", "production"])
def test_every_command_that_holds_a_secret_starts_its_shell_clean(stack):
    if stack == "production":
        config, secret_keys = production_config()
        program = run_program(config, secret_keys=secret_keys, stack="prod")
    else:
        program = run_program(dev_stack_config())
    holding = [reg for reg in program.registrations if reg.type == "command:local:Command"
               and SECRET_ENVIRONMENT & set(reg.inputs.get("environment") or {})]
    assert holding, "the stack has commands that hold a secret"
    for reg in holding:
        assert reg.inputs.get("interpreter") in (local_shell.BASH, local_shell.SH), reg.name
