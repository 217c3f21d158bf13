"""The full lifecycle on a throwaway stack: up, the cases, a no-op preview, destroy, nothing left.

Runs only with E2E_LIFECYCLE=1 (`make e2e-lifecycle`): it creates and destroys a
whole platform (20-40 minutes). It needs the dev stack to be down, or
E2E_METALLB_RANGE set to a free range, because both would share the `kind`
Docker network.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
import yaml

from components.config import PROJECT
from components.node_join import PLATFORM_LABEL
from tests.e2e.support import ROOT, Timer, backend_env, missing_prerequisite

pytestmark = pytest.mark.e2e


def lifecycle_config(stack: str) -> dict[str, Any]:
    """The dev stack's config with a cluster name of its own (and, if given, its own MetalLB range)."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    config = document["config"]
    management = dict(config.get(f"{PROJECT}:management") or {})
    management["name"] = stack
    if os.environ.get("E2E_METALLB_RANGE"):
        management["metallbAddressRange"] = os.environ["E2E_METALLB_RANGE"]
    config[f"{PROJECT}:management"] = management
    return config


def leftovers(cluster: str) -> list[str]:
    clusters = subprocess.run(["kind", "get", "clusters"], capture_output=True, text=True, check=True)
    containers = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label={PLATFORM_LABEL}={cluster}", "--format", "{{.Names}}"],
        capture_output=True, text=True, check=True)
    found = [f"kind cluster {cluster}"] if cluster in clusters.stdout.split() else []
    return found + [f"container {name}" for name in containers.stdout.split()]


def test_lifecycle_up_cases_noop_preview_destroy():
    if os.environ.get("E2E_LIFECYCLE") != "1":
        pytest.skip("the lifecycle test builds and destroys a whole platform: run `make e2e-lifecycle`")
    reason = missing_prerequisite()
    if reason:
        pytest.skip(f"no live stack possible: {reason}")
    from pulumi import automation as auto

    name = os.environ.get("E2E_LIFECYCLE_STACK", f"e2e{int(time.time()) % 100000}")
    stack_file = ROOT / f"Pulumi.{name}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": lifecycle_config(name)}, sort_keys=False))
    timer = Timer()
    stack = auto.create_or_select_stack(stack_name=name, work_dir=str(ROOT),
                                        opts=auto.LocalWorkspaceOptions(env_vars=backend_env()))
    try:
        timer.phase("pulumi up", lambda: stack.up(on_output=print))
        cases = timer.phase("acceptance cases", lambda: subprocess.run(
            [sys.executable, "-m", "pytest", "-m", "e2e", "-rs", "tests/e2e/test_acceptance.py"],
            cwd=ROOT, env={**os.environ, "E2E_STACK": name}, check=False))
        assert cases.returncode == 0, "acceptance cases failed on the fresh stack (output above)"
        preview = timer.phase("second preview", lambda: stack.preview(diff=True))
        changes = {op: n for op, n in preview.change_summary.items() if op != "same" and n}
        assert changes == {}, f"a second preview plans changes: {changes}"
    finally:
        timer.phase("pulumi destroy", lambda: stack.destroy(on_output=print))
        stack.workspace.remove_stack(name)
        stack_file.unlink(missing_ok=True)
        print("[lifecycle] wall time per phase\n" + timer.report())
    assert leftovers(name) == [], "destroy left things behind"
