"""Reading a stack's state through the Pulumi CLI (kamaji_hami_platform/tools/stack_state.py)."""

from __future__ import annotations

import sys

import pytest

from kamaji_hami_platform.tools import stack_state

pytestmark = pytest.mark.unit


def test_an_unknown_schema_version_is_refused():
    with pytest.raises(stack_state.Refused, match="99"):
        stack_state.deployment_of({"version": 99, "deployment": {"resources": []}})


def test_pending_operations_count_as_resources():
    deployment = {"resources": [{"urn": "a"}], "pending_operations": [{"resource": {"urn": "b"}}]}
    assert [r["urn"] for r in stack_state.state_resources(deployment)] == ["a", "b"]


def test_stderr_tail_keeps_the_last_lines_on_one_line():
    text = "\n".join(f"line {i}" for i in range(20)) + "\n\n"
    tail = stack_state.stderr_tail(text, lines=2)
    assert tail.count("line") == 2 and "line 19" in tail and "\n" not in tail


def test_a_missing_tool_or_a_hang_is_a_refusal():
    with pytest.raises(stack_state.Refused, match="not installed"):
        stack_state.run(["no-such-tool-here"])
    with pytest.raises(stack_state.Refused, match="did not finish"):
        stack_state.run([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.2)


def test_names_are_the_last_urn_segment():
    assert stack_state.resource_name("urn:pulumi:dev::p::a$b::tenant-a-worker-0") == "tenant-a-worker-0"
