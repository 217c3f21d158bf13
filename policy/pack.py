"""Wrap the plain rules of rules.py into mandatory CrossGuard policies.

Rules never see pulumi-policy's props directly: they get `LazyProps`, which reads a
property only when a rule asks for it and turns pulumi-policy's UnknownValueError into
`rules.UNKNOWN`. So an unknown value a rule does not need (every Command's kubeconfig
environment on a fresh stack) cannot make the policy "not run during preview", which
pulumi-policy would report as advisory, letting a violating preview pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import rules
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

PACK_NAME = "kamaji-hami-platform-guardrails"


def _lazy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return LazyProps(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return LazyList(value)
    return value


class LazyProps(Mapping):
    """A read-only view of pulumi-policy props: unknown values read as rules.UNKNOWN."""

    def __init__(self, target: Mapping) -> None:
        self._target = target

    def __getitem__(self, key: str) -> Any:
        try:
            return _lazy(self._target[key])
        except UnknownValueError:
            return rules.UNKNOWN

    def __iter__(self) -> Iterator[str]:
        return iter(self._target)

    def __len__(self) -> int:
        return len(self._target)


class LazyList(Sequence):
    """A read-only view of a list input: unknown elements read as rules.UNKNOWN."""

    def __init__(self, target: Sequence) -> None:
        self._target = target

    def __getitem__(self, index: Any) -> Any:
        try:
            return _lazy(self._target[index])
        except UnknownValueError:
            return rules.UNKNOWN

    def __len__(self) -> int:
        return len(self._target)


def _resource(resource_type: str, name: str, props: Mapping, opts: Any) -> rules.Resource:
    return rules.Resource(resource_type, name, LazyProps(props),
                          list(getattr(opts, "additional_secret_outputs", None) or []))


def _resource_policy(name: str, rule: Callable[[rules.Resource], list[str]]) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        for message in rule(_resource(args.resource_type, args.name, args.props, args.opts)):
            report_violation(message, None)

    return ResourceValidationPolicy(name=name, description=(rule.__doc__ or name).strip(),
                                    validate=validate, enforcement_level=EnforcementLevel.MANDATORY)


def _stack_policy(name: str, rule: Callable[[list[rules.Resource]], list[str]]) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [_resource(r.resource_type, r.name, r.props, r.opts) for r in args.resources]
        for message in rule(resources):
            report_violation(message, None)

    return StackValidationPolicy(name=name, description=(rule.__doc__ or name).strip(),
                                 validate=validate, enforcement_level=EnforcementLevel.MANDATORY)


def policies() -> list:
    return ([_resource_policy(n, r) for n, r in rules.RESOURCE_RULES.items()]
            + [_stack_policy(n, r) for n, r in rules.STACK_RULES.items()])
