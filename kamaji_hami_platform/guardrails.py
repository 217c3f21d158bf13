"""The policy pack's guarantees that the program can hold itself, on values it knows before it
registers anything: so they hold in every preview, whatever the pack can see there (a policy does
not run on a value the preview does not know), and for a program that composes the components
with its own `helm_values` and `charts`. The pack (policy/) still checks what the program
registers. Which stage enforces each guardrail, in each mode: docs/development/ci.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pulumi

from kamaji_hami_platform.refusal import Refusal

FAIL = "Fail"
WEBHOOK_PATH = ("scheduler", "admissionWebhook")
SELECTORS = ("namespaceSelector", "objectSelector")
SELECTOR_TERMS = ("matchLabels", "matchExpressions")
LOCAL_CHART_PREFIXES = (".", "/")
UNPINNED_VERSIONS = ("", "latest")
# One exact chart version (semver 2, as Helm reads it): anything else is a range Helm resolves to
# whatever the repository serves that day (`^2.0`, `~2.10`, `2.x`, `>=2.10.0`, `2.10`, `*`).
EXACT_VERSION = re.compile(r"v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")
WEBHOOK_RULE = "policy hami-webhook-fails-closed"


def plain_helm_values(helm_values: Any, where: str) -> None:
    """`helm_values` is a dict the program can read before it registers anything: an Output could
    hide a webhook that lets GPU pods past HAMi until `up` (and a preview would not know it)."""
    if helm_values is not None and not isinstance(helm_values, Mapping):
        raise Refusal(f"{where}: helm_values is {type(helm_values).__name__}, not a dict: give a dict "
                      "(Outputs only at keys outside scheduler.admissionWebhook), so the platform can "
                      f"check HAMi's webhook before anything is registered ({WEBHOOK_RULE})")


# Kamaji chart values the kind platform's kamaji-system NetworkPolicies depend on
# (management/network_policy.py selects by the charts' name labels and admits kamaji-etcd's ports):
# Kamaji 26.8.2-edge charts/kamaji/values.yaml nameOverride; kamaji-etcd v0.15.0 values.yaml
# nameOverride, clientPort, peerApiPort.
POLICY_SELECTED_KAMAJI_VALUES = (("nameOverride",), ("kamaji-etcd", "nameOverride"),
                                 ("kamaji-etcd", "clientPort"), ("kamaji-etcd", "peerApiPort"))


def kamaji_values_keep_policies(kamaji_values: Any, where: str) -> None:
    """On kind the platform's NetworkPolicies in kamaji-system select Kamaji's and kamaji-etcd's
    pods by their charts' labels and admit the datastore's ports: a value that changes them would
    leave the datastore unreachable with no error before `up` breaks."""
    given = [".".join(path) for path in POLICY_SELECTED_KAMAJI_VALUES
             if _at(kamaji_values, path) not in (None, "")]
    if given:
        raise Refusal(f"{where}: helm_values kamaji {', '.join(given)}: the platform's NetworkPolicies in "
                      "kamaji-system select Kamaji's and kamaji-etcd's pods by their charts' labels and "
                      "admit kamaji-etcd's ports (kamaji_hami_platform/management/network_policy.py); "
                      "leave these at the chart's defaults")


def hami_webhook_fails_closed(values: Any, where: str, excluded_namespaces: Iterable[str] = ()) -> None:
    """HAMi's admission webhook sees every GPU pod, and a webhook that cannot be reached refuses
    them (the pack's `hami-webhook-fails-closed`). Each of these keys of HAMi chart 2.10.0's
    values.yaml lets a GPU pod past HAMi unnoticed: `failurePolicy` other than Fail (a webhook the
    tenant API cannot reach), `enabled: false` (no webhook), `customURL.enabled` (a URL outside the
    chart's Service), `whitelistNamespaces` beyond the platform's own system namespaces, and
    selector terms that narrow the pods it sees."""
    webhook = _at(values, WEBHOOK_PATH)
    if _holds_output(webhook):
        raise Refusal(f"{where}: helm_values {'.'.join(WEBHOOK_PATH)} holds an Output: give its keys as "
                      "plain values, so the platform can check them before anything is registered "
                      f"({WEBHOOK_RULE})")
    webhook = webhook if isinstance(webhook, Mapping) else {}
    problems = list(_webhook_problems(webhook, set(excluded_namespaces)))
    if problems:
        raise Refusal(f"{where}: helm_values " + "; ".join(problems) + ": HAMi's webhook must see every "
                      "GPU pod and fail closed, or GPU pods get past HAMi's limits unnoticed "
                      f"({WEBHOOK_RULE})")


def _webhook_problems(webhook: Mapping[str, Any], excluded: set[str]) -> Iterator[str]:
    path = ".".join(WEBHOOK_PATH)
    policy = webhook.get("failurePolicy")
    if policy != FAIL:
        yield f"{path}.failurePolicy is {policy!r}, not {FAIL!r}"
    if webhook.get("enabled", True) is not True:
        yield f"{path}.enabled is {webhook['enabled']!r}, not true"
    custom_url = webhook.get("customURL")
    if isinstance(custom_url, Mapping) and custom_url.get("enabled", False) is not False:
        yield f"{path}.customURL.enabled is {custom_url['enabled']!r}, not false"
    listed = webhook.get("whitelistNamespaces") or []
    if not isinstance(listed, list):
        listed = [repr(listed)]
    extra = sorted(str(name) for name in listed if name not in excluded)
    if extra:
        allowed = ", ".join(sorted(excluded)) or "none"
        yield f"{path}.whitelistNamespaces adds {', '.join(extra)} (only {allowed} may be listed)"
    for selector in SELECTORS:
        for term in SELECTOR_TERMS:
            if _at(webhook, (selector, term)):
                yield f"{path}.{selector}.{term} narrows the pods it sees"


def _holds_output(value: Any) -> bool:
    if isinstance(value, pulumi.Output):
        return True
    if isinstance(value, Mapping):
        return any(_holds_output(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_output(item) for item in value)
    return False


def _at(values: Any, path: Sequence[str]) -> Any:
    for key in path:
        values = values.get(key) if isinstance(values, Mapping) else None
    return values


def chart_pinned(override: Mapping[str, Any] | None, where: str) -> None:
    """A chart override from a repository names its version (the pack's `images-pinned`); a local
    folder is pinned by its content."""
    if not override or not isinstance(override.get("chart"), str):
        return
    if override["chart"].startswith(LOCAL_CHART_PREFIXES):
        return
    version = str(override.get("version") or "")
    if version in UNPINNED_VERSIONS:
        raise Refusal(f"{where}: chart {override['chart']!r} has no pinned version ({version or 'none'}): "
                      "give `version`, or whatever the repository serves that day is installed "
                      "(policy images-pinned)")
    if not EXACT_VERSION.fullmatch(version):
        raise Refusal(f"{where}: chart {override['chart']!r} version {version!r} is a range, not one "
                      "version (x.y.z): Helm installs whatever newest release of it the repository "
                      "serves that day (policy images-pinned)")
