"""Releasing one tenant's protection before it is removed, with a stand-in pulumi CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kamaji_hami_platform.tools import protection
from tests.standins import stand_in

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
PREFIX = "urn:pulumi:dev::kamaji-hami-platform::"


def state_resource(type_: str, name: str, parent: str = "", protect: bool = False) -> dict:
    urn = f"{PREFIX}{type_}::{name}"
    return {"urn": urn, "type": type_.rsplit("$", 1)[-1], "parent": parent, "protect": protect,
            "inputs": {"secret": "ciphertext-never-printed"}}


def export() -> dict:
    tenant_a = state_resource(protection.TENANT_TYPE, "tenant-a")
    tenant_b = state_resource(protection.TENANT_TYPE, "tenant-b")
    child = protection.TENANT_TYPE + "$"
    return {"version": 3, "deployment": {"resources": [
        tenant_a, tenant_b,
        state_resource(child + "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane",
                       "tenant-a-control-plane", tenant_a["urn"], protect=True),
        state_resource(child + "command:local:Command", "tenant-a-create-only-podCidr",
                       tenant_a["urn"], protect=True),
        state_resource(child + "command:local:Command", "tenant-a-worker-0", tenant_a["urn"]),
        state_resource(child + "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane",
                       "tenant-b-control-plane", tenant_b["urn"], protect=True),
    ]}}


def test_selects_only_that_tenants_protected_resources():
    urns = protection.tenant_protected(export(), "tenant-a")
    assert [u.rsplit("::", 1)[-1] for u in urns] == ["tenant-a-control-plane", "tenant-a-create-only-podCidr"]


def test_an_unknown_tenant_is_refused():
    with pytest.raises(protection.Refused, match="no tenant 'tenant-c'"):
        protection.tenant_protected(export(), "tenant-c")


def test_the_command_unprotects_them_and_says_what_comes_next(tmp_path):
    (tmp_path / "export.json").write_text(json.dumps(export()))
    stand_in(tmp_path, "pulumi", f"""#!/bin/sh
echo "$*" >> {tmp_path}/calls
case "$1 $2" in
  "stack export") cat {tmp_path}/export.json ;;
  "state unprotect") ;;
  *) exit 2 ;;
esac
""")
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    result = subprocess.run([sys.executable, "-m", "kamaji_hami_platform.tools.protection", "--stack", "dev",
                             "--tenant", "tenant-a"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    unprotect = (tmp_path / "calls").read_text().splitlines()[-1]
    assert unprotect.startswith("state unprotect --yes --stack dev ")
    guard = f"{PREFIX}{protection.TENANT_TYPE}$command:local:Command::tenant-a-create-only-podCidr"
    assert unprotect.endswith(f"::tenant-a-control-plane {guard}")
    assert "remove tenant-a from `tenants`" in result.stdout
    assert "ciphertext" not in result.stdout + result.stderr
