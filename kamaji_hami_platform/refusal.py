"""The platform's refusals of bad input: one clear message that names the setting or argument.

A `Refusal` is a `pulumi.RunError`, which the Python language host reports as its message alone,
without a traceback (pulumi sdk/python/cmd/pulumi-language-python-exec: `except pulumi.RunError`
logs `str(e)`; any other exception is "Program failed with an unhandled exception" and the
stack trace), and a `ValueError`, which is what it is for callers that catch one.

The config and the planner import this without Pulumi (the Makefile and `kamaji-hami-plan` run
with a bare Python): there a Refusal is a ValueError alone, and nothing reports it but its caller.
"""

from __future__ import annotations

try:
    from pulumi import RunError as _ReportedAlone
except ImportError:  # the pure tools: no language host to report to
    class _ReportedAlone(Exception):  # type: ignore[no-redef]
        """Stands in for pulumi.RunError where Pulumi is not installed."""


class Refusal(_ReportedAlone, ValueError):
    """Input the platform refuses, before it registers what the input would have built."""
