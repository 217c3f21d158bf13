"""The full lifecycle on a throwaway stack: up, the cases, a no-op preview, destroy, nothing left.

Runs only with E2E_LIFECYCLE=1 (`make e2e-lifecycle`): it creates and destroys a
whole platform (20-40 minutes). The stack gets its own kind cluster, its own tenant
names (so its worker containers never share a name with another stack's) and its own
Docker network and subnet (E2E_DOCKER_SUBNET, default 172.29.0.0/16), so its MetalLB
announces on a bridge of its own, beside a running dev stack. It never touches another
stack: its name starts with `e2e`, it is created (never adopted), and its subnet is refused
when it overlaps another stack file's or a Docker network's (tests/e2e/lifecycle_support.py).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest
import yaml

from kamaji_hami_platform.config import PROJECT
from tests.e2e import lifecycle_support as life
from tests.e2e.conftest import REQUIRE_STACK
from tests.e2e.support import (
    ROOT,
    Timer,
    backend_env,
    host_snapshot,
    missing_prerequisite,
)

pytestmark = pytest.mark.e2e

CASES_TIMEOUT = 45 * 60
TENANT_NAME_LIMIT = 40
# The cases `make e2e` runs: TC-00..TC-08, then the declared workloads (the stack inherits the dev
# stack's, the mission's three pods per tenant), then TC-02's further probes and the kind node's
# restart (last: it restarts what the others use).
ACCEPTANCE = ("tests/e2e/test_acceptance.py", "tests/e2e/test_declared_workloads.py",
              "tests/e2e/test_isolation.py")
LIFECYCLE_SUBNET = life.DEFAULT_SUBNET


def lifecycle_config(stack: str) -> dict[str, Any]:
    """The dev stack's config with a cluster, tenant names and a Docker network of its own:
    nothing it creates on the host can collide with the dev stack's."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    config = document["config"]
    management = dict(config.get(f"{PROJECT}:management") or {})
    management["name"] = stack
    management["dockerNetwork"] = stack
    management["dockerSubnet"] = str(life.lifecycle_subnet(os.environ))
    management["tenantSubnet"] = str(life.lifecycle_tenant_subnet(os.environ))
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

    # Every refusal comes before anything is written or created.
    name = os.environ.get(life.STACK_ENV) or life.default_stack_name(time.time())
    life.check_stack_name(name, ROOT)
    config = lifecycle_config(name)
    claims = life.stack_file_claims(ROOT) + life.host_network_claims()
    life.check_subnet(life.lifecycle_subnet(os.environ), claims)
    life.check_subnet(life.lifecycle_tenant_subnet(os.environ), claims, life.TENANT_SUBNET_ENV)
    before = host_snapshot()
    env = life.pulumi_env(os.environ, backend_env())
    timer = Timer()

    def run(phase: str, command: list[str], timeout: float, capture: bool = False,
            phase_env: dict[str, str] | None = None) -> str:
        return timer.phase(phase, lambda: life.run_bounded(phase, command, timeout, env=phase_env or env,
                                                           cwd=ROOT, capture=capture))

    try:
        run("stack init", life.init_command(name), life.STACK_COMMAND_TIMEOUT)
    except life.PhaseFailed as error:
        raise life.LifecycleRefused(life.stack_exists_message(name)) from error
    path = life.stack_file(ROOT, name)
    original: BaseException | None = None
    try:
        life.write_stack_config(path, config)
        run("pulumi up", life.up_command(name), life.UP_TIMEOUT)
        run("acceptance cases", [sys.executable, "-m", "pytest", "-m", "e2e", "-rs", *ACCEPTANCE],
            CASES_TIMEOUT, phase_env={**os.environ, "E2E_STACK": name, REQUIRE_STACK: "1"})
        changes, steps = life.preview_changes(
            run("second preview", life.preview_command(name), life.PREVIEW_TIMEOUT, capture=True))
        assert changes == {}, f"a second preview plans changes: {changes}\n" + "\n".join(steps)
    except BaseException as error:  # reported with the cleanup's errors below
        original = error

    def check_leftovers() -> None:
        left = life.lifecycle_leftovers(before, host_snapshot())
        assert left == [], f"destroy left things behind: {left}"

    errors = life.clean_up(life.Cleanup(
        stack=name,
        destroy=lambda: run("pulumi destroy", life.destroy_command(name), life.DESTROY_TIMEOUT),
        remove_stack=lambda: run("stack rm", life.remove_command(name), life.STACK_COMMAND_TIMEOUT),
        delete_stack_file=lambda: path.unlink(missing_ok=True),
        check_leftovers=check_leftovers))
    print("[lifecycle] wall time per phase\n" + timer.report(), flush=True)
    life.raise_all(original, errors)
