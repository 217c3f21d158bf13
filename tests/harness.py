"""Run the real Pulumi program under mocks and record every registration.

The stock mock monitor hands `new_resource` the deserialized inputs only; this
one also keeps the raw wire form (so secrets stay visible as secrets), the
parent, provider, dependencies and resource options of each registration.
"""

from __future__ import annotations

import base64
import json
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from kamaji_hami_platform.config import PROJECT
from kamaji_hami_platform.management import kamaji_chart

ROOT = Path(__file__).resolve().parent.parent
MAIN = ROOT / "__main__.py"
SECRET_SIG = "4dabf18193072939515e22adb298388d"
SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270"

# Sentinels planted in everything the mocks return that is secret in real life.
MGMT_KUBECONFIG_SENTINEL = "sentinel-management-kubeconfig-token"
TENANT_KUBECONFIG_SENTINEL = "sentinel-tenant-kubeconfig-token"
SENTINELS = (MGMT_KUBECONFIG_SENTINEL, TENANT_KUBECONFIG_SENTINEL)
PRODUCTION_STACK = ROOT / "examples/production/Pulumi.prod.yaml"


def fake_private_key(tag: str) -> str:
    """An unencrypted key in OpenSSH's format (PROTOCOL.key: magic, cipher `none`, ...) whose
    body carries `tag`: what the config's shape check accepts, and a needle for leak checks."""
    blob = b"openssh-key-v1\0" + len(b"none").to_bytes(4, "big") + b"none" + tag.encode() * 3
    body = base64.b64encode(blob).decode()
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n"


def key_body(key: str) -> str:
    """The base64 body of a fake key: the text that would show if the key leaked."""
    return key.splitlines()[1]


def production_config() -> tuple[dict[str, Any], tuple[str, ...]]:
    """examples/production/Pulumi.prod.yaml with its placeholders replaced by decrypted secrets (a
    kubeconfig and keys carrying sentinels), and the names of the secret keys, as the engine
    hands them to the program."""
    config = stack_config(PRODUCTION_STACK)
    config["managementKubeconfig"] = fake_kubeconfig("https://10.20.0.10:6443", MGMT_KUBECONFIG_SENTINEL)
    config["sshPrivateKeys"] = {name: fake_private_key(f"sentinel-key-{name}")
                                for name in config["sshPrivateKeys"]}
    return config, ("managementKubeconfig", "sshPrivateKeys")



def fake_kubeconfig(server: str, token: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": token}}],
    })


@dataclass
class Registration:
    """One resource registration as the engine would receive it."""

    type: str
    name: str
    urn: str
    parent: str
    provider: str
    dependencies: list[str]
    custom: bool
    inputs: dict[str, Any]
    wire: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)


def tenant_lb_address(resource_name: str) -> str:
    """A stable, distinct MetalLB address per tenant for the mocked kubeconfigs."""
    return f"172.30.255.{200 + sum(map(ord, resource_name)) % 50}"


class PlatformMocks(pulumi.runtime.Mocks):
    """Outputs that the real providers would compute, with sentinels for secrets.

    `control_plane_uid=False`: TenantControlPlanes come back without a UID, as when
    pulumi-kubernetes cannot dry-run an update in preview and returns the inputs.
    `fresh_preview=True`: what a preview of a fresh stack knows (with `preview=True`): no
    command has printed anything and no Kubernetes object can be read yet, so everything
    computed from them is unknown.
    `updated_commands`: the commands a preview updates (with `preview=True`), whose outputs it
    cannot know (tests/plan_model.py `preview_plan`).
    """

    def __init__(self, control_plane_uid: bool = True, fresh_preview: bool = False,
                 previous_outputs: dict | None = None,
                 updated_commands: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.control_plane_uid = control_plane_uid
        self.fresh_preview = fresh_preview
        self.updated_commands = updated_commands
        # The stack's outputs of its last deployment, as its StackReference to itself reads them
        # (none: a stack never deployed).
        self.previous_outputs = previous_outputs or {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        resource_id, outputs = self._known(args)
        updated = args.typ == "command:local:Command" and args.name in self.updated_commands
        if (self.fresh_preview and args.typ == "command:local:Command") or updated:
            outputs.update(stdout=pulumi.output.UNKNOWN, stderr=pulumi.output.UNKNOWN)
        elif self.fresh_preview and args.resource_id:  # a read
            outputs = {key: pulumi.output.UNKNOWN for key in ("data", "metadata")}
        return resource_id, outputs

    def _known(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        outputs = dict(args.inputs)
        if args.typ == "pulumi:pulumi:StackReference":
            return args.name, {**outputs, "outputs": dict(self.previous_outputs), "secretOutputNames": []}
        if args.typ == "command:local:Command":
            outputs["stdout"] = self._command_stdout(args.name)
            outputs["stderr"] = ""
        elif args.typ.endswith(":TenantControlPlane") and self.control_plane_uid:
            outputs["metadata"] = {**outputs.get("metadata", {}), "uid": f"uid-{args.name}"}
        elif args.typ == "kubernetes:core/v1:Secret" and args.resource_id:
            kubeconfig = fake_kubeconfig(f"https://{tenant_lb_address(args.name)}:6443",
                                         f"{TENANT_KUBECONFIG_SENTINEL}-{args.name}")
            outputs["data"] = {"admin.conf": base64.b64encode(kubeconfig.encode()).decode()}
            # Kamaji makes the TenantControlPlane the Secret's controller (its UID as in the TCP mock).
            tcp = args.name.replace("-admin-kubeconfig", "-control-plane")
            outputs["metadata"] = {"name": args.name, "ownerReferences": [{
                "apiVersion": "kamaji.clastix.io/v1alpha1", "kind": "TenantControlPlane",
                "name": tcp, "uid": f"uid-{tcp}", "controller": True}]}
        return f"{args.name}_id", outputs

    @staticmethod
    def _command_stdout(name: str) -> str:
        if name.endswith("-kubeconfig"):
            return fake_kubeconfig("https://127.0.0.1:40000", MGMT_KUBECONFIG_SENTINEL)
        if name.endswith("-kamaji-chart"):
            return kamaji_chart.chart_dir() + "\n"
        return ""

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list]:
        return {}, []


class RecordingMonitor(pulumi_mocks.MockMonitor):
    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self.options_by_urn: dict[str, dict[str, Any]] = {}

    def _inherit(self, request: Any, options: dict[str, Any]) -> dict[str, Any]:
        """What the engine adds from the parent's goal (pulumi v3.276.0 pkg/resource/deploy/
        source_eval.go `inheritFromParent`: DeletedWith and RetainOnDelete when the child sets
        none; the SDK has already applied protect and providers)."""
        parent = self.options_by_urn.get(getattr(request, "parent", ""), {})
        if "deletedWith" in options and not options["deletedWith"]:
            options["deletedWith"] = parent.get("deletedWith", "")
        if "retainOnDelete" in options and not options["retainOnDelete"]:
            options["retainOnDelete"] = parent.get("retainOnDelete", False)
        return options

    def _record(self, request: Any, response: Any, custom: bool, options: dict[str, Any]) -> None:
        options = self._inherit(request, options)
        self.options_by_urn[response.urn] = options
        wire = json_format.MessageToDict(request.object if hasattr(request, "object")
                                         else request.properties)
        inputs = _plain(wire)
        state = response.properties if hasattr(response, "properties") else response.object
        outputs = _plain(json_format.MessageToDict(state))
        self.registrations.append(Registration(
            type=request.type, name=request.name, urn=response.urn, parent=request.parent,
            provider=request.provider, dependencies=list(getattr(request, "dependencies", [])),
            custom=custom, inputs=inputs, wire=wire, options=options, outputs=outputs))

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self._record(request, response, bool(request.custom), {
                # Effective values: the SDK has already applied what a child inherits from its
                # parent (protect, providers; pulumi sdk/python/lib/pulumi/resource.py).
                "protect": request.protect if request.HasField("protect") else False,
                "replacementTrigger": (json_format.MessageToDict(request.replacement_trigger)
                                       if request.HasField("replacement_trigger") else None),
                "importId": request.importId,
                "deleteBeforeReplace": request.deleteBeforeReplace,
                "additionalSecretOutputs": list(request.additionalSecretOutputs),
                "customTimeouts": json_format.MessageToDict(request.customTimeouts),
                # What the engine plans with (pulumi/pulumi pkg/resource/deploy/step_generator.go).
                "propertyDependencies": {key: list(deps.urns)
                                         for key, deps in request.propertyDependencies.items()},
                "replaceWith": list(request.replace_with),
                "deletedWith": request.deletedWith,
                "retainOnDelete": request.retainOnDelete,
                "replaceOnChanges": list(request.replaceOnChanges),
                "ignoreChanges": list(request.ignoreChanges),
                "hideDiffs": list(request.hideDiffs),
                "aliases": [json_format.MessageToDict(a) for a in request.aliases] + list(request.aliasURNs),
                "transforms": len(request.transforms),
            })
        return response

    def ReadResource(self, request: Any) -> Any:
        response = super().ReadResource(request)
        self._record(request, response, True, {"read": True, "id": request.id})
        return response


def _plain(value: Any) -> Any:
    """Strip secret wrappers from the wire form, keeping the values."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == SECRET_VALUE:
            return _plain(value.get("value"))
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def plain_text_leaks(value: Any, needles: tuple[str, ...] = SENTINELS) -> list[str]:
    """Sentinel strings that appear in the wire form outside a secret wrapper."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == SECRET_VALUE:
            return []
        return [leak for item in value.values() for leak in plain_text_leaks(item, needles)]
    if isinstance(value, list):
        return [leak for item in value for leak in plain_text_leaks(item, needles)]
    if isinstance(value, str):
        return [needle for needle in needles if needle in value]
    return []


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG) == SECRET_VALUE


def dev_stack_config() -> dict[str, Any]:
    """The real Pulumi.dev.yaml, keyed without the project prefix."""
    return stack_config(ROOT / "Pulumi.dev.yaml")


def stack_config(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    prefix = f"{PROJECT}:"
    return {key[len(prefix):]: value for key, value in document["config"].items()
            if key.startswith(prefix)}


class Program:
    """The registrations one run of `__main__.py` produced, with lookup helpers."""

    def __init__(self, monitor: RecordingMonitor) -> None:
        self.registrations = monitor.registrations
        self.by_urn = {reg.urn: reg for reg in self.registrations}
        self.exports, self.secret_exports = _resolve_exports()

    def of_type(self, type_: str) -> list[Registration]:
        return [reg for reg in self.registrations if reg.type == type_]

    def named(self, name: str) -> Registration:
        matches = [reg for reg in self.registrations if reg.name == name]
        assert len(matches) == 1, f"expected one resource named {name!r}, got {len(matches)}"
        return matches[0]

    def depends_on(self, reg: Registration, other: Registration) -> bool:
        """True when `reg` waits for `other`, directly or through its dependencies/parent chain (a
        child registers once its parent has: a component's depends_on holds its children back)."""
        seen: set[str] = set()
        pending = [*reg.dependencies, *([reg.parent] if reg.parent else [])]
        while pending:
            urn = pending.pop()
            if urn == other.urn:
                return True
            if urn in seen or urn not in self.by_urn:
                continue
            seen.add(urn)
            pending.extend(self.by_urn[urn].dependencies)
            if self.by_urn[urn].parent:
                pending.append(self.by_urn[urn].parent)
        return False


async def _resolve(value: Any) -> tuple[Any, bool]:
    output = pulumi.Output.from_input(value)
    return await output.future(), await output.is_secret()


def _resolve_exports() -> tuple[dict[str, Any], set[str]]:
    """The stack's exports as plain values, and the names of the secret ones."""
    root = pulumi_settings.get_root_resource()
    exports: dict[str, Any] = {}
    secret: set[str] = set()
    for name, value in getattr(root, "outputs", {}).items():
        exports[name], is_secret_export = _sync_await(_resolve(value))
        if is_secret_export:
            secret.add(name)
    return exports, secret


def run_program(config: dict[str, Any], preview: bool = False,
                stack: str = "dev", mocks: PlatformMocks | None = None, main: Path = MAIN,
                project: str = PROJECT, secret_keys: tuple[str, ...] = ()) -> Program:
    """Run `__main__.py` (or another program's) once under fresh mocks with this (unprefixed) config;
    `secret_keys` are the keys the engine marks secret. A string value reaches the program as the
    engine passes it (raw), anything else as JSON."""
    pulumi_settings.ROOT.set(None)
    pulumi.runtime.set_all_config(
        {f"{project}:{key}": value if isinstance(value, str) else json.dumps(value)
         for key, value in config.items()},
        [f"{project}:{key}" for key in secret_keys])
    mocks = mocks or PlatformMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    pulumi_settings.SETTINGS.rpc_manager.clear()
    pulumi_settings.SETTINGS.outputs.clear()
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(main), run_name="__main__")))
    return Program(monitor)


def spy_registrations(monkeypatch: Any) -> list[str]:
    """The names of the resources a run registers from now on (monkeypatched for one test)."""
    registered: list[str] = []
    original = RecordingMonitor.RegisterResource

    def spy(self: RecordingMonitor, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            registered.append(request.name)
        return original(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", spy)
    return registered
