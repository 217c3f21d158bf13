"""Resource inputs that may arrive from another language.

Through Pulumi's component provider a resource input arrives as the resource, an Output of it,
its ID or URN, or unknown in a preview; `depends_on`, `replace_with` and `deleted_with` need a
resource, so each form becomes a `ResourceInput`, and one that names no resource is refused.

Upstream: pulumi 3.272.0 sdk/python/lib/pulumi/provider/server.py `_construct_inputs`,
`_select_value`; runtime/rpc.py `deserialize_resource`, `deserialize_output_value`;
runtime/resource.py `prepare_resource` (awaits the URNs); sdk/nodejs/runtime/rpc.ts
`deserializeProperty` (falls back to the ID).
Rationale: docs/design/component-inputs.md.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.output import Unknown
from pulumi.resource import DependencyResource

from kamaji_hami_platform.refusal import Refusal

COMMAND = "command:local:Command"
WORKER_JOIN_ID_ENV = "KHP_JOIN_ID"
"""A host worker's Ready wait holds the id of the host's current join in this environment
variable; a HamiNodePool annotates the host's GPU registration with it, so a new join (a new Node)
applies the registration again."""
"""The type of pulumi-command's local Command: the management cluster, its network, the workers."""

# pulumi-command's IDs for a local Command: the resource's name and 8 hex digits (pulumi-command
# v1.2.1 provider/pkg/provider/local/commandController.go `Create`: resource.NewUniqueHex(name, 8, 0)).
_COMMAND_ID_SUFFIX = re.compile(r"[0-9a-f]{8}")


@dataclass(frozen=True)
class ResourceInput:
    """What a component uses of an input that is a resource."""

    resource: pulumi.Resource
    """The resource, or a stand-in carrying its URN: what `replace_with` and `deleted_with` name."""
    ordering: tuple[pulumi.Input[Any], ...] = field(default=())
    """What to add to `depends_on`: nothing for a resource given as itself (a Python program,
    ordered as it always was); else the resource and the input's own dependencies."""


class _StandIn(pulumi.CustomResource):
    """A resource known by a URN that an Output gives: only its URN is ever read, as of the SDK's
    DependencyResource (pulumi/resource.py), whose URN is known at once."""

    def __init__(self, urn: pulumi.Output[str | None]) -> None:
        super().__init__(t="", name="", props={}, opts=None, dependency=True)
        self.__dict__["urn"] = urn


def _spelled(name: str) -> str:
    """An input's name in Python and as another language's SDK spells it (the schema's camelCase)."""
    head, *rest = name.split("_")
    camel = head + "".join(part.capitalize() for part in rest)
    return name if camel == name else f"{name} ({camel})"


def resource_input(value: Any, type_token: str, where: str, name: str) -> ResourceInput | None:
    """One resource input, in whatever form it arrived; None when it was not given."""
    return None if value is None else _resource_input(value, type_token, f"{where}: {_spelled(name)}")


def _resource_input(value: Any, type_token: str, label: str) -> ResourceInput:
    if isinstance(value, pulumi.Resource):
        return ResourceInput(value)
    if isinstance(value, pulumi.Output):
        return _from_output(value, _located(value, type_token, label))
    dependency = DependencyResource(_urn_given(value, type_token, label))
    return ResourceInput(dependency, (dependency,))


def resource_inputs_by_name(names: Sequence[str], values: Any, type_token: str, where: str,
                            name: str) -> dict[str, ResourceInput]:
    """A list of resource inputs, one per name, in order: a list (of resources, URNs, Outputs) or
    an Output of the whole list, whose items are told apart by their IDs or names."""
    label = f"{where}: {_spelled(name)}"
    if isinstance(values, pulumi.Output):
        return {node: _from_output(values, _located(values, type_token, label, names, index))
                for index, node in enumerate(names)}
    values = list(values)
    if len(values) != len(names):
        raise Refusal(_count_mismatch(label, len(values), names))
    return {node: _resource_input(value, type_token, f"{label}[{index}] ({node})")
            for index, (node, value) in enumerate(zip(names, values, strict=True))}


def _from_output(value: pulumi.Output[Any], urn: Any) -> ResourceInput:
    stand_in = _StandIn(pulumi.Output.from_input(urn))
    # The Output's own dependencies too (pulumi/runtime/_depends_on.py `_resolve_depends_on` takes an
    # Output's resources and its value, here None): what it depends on orders even while unknown.
    return ResourceInput(stand_in, (stand_in, value.apply(lambda _: None)))


def _count_mismatch(label: str, count: int, names: Sequence[str]) -> str:
    return f"{label}: {count} workers for {len(names)} nodes ({', '.join(names)})"


def _is_urn(text: str) -> bool:
    return text.startswith("urn:pulumi:") and text.count("::") >= 3


def _urn_type(urn: str) -> str:
    """`urn:pulumi:<stack>::<project>::<parent types$>type::<name>` (sdk/nodejs/runtime/rpc.ts
    `deserializeProperty` parses it the same way; pulumi/urn.py `_parse_urn`)."""
    return urn.split("::")[2].split("$")[-1]


def _urn_name(urn: str) -> str:
    return urn.split("::", 3)[3]


def _urn_given(value: Any, type_token: str, label: str) -> str:
    """The URN a plain (not Output) value gives, or why it gives none."""
    if isinstance(value, str) and _is_urn(value):
        return _checked(value, type_token, label)
    if isinstance(value, str):
        raise Refusal(_id_only(label, value, type_token))
    if isinstance(value, Unknown):
        raise Refusal(f"{label} arrived unknown and without dependencies: nothing names the "
                      f"{type_token} to order after; pass the resource or its URN")
    raise Refusal(f"{label} must be a {type_token} (the resource, or its URN); got "
                  f"{type(value).__name__}")


def _checked(urn: str, type_token: str, label: str) -> str:
    if _urn_type(urn) != type_token:
        raise Refusal(f"{label} is {urn}, a {_urn_type(urn)}, not a {type_token}")
    return urn


def _id_only(label: str, resource_id: str, type_token: str) -> str:
    return (f"{label} arrived as the ID {resource_id!r}, without the URN of a {type_token} among its "
            "dependencies: an ID names no resource to depend on or to be replaced with. A program's "
            "SDK sends an ID when it cannot rehydrate the resource (e.g. TypeScript never loaded "
            "@pulumi/command); pass the component's output as it is (it carries the URN), or the URN")


async def _located(value: pulumi.Output[Any], type_token: str, label: str,
                   names: Sequence[str] | None = None, index: int = 0) -> str | None:
    """The URN of the resource an Output gives (or, with `names`, item `index` of an Output of a
    list, for node names[index]), from its value or its dependencies; None only in a preview,
    where nothing may be known yet."""
    item = await value.future(with_unknowns=True)  # pulumi/output.py `Output.future`
    hint = None
    if names is not None:
        if isinstance(item, list) and len(item) != len(names):
            raise Refusal(_count_mismatch(label, len(item), names))
        item = item[index] if isinstance(item, list) else None  # None: the whole list is unknown
        hint = names[index]
        label = f"{label}[{index}] ({hint})"
    if isinstance(item, pulumi.Resource):
        return await item.urn.future()
    if isinstance(item, str) and _is_urn(item):
        return _checked(item, type_token, label)
    dependencies = [await resource.urn.future() for resource in await value.resources()]
    typed = [urn for urn in dependencies if urn and _urn_type(urn) == type_token]
    if isinstance(item, str):
        # The dependency the ID belongs to (its name leads a pulumi-command ID), or the only one.
        carried = [urn for urn in typed if item.startswith(_urn_name(urn))
                   and _COMMAND_ID_SUFFIX.fullmatch(item[len(_urn_name(urn)):])]
        if len(carried) == 1:
            return carried[0]
        if names is None and len(typed) == 1:
            return typed[0]
        raise Refusal(_id_only(label, item, type_token))
    if item is not None and not isinstance(item, Unknown):
        raise Refusal(f"{label} must be a {type_token} (the resource, or its URN); got "
                      f"{type(item).__name__}")
    # Unknown (a preview): the only dependency of the type, or the one the hint (a node) names.
    if names is None and len(typed) == 1:
        return typed[0]
    if hint is not None:
        named = ([urn for urn in typed if _urn_name(urn) == hint]
                 or [urn for urn in typed if _urn_name(urn).endswith(f"-{hint}")])
        if len(named) == 1:
            return named[0]
    if pulumi.runtime.is_dry_run():
        # The preview cannot show this input's ordering; `up`, where the value is known, has it.
        pulumi.log.warn(f"{label} is unknown in this preview and carries no {type_token} among its "
                        "dependencies: the preview shows no ordering after it, `up` resolves it")
        return None
    raise Refusal(f"{label} arrived without a value and without the URN of a {type_token} among "
                  "its dependencies: nothing names the resource to order after")
