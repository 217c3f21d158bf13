"""Wrap the plain rules of rules.py into mandatory CrossGuard policies."""

from __future__ import annotations

from collections.abc import Callable

import rules
from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

PACK_NAME = "kamaji-hami-platform-guardrails"


def _resource(args: ResourceValidationArgs) -> rules.Resource:
    return rules.Resource(args.resource_type, args.name, dict(args.props),
                          list(args.opts.additional_secret_outputs or []))


def _resource_policy(name: str, rule: Callable[[rules.Resource], list[str]]) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        for message in rule(_resource(args)):
            report_violation(message, None)

    return ResourceValidationPolicy(name=name, description=(rule.__doc__ or name).strip(),
                                    validate=validate, enforcement_level=EnforcementLevel.MANDATORY)


def _stack_policy(name: str, rule: Callable[[list[rules.Resource]], list[str]]) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [rules.Resource(r.resource_type, r.name, dict(r.props),
                                    list(r.opts.additional_secret_outputs or [])) for r in args.resources]
        for message in rule(resources):
            report_violation(message, None)

    return StackValidationPolicy(name=name, description=(rule.__doc__ or name).strip(),
                                 validate=validate, enforcement_level=EnforcementLevel.MANDATORY)


def policies() -> list:
    return ([_resource_policy(n, r) for n, r in rules.RESOURCE_RULES.items()]
            + [_stack_policy(n, r) for n, r in rules.STACK_RULES.items()])
