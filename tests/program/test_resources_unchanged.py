"""The dev and production stacks register exactly the resources recorded in
tests/fixtures/stack-resources/ (URNs, inputs, options): a refactoring changes none, and a change
made on purpose is reviewed as a diff of the record (`python -m tests.stack_resources`)."""

from __future__ import annotations

import pytest

from tests.stack_resources import RECORDS, record

pytestmark = pytest.mark.unit


def _first_difference(recorded: str, now: str) -> str:
    for number, (old, new) in enumerate(zip(recorded.splitlines(), now.splitlines(), strict=False), 1):
        if old != new:
            return f"line {number}: recorded {old.strip()!r}, now {new.strip()!r}"
    return "a different number of lines"


@pytest.mark.parametrize("stack", ["dev", "production"])
def test_the_stack_registers_what_was_recorded(stack, dev_program, production_program):
    program = dev_program if stack == "dev" else production_program
    recorded = (RECORDS / f"{stack}.json").read_text()
    now = record(program)
    assert now == recorded, (f"the {stack} stack's resources changed ({_first_difference(recorded, now)}); "
                             "if on purpose: python -m tests.stack_resources, and an upgrade note")
