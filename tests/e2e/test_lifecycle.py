"""The full lifecycle on a throwaway stack: up, the cases, a no-op preview, no drift, drift made by
hand reported and repaired, day-2 changes (a worker, a HAMi setting, a third tenant) that leave the
other tenants running, destroy, nothing left; a table of the phases' times at the end.

Runs only with E2E_LIFECYCLE=1 (`make e2e-lifecycle`; `make live` on the live tier): it creates
and destroys a whole platform (20-40 minutes). Its config is the dev stack's, or the stack file
E2E_BASE_STACK names (`live`: the live tier's mirror, node image and version). The stack gets
its own kind cluster, its own tenant names (so its worker containers never share a name with
another stack's) and its own Docker network and subnet (E2E_DOCKER_SUBNET, default
172.29.0.0/16), so its MetalLB announces on a bridge of its own, beside a running dev stack. It
never touches another stack: its name starts with `e2e`, it is created (never adopted), and its
subnet is refused when it overlaps another stack file's or a Docker network's
(tests/e2e/lifecycle_support.py).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kamaji_hami_platform.config import PROJECT, parse_config
from kamaji_hami_platform.config.model import HamiConfig
from kamaji_hami_platform.tools import inotify_check
from tests.e2e import drift
from tests.e2e import lifecycle_support as life
from tests.e2e.conftest import REQUIRE_STACK, connect
from tests.e2e.keeps_running import KeepsRunning, wait_ready_pods
from tests.e2e.support import (
    ROOT,
    Timer,
    backend_env,
    host_snapshot,
    missing_prerequisite,
    planned_changes,
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
BASE_STACK_ENV = "E2E_BASE_STACK"
TENANTS_KEY = f"{PROJECT}:tenants"
# The third tenant of day 2: the second's settings under its own name and ranges.
THIRD_TENANT = {"name": "tenant-c", "podCidr": "10.40.0.0/16", "serviceCidr": "10.41.0.0/16"}
OTHER_POLICY = {"binpack": "spread", "spread": "binpack"}


def lifecycle_config(stack: str, base: str = "dev") -> dict[str, Any]:
    """The base stack's config (the dev stack's unless E2E_BASE_STACK names another) with a
    cluster, tenant names and a Docker network of its own: nothing it creates on the host can
    collide with the base stack's."""
    document = yaml.safe_load((ROOT / f"Pulumi.{base}.yaml").read_text())
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
    config = lifecycle_config(name, os.environ.get(BASE_STACK_ENV) or "dev")
    claims = life.stack_file_claims(ROOT) + life.host_network_claims()
    life.check_subnet(life.lifecycle_subnet(os.environ), claims)
    life.check_subnet(life.lifecycle_tenant_subnet(os.environ), claims, life.TENANT_SUBNET_ENV)
    check_inotify(config)
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
        run("refresh: no drift", life.refresh_check_command(name), life.PREVIEW_TIMEOUT)
        drift_made_by_hand_is_reported_and_repaired(name, env, timer)
        day_two(name, path, config, env, timer)
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


def add_worker(tenants: list[dict[str, Any]], stack: str) -> None:
    tenants[0]["workers"] = int(tenants[0].get("workers", 1)) + 1


def other_policy(tenants: list[dict[str, Any]], stack: str) -> None:
    hami = tenants[1].setdefault("hami", {})
    hami["gpuSchedulerPolicy"] = OTHER_POLICY[hami.get("gpuSchedulerPolicy", HamiConfig.gpu_scheduler_policy)]


def third_tenant(tenants: list[dict[str, Any]], stack: str) -> None:
    """The second tenant's settings under a name and ranges of its own."""
    name = f"{stack}-{THIRD_TENANT['name']}"[:TENANT_NAME_LIMIT]
    tenants.append({**tenants[1], **THIRD_TENANT, "name": name})


# Day 2, in order: (what, the change of `tenants`, the tenant it is about: the others are watched).
DAY_TWO = (("a worker", add_worker, 0), ("a HAMi setting", other_policy, 1),
           ("a third tenant", third_tenant, None))


def day_two_config(config: dict[str, Any], stack: str) -> dict[str, Any]:
    """The config after every day-2 change of the run: what the host must hold at the end."""
    config = copy.deepcopy(config)
    for _, change, _ in DAY_TWO:
        change(config[TENANTS_KEY], stack)
    return config


def check_inotify(config: dict[str, Any]) -> None:
    """Before anything is created: this machine's inotify limit holds the run's last day-2 state
    (`make up`'s own check, kamaji_hami_platform/tools/inotify_check.py)."""
    final = day_two_config(config, config[life.MANAGEMENT_KEY]["name"])
    platform = parse_config({key.split(":", 1)[1]: value for key, value in final.items()})
    may_go_on, message = inotify_check.verdict(inotify_check.needed(platform), inotify_check.limit())
    if not may_go_on:
        raise life.LifecycleRefused(f"the run's third tenant would not start: {message}")


def export(stack: str, env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(["pulumi", "stack", "export", "--stack", stack, "--non-interactive"], cwd=ROOT,
                            env=env, capture_output=True, text=True, check=True, timeout=120)
    return json.loads(result.stdout)


def last_update_changes(stack: str, env: dict[str, str]) -> dict[str, int]:
    """What the last `up` changed, as the stack's history recorded it."""
    result = subprocess.run(["pulumi", "stack", "history", "--json", "--page-size", "1", "--stack", stack,
                             "--non-interactive"], cwd=ROOT, env=env, capture_output=True, text=True,
                            check=True, timeout=120)
    return planned_changes(json.loads(result.stdout)[0].get("resourceChanges") or {})


def drift_made_by_hand_is_reported_and_repaired(name: str, env: dict[str, str], timer: Timer) -> None:
    """Two hand edits of fields the platform sets (tests/e2e/drift.py): the refresh check fails
    naming both resources, `up --refresh` puts both back, the check passes again."""
    live = connect(name)
    first, second = (tenant.name for tenant in live.platform.tenants[:2])
    namespace = live.platform.tenants[0].namespace
    state = export(name, env)
    edits = [drift.loosen_default_deny(live.management, state, first, namespace),
             drift.stop_lock_release(live.tenants[second], state, second)]
    said = timer.phase("refresh: drift reported", lambda: life.run_expecting_failure(
        "refresh: drift reported", life.refresh_check_command(name), life.PREVIEW_TIMEOUT, env=env, cwd=ROOT))
    shown = life.drift_lines(said, [edit.resource for edit in edits])
    assert all(shown.values()), f"the refresh did not name every resource edited by hand: {shown}"
    timer.phase("up --refresh: repair", lambda: life.run_bounded(
        "up --refresh: repair", life.repair_command(name), life.UP_TIMEOUT, env=env, cwd=ROOT))
    assert drift.undone(live.management, namespace, live.tenants[second]) == []
    timer.phase("refresh: repaired", lambda: life.run_bounded(
        "refresh: repaired", life.refresh_check_command(name), life.PREVIEW_TIMEOUT, env=env, cwd=ROOT))


def day_two(name: str, path: Path, config: dict[str, Any], env: dict[str, str], timer: Timer) -> None:
    """A worker added to the first tenant, the second tenant's HAMi policy changed, a third tenant
    added: each previewed, then made by `up`, which must change what the preview planned, while
    every tenant the change is not about keeps running (tests/e2e/keeps_running.py)."""
    for what, change, about in DAY_TWO:
        tenant = config[TENANTS_KEY][about]["name"] if about is not None else None
        change(config[TENANTS_KEY], name)
        life.write_stack_config(path, config)
        one_change(name, f"day 2: {what}", tenant, env, timer)


def one_change(name: str, phase: str, about: str | None, env: dict[str, str], timer: Timer) -> None:
    preview = f"{phase} (preview)"
    planned, steps = life.preview_changes(timer.phase(preview, lambda: life.run_bounded(
        preview, life.preview_command(name), life.PREVIEW_TIMEOUT, env=env, cwd=ROOT, capture=True)))
    assert planned and "delete" not in planned and "replace" not in planned, \
        f"{phase}: the preview plans {planned}\n" + "\n".join(steps)
    live = connect(name)
    others = {tenant: api for tenant, api in live.tenants.items() if tenant != about}
    for api in others.values():
        wait_ready_pods(api)
    with KeepsRunning(others) as watch:
        timer.phase(phase, lambda: life.run_bounded(phase, life.up_command(name), life.UP_TIMEOUT,
                                                    env=env, cwd=ROOT))
    print(f"[lifecycle] {phase}: {watch.summary()}", flush=True)
    assert last_update_changes(name, env) == planned, f"{phase}: `up` did not do what the preview planned"
    assert all(not disturbed for disturbed in watch.report().values()), \
        f"{phase}: other tenants were disturbed: {watch.report()}"
