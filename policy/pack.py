"""Wrap the plain rules of rules.py into mandatory CrossGuard policies.

Unknown values. Rules never see pulumi-policy's props directly: they get `LazyProps`,
which reads a property only when a rule asks for it and turns pulumi-policy's
UnknownValueError into `rules.UNKNOWN`. So an unknown value a rule does not need (every
Command's kubeconfig environment on a fresh stack) cannot make the policy "not run during
preview", which pulumi-policy would report as advisory, letting a violating preview pass.

What a stack policy sees. The engine hands a StackValidationPolicy each resource's
*outputs* (pulumi/pulumi v3.276.0 pkg/resource/deploy/step_generator.go
`AnalyzeResources`: "AnalyzeStack is called on the final outputs of each resource"), and
in a preview of a fresh stack every Kubernetes resource whose provider is not configured
yet has no outputs at all: `{}` (recorded with the real engine, tests/fixtures/real-preview/).
The same engine calls every resource policy first, on every registered resource's
*inputs*, in the same policy-pack process (`analyzeAll` in `generateSteps`, before any
`AnalyzeStack`; untargeted resources included, with their old inputs). So the pack keeps
what its resource policies were shown (`SeenInputs`), and a stack rule judges each
resource on its outputs, or, where the engine gave none, on the inputs this run showed.
What neither shows is never a violation, and never a reason to skip other resources.
"""

from __future__ import annotations

import threading
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


class SeenInputs:
    """The inputs each resource policy was shown in this run, by URN.

    pulumi-policy serves the engine from a thread pool, so writes take a lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_urn: dict[str, Mapping] = {}

    def record(self, urn: str, props: Mapping) -> None:
        with self._lock:
            self._by_urn[urn] = props

    def get(self, urn: str) -> Mapping:
        with self._lock:
            return self._by_urn.get(urn, {})


def _resource(resource_type: str, name: str, props: Mapping, opts: Any, urn: str = "",
              parent: str = "") -> rules.Resource:
    return rules.Resource(resource_type, name, LazyProps(props),
                          list(getattr(opts, "additional_secret_outputs", None) or []), urn, parent)


def _stack_resource(resource: Any, seen: SeenInputs) -> rules.Resource:
    """A stack resource as the rules see it: its outputs, or the inputs seen this run."""
    props = resource.props if len(resource.props) else seen.get(resource.urn)
    parent = resource.parent.urn if resource.parent is not None else (
        getattr(resource.opts, "parent", None) or "")
    return _resource(resource.resource_type, resource.name, props, resource.opts, resource.urn, parent)


def _resource_policy(name: str, rule: Callable[[rules.Resource], list[str]],
                     seen: SeenInputs) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if not len(args.props):
            # A new resource a targeted update leaves out: the engine skips its Check and hands the
            # analyzers its old inputs, none (pulumi v3.276.0 pkg/resource/deploy/step_generator.go:
            # "If not targeted, stub out the provider check and use the old inputs directly").
            # Nothing is created, and nothing is known to judge.
            return
        seen.record(args.urn, args.props)
        for message in rule(_resource(args.resource_type, args.name, args.props, args.opts, args.urn)):
            report_violation(message, None)

    level = EnforcementLevel.ADVISORY if name in rules.ADVISORY_RULES else EnforcementLevel.MANDATORY
    return ResourceValidationPolicy(name=name, description=(rule.__doc__ or name).strip(),
                                    validate=validate, enforcement_level=level)


def _stack_policy(name: str, rule: Callable[[list[rules.Resource]], list[rules.Violation]],
                  seen: SeenInputs) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [_stack_resource(r, seen) for r in args.resources]
        for violation in rule(resources):
            report_violation(violation.message, violation.resource.urn or None)

    return StackValidationPolicy(name=name, description=(rule.__doc__ or name).strip(),
                                 validate=validate, enforcement_level=EnforcementLevel.MANDATORY)


def policies() -> list:
    """The pack's policies; one call is one pack process (they share what they have seen)."""
    seen = SeenInputs()
    return ([_resource_policy(n, r, seen) for n, r in rules.RESOURCE_RULES.items()]
            + [_stack_policy(n, r, seen) for n, r in rules.STACK_RULES.items()])
