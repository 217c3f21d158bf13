"""The lifecycle's drift and day-2 helpers (tests/e2e/drift.py, keeps_running.py, the configs of
test_lifecycle.py): what they find in a state, what counts as a tenant disturbed, and the configs
each day-2 change gives the program."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.tools import inotify_check
from tests.e2e import drift
from tests.e2e import lifecycle_support as life
from tests.e2e.keeps_running import PodState, TenantWatch, pod_states
from tests.e2e.test_lifecycle import DAY_TWO, TENANTS_KEY, check_inotify, day_two_config, lifecycle_config

pytestmark = pytest.mark.unit


def pod(namespace: str, name: str, uid: str, restarts: int = 0, ready: bool = True,
        phase: str = "Running", owner: str | None = None) -> SimpleNamespace:
    condition = SimpleNamespace(type="Ready", status="True" if ready else "False")
    owners = [SimpleNamespace(kind=owner)] if owner else None
    return SimpleNamespace(
        metadata=SimpleNamespace(namespace=namespace, name=name, uid=uid, owner_references=owners),
        status=SimpleNamespace(phase=phase, container_statuses=[SimpleNamespace(restart_count=restarts)],
                               conditions=[condition]))


def test_a_pod_that_runs_to_an_end_is_not_followed():
    """The capacity agent's CronJob starts a Job pod every minute: Ready while it runs, then gone."""
    states = pod_states([pod("kube-system", "a", "1", owner="ReplicaSet"),
                         pod("hami", "job-x", "2", ready=False, phase="Succeeded"),
                         pod("kube-system", "capacity-29942211", "3", owner="Job")])
    assert states == {"kube-system/a": PodState("1", 0, True)}


def test_an_undisturbed_tenant_reports_nothing_and_one_never_polled_says_so():
    watch = TenantWatch({"kube-system/a": PodState("1", 0, True)})
    assert watch.disturbed() == ["never polled during the change"]
    for _ in range(2):
        watch.observe({"kube-system/a": PodState("1", 0, True), "kube-system/new": PodState("9", 0, False)})
    assert watch.disturbed() == [] and watch.polls == 2


@pytest.mark.parametrize(("now", "said"), [
    ({}, "kube-system/a: replaced or gone"),
    ({"kube-system/a": PodState("2", 0, True)}, "kube-system/a: replaced or gone"),
    ({"kube-system/a": PodState("1", 1, True)}, "kube-system/a: restarted"),
    ({"kube-system/a": PodState("1", 0, False)}, "kube-system/a: not Ready at a poll"),
])
def test_a_pod_gone_replaced_restarted_or_unready_at_any_poll_is_named(now, said):
    watch = TenantWatch({"kube-system/a": PodState("1", 0, True)})
    watch.observe(now)
    watch.observe({"kube-system/a": PodState("1", 0, True)})  # fine again later: still reported
    assert watch.disturbed() == [said]


def test_an_unreachable_api_is_a_disturbance():
    watch = TenantWatch({"kube-system/a": PodState("1", 0, True)})
    watch.api_errors.append("ApiException: 503")
    watch.observe({"kube-system/a": PodState("1", 0, True)})
    watch.observe({"kube-system/a": PodState("1", 0, True)})
    assert watch.disturbed() == ["API unreachable at 1 of 3 polls (ApiException: 503)"]


def resource(type_: str, name: str, object_id: str) -> dict:
    return {"type": type_, "urn": f"urn:pulumi:s::p::a$b:c::{name}", "id": object_id}


def test_the_edited_object_is_found_as_its_tenants_resource():
    agent = "kube-system/hami-mock-lock-release"
    state = {"deployment": {"resources": [
        resource(drift.DEPLOYMENT_TYPE, "e2e1-tenant-a-lock-release-deployment-x", agent),
        resource(drift.DEPLOYMENT_TYPE, "e2e1-tenant-b-lock-release-deployment-x", agent),
        resource(drift.NETWORK_POLICY_TYPE, "e2e1-tenant-b-networkpolicy-x", agent),
    ]}}
    assert drift.state_resource(state, drift.DEPLOYMENT_TYPE, agent,
                                "e2e1-tenant-b") == "e2e1-tenant-b-lock-release-deployment-x"
    with pytest.raises(LookupError, match="expected one"):
        drift.state_resource(state, drift.DEPLOYMENT_TYPE, "kube-system/other", "e2e1-tenant-b")


# As the real CLI printed a policy loosened by hand (tests/engine/test_refresh.py), and a step
# shown unchanged with --show-sames.
REFRESH_DISPLAY = """Previewing refresh (prod):
  ~ kubernetes:networking.k8s.io/v1:NetworkPolicy: (update)
      [id=ml-prod/default-deny]
      [urn=urn:pulumi:prod::kamaji-hami-platform::kamaji-hami-platform:index:KamajiTenant$kubernetes:networking.k8s.io/v1:NetworkPolicy::ml-prod-networkpolicy-ml-prod-default-deny]
      [provider=urn:pulumi:prod::kamaji-hami-platform::kamaji-hami-platform:index:ManagementCluster$pulumi:providers:kubernetes::management-k8s::management-k8s_id]
    ~ spec: {
        ~ policyTypes: [
            - [1]: "Egress"
          ]
      }
    kubernetes:apps/v1:Deployment: (same)
      [id=kube-system/hami-mock-lock-release]
      [urn=urn:pulumi:prod::kamaji-hami-platform::kamaji-hami-platform:index:KamajiTenant$kubernetes:apps/v1:Deployment::ml-prod-lock-release]
Resources:
    ~ 1 to update
error: no changes were expected for refresh but changes were proposed
"""


def test_drift_lines_name_only_the_resources_shown_changed():
    policy = "ml-prod-networkpolicy-ml-prod-default-deny"
    shown = life.drift_lines(REFRESH_DISPLAY, [policy, "ml-prod-lock-release"])
    assert shown == {policy: [
        "~ kubernetes:networking.k8s.io/v1:NetworkPolicy: (update)"], "ml-prod-lock-release": []}


def parsed(config: dict) -> object:
    return parse_config({key.split(":", 1)[1]: value for key, value in config.items()})


def test_each_day_two_config_is_one_the_program_accepts():
    """The lifecycle's base, then a worker more, the other HAMi policy, a third tenant: each a valid
    config of distinct tenants and ranges (the program would refuse it before anything else)."""
    config = lifecycle_config("e2e1")
    for _, change, _ in DAY_TWO:
        change(config[TENANTS_KEY], "e2e1")
        parsed(config)
    platform = parsed(config)
    assert [t.name for t in platform.tenants] == ["e2e1-tenant-a", "e2e1-tenant-b", "e2e1-tenant-c"]
    assert platform.tenants[0].workers == 2
    assert platform.tenants[1].hami.gpu_scheduler_policy == "spread"
    assert parsed(day_two_config(lifecycle_config("e2e1"), "e2e1")) == platform


def test_the_run_refuses_before_anything_is_created_where_its_third_tenant_would_not_start(monkeypatch):
    """The live tier's first run met the limit at its third tenant (128: 'too many open files')."""
    monkeypatch.setattr(inotify_check, "limit", lambda: 128)
    with pytest.raises(life.LifecycleRefused, match=r"third tenant would not start: fs\.inotify"):
        check_inotify(lifecycle_config("e2e1"))
    monkeypatch.setattr(inotify_check, "limit", lambda: 512)
    check_inotify(lifecycle_config("e2e1"))
