"""The plan model itself, on small hand-made registrations (tests/plan_model.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.harness import Registration
from tests.plan_model import UNKNOWN_WIRE, UnmodeledOption, ops, plan, refused, stopped

pytestmark = pytest.mark.unit
STACK = "urn:pulumi:dev::p"


def command(name: str, trigger: str, **options) -> Registration:
    return Registration(type="command:local:Command", name=name, urn=urn(name),
                        parent="", provider="", dependencies=[], custom=True,
                        inputs={"create": "true", "triggers": [trigger]}, wire={},
                        options={"replaceOnChanges": ["triggers[*]"], **options})


def program(*regs: Registration) -> SimpleNamespace:
    return SimpleNamespace(registrations=list(regs))


def urn(name: str) -> str:
    return f"{STACK}::command:local:Command::{name}"


@pytest.mark.parametrize("option", ["importId", "hideDiffs"])
def test_an_option_the_model_does_not_emulate_fails_loudly(option):
    reg = command("a", "1", **{option: ["x"]})
    with pytest.raises(UnmodeledOption, match=option):
        plan(program(command("a", "1")), program(reg))


def test_a_replacement_trigger_replaces_when_it_changes_and_never_from_or_to_null():
    """step_generator.go `shouldTriggerReplace`: nulls mean no trigger; unknowns always replace;
    and a protected resource's trigger-replacement is refused like any other."""
    assert plan(program(command("a", "1")), program(command("a", "1", replacementTrigger={"k": "v"}))) == []
    before = program(command("a", "1", protect=True, replacementTrigger={"k": "v"}))
    assert plan(before, program(command("a", "1", protect=True, replacementTrigger={"k": "v"}))) == []
    assert plan(before, program(command("a", "1", protect=True))) == []
    other = program(command("a", "1", protect=True, replacementTrigger={"k": "w"}))
    assert refused(plan(before, other)) == ["a"]
    known = program(command("a", "1", replacementTrigger={"k": "v"}))
    unknown = program(command("a", "1", replacementTrigger={"k": UNKNOWN_WIRE}))
    assert "create-replacement" in ops(plan(known, unknown))["a"]


def test_ignore_changes_keeps_the_old_value_so_a_new_trigger_neither_replaces_nor_updates():
    """The engine gives an ignored input its old value before the diff (processIgnoreChanges)."""
    before = program(command("a", "1", protect=True))
    assert plan(before, program(command("a", "2", protect=True, ignoreChanges=["triggers"]))) == []
    assert refused(plan(before, program(command("a", "2", protect=True)))) == ["a"]
    with pytest.raises(UnmodeledOption, match="nested path"):
        plan(before, program(command("a", "2", ignoreChanges=["triggers[0]"])))


def test_replace_with_is_followed_in_registration_order_but_not_through_a_cascade():
    """A delete-before-replace of `a` deletes first what names *a* in replace_with (`b`), not what
    names `b` (`c`): step_generator.go findDependentCascadeReplacements looks at the root only.
    `c` is replaced later, when it registers and sees `b` being replaced (`diff`)."""
    before = program(command("a", "1", deleteBeforeReplace=True),
                     command("b", "1", replaceWith=[urn("a")]),
                     command("c", "1", replaceWith=[urn("b")]))
    after = program(command("a", "2", deleteBeforeReplace=True),
                    command("b", "1", replaceWith=[urn("a")]),
                    command("c", "1", replaceWith=[urn("b")]))
    steps = [str(s) for s in plan(before, after)]
    assert steps.index("delete-replaced b (cannot outlive a)") < \
        steps.index("delete-replaced a (triggers changed)")
    assert "delete-replaced c (cannot outlive a)" not in steps
    assert ops(plan(before, after))["c"] == "create-replacement,delete-replaced"


def test_protect_refuses_a_replacement_and_a_delete_but_not_a_first_protect():
    before = program(command("a", "1", protect=True), command("gone", "1", protect=True),
                     command("new-protect", "1"))
    after = program(command("a", "2", protect=True), command("new-protect", "2", protect=True))
    steps = plan(before, after)
    assert refused(steps) == ["a", "gone"]
    assert ops(steps)["new-protect"] == "create-replacement,delete-replaced", \
        "protect only refuses what was already protected (step_generator.go: new.Protect && old.Protect)"
    assert refused(plan(before, after, ignore_protect=True)) == []


def test_a_protected_resource_in_a_delete_first_cascade_stops_the_planning():
    """In preview the engine goes on after a refused root, into its cascade, and bails at the
    first protected dependent (step_generator.go): nothing after it is planned."""
    before = program(command("root", "1", deleteBeforeReplace=True, protect=True),
                     command("on-it", "1", deletedWith=urn("root"), protect=True),
                     command("later", "1"))
    after = program(command("root", "2", deleteBeforeReplace=True, protect=True),
                    command("on-it", "1", deletedWith=urn("root"), protect=True),
                    command("later", "2"))
    steps = plan(before, after)
    assert refused(steps) == ["root", "on-it"]
    assert stopped(steps) and "later" not in ops(steps)


def test_adding_a_cluster_identifier_is_not_a_replacement():
    def provider(name: str, **inputs) -> Registration:
        return Registration(type="pulumi:providers:kubernetes", name=name, urn=f"{STACK}::p::{name}",
                            parent="", provider="", dependencies=[], custom=True, inputs=inputs,
                            wire={}, options={})
    assert ops(plan(program(provider("k", kubeconfig="a")),
                    program(provider("k", kubeconfig="a", clusterIdentifier="x")))) == {"k": "update"}
    assert ops(plan(program(provider("k", clusterIdentifier="x")),
                    program(provider("k", clusterIdentifier="y")))) == {
        "k": "create-replacement,delete-replaced"}
