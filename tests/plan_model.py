"""What `pulumi preview`/`up` would plan when the stack config changes, from two mock runs.

Mocks do not plan, so this emulates the engine's step generator (pulumi/pulumi v3.276.0
pkg/resource/deploy/step_generator.go) over the registrations of a run before and a run
after a change, with each provider's replace rules:

- a new resource is created; one that is gone is deleted, unless protected: then the
  delete is refused, in preview too (step.go `DeleteStep.Apply` checks `protect` before
  it looks at DryRun). When it is `deleted_with` a resource deleted too, the engine plans
  the delete but skips the provider call;
- an existing resource is replaced when a resource in its `replace_with` list or its
  `deleted_with` resource is replaced, when its provider is replaced (`diff`), when its
  `replacement_trigger` differs from the one in its old state (`shouldTriggerReplace`: an
  unknown one always, a null one, before or after, never), or when its provider's diff says so:
  - `command:local:Command`: a changed `triggers` element (the Command SDK registers
    `replace_on_changes=["triggers[*]"]`, pulumi_command/local/command.py; the provider itself
    would update, pulumi-go-provider v1.3.0 infer/resource.go `Diff`);
  - `pulumi:providers:kubernetes`: a changed or unknown `clusterIdentifier` present before and
    after (adding or removing one is not a replacement; pulumi-kubernetes v4.32.0
    provider/pkg/provider/provider.go `DiffConfig`);
  - `kubernetes:helm.sh/v3:Release`: `name`, `namespace` (helm_release.go `forceNewFields`);
  - any other `kubernetes:` object: `metadata.name`/`metadata.namespace` and its kind's
    forced-replacement fields (provider/pkg/provider/diff.go `forceNew`): ConfigMap `data`
    and `binaryData` unless the provider sets `enableConfigMapMutable` (and even then with
    `immutable: true`), Secret likewise with `enableSecretMutable`, DaemonSet/Deployment
    `spec.selector`, ClusterRoleBinding and
    RoleBinding `roleRef`, ResourceQuota `spec.scopes`, Service `spec.clusterIP`, Job
    `spec.template`...; Patch resources only their identity. A named object replaced for
    one of these is deleted first when it keeps its name and namespace (provider.go `Diff`
    `deleteBeforeReplace`);
  any other changed input is an update;
- an input that depends (propertyDependencies) on a resource being replaced is unknown
  until that replacement exists, so it counts as changed; in a preview (`preview_plan`), so is
  one computed from the output of a command the preview updates: pulumi-command 1.2.1 makes
  every output depend on every input (provider/pkg/provider/local/commandController.go, the
  pulumi-go-provider default), so a preview of an update knows none of them (the real engine
  showed it: an upgrade whose host-detection script changed previewed every worker replaced);
- a replacement of a protected resource (protected before and after) is refused
  (`unable to replace resource ... marked for protection`): a preview reports it and goes
  on (`up` stops there, and previews first);
- a delete-before-replace resource is deleted before its replacement is created, and first
  what cannot outlive it (`calculateDependentReplacements`): its transitive dependents in the
  old state (through dependencies, property dependencies, `deleted_with`, `replace_with` and
  provider edges, not parents: graph/dependency_graph.go `DependingOn`) whose provider,
  `deleted_with` resource or replace-key input depends on a resource being deleted, plus the
  resources that name *it* in `replace_with` or `deleted_with` (`findDependentCascadeReplacements`,
  the root's only: `replace_with` is not followed through the dependents). These are deleted
  last-found first; the first protected one is refused and stops the planning altogether, in
  preview too (a bail: nothing after it is planned or shown).

The model knows the options above and `replace_on_changes` (a changed value at one of its
paths replaces: the engine's `applyReplaceOnChanges`). A program that uses one it does not
model (`import`, `aliases`, `hide_diffs`, a nested `ignore_changes` path)
makes `plan` raise, instead of planning something the engine would not. `ignore_changes` of a
top-level input gives it its old value before the diff, as the engine does.
Options a child inherits from its parent arrive already applied in each registration: protect
and providers by the SDK (pulumi sdk/python/lib/pulumi/resource.py), deleted_with and
retain_on_delete as the engine adds them (tests/harness.py, after source_eval.go
`inheritFromParent`), so the model sees them.

Steps come in the order the program registers resources, which follows dependencies; the
order between steps of independent resources is not the engine's (it runs those in
parallel): tests assert order only along dependencies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.harness import PlatformMocks, Program, Registration

COMMAND = "command:local:Command"
KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
CHANGED = object()  # an input whose value is unknown until a replacement exists
# An unknown as it is registered (pulumi sdk/python/lib/pulumi/runtime/rpc.py UNKNOWN).
UNKNOWN_WIRE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
REFUSED = "refused"
FAILED = "failed"  # the engine fails the run at this step (a state it refuses to save)
STOPPED = "stopped"  # the engine bails: no step after this one is planned

# Options the model does not emulate: a registration using one fails the plan loudly.
UNMODELED_OPTIONS = ("importId", "hideDiffs")

# pulumi-kubernetes v4.32.0 provider/pkg/provider/diff.go `forceNew`, for the kinds a program
# may register (group/version/kind -> forced-replacement field paths besides the identity).
_SELECTOR = (".spec.selector",)
FORCE_NEW: dict[str, tuple[str, ...]] = {
    "core/v1:ConfigMap": (),  # data/binaryData: see _force_new_fields
    "core/v1:Secret": (".type",),
    "core/v1:Namespace": (),
    "core/v1:ServiceAccount": (),
    "core/v1:ResourceQuota": (".spec.scopes",),
    "core/v1:Service": (".spec.clusterIP",),
    "apps/v1:DaemonSet": _SELECTOR,
    "apps/v1:Deployment": _SELECTOR,
    "apps/v1:StatefulSet": (".spec.podManagementPolicy", ".spec.revisionHistoryLimit", *_SELECTOR,
                            ".spec.serviceName", ".spec.volumeClaimTemplates"),
    "batch/v1:Job": (".spec.completions", ".spec.parallelism", *_SELECTOR, ".spec.template"),
    "batch/v1:CronJob": (),
    "networking.k8s.io/v1:NetworkPolicy": (),
    "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy": (),  # no entry in `forceNew`
    "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding": (),
    "rbac.authorization.k8s.io/v1:ClusterRole": (),
    "rbac.authorization.k8s.io/v1:Role": (),
    "rbac.authorization.k8s.io/v1:ClusterRoleBinding": (".roleRef",),
    "rbac.authorization.k8s.io/v1:RoleBinding": (".roleRef",),
    # Custom resources: only their identity (no entry in `forceNew`).
    "kamaji.clastix.io/v1alpha1:TenantControlPlane": (),
    "metallb.io/v1beta1:IPAddressPool": (),
    "metallb.io/v1beta1:L2Advertisement": (),
}
IDENTITY = (".metadata.name", ".metadata.namespace")
MUTABLE_FLAGS = {"core/v1:ConfigMap": ("enableConfigMapMutable", (".data", ".binaryData")),
                 "core/v1:Secret": ("enableSecretMutable", (".stringData", ".data"))}


class UnmodeledOption(AssertionError):
    """The program uses a resource option the plan model does not emulate."""


@dataclass(frozen=True)
class Step:
    """One planned step: op is create, update, replace, delete, delete-replaced,
    create-replacement, discard, or refused (the engine refuses it: protect)."""

    op: str
    name: str
    type: str
    why: str = ""

    def __str__(self) -> str:
        return f"{self.op} {self.name}" + (f" ({self.why})" if self.why else "")


def _trigger_replaces(old: Any, new: Any) -> bool:
    """step_generator.go `shouldTriggerReplace`: unknowns always replace; a null one (before or
    after) never does; else a different value does."""
    if _has_unknown(old) or _has_unknown(new):
        return True
    return old is not None and new is not None and old != new


def _has_unknown(value: Any) -> bool:
    if value is CHANGED or value == UNKNOWN_WIRE:
        return True
    if isinstance(value, dict):
        return any(_has_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_unknown(v) for v in value)
    return False


def _provider_urn(reg: Registration) -> str:
    return reg.provider.rsplit("::", 1)[0] if reg.provider else ""


def _kind(reg: Registration) -> str:
    return reg.type.removeprefix("kubernetes:")


def _is_kubernetes_object(reg: Registration) -> bool:
    return reg.type.startswith("kubernetes:") and reg.type != HELM_RELEASE


def _check_modeled(reg: Registration) -> None:
    used = [option for option in UNMODELED_OPTIONS if reg.options.get(option)]
    if used:
        raise UnmodeledOption(f"{reg.name} uses {', '.join(used)}, which tests/plan_model.py does not "
                              "emulate: model it (with its engine source) before planning with it")
    if _is_kubernetes_object(reg) and not _kind(reg).endswith("Patch") and _kind(reg) not in FORCE_NEW:
        raise UnmodeledOption(f"{reg.name}: kind {_kind(reg)} has no forced-replacement fields in the model "
                              "(pulumi-kubernetes provider/pkg/provider/diff.go)")


def _urn(stack_project: str, parent: str, type_: str, name: str) -> str:
    """A URN as the mock monitor builds it (pulumi/runtime/mocks.py `make_urn`)."""
    if parent:
        type_ = parent.split("::")[2].split("$").pop() + "$" + type_
    return f"{stack_project}::{type_}::{name}"


def alias_urns(reg: Registration) -> list[str]:
    """The URNs this registration may have had before: its `aliases` (pulumi sdk
    alias specs: a changed name, type or parent; a missing part is the resource's own)."""
    stack_project = "::".join(reg.urn.split("::")[:2])
    urns = []
    for alias in reg.options.get("aliases", []):
        if isinstance(alias, str):
            urns.append(alias)
            continue
        spec = alias.get("spec", {})
        parent = "" if spec.get("noParent") else (spec.get("parentUrn") or reg.parent)
        urns.append(_urn(stack_project, parent, spec.get("type", reg.type), spec.get("name", reg.name)))
    return urns


def _inputs_after(reg: Registration, replaced: set[str], old: dict[str, Any]) -> dict[str, Any]:
    """The new inputs, with every input that depends on a replaced resource marked unknown, and
    every input `ignore_changes` names given back its old value (the engine's
    `processIgnoreChanges`, pkg/resource/deploy/step_generator.go, before the diff; top-level
    keys only here)."""
    inputs = dict(reg.inputs)
    for key, deps in reg.options.get("propertyDependencies", {}).items():
        if replaced & set(deps):
            inputs[key] = CHANGED
    for key in reg.options.get("ignoreChanges", []):
        if "." in key or "[" in key:
            raise UnmodeledOption(f"{reg.name}: ignore_changes of {key!r}, a nested path, is not modeled")
        if key in old:
            inputs[key] = old[key]
    return inputs


def _at(obj: Any, path: str) -> Any:
    """The value at a `.a.b` path; CHANGED where an unknown lies on the way."""
    for key in path.strip(".").split("."):
        if obj is CHANGED:
            return CHANGED
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _flag(providers: dict[str, Registration], reg: Registration, flag: str) -> bool:
    provider = providers.get(_provider_urn(reg))
    return provider is not None and str(provider.inputs.get(flag, "")).lower() == "true"


class _Bail(Exception):
    """The engine stops generating steps (`result.BailErrorf`)."""


def _force_new_fields(reg: Registration, providers: dict[str, Registration]) -> tuple[str, ...]:
    if reg.type == HELM_RELEASE:
        return (".name", ".namespace")
    if _kind(reg).endswith("Patch"):
        return IDENTITY  # Patch resources update everything else in place (provider.go `Diff`)
    fields = IDENTITY + FORCE_NEW[_kind(reg)]
    if _kind(reg) in MUTABLE_FLAGS:
        flag, data = MUTABLE_FLAGS[_kind(reg)]
        if not _flag(providers, reg, flag) or reg.inputs.get("immutable") is True:
            fields += data
    return fields


def _replace_on_changes(reg: Registration, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """`replace_on_changes` paths whose value changed (the engine's applyReplaceOnChanges; the
    Command SDK itself sets `triggers[*]`, pulumi_command/local/command.py)."""
    paths = [path.replace("[*]", "") for path in reg.options.get("replaceOnChanges", [])]
    return [path for path in paths if _at(old, path) != _at(new, path)]


def _replace_keys(reg: Registration, old: dict[str, Any], new: dict[str, Any],
                  providers: dict[str, Registration]) -> list[str]:
    """The inputs whose change makes the provider (or `replace_on_changes`) replace this resource."""
    keys = set(_provider_replace_keys(reg, old, new, providers)) | set(_replace_on_changes(reg, old, new))
    return sorted(keys)


def _provider_replace_keys(reg: Registration, old: dict[str, Any], new: dict[str, Any],
                           providers: dict[str, Registration]) -> list[str]:
    if reg.type == COMMAND:
        return ["triggers"] if old.get("triggers") != new.get("triggers") else []
    if reg.type == KUBERNETES_PROVIDER:
        both = "clusterIdentifier" in old and "clusterIdentifier" in new
        changed = both and old["clusterIdentifier"] != new["clusterIdentifier"]
        return ["clusterIdentifier"] if changed else []
    if reg.type.startswith("kubernetes:"):
        return [path.lstrip(".") for path in _force_new_fields(reg, providers)
                if _at(old, path) != _at(new, path)]
    return []


def _replace_key_paths(reg: Registration, providers: dict[str, Registration]) -> tuple[str, ...]:
    """Top-level inputs whose unknown value makes the provider replace (for cascades)."""
    on_changes = tuple(path.replace("[*]", "").split(".")[0]
                       for path in reg.options.get("replaceOnChanges", []))
    return _provider_replace_key_paths(reg, providers) + on_changes


def _provider_replace_key_paths(reg: Registration, providers: dict[str, Registration]) -> tuple[str, ...]:
    if reg.type == COMMAND:
        return ("triggers",)
    if reg.type == KUBERNETES_PROVIDER:
        return ("clusterIdentifier",)
    if reg.type.startswith("kubernetes:"):
        return tuple({path.strip(".").split(".")[0] for path in _force_new_fields(reg, providers)})
    return ()


def _providers(program: Program) -> dict[str, Registration]:
    return {reg.urn: reg for reg in program.registrations if reg.type.startswith("pulumi:providers:")}


class _Planner:
    def __init__(self, before: Program, after: Program, ignore_protect: bool) -> None:
        self.before, self.after = before, after
        self.ignore_protect = ignore_protect
        self.old = {reg.urn: reg for reg in before.registrations}
        self.names = {reg.urn: reg.name for reg in [*before.registrations, *after.registrations]}
        self.old_providers = _providers(before)
        self.new_providers = _providers(after)
        self.replaced: set[str] = set()
        self.read_anew: set[str] = set()  # reads of a replaced resource
        self.deleted_early: set[str] = set()
        self.steps: list[Step] = []

    def replaced_along(self, reg: Registration) -> str | None:
        """Why a resource is replaced with another: one its replace_with or deleted_with names."""
        for urn in reg.options.get("replaceWith", []):
            if urn in self.replaced:
                return f"replace_with {self.names[urn]}"
        deleted_with = reg.options.get("deletedWith")
        if deleted_with and deleted_with in self.replaced:
            return f"deleted_with {self.names[deleted_with]}"
        return None

    def why_replaced(self, reg: Registration, previous: Registration) -> tuple[str | None, bool]:
        """(why it is replaced, whether the provider asks to delete first)."""
        if along := self.replaced_along(reg):
            return along, False
        provider = _provider_urn(reg)
        if provider in self.replaced:
            return f"its provider {self.names[provider]} is replaced", False
        old_trigger = previous.options.get("replacementTrigger")
        if _trigger_replaces(old_trigger, reg.options.get("replacementTrigger")):
            return "replacement_trigger changed", False
        new = _inputs_after(reg, self.replaced | self.read_anew, previous.inputs)
        keys = _replace_keys(reg, previous.inputs, new, self.new_providers)
        if not keys:
            return None, False
        # pulumi-kubernetes deletes an object first when it keeps its name and namespace.
        same_identity = all(_at(previous.inputs, p) == _at(new, p) for p in IDENTITY)
        return f"{', '.join(keys)} changed", _is_kubernetes_object(reg) and same_identity

    def requires_replacement(self, reg: Registration, doomed: set[str]) -> bool:
        """calculateDependentReplacements' requiresReplacement: provider, deleted_with, or a
        replace-key input computed from a doomed resource (replace_with is not followed)."""
        if not reg.custom or reg.options.get("read"):
            return False
        if _provider_urn(reg) in doomed or reg.options.get("deletedWith") in doomed:
            return True
        computed = {key for key, deps in reg.options.get("propertyDependencies", {}).items()
                    if doomed & set(deps)}
        return bool(computed & set(_replace_key_paths(reg, self.old_providers)))

    @staticmethod
    def depends_on(reg: Registration, urns: set[str]) -> bool:
        """Whether reg (in the old state) depends on any of urns directly, as `DependingOn`
        follows edges: not through its parent."""
        edges = set(reg.dependencies) | {_provider_urn(reg)} | set(reg.options.get("replaceWith", []))
        edges |= {u for deps in reg.options.get("propertyDependencies", {}).values() for u in deps}
        if reg.options.get("deletedWith"):
            edges.add(reg.options["deletedWith"])
        return bool(edges & urns)

    def cascade(self, root: Registration) -> list[Registration]:
        """What must be deleted before `root` is, for a delete-before-replace of it."""
        doomed, dependents, found = {root.urn}, {root.urn}, []
        for reg in self.before.registrations:  # old-state order is dependency order
            if reg.urn in doomed or reg.urn in self.deleted_early or not self.depends_on(reg, dependents):
                continue
            dependents.add(reg.urn)
            if self.requires_replacement(reg, doomed):
                doomed.add(reg.urn)
                found.append(reg)
        found += [reg for reg in self.before.registrations
                  if reg.urn not in doomed and reg.urn not in self.deleted_early
                  and (root.urn in reg.options.get("replaceWith", [])
                       or reg.options.get("deletedWith") == root.urn)]
        return found

    def read_through(self, provider: Registration) -> str | None:
        """A read of the old state that goes through this provider, if any."""
        if provider.type != KUBERNETES_PROVIDER:
            return None
        return next((reg.name for reg in self.before.registrations
                     if reg.options.get("read") and _provider_urn(reg) == provider.urn), None)

    def protected(self, reg: Registration) -> bool:
        return bool(reg.options.get("protect")) and not self.ignore_protect

    def replace(self, reg: Registration, previous: Registration, why: str, delete_first: bool) -> None:
        self.replaced.add(reg.urn)
        refused_here = self.protected(previous) and self.protected(reg)
        if refused_here:
            self.steps.append(Step(REFUSED, reg.name, reg.type, f"replace of a protected resource: {why}"))
        if not (reg.options.get("deleteBeforeReplace") or delete_first):
            if not refused_here:
                self.steps += [Step("create-replacement", reg.name, reg.type, why),
                               Step("delete-replaced", reg.name, reg.type, why)]
            return
        # A preview goes on after a refused root into its cascade (step_generator.go), where the
        # first protected dependent stops everything.
        fails: list[Step] = []
        for dependent in reversed(self.cascade(previous)):
            if self.protected(dependent):
                self.steps.append(Step(REFUSED, dependent.name, dependent.type,
                                       f"replace of a protected resource as part of replacing {reg.name}"))
                raise _Bail
            if reader := self.read_through(dependent):
                # The cascade never takes a read along (calculateDependentReplacements: "Neither
                # component nor external resources require replacement"), and the state saved
                # after the provider's delete holds a read whose provider is gone: the engine
                # plans the cascade, then its snapshot check fails the run at that delete, in a
                # preview too (snapshot.go VerifyIntegrity, "refers to unknown provider"; the
                # real engine showed it, tests/engine/test_upgrades.py).
                fails.append(Step(FAILED, dependent.name, dependent.type,
                                  f"snapshot integrity: {reader} is read through it"))
            self.deleted_early.add(dependent.urn)
            self.replaced.add(dependent.urn)
            self.steps.append(Step("delete-replaced", dependent.name, dependent.type,
                                   f"cannot outlive {reg.name}"))
        if not refused_here:
            self.steps += [Step("delete-replaced", reg.name, reg.type, why),
                           Step("create-replacement", reg.name, reg.type, why)]
        if fails:
            self.steps.append(fails[0])
            raise _Bail

    def check_same_provider(self, reg: Registration, previous: Registration | None) -> None:
        """A resource moved to another provider (step_generator.go `providerChanged`) is not
        modeled; a provider renamed with an alias is the same provider."""
        if previous is None or not previous.provider:
            return
        new_provider = self.new_providers.get(_provider_urn(reg))
        known = {new_provider.urn, *alias_urns(new_provider)} if new_provider else {_provider_urn(reg)}
        if _provider_urn(previous) not in known:
            raise UnmodeledOption(f"{reg.name} moves from provider {_provider_urn(previous)} to "
                                  f"{_provider_urn(reg)}, which tests/plan_model.py does not emulate")

    def previous(self, reg: Registration) -> Registration | None:
        """The old state of this resource: under its URN, or under one of its aliases."""
        for urn in (reg.urn, *alias_urns(reg)):
            if urn in self.old:
                return self.old[urn]
        return None

    def register(self, reg: Registration) -> None:
        _check_modeled(reg)
        previous = self.previous(reg)
        self.check_same_provider(reg, previous)
        if previous is None:
            # A read (`.get`, a StackReference) changes nothing: the engine's read step.
            self.steps.append(Step("read" if reg.options.get("read") else "create", reg.name, reg.type))
            return
        if reg.urn in self.deleted_early:
            self.steps.append(Step("create-replacement", reg.name, reg.type, "deleted before a replacement"))
            return
        if reg.options.get("read"):
            # Read again (a step that changes nothing, left out here), through a new provider a
            # replacement read (step.go ReadStep `replacing`): never a replacement. What it reads
            # from a replaced resource (its id from a new control plane) is new: what is computed
            # from it counts as changed.
            if _provider_urn(reg) in self.replaced:
                self.steps.append(Step("read-replacement", reg.name, reg.type, "its provider is replaced"))
            if {_provider_urn(reg), *reg.dependencies} & self.replaced:
                self.read_anew.add(reg.urn)
            return
        if not reg.custom:
            # A component has no provider to diff, but what its replace_with and deleted_with
            # name replaces it too (step_generator.go `diff`, for every resource with an old state).
            why = self.replaced_along(reg)
            if why:
                self.replace(reg, previous, why, False)
            return
        why, delete_first = self.why_replaced(reg, previous)
        if why:
            self.replace(reg, previous, why, delete_first)
        elif (new := _inputs_after(reg, self.replaced | self.read_anew, previous.inputs)) != previous.inputs:
            changed = sorted(k for k in {*new, *previous.inputs} if new.get(k) != previous.inputs.get(k))
            self.steps.append(Step("update", reg.name, reg.type, ", ".join(changed)))

    def delete_gone(self) -> None:
        registered = {urn for r in self.after.registrations for urn in (r.urn, *alias_urns(r))}
        gone = [reg for reg in self.before.registrations if reg.urn not in registered]
        gone_urns = {reg.urn for reg in gone}
        for reg in reversed(gone):
            if reg.options.get("protect") and not self.ignore_protect:
                self.steps.append(Step(REFUSED, reg.name, reg.type, "delete of a protected resource"))
            elif reg.options.get("deletedWith") in gone_urns:
                # Planned, but no provider call: deleting its deleted_with resource takes it along.
                self.steps.append(Step("delete", reg.name, reg.type,
                                       "skipped: goes with its deleted_with resource"))
            elif reg.options.get("read"):
                # A `.get` read is only dropped from the state (the engine's read-discard).
                self.steps.append(Step("discard", reg.name, reg.type))
            else:
                why = "retained: only removed from the state" if reg.options.get("retainOnDelete") else ""
                self.steps.append(Step("delete", reg.name, reg.type, why))


def plan(before: Program, after: Program, ignore_protect: bool = False) -> list[Step]:
    """The steps `pulumi up` would take to go from the `before` run's state to the `after` run's.
    A `refused` step means the preview fails (and `up` stops) with the engine's protect error;
    `ignore_protect` is `--ignore-protect` (pulumi v3.256+: up, preview, destroy)."""
    planner = _Planner(before, after, ignore_protect)
    try:
        for reg in after.registrations:
            planner.register(reg)
    except _Bail:
        return [*planner.steps, Step(STOPPED, "", "", "the engine stops planning here")]
    planner.delete_gone()
    return planner.steps


def preview_plan(before: Program, run_after: Callable[[PlatformMocks], Program],
                 ignore_protect: bool = False) -> list[Step]:
    """The steps `pulumi preview` shows, where `plan` gives what `up` then does: the program run
    (`run_after`, under the mocks it is given, in a preview) with the outputs of every command
    the preview updates unknown, until no more commands are updated (an unknown output can
    change another command's inputs)."""
    updated: frozenset[str] = frozenset()
    while True:
        steps = plan(before, run_after(PlatformMocks(updated_commands=updated)), ignore_protect)
        now = frozenset(step.name for step in steps if step.op == "update" and step.type == COMMAND)
        if now <= updated:
            return steps
        updated |= now


def ops(steps: list[Step]) -> dict[str, str]:
    """name -> the ops planned for it, e.g. {"tenant-a-worker-0": "delete-replaced,create-replacement"}."""
    found: dict[str, list[str]] = {}
    for step in steps:
        found.setdefault(step.name, []).append(step.op)
    return {name: ",".join(value) for name, value in found.items()}


def refused(steps: list[Step]) -> list[str]:
    """The resources whose step the engine refuses (protect), in plan order."""
    return [step.name for step in steps if step.op == REFUSED]


def failed(steps: list[Step]) -> list[str]:
    return [step.name for step in steps if step.op == FAILED]


def stopped(steps: list[Step]) -> bool:
    """Whether the engine stops planning (a bail), so the preview shows nothing after it."""
    return bool(steps) and steps[-1].op == STOPPED
