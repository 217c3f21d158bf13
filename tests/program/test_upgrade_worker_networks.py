"""Upgrading a stack deployed before tenants had networks of their own (issue 29), planned with
tests/plan_model.py from the stack's state at commit 4dc9ef2 (tests/fixtures/upgrade-from/, the
dev and production stacks as that commit registered them) to today's program.

A tenant created then is on the platform's shared network. With `workerNetwork: shared` it upgrades
in place (its control plane gets no node ports, its addressBlock guard a new message); left at the
default, its move to a network of its own is refused in preview by the guard it already has, before
anything is touched; a stack of worker hosts (mode existing) upgrades in place.
"""

from __future__ import annotations

import pytest

from tests.harness import dev_stack_config, production_config, run_program
from tests.plan_model import plan, refused
from tests.recorded_state import recorded_state

pytestmark = pytest.mark.unit

BEFORE = "4dc9ef2"
KEPT_IN_PLACE = ("update",)


def summary(steps) -> dict[str, str]:
    return {step.name: f"{step.op} {step.why}".strip() for step in steps}


def test_tenants_kept_on_the_shared_network_upgrade_in_place():
    config = dev_stack_config()
    for tenant in config["tenants"]:
        tenant["workerNetwork"] = "shared"
    steps = plan(recorded_state(BEFORE, "dev"), run_program(config))
    assert summary(steps) == {
        **{f"{t}-control-plane": "update spec" for t in ("tenant-a", "tenant-b")},  # no node ports
        **{f"{t}-create-only-addressBlock": "update create" for t in ("tenant-a", "tenant-b")},  # reworded
    }


def test_moving_a_running_tenant_to_a_network_of_its_own_is_refused_in_preview():
    steps = plan(recorded_state(BEFORE, "dev"), run_program(dev_stack_config()))
    assert sorted(refused(steps)) == [f"{t}-create-only-addressBlock" for t in ("tenant-a", "tenant-b")]
    # What the preview would go on to show (up stops at the refusal, before anything is touched):
    # the workers replaced onto the new networks, which is why it is refused.
    assert {"tenant-a-worker-0", "tenant-b-worker-0"} <= {s.name for s in steps if s.op == "delete-replaced"}


def test_a_stack_of_worker_hosts_upgrades_in_place():
    config, secret_keys = production_config()
    after = run_program(config, stack="prod", secret_keys=secret_keys)
    steps = plan(recorded_state(BEFORE, "production"), after)
    assert {step.op for step in steps} <= set(KEPT_IN_PLACE), summary(steps)
    # The control planes (source ranges before kube-proxy's masquerade, no node ports) and the
    # reworded addressBlock guards.
    assert summary(steps) == {**{f"{t}-control-plane": "update spec" for t in ("ml-prod", "sandbox")},
                              **{f"{t}-create-only-addressBlock": "update create"
                                 for t in ("ml-prod", "sandbox")}}
