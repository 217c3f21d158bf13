"""The policy pack's guarantees that the program can hold itself, on values it knows before it
registers anything: so they hold in every preview, whatever the pack can see there (a policy does
not run on a value the preview does not know), and for a program that composes the components
with its own `helm_values` and `charts`. The pack (policy/) still checks what the program
registers. Which stage enforces each guardrail, in each mode: docs/development/ci.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FAIL = "Fail"
WEBHOOK_POLICY_PATH = ("scheduler", "admissionWebhook", "failurePolicy")
LOCAL_CHART_PREFIXES = (".", "/")
UNPINNED_VERSIONS = ("", "latest")


def hami_webhook_fails_closed(values: Any, where: str) -> None:
    """HAMi's admission webhook keeps failurePolicy Fail (the pack's `hami-webhook-fails-closed`):
    with Ignore, a webhook the API server cannot reach lets GPU pods past HAMi unnoticed."""
    if not isinstance(values, Mapping):
        return  # an Output: the pack judges it once known
    policy: Any = values
    for key in WEBHOOK_POLICY_PATH:
        policy = policy.get(key) if isinstance(policy, Mapping) else None
    if policy != FAIL:
        path = ".".join(WEBHOOK_POLICY_PATH)
        raise ValueError(f"{where}: helm_values {path} is {policy!r}, not {FAIL!r}: HAMi's webhook must "
                         "fail closed, or a webhook the tenant API cannot reach lets GPU pods past HAMi "
                         "(policy hami-webhook-fails-closed)")


def chart_pinned(override: Mapping[str, Any] | None, where: str) -> None:
    """A chart override from a repository names its version (the pack's `images-pinned`); a local
    folder is pinned by its content."""
    if not override or not isinstance(override.get("chart"), str):
        return
    if override["chart"].startswith(LOCAL_CHART_PREFIXES):
        return
    version = str(override.get("version") or "")
    if version in UNPINNED_VERSIONS:
        raise ValueError(f"{where}: chart {override['chart']!r} has no pinned version ({version or 'none'}): "
                         "give `version`, or whatever the repository serves that day is installed "
                         "(policy images-pinned)")
