"""A tier that skips proves nothing: `make engine`, `make sim` and `make ssh` (and so `.ci/run`) set
`KHP_REQUIRE_TIER=<tier>`, and then a test of that tier that skips fails, a fixture that cannot set
the tier up ends the run with its reason, and a run that collects no test of the tier fails.
Without the variable (`make ssh ALLOW_SKIP=1`, or pytest by hand) the tier skips as before, saying
why (`-rs`).

A pytest plugin: tests/conftest.py takes its hooks; `pytest -p tests.tiers` loads it elsewhere.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_TIER = "KHP_REQUIRE_TIER"
TIERS = ("engine", "sim", "ssh", "live")
# How to run each tier where it can, for the message of a run that cannot.
WHERE = {"engine": "Go >= 1.26, Python 3.11 and openssl (docs/development/engine-tier.md)",
         "sim": "Go >= 1.26 and openssl (docs/development/testing.md)",
         "ssh": "root, unshare and a Debian-based host: sudo make ssh (docs/development/testing.md)",
         "live": "root, Go >= 1.26 and a Debian-based host: sudo make live-engine-test "
                 "(docs/development/live-tier.md)"}


def required() -> str | None:
    """The tier this run must run in full, if any."""
    tier = os.environ.get(REQUIRE_TIER, "")
    return tier if tier in TIERS else None


def unavailable(tier: str, reason: str) -> NoReturn:
    """The tier cannot be set up here: skip, or end the run when the tier is required."""
    if required() == tier:
        pytest.exit(f"{REQUIRE_TIER}={tier}: the {tier} tier cannot run here: {reason}. A tier that skips "
                    f"proves nothing, so this run fails: run it with {WHERE[tier]}, or let it skip: "
                    f"make {tier} ALLOW_SKIP=1", returncode=1)
    pytest.skip(reason)


def pytest_collection_finish(session: pytest.Session) -> None:
    tier = required()
    if tier and not any(item.get_closest_marker(tier) for item in session.items):
        pytest.exit(f"{REQUIRE_TIER}={tier}: no test of the {tier} tier was collected, so nothing was "
                    "tested", returncode=1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    tier = required()
    if tier and report.skipped and item.get_closest_marker(tier) and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (f"{REQUIRE_TIER}={tier}: a test of the tier skipped ({reason}), and a skip "
                           "proves nothing")
    return report
