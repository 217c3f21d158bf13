"""The live engine's runtime wrapper (toolchain/live/scripts/runtime.sh) drops exactly the
capability the machine's bounding set lacks, from a bundle (`create`) and a process file (`exec`),
and hands runc every argument unchanged. jq comes with the tier (debian-packages.sh)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.live.conftest import ROOT

pytestmark = pytest.mark.live

RUNTIME = ROOT / "toolchain" / "live" / "scripts" / "runtime.sh"
CAP_SYS_RESOURCE_BIT = 24  # linux/capability.h


def _machine_lacks_cap_sys_resource() -> bool:
    bounding = re.search(r"^CapBnd:\s*([0-9a-f]+)$", Path("/proc/self/status").read_text(), re.M)
    return not int(bounding.group(1), 16) >> CAP_SYS_RESOURCE_BIT & 1


CAPABILITIES = ["CAP_CHOWN", "CAP_SYS_ADMIN", "CAP_SYS_RESOURCE", "CAP_NET_ADMIN"]
CAPABILITY_SETS = ("bounding", "effective", "permitted", "inheritable", "ambient")


def _process() -> dict:
    return {"args": ["sh"], "capabilities": {key: list(CAPABILITIES) for key in CAPABILITY_SETS}}


def test_the_runtime_wrapper_edits_create_and_exec_then_runs_the_runc_beside_it(live_bin: Path,
                                                                                 tmp_path: Path):
    """`create --bundle B` edits B/config.json, `exec --process P` edits P, and every argument
    reaches runc unchanged. Where the machine has CAP_SYS_RESOURCE, nothing is edited."""
    (tmp_path / "khp-runc").symlink_to(RUNTIME)
    (tmp_path / "runc").write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/runc.args"\n')
    (tmp_path / "runc").chmod(0o755)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps({"ociVersion": "1.2.0", "process": _process()}))
    process_file = tmp_path / "process.json"
    process_file.write_text(json.dumps(_process()))

    for args in (["create", "--bundle", str(bundle), "c1"], ["exec", f"--process={process_file}", "c1"]):
        subprocess.run([str(tmp_path / "khp-runc"), "--root", "/run/x", *args], check=True, timeout=30)
        assert (tmp_path / "runc.args").read_text().split() == ["--root", "/run/x", *args]

    dropped = {"CAP_SYS_RESOURCE"} if _machine_lacks_cap_sys_resource() else set()
    expected = [cap for cap in CAPABILITIES if cap not in dropped]
    edited = [json.loads((bundle / "config.json").read_text())["process"],
              json.loads(process_file.read_text())]
    for process in edited:
        assert process["capabilities"] == {key: expected for key in process["capabilities"]}
        assert process["args"] == ["sh"]
