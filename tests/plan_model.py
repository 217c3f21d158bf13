"""What `pulumi up` would do when the stack config changes, from two mock runs of the program.

Mocks do not plan, so this emulates the engine's step generator over the registrations of
a run before and a run after a change, with each provider's replace rules:

- a resource that is new is created; one that is gone is deleted (when it is `deleted_with` a
  resource deleted too, the engine still plans the delete but skips the provider call: the
  other's delete takes it along; pulumi/pulumi pkg/resource/deploy/step.go);
- an existing resource is replaced when its provider is replaced, a resource in its
  `replace_with` list or its `deleted_with` resource is replaced
  (pulumi/pulumi pkg/resource/deploy/step_generator.go `diff`,
  `calculateDependentReplacements`), or when a replace-key input changes: `triggers`
  of a Command (pulumi-command v1.2.1 provider/pkg/provider/common/inputs.go
  `provider:"replaceOnChanges"`), `clusterIdentifier` of a kubernetes provider,
  `.metadata.name`/`.metadata.namespace` of a Kubernetes object, `name`/`namespace`
  of a Helm release (pulumi-kubernetes provider.go and helm_release.go `forceNewFields`);
  any other changed input is an update;
- an input that depends (propertyDependencies) on a resource being replaced is unknown
  until that replacement exists, so it counts as changed: this is how a new kind
  cluster reaches everything built on it, as in the engine.

Steps come in the order the program registers resources, which follows dependencies. A
delete-before-replace resource is deleted before its replacement is created, and first
everything that cannot outlive it is deleted: what names it in `replace_with` or
`deleted_with`, what uses it as provider, what has a replace-key input computed from it,
transitively (step_generator.go `findDependentCascadeReplacements`,
`calculateDependentReplacements`); each of those is created again when the program registers
it. Deletions of removed resources come last, in reverse order. The order between steps of
resources that do not depend on each other is not the engine's (it runs those in parallel):
tests assert order only along dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.harness import Program, Registration

COMMAND = "command:local:Command"
KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
REPLACE_KEYS = {COMMAND: ("triggers",), KUBERNETES_PROVIDER: ("clusterIdentifier",),
                HELM_RELEASE: ("name", "namespace")}
KUBERNETES_IDENTITY = ("name", "namespace")
CHANGED = object()  # an input whose value is unknown until a replacement exists


@dataclass(frozen=True)
class Step:
    """One planned step: op is create, update, replace, delete, delete-replaced or create-replacement."""

    op: str
    name: str
    type: str
    why: str = ""

    def __str__(self) -> str:
        return f"{self.op} {self.name}" + (f" ({self.why})" if self.why else "")


def _provider_urn(reg: Registration) -> str:
    return reg.provider.rsplit("::", 1)[0] if reg.provider else ""


def _inputs_after(reg: Registration, replaced: set[str]) -> dict[str, Any]:
    """The new inputs, with every input that depends on a replaced resource marked unknown."""
    inputs = dict(reg.inputs)
    for key, deps in reg.options.get("propertyDependencies", {}).items():
        if replaced & set(deps):
            inputs[key] = CHANGED
    return inputs


def _replace_keys(reg: Registration, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    keys = [k for k in REPLACE_KEYS.get(reg.type, ()) if old.get(k) != new.get(k)]
    if reg.type.startswith("kubernetes:") and reg.type != HELM_RELEASE:
        old_meta, new_meta = old.get("metadata"), new.get("metadata")
        if new_meta is CHANGED:
            keys.append("metadata")
        elif isinstance(old_meta, dict) and isinstance(new_meta, dict):
            keys += [f"metadata.{k}" for k in KUBERNETES_IDENTITY if old_meta.get(k) != new_meta.get(k)]
    return keys


def _why_replaced(reg: Registration, before: Registration, replaced: set[str],
                  names: dict[str, str]) -> str | None:
    provider = _provider_urn(reg)
    if provider in replaced:
        return f"its provider {names[provider]} is replaced"
    for urn in reg.options.get("replaceWith", []):
        if urn in replaced:
            return f"replace_with {names[urn]}"
    deleted_with = reg.options.get("deletedWith")
    if deleted_with and deleted_with in replaced:
        return f"deleted_with {names[deleted_with]}"
    keys = _replace_keys(reg, before.inputs, _inputs_after(reg, replaced))
    return f"{', '.join(keys)} changed" if keys else None


def _cascade(root: str, before: list[Registration], already: set[str]) -> list[Registration]:
    """What must be deleted before `root` is, for a delete-before-replace of it, transitively."""
    doomed = {root}
    found: list[Registration] = []
    changed = True
    while changed:
        changed = False
        for reg in before:
            if reg.urn in doomed or reg.urn in already or not reg.custom or reg.options.get("read"):
                continue
            computed = {key for key, deps in reg.options.get("propertyDependencies", {}).items()
                        if doomed & set(deps)}
            if (doomed & set(reg.options.get("replaceWith", []))
                    or reg.options.get("deletedWith") in doomed or _provider_urn(reg) in doomed
                    or computed & set(_replace_key_names(reg))):
                doomed.add(reg.urn)
                found.append(reg)
                changed = True
    return found


def _replace_key_names(reg: Registration) -> tuple[str, ...]:
    if reg.type.startswith("kubernetes:") and reg.type != HELM_RELEASE:
        return ("metadata",)
    return REPLACE_KEYS.get(reg.type, ())


def plan(before: Program, after: Program) -> list[Step]:
    """The steps `pulumi up` would take to go from the `before` run's state to the `after` run's."""
    old = {reg.urn: reg for reg in before.registrations}
    names = {reg.urn: reg.name for reg in [*before.registrations, *after.registrations]}
    replaced: set[str] = set()
    deleted_early: set[str] = set()
    steps: list[Step] = []
    for reg in after.registrations:
        previous = old.get(reg.urn)
        if previous is None:
            steps.append(Step("create", reg.name, reg.type))
            continue
        if reg.urn in deleted_early:
            steps.append(Step("create-replacement", reg.name, reg.type, "deleted before a replacement"))
            continue
        why = _why_replaced(reg, previous, replaced, names) if reg.custom else None
        if why:
            replaced.add(reg.urn)
            if reg.options.get("deleteBeforeReplace"):
                for dependent in reversed(_cascade(reg.urn, before.registrations, deleted_early)):
                    deleted_early.add(dependent.urn)
                    replaced.add(dependent.urn)
                    steps.append(Step("delete-replaced", dependent.name, dependent.type,
                                      f"cannot outlive {reg.name}"))
                steps += [Step("delete-replaced", reg.name, reg.type, why),
                          Step("create-replacement", reg.name, reg.type, why)]
            else:
                steps += [Step("create-replacement", reg.name, reg.type, why),
                          Step("delete-replaced", reg.name, reg.type, why)]
        elif reg.custom and _inputs_after(reg, replaced) != previous.inputs:
            changed = sorted(k for k in {*reg.inputs, *previous.inputs}
                             if reg.inputs.get(k) != previous.inputs.get(k))
            steps.append(Step("update", reg.name, reg.type, ", ".join(changed)))
    gone = [reg for reg in before.registrations if reg.urn not in {r.urn for r in after.registrations}]
    gone_urns = {reg.urn for reg in gone}
    for reg in reversed(gone):
        if reg.options.get("deletedWith") in gone_urns:
            # Planned, but no provider call: deleting its deleted_with resource takes it along.
            steps.append(Step("delete", reg.name, reg.type, "skipped: goes with its deleted_with resource"))
            continue
        if reg.options.get("read"):
            # A `.get` read is only dropped from the state (the engine's read-discard, "discard").
            steps.append(Step("discard", reg.name, reg.type))
            continue
        why = "retained: only removed from the state" if reg.options.get("retainOnDelete") else ""
        steps.append(Step("delete", reg.name, reg.type, why))
    return steps


def ops(steps: list[Step]) -> dict[str, str]:
    """name -> the ops planned for it, e.g. {"tenant-a-worker-0": "delete-replaced,create-replacement"}."""
    found: dict[str, list[str]] = {}
    for step in steps:
        found.setdefault(step.name, []).append(step.op)
    return {name: ",".join(value) for name, value in found.items()}
