"""Reading a stack's state through the Pulumi CLI, for the platform's state tools
(kamaji_hami_platform/tools/protection.py): run a tool, export the state, find its resources.

Resource inputs and outputs are never printed (they may hold secret ciphertext).
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

SUPPORTED_SCHEMA_VERSIONS = (3, 4)  # 4 = 3 plus a `features` list (pulumi/pulumi apitype)
URN_SEPARATOR = "::"
TOOL_TIMEOUT_SECONDS = 60
PULUMI_TIMEOUT_SECONDS = 300  # an export of a large stack takes a while
STDERR_TAIL_LINES = 5
STACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*){0,2}")


class Refused(Exception):
    """A one-line reason not to touch the state (exit 1)."""


def resource_name(urn: str) -> str:
    """The logical name: what follows the last `::` of a URN."""
    return urn.rsplit(URN_SEPARATOR, 1)[-1]


def deployment_of(export: dict[str, Any]) -> dict[str, Any]:
    """The `deployment` of a `pulumi stack export` document, checked for a schema these tools know."""
    version = export.get("version")
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise Refused(f"state schema version {version!r} is not one this command reads "
                      f"({', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))})")
    deployment = export.get("deployment")
    if not isinstance(deployment, dict) or not isinstance(deployment.get("resources", []), list):
        raise Refused("the export has no deployment with a resource list")
    return deployment


def state_resources(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    """The resources of `resources`, then those of `pending_operations`."""
    pending = [op.get("resource", {}) for op in deployment.get("pending_operations") or []]
    return list(deployment.get("resources") or []) + pending


def stderr_tail(text: str | bytes | None, lines: int = STDERR_TAIL_LINES) -> str:
    """The last non-empty lines of a tool's stderr, joined with ` | ` for a one-line message."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    tail = [line.strip() for line in (text or "").splitlines() if line.strip()][-lines:]
    return " | ".join(tail) if tail else "(no error output)"


def run(argv: list[str], timeout: float = TOOL_TIMEOUT_SECONDS) -> subprocess.CompletedProcess[str]:
    """Run a tool without a shell; a missing tool or a hang is a refusal, an exit code is not."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError as error:
        raise Refused(f"`{argv[0]}` is not installed or not on PATH") from error
    except subprocess.TimeoutExpired as error:
        raise Refused(f"`{' '.join(argv)}` did not finish within {timeout:g} s") from error


def export_state(stack: str) -> dict[str, Any]:
    """The stack's state, parsed from `pulumi stack export`."""
    result = run(["pulumi", "stack", "export", "--stack", stack], timeout=PULUMI_TIMEOUT_SECONDS)
    if result.returncode != 0:
        raise Refused(f"`pulumi stack export --stack {stack}` failed (exit {result.returncode}): "
                      f"{stderr_tail(result.stderr)}")
    try:
        export = json.loads(result.stdout)
    except json.JSONDecodeError as error:
        # The position only: the text itself is state and is not printed.
        raise Refused(f"`pulumi stack export` printed no valid JSON (line {error.lineno})") from error
    if not isinstance(export, dict):
        raise Refused("`pulumi stack export` printed JSON that is not a deployment")
    return export
