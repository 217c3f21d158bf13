"""What a fresh stack's `pulumi preview` costs with the real engine: the program against a replay of
its own resource tree without its code (issue 37, item 6).

Three programs, each previewed by the real engine (toolchain/pulumi/build.sh: the CLI, the Python
language host, pulumi-command and pulumi-kubernetes) in a fresh stack of its own, without the policy
pack, with the same stack config of 40 tenants (benchmarks.scale.tenant_config):

- *program*: the project's `__main__.py`, as shipped.
- *structure replay* (benchmarks/structure_replay_program.py): the same component tree (types,
  names, parents), the same typed resources (the pulumi_kubernetes and pulumi_command classes the
  program used, `.get` reads, providers) with the same inputs, options and dependencies, and the
  same component and stack outputs, read from a recording; no code of the platform's. Values the
  program derived from other resources' outputs are Outputs of the replayed resources (see that
  file), so the engine sees the same property dependencies and the same unknowns.
- *flat replay* (benchmarks/flat_replay_program.py): the same custom resources as generic
  `pulumi.CustomResource`s with the same wire inputs and providers, and nothing else.

The recording is one run of the program under the unit suite's mocks (tests/harness.run_program)
answering as the engine does in a fresh preview (`_preview_mocks`: no command has printed, no
read has read, no Kubernetes object or provider has an id yet), with the SDK's calls that make
resources, register outputs and resolve `depends_on` observed: the class and options of every
resource as the program passed them. Before anything is timed, the structure replay is run under
the same mocks and must send every request the program sent (type, name, URN, parent, provider,
dependencies, property dependencies, wire inputs, options, outputs; not the stack traces), and
each program is previewed once by the engine: the structure replay's plan must be the program's
step for step (URNs, operations, inputs, options, dependencies), the flat replay's must hold the
same custom resources with the same inputs.

Timing: whole `pulumi preview` processes (CLI start to exit, language host, providers and the
program's process included), started in rounds, each round one run of each program in an order
that rotates from round to round, so each pair of programs is compared within a round (a paired
ratio per round, against the machine's drift: it is shared with other work). Reported: the median,
min and max of the wall seconds, of the CPU seconds (user + system of the preview and every process
it waited for) and of each pair's per-round ratio. The target: program / structure replay <= 1.15
(median wall ratio), the platform's own work over the engine's for the same tree.

    python -m benchmarks.engine_preview [--rounds 8] [--tenants 40] [--work DIR] [--json FILE]

The work folder (benchmarks/results/engine-preview, kept out of git) holds the engine's home and
backend, the project copy, both replays with their data (replay.json, flat.json: the recording,
about 3 MB each at 40 tenants) and report.json; exit status 1 when the target is missed, 2 when a
replay does not reproduce the program.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
STRUCTURE_PROGRAM = HERE / "structure_replay_program.py"
FLAT_PROGRAM = HERE / "flat_replay_program.py"
DEFAULT_WORK = HERE / "results" / "engine-preview"
DEFAULT_TENANTS = 40
DEFAULT_ROUNDS = 8
TARGET = 1.15
PROJECT = "kamaji-hami-platform"
# One stack name per program, of one length (a URN carries it).
STACKS = {"program": "program", "structure": "structur", "flat": "flatrepl"}
MODES = tuple(STACKS)
PAIRS = (("program", "structure"), ("structure", "flat"), ("program", "flat"))
PREVIEW_TIMEOUT = 1800
TAG = "$replay"
PLATFORM_PACKAGE = "kamaji_hami_platform"
COMMAND = "command:local:Command"
# The SDK's wire signatures (pulumi sdk/python/lib/pulumi/runtime/rpc.py).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
# Options a recording carries; any other one set by the program is refused (the replay would
# drop it).
REPLAYED_FLAGS = ("protect", "delete_before_replace", "retain_on_delete")
REPLAYED_LISTS = ("ignore_changes", "replace_on_changes", "additional_secret_outputs", "hide_diffs")
NOT_REPLAYED = ("transformations", "transforms", "hooks", "import_", "urn",
                "state_migrations", "env_var_mappings", "plugin_download_url")


# --- the recording --------------------------------------------------------------------------------

@dataclass
class _Made:
    """One resource as the program made it: the object, and what Resource.__init__ passed on."""

    res: Any
    type: str
    name: str
    custom: bool
    props: Any
    opts: Any
    typ: Any


@dataclass
class _Observed:
    events: list[tuple[str, Any]] = field(default_factory=list)
    depends_on: dict[int, list[Any]] = field(default_factory=dict)
    outputs_by_urn: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)


# What a request carries besides what tests/harness.py records: stack traces and source positions
# left out (where the replay's code makes its resources is its own).
NOT_COMPARED_FIELDS = {"stackTrace", "sourcePosition", "parentStackTraceHandle", "stackTraceHandle"}


def _request_fields(request: Any) -> dict[str, Any]:
    from google.protobuf import json_format

    fields = json_format.MessageToDict(request)
    for key in NOT_COMPARED_FIELDS:
        fields.pop(key, None)
    fields["dependencies"] = sorted(fields.get("dependencies", []))
    for dependencies in fields.get("propertyDependencies", {}).values():
        dependencies["urns"] = sorted(dependencies.get("urns", []))
    return fields


@contextmanager
def _observing() -> Iterator[_Observed]:
    """The SDK's calls that make resources (pulumi/resource.py calls `register_resource` and
    `read_resource` once Resource.__init__ has settled the options), register outputs and resolve
    `depends_on` (before expanding components), observed and passed on unchanged; and the
    monitor's RegisterResourceOutputs requests in wire form."""
    import pulumi.resource as sdk_resource
    import pulumi.runtime.resource as sdk_runtime_resource
    from google.protobuf import json_format
    from pulumi.runtime import _depends_on

    from tests import harness

    observed = _Observed()
    originals = (sdk_resource.register_resource, sdk_resource.read_resource,
                 sdk_resource.register_resource_outputs, sdk_runtime_resource._resolve_depends_on_urns,
                 harness.RecordingMonitor)

    def register_resource(res: Any, t: str, name: str, custom: bool, remote: bool, new_dependency: Any,
                          props: Any, opts: Any, typ: Any = None, *rest: Any) -> Any:
        if remote:
            raise NotImplementedError(f"{t} {name}: a remote component is not replayed")
        observed.events.append(("resource", _Made(res, t, name, custom, props, opts, typ)))
        return originals[0](res, t, name, custom, remote, new_dependency, props, opts, typ, *rest)

    def read_resource(res: Any, t: str, name: str, props: Any, opts: Any, typ: Any = None,
                      *rest: Any) -> Any:
        observed.events.append(("resource", _Made(res, t, name, True, props, opts, typ)))
        return originals[1](res, t, name, props, opts, typ, *rest)

    def register_resource_outputs(res: Any, outputs: Any) -> Any:
        observed.events.append(("outputs", (res, outputs)))
        return originals[2](res, outputs)

    async def resolve_depends_on_urns(depends_on: Any, from_resource: Any = None) -> set[str]:
        if from_resource is not None:
            observed.depends_on[id(from_resource)] = list(await _depends_on._resolve_depends_on(depends_on))
        return await originals[3](depends_on, from_resource)

    class Monitor(harness.RecordingMonitor):
        def RegisterResource(self, request: Any) -> Any:
            response = super().RegisterResource(request)
            observed.requests[response.urn] = _request_fields(request)
            return response

        def ReadResource(self, request: Any) -> Any:
            response = super().ReadResource(request)
            observed.requests[response.urn] = _request_fields(request)
            return response

        def RegisterResourceOutputs(self, request: Any) -> Any:
            observed.outputs_by_urn[request.urn] = json_format.MessageToDict(request.outputs)
            return super().RegisterResourceOutputs(request)

    sdk_resource.register_resource = register_resource
    sdk_resource.read_resource = read_resource
    sdk_resource.register_resource_outputs = register_resource_outputs
    sdk_runtime_resource._resolve_depends_on_urns = resolve_depends_on_urns
    harness.RecordingMonitor = Monitor
    try:
        yield observed
    finally:
        (sdk_resource.register_resource, sdk_resource.read_resource, sdk_resource.register_resource_outputs,
         sdk_runtime_resource._resolve_depends_on_urns, harness.RecordingMonitor) = originals


def _preview_mocks() -> Any:
    """The unit suite's mocks as the engine's fresh preview answers the program: commands have
    printed nothing and reads have read nothing (`fresh_preview`); a command has an id (the command
    provider makes one in a preview: name and random suffix), a Kubernetes object or provider to be
    created has none (the SDK makes its `id` unknown), as in the engine's plan."""
    import pulumi

    from tests.harness import PlatformMocks

    class PreviewMocks(PlatformMocks):
        def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
            resource_id, outputs = super().new_resource(args)
            if args.resource_id or args.typ == COMMAND:
                return resource_id, outputs
            return "", outputs

    return PreviewMocks(fresh_preview=True)


@dataclass
class Run:
    """One run under the mocks: the harness's registrations, and what was observed of the SDK."""

    program: Any
    observed: _Observed


def run_under_mocks(config: dict[str, Any], main: Path | None = None) -> Run:
    """`main` (the project's `__main__.py` by default) run once as a fresh preview under mocks."""
    from tests import harness

    with _observing() as observed:
        program = harness.run_program(config, preview=True, mocks=_preview_mocks(),
                                      **({"main": main} if main else {}))
    return Run(program, observed)


def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _json_args(cls: type) -> set[str]:
    """Arguments the class sends as JSON text (generated providers do so for every non-string
    setting: `pulumi.Output.from_input(x).apply(pulumi.runtime.to_json)`)."""
    source = inspect.getsource(cls._internal_init)  # type: ignore[attr-defined]
    return set(re.findall(r'__props__\.__dict__\["(\w+)"\] = pulumi\.Output\.from_input\(\w+\)'
                          r'\.apply\(pulumi\.runtime\.to_json\)', source))


class _Encoder:
    """Recorded wire values as the replay's nodes (benchmarks/structure_replay_program.py).

    Where a value came from, the recording does not say: its property dependencies say from which
    resources. An unknown value came from what is unknown of them in a fresh preview: a command's
    stdout, anything else's id (see `_preview_mocks`). A known value equal to a dependency's id
    (a command's, the one id known in a preview) is that id; any other known value is made after
    its dependencies' URNs, which carries the dependencies without making it unknown."""

    def __init__(self, index_by_urn: dict[str, int], commands: set[int], ids: dict[str, int]) -> None:
        self.index_by_urn = index_by_urn
        self.commands = commands
        self.ids = ids

    def _unknown_source(self, index: int) -> list[Any]:
        return [index, "stdout" if index in self.commands else "id"]

    def node(self, value: Any, dependencies: list[int]) -> Any:
        if value == UNKNOWN:
            if not dependencies:
                raise ValueError("an unknown value with no resource it came from")
            return {TAG: "unknown", "from": [self._unknown_source(i) for i in dependencies]}
        if isinstance(value, str) and self.ids.get(value) in dependencies:
            return {TAG: "id", "index": self.ids[value]}
        if isinstance(value, list):
            return [self.node(item, dependencies) for item in value]
        if not isinstance(value, dict):
            return value
        if TAG in value:
            raise ValueError(f"a recorded value holds the replay's own key {TAG!r}")
        signature = value.get(SIG_KEY)
        if signature == SECRET_SIG:
            return {TAG: "secret", "value": self.node(value.get("value"), dependencies)}
        if signature == RESOURCE_SIG:
            return {TAG: "ref", "index": self.index_by_urn[value["urn"]]}
        if signature is not None:
            raise ValueError(f"a wire value the replay does not make: {signature}")
        return {key: self.node(item, dependencies) for key, item in value.items()}

    def value(self, value: Any, dependencies: list[int]) -> Any:
        """A top-level value, with every one of its dependencies carried by some Output in it."""
        encoded = self.node(value, dependencies)
        missing = [i for i in dependencies if i not in _carried(encoded)]
        if missing:
            return {TAG: "after", "from": missing, "value": encoded}
        return encoded


def _carried(node: Any) -> set[int]:
    """The resources whose Outputs a node is made of."""
    if isinstance(node, list):
        return {index for item in node for index in _carried(item)}
    if not isinstance(node, dict):
        return set()
    tag = node.get(TAG)
    if tag == "unknown":
        return {index for index, _ in node["from"]}
    if tag in ("id", "ref"):
        return {node["index"]}
    return {index for item in node.values() for index in _carried(item)}


def _custom_resources(resources: Any) -> list[Any]:
    """Resources with components replaced by their custom descendants (as the SDK expands them)."""
    import pulumi

    found: list[Any] = []
    pending = list(resources)
    seen: set[int] = set()
    while pending:
        res = pending.pop(0)
        if id(res) in seen:
            continue
        seen.add(id(res))
        if isinstance(res, pulumi.ComponentResource):
            pending.extend(res._childResources)
        else:
            found.append(res)
    return found


def _output_resources(value: Any) -> list[Any]:
    import pulumi
    from pulumi.runtime.sync_await import _sync_await

    return list(_sync_await(pulumi.Output.from_input(value).resources()))


def _plain(value: Any) -> bool:
    """A value of strings, numbers, booleans, lists and dicts only (no Output, no resource)."""
    if isinstance(value, dict):
        return all(isinstance(key, str) and _plain(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_plain(item) for item in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _options(made: _Made, observed: _Observed, index_of: Callable[[Any], int]) -> dict[str, Any]:
    """The options the program passed (as Resource.__init__ settled them: a parent's protect and
    providers inherited), by resource index."""
    import pulumi

    opts = made.opts
    for name in NOT_REPLAYED:
        value = getattr(opts, name, None)
        if name == "hooks" and value is not None:  # a binding, set or not
            value = [hook for hooks in vars(value).values() if isinstance(hooks, list) for hook in hooks]
        if value:
            raise NotImplementedError(f"{made.type} {made.name}: option {name} is not replayed")
    options: dict[str, Any] = {}
    if opts.parent is not None:
        options["parent"] = index_of(opts.parent)
    if made.custom and opts.provider is not None:
        options["provider"] = index_of(opts.provider)
    if not made.custom and opts.providers:
        providers = opts.providers.values() if isinstance(opts.providers, dict) else opts.providers
        options["providers"] = {provider.package: index_of(provider) for provider in providers}
    if id(made.res) in observed.depends_on:
        options["depends_on"] = [index_of(res) for res in observed.depends_on[id(made.res)]]
    for name in REPLAYED_FLAGS:
        if getattr(opts, name) is not None:
            options[name] = getattr(opts, name)
    for name in REPLAYED_LISTS:
        if getattr(opts, name):
            options[name] = list(getattr(opts, name))
    if opts.custom_timeouts is not None:
        timeouts = opts.custom_timeouts
        options["custom_timeouts"] = {key: getattr(timeouts, key) for key in ("create", "update", "delete")
                                      if getattr(timeouts, key)}
    if opts.deleted_with is not None:
        options["deleted_with"] = index_of(opts.deleted_with)
    if opts.replace_with:
        options["replace_with"] = [index_of(res) for res in opts.replace_with if res is not None]
    if opts.replacement_trigger is not None:
        if not _plain(opts.replacement_trigger):
            raise NotImplementedError(f"{made.type} {made.name}: a replacement_trigger with Outputs is not "
                                      "replayed")
        options["replacement_trigger"] = opts.replacement_trigger
    if opts.aliases:
        aliases: list[Any] = []
        for alias in opts.aliases:
            if isinstance(alias, str):
                aliases.append(alias)
                continue
            if not isinstance(alias, pulumi.Alias):
                raise NotImplementedError(f"{made.type} {made.name}: alias {alias!r} is not replayed")
            fields = {key: getattr(alias, key) for key in ("name", "type_", "stack", "project")
                      if getattr(alias, key) is not None and getattr(alias, key) is not ...}
            if alias.parent is not ...:
                fields["parent"] = None if alias.parent is None else index_of(alias.parent)
            aliases.append(fields)
        options["aliases"] = aliases
    # What the typed class adds itself (it adds it again in the replay).
    for name, added in (_class_added_options(type(made.res)) if made.custom else {}).items():
        given = options.get(name, [])
        if added and given[-len(added):] == added:
            options[name] = given[:-len(added)]
        if not options.get(name):
            options.pop(name, None)
    return options


def _class_added_options(cls: type) -> dict[str, list[Any]]:
    """The option lists a generated resource class merges into every instance's options
    (`pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=...)])`, `replace_on_changes=[...]`,
    `additional_secret_outputs=[...]` in its `_internal_init`), as the recording writes them."""
    internal_init = getattr(cls, "_internal_init", None)
    if internal_init is None:
        return {}
    added: dict[str, list[Any]] = {}
    tree = ast.parse(textwrap.dedent(inspect.getsource(internal_init)))
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "ResourceOptions"):
            continue
        for keyword in call.keywords:
            if keyword.arg in ("aliases", *REPLAYED_LISTS) and isinstance(keyword.value, ast.List):
                added[keyword.arg] = [
                    {k.arg: ast.literal_eval(k.value) for k in item.keywords}
                    if isinstance(item, ast.Call) else ast.literal_eval(item) for item in keyword.value.elts]
    return added


def structure_recording(run: Run) -> dict[str, Any]:
    """The structure replay's data (benchmarks/structure_replay_program.py) from one run."""
    import pulumi
    from pulumi import _types
    from pulumi.runtime.stack import Stack
    from pulumi.runtime.sync_await import _sync_await

    made = [item for op, item in run.observed.events if op == "resource"]
    urns = [_sync_await(item.res.urn.future()) for item in made]
    index_by_id = {id(item.res): index for index, item in enumerate(made)}
    index_by_urn = {urn: index for index, urn in enumerate(urns)}

    def index_of(res: Any) -> int:
        return index_by_id[id(res)]

    commands = {index for index, item in enumerate(made) if item.type == COMMAND}
    ids = {_sync_await(made[index].res.id.future()): index for index in commands}
    encoder = _Encoder(index_by_urn, commands, ids)
    registrations = run.program.by_urn
    events: list[dict[str, Any]] = []
    for op, item in run.observed.events:
        if op == "outputs":
            res, outputs = item
            urn = _sync_await(res.urn.future())
            wire = run.observed.outputs_by_urn.get(urn, {})
            encoded = {key: encoder.value(value, [index_of(r) for r in _custom_resources(
                _output_resources(outputs.get(key)))]) for key, value in wire.items()}
            if isinstance(res, Stack):
                events.append({"op": "exports", "outputs": encoded})
            else:
                events.append({"op": "outputs", "index": index_of(res), "outputs": encoded})
            continue
        if isinstance(item.res, Stack):
            continue
        index = index_of(item.res)
        registration = registrations[urns[index]]
        cls = type(item.res)
        if cls.__module__.split(".")[0] == PLATFORM_PACKAGE and item.custom:
            raise NotImplementedError(f"{item.type} {item.name}: a custom resource class of the platform's")
        spec: dict[str, Any] = {"op": "resource", "index": index, "type": item.type, "name": item.name,
                                "options": _options(item, run.observed, index_of)}
        events.append(spec)
        if not item.custom:
            spec["kind"] = "component"
            if registration.wire:
                spec["props"] = {key: encoder.value(value, []) for key, value in registration.wire.items()}
            continue
        if isinstance(item.res, pulumi.StackReference):
            if registration.options.get("id") != _own_stack_name_under_mocks():
                raise NotImplementedError(f"{item.name}: a StackReference to another stack")
            spec.update(kind="stack_reference", stack_name={TAG: "own_stack"})
            continue
        spec["class"] = _class_path(cls)
        dependencies = registration.options.get("propertyDependencies", {})
        if item.typ is not None and _types.is_input_type(item.typ):
            names = _types.input_type_py_to_pulumi_names(item.typ)
        else:
            names = {key: item.res.translate_input_property(key) for key in item.props}
        as_json = _json_args(cls) if issubclass(cls, pulumi.ProviderResource) else set()
        args: dict[str, Any] = {}
        for python_name in item.props:
            wire_name = names.get(python_name, python_name)
            if wire_name not in registration.wire:
                continue
            value = registration.wire[wire_name]
            if python_name in as_json and isinstance(value, str) and value != UNKNOWN:
                value = json.loads(value)
            args[python_name] = encoder.value(value, [index_by_urn[urn] for urn in
                                                      dependencies.get(wire_name, [])])
        missing = set(registration.wire) - {names.get(key, key) for key in args}
        if missing:
            raise NotImplementedError(f"{item.type} {item.name}: inputs {sorted(missing)} not replayed")
        if item.opts.id is not None:
            spec["kind"] = "read"
            spec["id"] = encoder.value(registration.options["id"], [index_of(r) for r in _custom_resources(
                _output_resources(item.opts.id))])
            spec["args"] = {}
        else:
            spec["kind"] = "custom"
            spec["args"] = args
    return {"format": 1, "events": events}


def _own_stack_name_under_mocks() -> str:
    import pulumi

    organization = pulumi.get_organization()
    if organization == "organization":
        return pulumi.get_stack()
    return f"{organization}/{pulumi.get_project()}/{pulumi.get_stack()}"


def flat_recording(run: Run) -> dict[str, Any]:
    """The flat replay's data (benchmarks/flat_replay_program.py): every custom resource with its
    wire inputs, and the explicit providers that the resources name."""
    providers: list[dict[str, Any]] = []
    provider_index: dict[str, int] = {}
    resources: list[dict[str, Any]] = []
    for registration in run.program.registrations:
        if not registration.custom:
            continue
        if registration.type.startswith("pulumi:providers:"):
            provider_index[registration.urn] = len(providers)
            providers.append({"package": registration.type.removeprefix("pulumi:providers:"),
                              "name": registration.name, "inputs": registration.wire})
            continue
        if json.dumps(registration.wire).count(RESOURCE_SIG):
            raise NotImplementedError(f"{registration.name}: a resource reference in a flat replay")
        provider = registration.provider.rsplit("::", 1)[0] if registration.provider else ""
        resources.append({"type": registration.type, "name": registration.name, "inputs": registration.wire,
                          "provider": provider_index.get(provider),
                          "id": registration.options.get("id") if registration.options.get("read") else None})
    return {"format": 1, "providers": providers, "resources": resources}


def record(tenants: int) -> tuple[Run, dict[str, Any], dict[str, Any]]:
    """The program at `tenants` tenants under the preview mocks, and both replays' data."""
    from benchmarks.scale import tenant_config

    run = run_under_mocks(tenant_config(tenants))
    return run, structure_recording(run), flat_recording(run)


def write_program(folder: Path, program: Path, data_name: str, data: dict[str, Any]) -> Path:
    """A project folder of a replay: Pulumi.yaml (this project's name, so the URNs are the
    program's; its virtualenv), `__main__.py` and the data file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Pulumi.yaml").write_text(
        f"name: {PROJECT}\nruntime:\n  name: python\n  options:\n    toolchain: pip\n"
        f"    virtualenv: {ROOT / '.venv'}\n")
    shutil.copyfile(program, folder / "__main__.py")
    (folder / data_name).write_text(json.dumps(data))
    return folder


def write_replays(folder: Path, structure: dict[str, Any], flat: dict[str, Any]) -> dict[str, Path]:
    return {"structure": write_program(folder / "structure", STRUCTURE_PROGRAM, "replay.json", structure),
            "flat": write_program(folder / "flat", FLAT_PROGRAM, "flat.json", flat)}


# --- checks ----------------------------------------------------------------------------------------

COMPARED = ("type", "name", "parent", "provider", "custom", "wire")


def differences(program: Run, replay: Run) -> list[str]:
    """Where the replay's registrations (and registered outputs) differ from the program's."""
    found: list[str] = []
    theirs, ours = program.program.by_urn, replay.program.by_urn
    for urn in sorted(set(theirs) ^ set(ours)):
        found.append(f"{urn}: {'missing from the replay' if urn in theirs else 'only in the replay'}")
    for urn in sorted(set(theirs) & set(ours)):
        a, b = theirs[urn], ours[urn]
        for name in COMPARED:
            if getattr(a, name) != getattr(b, name):
                found.append(f"{urn}: {name} {getattr(a, name)!r} != {getattr(b, name)!r}")
        if sorted(a.dependencies) != sorted(b.dependencies):
            found.append(f"{urn}: dependencies {sorted(a.dependencies)} != {sorted(b.dependencies)}")
        options_a, options_b = _comparable(a.options), _comparable(b.options)
        for key in sorted(set(options_a) | set(options_b)):
            if options_a.get(key) != options_b.get(key):
                found.append(f"{urn}: option {key} {options_a.get(key)!r} != {options_b.get(key)!r}")
    requests_a, requests_b = program.observed.requests, replay.observed.requests
    for urn in sorted(set(requests_a) & set(requests_b)):
        a, b = requests_a[urn], requests_b[urn]
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                found.append(f"{urn}: request field {key} {a.get(key)!r} != {b.get(key)!r}")
    outputs_a, outputs_b = program.observed.outputs_by_urn, replay.observed.outputs_by_urn
    for urn in sorted(set(outputs_a) | set(outputs_b)):
        if outputs_a.get(urn) != outputs_b.get(urn):
            found.append(f"{urn}: registered outputs differ")
    return found


def _comparable(options: dict[str, Any]) -> dict[str, Any]:
    comparable = dict(options)
    comparable["propertyDependencies"] = {key: sorted(urns) for key, urns in
                                          options.get("propertyDependencies", {}).items()}
    return comparable


def replay_under_mocks(folder: Path, tenants: int) -> Run:
    """The structure replay in `folder` run under the same mocks and config as the recording."""
    from benchmarks.scale import tenant_config

    return run_under_mocks(tenant_config(tenants), main=folder / "__main__.py")


def imported_platform_modules(program: Path) -> list[str]:
    """The platform's modules that `program` imports, statically (its import statements) and when
    run, in a fresh interpreter, under bare mocks (none of the platform's or the harness's)."""
    tree = ast.parse(program.read_text())
    found = [name for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
             for name in ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                          else [node.module or ""])
             if name.split(".")[0] in (PLATFORM_PACKAGE, "tests", "benchmarks")]
    probe = (
        "import runpy, sys, pulumi\n"
        "from pulumi.runtime.stack import run_pulumi_func\n"
        "from pulumi.runtime.sync_await import _sync_await\n"
        "class Mocks(pulumi.runtime.Mocks):\n"
        "    def new_resource(self, args):\n"
        "        return ('' if not args.resource_id else args.resource_id), dict(args.inputs)\n"
        "    def call(self, args):\n"
        "        return {}, []\n"
        f"pulumi.runtime.set_mocks(Mocks(), project={PROJECT!r}, stack='probe', preview=True)\n"
        f"_sync_await(run_pulumi_func(lambda: runpy.run_path({str(program)!r}, run_name='__main__')))\n"
        f"print('\\n'.join(m for m in sys.modules if m.split('.')[0] in ({PLATFORM_PACKAGE!r}, 'tests')))\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=program.parent, capture_output=True, text=True,
                            timeout=300, check=False, env={**os.environ, "PYTHONPATH": ""})
    if result.returncode != 0:
        raise RuntimeError(f"the replay failed under bare mocks:\n{result.stderr[-3000:]}")
    return found + [line for line in result.stdout.splitlines() if line]


# --- the engine -------------------------------------------------------------------------------------

@dataclass
class Setup:
    """The engine (its home, plugins and file backend), and a project folder and fresh stack per
    program, all under one work folder."""

    engine: Any
    folders: dict[str, Path]
    charts: Any

    def command(self, mode: str) -> list[str]:
        return ["pulumi", "preview", "--stack", STACKS[mode], "--non-interactive"]

    def env(self) -> dict[str, str]:
        return self.engine.env()


def _prefixed(config: dict[str, Any]) -> dict[str, Any]:
    return {f"{PROJECT}:{key}": value for key, value in config.items()}


def prepare(work: Path, tenants: int, structure: dict[str, Any], flat: dict[str, Any], charts: Any) -> Setup:
    """A fresh work folder: the engine's home with the plugins installed, a file backend, the
    project copied (its virtualenv linked), both replays written, and one stack per program with
    the same config."""
    from benchmarks.scale import tenant_config
    from tests.engine.engine import Engine, copy_project, toolchain

    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    # The engine tier's proxy (tests/engine/proxy.py) for the Kubernetes provider:
    # what it would fetch is answered here, anything else refused; nothing leaves the machine.
    engine = Engine(toolchain(), work / "engine", charts.env())
    engine.backend.mkdir(parents=True)
    folders = {"program": copy_project(engine.project), **write_replays(work, structure, flat)}
    engine.install_plugins()
    for mode, folder in folders.items():
        engine.new_stack(STACKS[mode], config=_prefixed(tenant_config(tenants)), cwd=folder)
    return Setup(engine, folders, charts)


def _plan(preview: Any, stack: str) -> dict[str, dict[str, Any]]:
    """Each planned step by URN, as the engine planned it (operation, the new state's inputs,
    options and dependencies), comparable across stacks: the stack's name as `STACK` (in URNs, the
    stack resource's name, the StackReference to itself), and commands' ids (the command provider
    makes a random one in every preview) as `<id>`."""
    steps = {step["urn"]: {"op": step["op"], **{key: value for key, value in step["new"].items()
                                                 if key not in ("urn", "outputs")}}
             for step in preview.steps}
    text = json.dumps(steps, sort_keys=True)
    text = text.replace(f"urn:pulumi:{stack}::", "urn:pulumi:STACK::").replace(f'"{stack}"', '"STACK"')
    text = text.replace(f"pulumi:pulumi:Stack::{PROJECT}-{stack}", f"pulumi:pulumi:Stack::{PROJECT}-STACK")
    names = sorted({urn.rsplit("::", 1)[-1] for urn in steps if f"${COMMAND}::" in urn or
                    f"::{COMMAND}::" in urn}, key=len, reverse=True)
    if names:
        text = re.sub("(" + "|".join(map(re.escape, names)) + r")(?:_id|[0-9a-f]{8})\b", r"\1<id>", text)
    return json.loads(text)


def _by_type_and_name(plan: dict[str, dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The custom resources of a plan by (type, name), wherever they sit in the tree: their
    operation and inputs."""
    return {(step["type"], urn.rsplit("::", 1)[-1]): {"op": step["op"], "inputs": step.get("inputs")}
            for urn, step in plan.items() if step.get("custom")}


def check_plans(setup: Setup) -> dict[str, Any]:
    """One preview of each program (also the runs' warm-up: the Kubernetes provider fetches the
    Helm charts whose inputs are all known, from the local proxy, once), each green; the
    structure replay's plan the program's (the same URNs, operations, inputs, options and
    dependencies), the flat replay's the same custom resources with the same inputs. Raises on a
    difference."""
    plans: dict[str, dict[str, dict[str, Any]]] = {}
    fetched: dict[str, int] = {}
    for mode in MODES:
        served = len(setup.charts.proxy.log)
        preview = setup.engine.preview(STACKS[mode], cwd=setup.folders[mode], policy=False,
                                       timeout=PREVIEW_TIMEOUT)
        if preview.returncode != 0 or preview.diagnostics("error") or preview.unexpected_warnings():
            raise RuntimeError(f"the {mode} preview is not green:\n{preview.text()}")
        plans[mode] = _plan(preview, STACKS[mode])
        fetched[mode] = len(setup.charts.proxy.log) - served
    program, structure = plans["program"], plans["structure"]
    different = [urn for urn in sorted(set(program) | set(structure))
                 if program.get(urn) != structure.get(urn)]
    if different:
        raise RuntimeError(f"the structure replay's plan differs from the program's at {len(different)} "
                           f"steps, e.g. {different[0]}:\n{program.get(different[0])}\n"
                           f"{structure.get(different[0])}")
    ours, flat = _by_type_and_name(program), _by_type_and_name(plans["flat"])
    different_keys = [key for key in sorted(set(ours) | set(flat)) if ours.get(key) != flat.get(key)]
    if different_keys:
        key = different_keys[0]
        raise RuntimeError(f"the flat replay's plan differs from the program's at {len(different_keys)} "
                           f"resources, e.g. {key}:\n{ours.get(key)}\n{flat.get(key)}")
    return {"steps": {mode: len(plan) for mode, plan in plans.items()},
            "operations": sorted({step["op"] for step in program.values()}),
            "chart_files_served": fetched, "refused": setup.charts.refused}


def time_preview(setup: Setup, mode: str) -> dict[str, float]:
    """One whole `pulumi preview` process: wall seconds, and CPU seconds (user + system) of it and
    of every process it waited for (the language host, the program, the providers)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    result = subprocess.run(setup.command(mode), cwd=setup.folders[mode], env=setup.env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            timeout=PREVIEW_TIMEOUT, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"the {mode} preview failed:\n{result.stderr[-3000:]}")
    return {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def interleaved(setup: Setup, rounds: int, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """`rounds` rounds of one timed preview per program, the order rotating by one each round."""
    runs: list[dict[str, Any]] = []
    for number in range(rounds):
        order = MODES[number % len(MODES):] + MODES[:number % len(MODES)]
        times = {mode: time_preview(setup, mode) for mode in order}
        runs.append({"round": number, "order": list(order), "times": times, "load": os.getloadavg()})
        log(f"round {number + 1}/{rounds}: " + ", ".join(
            f"{mode} {times[mode]['wall']:.1f}s wall {times[mode]['cpu']:.1f}s cpu" for mode in order))
    return runs


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    measures = ("wall", "cpu")
    modes = {mode: {measure: _spread([run["times"][mode][measure] for run in runs]) for measure in measures}
             for mode in MODES}
    pairs = {f"{a}/{b}": {measure: _spread([run["times"][a][measure] / run["times"][b][measure]
                                            for run in runs]) for measure in measures} for a, b in PAIRS}
    ratio = pairs["program/structure"]["wall"]["median"]
    return {"modes": modes, "pairs": pairs, "target": TARGET, "ratio": ratio, "met": ratio <= TARGET}


LABELS = {"program": "program", "structure": "structure replay", "flat": "flat replay"}


def _cell(spread: dict[str, float], digits: int) -> str:
    return f"{spread['median']:.{digits}f} [{spread['min']:.{digits}f}-{spread['max']:.{digits}f}]"


def format_table(report: dict[str, Any]) -> str:
    summary = report["summary"]
    lines = [f"fresh-stack previews at {report['tenants']} tenants ({report['steps']['program']} steps), "
             f"{report['rounds']} rounds, {report['cpus']} cores; median [min-max]",
             f"{'':<34} {'wall s':>22} {'cpu s':>22}"]
    for mode in MODES:
        spreads = summary["modes"][mode]
        lines.append(f"{LABELS[mode]:<34} {_cell(spreads['wall'], 1):>22} {_cell(spreads['cpu'], 1):>22}")
    for a, b in PAIRS:
        spreads = summary["pairs"][f"{a}/{b}"]
        lines.append(f"{LABELS[a] + ' / ' + LABELS[b]:<34} {_cell(spreads['wall'], 2):>22} "
                     f"{_cell(spreads['cpu'], 2):>22}")
    lines.append(f"target: program / structure replay {summary['ratio']:.2f} (median of the paired wall "
                 f"ratios; {'met' if summary['met'] else 'NOT met'}, target <= {TARGET})")
    return "\n".join(lines)


def engine_versions(setup: Setup) -> str:
    """The CLI's version and the providers' (plugin version; the Kubernetes provider's code)."""
    from tests.engine import engine as tier

    cli = setup.engine.pulumi("version").stdout.strip()
    command, kubernetes = tier.COMMAND_PLUGIN, tier.KUBERNETES_PLUGIN
    return (f"pulumi {cli}, {command[0]} {command[1]}, {kubernetes[0]} plugin {kubernetes[1]} "
            f"(code {tier.KUBERNETES_CODE_VERSION})")


def local_proxy(folder: Path) -> Any:
    """The engine tier's proxy for the Kubernetes provider: the Helm repositories the program
    names answered on this machine, every other address refused (tests/engine)."""
    from tests.engine.proxy import pinned_charts, tier_proxy

    return tier_proxy(folder, pinned_charts())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine_preview")
    parser.add_argument("--tenants", type=int, default=DEFAULT_TENANTS)
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--json", type=Path, default=None, help="default: <work>/report.json")
    args = parser.parse_args(argv)

    print(f"recording the program at {args.tenants} tenants under mocks ...", flush=True)
    run, structure, flat = record(args.tenants)
    with tempfile.TemporaryDirectory(prefix="khp-replay-check-") as folder:
        check = write_replays(Path(folder), structure, flat)
        found = differences(run, replay_under_mocks(check["structure"], args.tenants))
        if found:
            print("the structure replay does not reproduce the program:\n  " + "\n  ".join(found[:40]))
            return 2
        imported = [name for mode in ("structure", "flat")
                    for name in imported_platform_modules(check[mode] / "__main__.py")]
        if imported:
            print(f"a replay imports the platform's code: {imported}")
            return 2
    print(f"the structure replay gives the program's {len(run.program.registrations)} registrations "
          "under mocks", flush=True)
    with tempfile.TemporaryDirectory(prefix="khp-bench-charts-") as folder, \
            local_proxy(Path(folder)) as charts:
        setup = prepare(args.work, args.tenants, structure, flat, charts)
        try:
            plans = check_plans(setup)
        except RuntimeError as error:
            print(error)
            return 2
        print(f"plans: {plans['steps']} steps, operations {plans['operations']}, chart files served "
              f"locally {plans['chart_files_served']}, refused {plans['refused'] or 'none'}", flush=True)
        runs = interleaved(setup, args.rounds)
        refused = charts.refused
        engine = engine_versions(setup)
    report = {"tenants": args.tenants, "rounds": args.rounds, "cpus": len(os.sched_getaffinity(0)),
              "python": platform.python_version(), "engine": engine, "steps": plans["steps"], "runs": runs,
              "network_refused": refused, "summary": summarize(runs)}
    print(format_table(report))
    print(f"engine: {engine}")
    output = args.json or args.work / "report.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2))
    print(f"wrote {output}")
    return 0 if report["summary"]["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
