"""What `make preview` and `make up` check in a stack's state before the engine runs, to say in
the platform's own words what the engine would only refuse (or, for an old state, do):

- a state written before the platform protected its kind cluster and control planes (an earlier
  main, before 0.1.0): the engine refuses a replacement only of what was protected before *and*
  after (pulumi v3.276.0 pkg/resource/deploy/step_generator.go), and such a state's kind cluster
  and control planes had other triggers and providers, so today's program would replace them, with
  every tenant's data, unrefused. Refused here, with the way out;
- a create-only setting whose guard recorded another value: the engine's refusal names only the
  guard's URN and offers to remove `protect`, which would destroy what the setting guards. Named
  here: the setting, the recorded and the configured value, and the safe ways out.

    python -m kamaji_hami_platform.tools.upgrade_check --stack dev [--mode preview|up]

Exit 0: nothing to say (or a stack without state). Exit 1: refused, with the reasons (`up`
stops; `preview` prints them and goes on, so the engine's refusal shows too). Never prints a
resource's inputs or outputs beyond the guards' recorded values (settings, never secrets).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kamaji_hami_platform import create_only_report
from kamaji_hami_platform.config import PlatformConfig, load_stack
from kamaji_hami_platform.create_only_report import MANAGEMENT_COMPONENT
from kamaji_hami_platform.tenant import control_plane
from kamaji_hami_platform.tools.stack_state import (
    Refused,
    deployment_of,
    export_state,
    resource_name,
    state_resources,
)

TCP_TYPE = f"kubernetes:{control_plane.API_VERSION}:{control_plane.KIND}"
COMMAND_TYPE = "command:local:Command"
UPGRADES_DOC = "docs/operations/upgrades.md"


def _recorded_value(resource: dict[str, Any]) -> str | None:
    triggers = (resource.get("inputs") or {}).get("triggers")
    return triggers[0] if isinstance(triggers, list) and triggers and isinstance(triggers[0], str) else None


def unprotected_state(resources: list[dict[str, Any]], platform: PlatformConfig) -> list[str]:
    """The kind cluster and control planes the state holds without protection."""
    kind = f"{MANAGEMENT_COMPONENT}-kind"
    holds_data = [r for r in resources if r.get("type") == TCP_TYPE
                  or (r.get("type") == COMMAND_TYPE and resource_name(r.get("urn", "")) == kind
                      and platform.management.is_kind)]
    return [resource_name(r["urn"]) for r in holds_data if not r.get("protect")]


def changed_settings(resources: list[dict[str, Any]], platform: PlatformConfig) -> list[str]:
    """One message per guard whose recorded value (in the state) is not the configured one."""
    recorded = {resource_name(r.get("urn", "")): _recorded_value(r)
                for r in resources if r.get("type") == COMMAND_TYPE}
    return create_only_report.changed_settings(recorded, platform)


def _program_reports(export: dict[str, Any]) -> bool:
    """Whether the last deployment exported the guards' values, which the program compares itself."""
    return any(r.get("type") == "pulumi:pulumi:Stack"
               and create_only_report.OUTPUT in (r.get("outputs") or {})
               for r in state_resources(export.get("deployment") or {}))


def problems(export: dict[str, Any], platform: PlatformConfig) -> tuple[list[str], list[str]]:
    """(what stops even a preview, what stops an up) for this state and config."""
    resources = state_resources(deployment_of(export))
    unprotected = unprotected_state(resources, platform)
    fatal = []
    if unprotected:
        fatal.append(f"this stack's state was written before the platform protected what holds data "
                     f"({', '.join(unprotected)} unprotected): the engine refuses a replacement only of "
                     "what was protected before and after, so in this run nothing would stop a change that "
                     "replaces the kind cluster or a control plane, and every tenant's data with it (the "
                     "releases before protection created them with other triggers and providers). Upgrade "
                     f"it the way {UPGRADES_DOC} says for such a stack: make down with the release that "
                     "deployed it, then make up with this one (every tenant starts empty)")
    return fatal, changed_settings(resources, platform)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--mode", choices=("preview", "up"), default="up")
    parser.add_argument("--root", type=Path, default=None, help="the project folder (default: here)")
    args = parser.parse_args(argv)
    try:
        platform = load_stack(args.stack, args.root)
        export = export_state(args.stack)
    except (Refused, ValueError) as error:
        # No readable state or config: the engine's own run says what is wrong.
        print(f"upgrade check skipped: {error}", file=sys.stderr)
        return 0
    if not state_resources(export.get("deployment") or {}):
        return 0  # a stack never deployed: nothing to upgrade
    try:
        fatal, refused = problems(export, platform)
    except Refused as error:
        print(f"upgrade check: {error}", file=sys.stderr)
        return 1
    if args.mode == "preview" and _program_reports(export):
        refused = []  # the program says it in the preview itself (create_only_report.py)
    for message in fatal + refused:
        print(f"error: {message}", file=sys.stderr)
    if fatal or (refused and args.mode == "up"):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
