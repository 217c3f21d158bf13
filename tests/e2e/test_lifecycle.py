"""The full lifecycle on a throwaway stack: up, the cases, a no-op preview, destroy, nothing left.

Runs only with E2E_LIFECYCLE=1 (`make e2e-lifecycle`): it creates and destroys a
whole platform (20-40 minutes). The stack gets its own kind cluster, its own tenant
names (so its worker containers never share a name with another stack's) and its own
Docker network and subnet (E2E_DOCKER_SUBNET, default 172.29.0.0/16), so its MetalLB
announces on a bridge of its own, beside a running dev stack.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
import yaml

from components import node_join
from components.config import PROJECT
from tests.e2e.conftest import REQUIRE_STACK
from tests.e2e.support import (
    ROOT,
    Timer,
    backend_env,
    host_snapshot,
    leftovers,
    missing_prerequisite,
    planned_changes,
)

pytestmark = pytest.mark.e2e

CASES_TIMEOUT = 45 * 60
TENANT_NAME_LIMIT = 40
LIFECYCLE_SUBNET = "172.29.0.0/16"  # beside the dev stack's 172.30.0.0/16


def lifecycle_config(stack: str) -> dict[str, Any]:
    """The dev stack's config with a cluster, tenant names and a Docker network of its own:
    nothing it creates on the host can collide with the dev stack's."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    config = document["config"]
    management = dict(config.get(f"{PROJECT}:management") or {})
    management["name"] = stack
    management["dockerNetwork"] = stack
    management["dockerSubnet"] = os.environ.get("E2E_DOCKER_SUBNET", LIFECYCLE_SUBNET)
    management.pop("metallbAddressRange", None)  # the default of its own subnet
    config[f"{PROJECT}:management"] = management
    tenants = [dict(t) for t in config[f"{PROJECT}:tenants"]]
    for tenant in tenants:
        tenant["name"] = f"{stack}-{tenant['name']}"[:TENANT_NAME_LIMIT]
    config[f"{PROJECT}:tenants"] = tenants
    return config


def test_lifecycle_up_cases_noop_preview_destroy():
    if os.environ.get("E2E_LIFECYCLE") != "1":
        pytest.skip("the lifecycle test builds and destroys a whole platform: run `make e2e-lifecycle`")
    reason = missing_prerequisite()
    if reason:
        pytest.fail(f"E2E_LIFECYCLE=1 but no live stack is possible: {reason}", pytrace=False)
    from pulumi import automation as auto

    name = os.environ.get("E2E_LIFECYCLE_STACK", f"e2e{int(time.time()) % 100000}")
    before = host_snapshot()
    stack_file = ROOT / f"Pulumi.{name}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": lifecycle_config(name)}, sort_keys=False))
    timer = Timer()
    stack = auto.create_or_select_stack(stack_name=name, work_dir=str(ROOT), opts=auto.LocalWorkspaceOptions(
        env_vars={**backend_env(), node_join.SKIP_DRAIN_ENV: "1"}))
    try:
        timer.phase("pulumi up", lambda: stack.up(on_output=print))
        cases = timer.phase("acceptance cases", lambda: subprocess.run(
            [sys.executable, "-m", "pytest", "-m", "e2e", "-rs", "tests/e2e/test_acceptance.py"],
            cwd=ROOT, env={**os.environ, "E2E_STACK": name, REQUIRE_STACK: "1"}, check=False,
            timeout=CASES_TIMEOUT))
        assert cases.returncode == 0, "acceptance cases failed on the fresh stack (output above)"
        preview = timer.phase("second preview", lambda: stack.preview(diff=True))
        changes = planned_changes(preview.change_summary)
        assert changes == {}, f"a second preview plans changes: {changes}"
    finally:
        # `make down` semantics: the kind cluster, control planes and guards are protected, and
        # the whole platform goes, so nothing is drained (the Automation API has no
        # --ignore-protect: clear the flags first).
        timer.phase("unprotect", lambda: subprocess.run(
            ["pulumi", "state", "unprotect", "--all", "--yes", "--stack", name], cwd=ROOT,
            env={**os.environ, **backend_env()}, check=True, timeout=300))
        timer.phase("pulumi destroy", lambda: stack.destroy(on_output=print))
        stack.workspace.remove_stack(name)
        stack_file.unlink(missing_ok=True)
        print("[lifecycle] wall time per phase\n" + timer.report())
    left = leftovers(before, host_snapshot())
    assert left == [], f"destroy left things behind: {left}"
