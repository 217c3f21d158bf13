"""What a targeted update hands the pack for a new resource it leaves out: no inputs at all (the
engine stubs out its Check and passes its old inputs, none: pulumi v3.276.0 pkg/resource/deploy/
step_generator.go "If not targeted, stub out the provider check and use the old inputs
directly"). Nothing is created and nothing is known, so the pack judges nothing; the real engine
showed the pack refusing a targeted `up` for a chart "not pinned" and a control plane "without
Konnectivity" that it had never seen (tests/engine/test_targeted_up.py)."""

from __future__ import annotations

import pytest

from tests.policy_engine import analyze

pytestmark = pytest.mark.unit

URN = "urn:pulumi:dev::kamaji-hami-platform::kamaji-hami-platform:index:{component}${type}::{name}"
LEFT_OUT = [
    ("kubernetes:helm.sh/v3:Release", "management-kamaji", "ManagementCluster"),
    ("kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane", "team-a-control-plane", "KamajiTenant"),
    ("command:local:Command", "team-a-gpu-node-1-join", "KamajiTenant"),
]


def entries(props: dict) -> list[dict]:
    return [{"type": type_, "name": name, "urn": URN.format(component=component, type=type_, name=name),
             "props": props} for type_, name, component in LEFT_OUT]


def test_resources_a_targeted_update_leaves_out_are_not_judged():
    assert analyze({"resource": entries({}), "stack": entries({})}) == []


def test_the_same_resources_with_what_they_lack_are_judged():
    """The control: inputs that say what the empty ones do not (a chart without a version, a
    control plane without Konnectivity) are violations."""
    props = {"chart": "cert-manager", "version": "", "spec": {"controlPlane": {"service": {}}}}
    found = {finding.policy for finding in analyze({"resource": entries(props), "stack": []})}
    assert {"images-pinned", "tcp-konnectivity-and-explicit-exposure"} <= found
