"""Run the policy pack the way the Pulumi engine does, on inputs in the real engine's shape.

Policy inputs use the shape of the recording in tests/fixtures/real-preview/ (made with
the real engine and providers, see its README): `{"resource": [...], "stack": [...]}`,
each entry `{type, name, urn, props}`, an unknown value as the string "<unknown>". The
`resource` part is what resource policies receive (inputs), the `stack` part what stack
policies receive (outputs). An entry may also carry `opts` (`additionalSecretOutputs`,
`protect`) and `parent` (a URN): the engine sends both, the recording did not keep them.

`analyze` feeds such inputs to pulumi-policy's own analyzer servicer (pulumi-policy 1.21,
the version policy/requirements.txt pins), as the engine's gRPC calls would: `Analyze` once
per `resource` entry, then `AnalyzeStack` with the `stack` entries. So the pack's real
wrapping, pulumi-policy's deserialization and its unknown-checking proxy all run.
"""

from __future__ import annotations

import copy
import importlib
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import json_format, struct_pb2

from tests.harness import ROOT, Program

FIXTURES = ROOT / "tests" / "fixtures" / "real-preview"
POLICY_DIR = ROOT / "policy"
RECORDED_UNKNOWN = "<unknown>"
# The engine's URNs have no root-stack segment for top-level resources; the mocks add one.
_MOCK_ROOT = "pulumi:pulumi:Stack$"


@dataclass(frozen=True)
class Finding:
    """One diagnostic of the pack: which policy, on which resource, what it says."""

    policy: str
    urn: str
    message: str
    mandatory: bool

    @property
    def resource(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


def load_pack() -> Any:
    """policy/pack.py as the CLI loads it: the pack's folder on sys.path."""
    sys.path.insert(0, str(POLICY_DIR))
    try:
        return importlib.import_module("pack")
    finally:
        sys.path.remove(str(POLICY_DIR))


def load_recording(name: str = "dev-fresh-policy-inputs.json") -> dict[str, list[dict[str, Any]]]:
    return json.loads((FIXTURES / name).read_text())


def engine_urn(urn: str) -> str:
    """A mock URN in the form the engine gives it."""
    return urn.replace("::" + _MOCK_ROOT, "::")


def _options_of(program: Program) -> dict[str, dict[str, Any]]:
    def extra(reg: Any) -> dict[str, Any]:
        opts = {"additionalSecretOutputs": reg.options.get("additionalSecretOutputs", []),
                "protect": bool(reg.options.get("protect"))}
        return {"opts": opts, "parent": engine_urn(reg.parent) if reg.parent else ""}

    return {engine_urn(reg.urn): extra(reg) for reg in program.registrations if not reg.options.get("read")}


def with_program_options(fixture: dict[str, list[dict[str, Any]]], program: Program) -> dict:
    """The recording with the options and parents the program registers for the same URNs
    (the recording kept only props). A recorded resource the program no longer has keeps none."""
    extra = _options_of(program)
    merged = copy.deepcopy(fixture)
    for entry in (*merged["resource"], *merged["stack"]):
        entry.update(copy.deepcopy(extra.get(entry["urn"], {})))
    return merged


def fixture_from_program(program: Program, fresh: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Policy inputs in the recording's shape, inputs for `resource`, outputs for `stack`.

    `fresh=False`: every output known (a preview of a deployed stack, or `pulumi up`'s own
    stack analysis). `fresh=True`, for a program run with `PlatformMocks(fresh_preview=True)`
    in preview: a fresh stack's preview as the real engine's recording shows it, every
    `kubernetes:*` resource with empty outputs, commands echoing their inputs.
    """
    extra = _options_of(program)
    entries = [reg for reg in program.registrations if not reg.options.get("read")]

    def outputs(reg: Any) -> dict[str, Any]:
        if not reg.custom or (fresh and reg.type.startswith("kubernetes:")):
            return {}
        return reg.outputs

    def entry(reg: Any, props: dict[str, Any]) -> dict[str, Any]:
        urn = engine_urn(reg.urn)
        return {"type": reg.type, "name": reg.name, "urn": urn, "props": copy.deepcopy(props), **extra[urn]}

    return {"resource": [entry(reg, reg.inputs) for reg in entries],
            "stack": [entry(reg, outputs(reg)) for reg in entries]}


def edit(fixture: dict, name: str, change: Callable[[dict[str, Any]], None],
         parts: Iterable[str] = ("resource", "stack")) -> dict:
    """A copy of the fixture with `change` applied to the entries of resource `name`."""
    edited = copy.deepcopy(fixture)
    matched = [e for part in parts for e in edited[part] if e["name"] == name]
    assert matched, f"no resource named {name!r} in the fixture"
    for entry in matched:
        change(entry)
    return edited


def without(fixture: dict, name: str) -> dict:
    """A copy of the fixture without resource `name` (as if the program never registered it)."""
    assert any(e["name"] == name for e in fixture["resource"]), name
    return {part: [e for e in entries if e["name"] != name] for part, entries in fixture.items()}


def _wire(value: Any) -> Any:
    """The recording's "<unknown>" as the engine's unknown sentinel."""
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    if value == RECORDED_UNKNOWN:
        return UNKNOWN_STRING_VALUE
    if isinstance(value, dict):
        return {key: _wire(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_wire(item) for item in value]
    return value


def _struct(props: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    json_format.ParseDict(_wire(props), struct)
    return struct


def _options(entry: dict[str, Any]) -> Any:
    from pulumi.runtime.proto import analyzer_pb2

    opts = entry.get("opts", {})
    return analyzer_pb2.AnalyzerResourceOptions(
        protect=bool(opts.get("protect")),
        additionalSecretOutputs=list(opts.get("additionalSecretOutputs", [])),
        parent=entry.get("parent", ""))


def analyze(fixture: dict[str, list[dict[str, Any]]], resource_part: bool = True) -> list[Finding]:
    """Every finding of the pack on these inputs. `resource_part=False` skips the resource
    policies (as when a user disables them), so stack policies see only the stack part."""
    from pulumi.runtime.proto import analyzer_pb2
    from pulumi_policy import EnforcementLevel
    from pulumi_policy.policy import _PolicyAnalyzerServicer

    pack = load_pack()
    servicer = _PolicyAnalyzerServicer(pack.PACK_NAME, "0.0.1", pack.policies(), EnforcementLevel.MANDATORY)
    findings: list[Finding] = []

    def collect(response: Any, default_urn: str) -> None:
        for d in response.diagnostics:
            mandatory = d.enforcementLevel == analyzer_pb2.MANDATORY
            if not mandatory:
                raise AssertionError(f"policy {d.policyName} did not run: {d.message}")
            findings.append(Finding(d.policyName, d.urn or default_urn, d.message, mandatory))

    if resource_part:
        for entry in fixture["resource"]:
            request = analyzer_pb2.AnalyzeRequest(type=entry["type"], name=entry["name"], urn=entry["urn"],
                                                  properties=_struct(entry["props"]), options=_options(entry))
            collect(servicer.Analyze(request, None), entry["urn"])
    stack = analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(type=e["type"], name=e["name"], urn=e["urn"],
                                      properties=_struct(e["props"]), options=_options(e),
                                      parent=e.get("parent", ""))
        for e in fixture["stack"]])
    collect(servicer.AnalyzeStack(stack, None), "")
    return findings


def policy_and_resource(findings: Iterable[Finding]) -> set[tuple[str, str]]:
    return {(f.policy, f.resource) for f in findings}


def recorded_fixture_path() -> Path:
    return FIXTURES / "dev-fresh-policy-inputs.json"
