"""`make up` stops before anything is created when this machine's inotify instance limit cannot
hold the stack's kind node and worker containers (the live tier's third tenant failed on 128 with
'too many open files'); `make preview` warns and goes on. The estimate and the verdict are pure;
the command is run as the Makefile runs it, on the real dev stack file."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.tools import inotify_check
from tests.harness import dev_stack_config

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def platform(tenants: int, workers: int = 1):
    config = copy.deepcopy(dev_stack_config())
    first = config["tenants"][0]
    config["tenants"] = [{**first, "name": f"t{i}", "podCidr": f"10.{40 + 2 * i}.0.0/16",
                          "serviceCidr": f"10.{41 + 2 * i}.0.0/16", "workers": workers}
                         for i in range(tenants)]
    return parse_config(config)


def test_the_dev_stack_fits_the_common_default_and_the_live_tiers_third_tenant_did_not():
    """The dev stack (two tenants, a worker each) ran on 128; the live tier's lifecycle stack with a
    third tenant and a second worker (four workers) ran out at 128."""
    assert inotify_check.needed(platform(2)) <= 128
    three = platform(3)
    three_with_a_second_worker = inotify_check.needed(three) + inotify_check.PER_WORKER
    assert three_with_a_second_worker > 128


def test_enough_says_nothing_and_too_few_names_the_sysctl_and_the_fix():
    assert inotify_check.verdict(92, 128) == (True, None)
    assert inotify_check.verdict(92, None) == (True, None)  # no /proc here: no finding
    may_go_on, message = inotify_check.verdict(140, 128)
    assert not may_go_on
    assert message.startswith("fs.inotify.max_user_instances is 128, and this stack's kind node")
    assert "sudo sysctl -w fs.inotify.max_user_instances=512" in message


def test_the_limit_is_read_from_proc_or_unknown(tmp_path):
    path = tmp_path / "max_user_instances"
    path.write_text("128\n")
    assert inotify_check.limit(path) == 128
    assert inotify_check.limit(tmp_path / "missing") is None


def test_only_a_local_engine_is_judged():
    assert inotify_check.local_engine("") and inotify_check.local_engine("unix:///run/docker.sock")
    assert not inotify_check.local_engine("tcp://10.0.0.5:2376")
    assert not inotify_check.local_engine("ssh://builder@host")


def run(mode: str, limit_file: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command with this machine's limit replaced by `limit_file`'s (a sitecustomize that points
    LIMIT_FILE there), as `make up` runs it on the real dev stack file."""
    shim = limit_file.parent / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(
        "from pathlib import Path\nfrom kamaji_hami_platform.tools import inotify_check\n"
        f"inotify_check.LIMIT_FILE = Path({str(limit_file)!r})\n")
    command = [sys.executable, "-c", "import sys; from kamaji_hami_platform.tools import inotify_check as c; "
               f"sys.exit(c.main(['--stack', 'dev', '--mode', {mode!r}, '--root', {str(ROOT)!r}]))"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, cwd=ROOT,
                          env={"PATH": os.environ["PATH"], "PYTHONPATH": f"{shim}:{ROOT}", **env})


@pytest.mark.parametrize(("mode", "env", "code", "said"), [
    ("up", {}, 1, "error: fs.inotify.max_user_instances is 32"),
    ("preview", {}, 0, "warning: fs.inotify.max_user_instances is 32"),
    ("up", {"KHP_INOTIFY_CHECK": "warn"}, 0, "warning: fs.inotify.max_user_instances is 32"),
    ("up", {"DOCKER_HOST": "tcp://10.0.0.5:2376"}, 0, ""),
])
def test_up_stops_preview_warns_and_a_remote_engine_is_not_judged(tmp_path, mode, env, code, said):
    limit_file = tmp_path / "max_user_instances"
    limit_file.write_text("32\n")
    result = run(mode, limit_file, env)
    assert result.returncode == code, result.stderr
    assert result.stderr.startswith(said) if said else result.stderr == ""
