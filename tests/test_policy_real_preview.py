"""The policy pack on what the real engine hands it, in the three situations it meets.

1. A preview of a fresh stack: the recording made with the real Pulumi engine and providers
   (tests/fixtures/real-preview/, see its README). Every Kubernetes resource has empty
   outputs there, so the stack policies judge on the inputs the resource policies were shown.
2. A preview of a deployed stack, whose outputs are known from the state, and
3. `pulumi up`, whose stack analysis runs on the real outputs: both built from the program
   under mocks (outputs echo inputs, as the providers' do), in the recording's shape.

Each runs through pulumi-policy's own analyzer servicer (tests/policy_engine.py). The dev
stack passes; each planted violation is reported by its policy, on the resource it concerns,
and nothing else is.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from tests.harness import Program, dev_stack_config, run_program
from tests.policy_engine import (
    analyze,
    edit,
    fixture_from_program,
    load_pack,
    load_recording,
    policy_and_resource,
    with_program_options,
    without,
)

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def program() -> Program:
    return run_program(dev_stack_config())


@pytest.fixture(scope="module")
def recorded(program) -> dict:
    """The real preview's inputs, with the options and parents the program registers
    (the recording kept props only; the engine sends both)."""
    return with_program_options(load_recording(), program)


@pytest.fixture(scope="module")
def outputs_known(program) -> dict:
    return fixture_from_program(program)


def _downgrade_tenant_b_worker(entry: dict) -> None:
    create = entry["props"]["create"]
    entry["props"]["create"] = create.replace("kindest/node:v1.35.0", "kindest/node:v1.34.0")


def _kubeconfig_output_in_plain_text(entry: dict) -> None:
    entry["opts"]["additionalSecretOutputs"] = []


def _webhook_ignore(entry: dict) -> None:
    values = entry["props"].get("values")
    if values:  # the stack part of a fresh preview has no outputs for the release
        values["scheduler"]["admissionWebhook"]["failurePolicy"] = "Ignore"


PLANTED: dict[str, tuple[Callable[[dict], dict], tuple[str, str]]] = {
    "tenant namespace without default deny": (
        lambda f: without(f, "tenant-a-networkpolicy-tenant-a-default-deny"),
        ("tenant-namespaces-default-deny", "tenant-a-control-plane")),
    "worker image at another version": (
        lambda f: edit(f, "tenant-b-worker-0", _downgrade_tenant_b_worker),
        ("worker-version-matches-control-plane", "tenant-b-worker-0")),
    "kubeconfig output not secret": (
        lambda f: edit(f, "management-kubeconfig", _kubeconfig_output_in_plain_text),
        ("kubeconfig-outputs-secret", "management-kubeconfig")),
    "HAMi webhook Ignore": (
        lambda f: edit(f, "tenant-a-gpus-hami", _webhook_ignore),
        ("hami-webhook-fails-closed", "tenant-a-gpus-hami")),
}


class TestTheRecording:
    def test_it_is_what_the_readme_says(self):
        """45 of 66 resources have empty outputs in the stack part; every one is kubernetes:*."""
        recording = load_recording()
        empty = [e for e in recording["stack"] if not e["props"]]
        assert len(recording["stack"]) == len(recording["resource"]) == 66
        assert len(empty) == 45 and all(e["type"].startswith("kubernetes:") for e in empty)
        tcp = next(e for e in recording["resource"] if e["name"] == "tenant-a-control-plane")
        assert tcp["props"]["metadata"]["namespace"] == "tenant-a", "the inputs are complete"

    def test_the_program_still_registers_what_was_recorded(self, program):
        """The recording stands for today's dev stack only while the program registers the same
        resources (a change here means: record a new preview, tests/fixtures/real-preview/README.md).
        The create-only guard was split per setting since (issue 17)."""
        from tests.policy_engine import engine_urn

        recorded_urns = {e["urn"] for e in load_recording()["resource"]}
        registered = {engine_urn(r.urn) for r in program.registrations}
        gone = {urn.rsplit("::", 1)[-1] for urn in recorded_urns - registered}
        engine_only = {"kamaji-hami-platform-dev", "default_1_2_1"}  # the stack and the default provider
        assert gone - engine_only == {"management-create-only-settings"}


class TestFreshPreview:
    def test_the_dev_stack_passes(self, recorded):
        assert analyze(recorded) == []

    def test_the_old_stack_policies_would_have_failed_it(self, recorded):
        """What the real engine reported before the fix: a stack policy reading the empty outputs of
        a TenantControlPlane. Judging outputs alone reproduces the failure's cause (nothing to see)
        without a false violation now."""
        findings = analyze(recorded, resource_part=False)
        assert findings == [], "with nothing seen, an empty resource is never a violation"

    @pytest.mark.parametrize("planted", sorted(PLANTED))
    def test_each_planted_violation_is_reported_by_name_and_nothing_else(self, recorded, planted):
        plant, expected = PLANTED[planted]
        assert policy_and_resource(analyze(plant(recorded))) == {expected}

    def test_all_planted_at_once_are_all_reported(self, recorded):
        fixture = recorded
        for plant, _ in PLANTED.values():
            fixture = plant(fixture)
        assert policy_and_resource(analyze(fixture)) == {expected for _, expected in PLANTED.values()}


class TestOutputsKnown:
    """A preview of a deployed stack, and `pulumi up`'s stack analysis."""

    def test_the_dev_stack_passes(self, outputs_known):
        assert analyze(outputs_known) == []

    @pytest.mark.parametrize("planted", sorted(PLANTED))
    def test_each_planted_violation_is_reported_by_name_and_nothing_else(self, outputs_known, planted):
        plant, expected = PLANTED[planted]
        assert policy_and_resource(analyze(plant(outputs_known))) == {expected}

    def test_stack_policies_alone_judge_known_outputs(self, outputs_known):
        """Where outputs are known, the stack policies need nothing from the resource policies."""
        plant, expected = PLANTED["tenant namespace without default deny"]
        assert policy_and_resource(analyze(plant(outputs_known), resource_part=False)) == {expected}


class TestUnknowns:
    def test_a_value_a_rule_needs_but_cannot_know_is_not_a_violation(self, outputs_known):
        """Every input but a NetworkPolicy's metadata unknown, every output empty: nothing to judge,
        no violation, and no policy downgraded to advisory (analyze raises on that)."""
        def unknown_except_metadata(entry: dict) -> None:
            keep = ("metadata",) if entry["type"].endswith(":NetworkPolicy") else ()
            entry["props"] = {k: (v if k in keep else "<unknown>") for k, v in entry["props"].items()}

        blind = {"resource": [copy.deepcopy(e) for e in outputs_known["resource"]],
                 "stack": [{**e, "props": {}} for e in outputs_known["stack"]]}
        for entry in blind["resource"]:
            unknown_except_metadata(entry)
        assert analyze(blind) == []


def test_every_rule_is_a_mandatory_policy_of_the_pack():
    from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

    pack = load_pack()
    policies = pack.policies()
    kinds = {p.name: type(p) for p in policies}
    assert {n for n, k in kinds.items() if k is ResourceValidationPolicy} == set(pack.rules.RESOURCE_RULES)
    assert {n for n, k in kinds.items() if k is StackValidationPolicy} == set(pack.rules.STACK_RULES)
    assert {p.enforcement_level for p in policies} == {EnforcementLevel.MANDATORY}
