"""The structure replay: the platform's resource tree registered again from a recording
(`replay.json` next to this file, written by `python -m benchmarks.engine_preview`), with none of
the platform's code: the same component types and names under the same parents, the same typed
resources (the pulumi_kubernetes and pulumi_command classes the platform used, `.get` reads
included) with the same inputs and options, and the same dependencies.

Values that the program computed from other resources' outputs are Outputs of the replayed
resources here too, so the SDK and the engine see the same property dependencies and the same
unknowns: a value that was unknown in a fresh preview is derived from what is unknown of the
resources it depended on (a command's stdout, anything else's id: unknown in a preview as theirs
were), a command's id is that command's id, and any other value that carried dependencies is made
after their URNs (known). What an unknown value would become in an update is not recorded: this
program is for previews only.

Run by the engine as `__main__.py` of a project of its own (or under the unit suite's mocks); it
imports pulumi, pulumi_kubernetes and pulumi_command only, as the recording names them.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pulumi

DATA = Path(__file__).resolve().parent / "replay.json"
TAG = "$replay"
# The organization a file backend reports (pulumi pkg/backend/diy): a StackReference there is named
# by the stack alone.
DIY_ORGANIZATION = "organization"


def own_stack_name() -> str:
    """This stack, as a StackReference to itself names it (what the program passes)."""
    organization = pulumi.get_organization()
    if organization == DIY_ORGANIZATION:
        return pulumi.get_stack()
    return f"{organization}/{pulumi.get_project()}/{pulumi.get_stack()}"


class Component(pulumi.ComponentResource):
    """A component of a recorded type. A subclass, as the platform's components are: the SDK then
    finds a third `__init__` on the stack and sends a stack trace, as it does for theirs."""

    def __init__(self, type_: str, name: str, props: dict[str, Any] | None,
                 opts: pulumi.ResourceOptions) -> None:
        super().__init__(type_, name, props, opts)


def locate(path: str) -> Any:
    """`module:Qualified.Name` as recorded."""
    module, _, qualified = path.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualified.split("."):
        found = getattr(found, part)
    return found


class Replay:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.resources: dict[int, pulumi.Resource] = {}

    def resource(self, index: int) -> Any:
        return self.resources[index]

    def value(self, node: Any) -> Any:
        """A recorded value with its Outputs made again (see the module's docstring)."""
        if isinstance(node, list):
            return [self.value(item) for item in node]
        if not isinstance(node, dict):
            return node
        tag = node.get(TAG)
        if tag is None:
            return {key: self.value(item) for key, item in node.items()}
        if tag == "secret":
            return pulumi.Output.secret(self.value(node["value"]))
        if tag == "unknown":
            sources = [getattr(self.resource(i), output) for i, output in node["from"]]
            return pulumi.Output.all(*sources).apply(lambda _: None)
        if tag == "id":
            return self.resource(node["index"]).id
        if tag == "after":
            value = self.value(node["value"])
            return pulumi.Output.all(*[self.resource(i).urn for i in node["from"]]).apply(lambda _: value)
        if tag == "ref":
            return self.resource(node["index"])
        if tag == "own_stack":
            return own_stack_name()
        raise ValueError(f"unknown replay node {tag!r}")

    def alias(self, alias: Any) -> Any:
        if isinstance(alias, str):
            return alias
        fields = {key: alias[key] for key in ("name", "type_", "stack", "project") if key in alias}
        if "parent" in alias:
            fields["parent"] = None if alias["parent"] is None else self.resource(alias["parent"])
        return pulumi.Alias(**fields)

    def options(self, recorded: dict[str, Any]) -> pulumi.ResourceOptions:
        options: dict[str, Any] = {key: recorded[key] for key in (
            "protect", "delete_before_replace", "retain_on_delete", "ignore_changes", "replace_on_changes",
            "additional_secret_outputs", "hide_diffs", "replacement_trigger") if key in recorded}
        for key in ("parent", "provider", "deleted_with"):
            if key in recorded:
                options[key] = self.resource(recorded[key])
        for key in ("depends_on", "replace_with"):
            if key in recorded:
                options[key] = [self.resource(i) for i in recorded[key]]
        if "providers" in recorded:
            options["providers"] = {package: self.resource(i) for package, i in recorded["providers"].items()}
        if "custom_timeouts" in recorded:
            options["custom_timeouts"] = pulumi.CustomTimeouts(**recorded["custom_timeouts"])
        if "aliases" in recorded:
            options["aliases"] = [self.alias(alias) for alias in recorded["aliases"]]
        return pulumi.ResourceOptions(**options)

    def register(self, spec: dict[str, Any]) -> pulumi.Resource:
        opts = self.options(spec["options"])
        kind, name = spec["kind"], spec["name"]
        if kind == "component":
            props = self.value(spec.get("props") or {})
            return Component(spec["type"], name, props or None, opts)
        if kind == "stack_reference":
            return pulumi.StackReference(name, stack_name=self.value(spec["stack_name"]), opts=opts)
        cls = locate(spec["class"])
        args = {key: self.value(node) for key, node in spec["args"].items()}
        if kind == "read":
            return cls.get(name, id=self.value(spec["id"]), opts=opts, **args)
        return cls(name, opts=opts, **args)

    def run(self) -> None:
        for event in self.data["events"]:
            if event["op"] == "resource":
                self.resources[event["index"]] = self.register(event)
            elif event["op"] == "outputs":
                self.resource(event["index"]).register_outputs(
                    {key: self.value(node) for key, node in event["outputs"].items()})
            else:  # the stack's outputs
                for key, node in event["outputs"].items():
                    pulumi.export(key, self.value(node))


Replay(json.loads(DATA.read_text())).run()
