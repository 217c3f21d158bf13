"""Settings a running platform cannot take, refused by `pulumi preview` before anything changes.

One guard per setting: a protected `local.Command` `<owner>-create-only-<setting>` whose only
replacement trigger is the setting's bare value, so a changed value is a replacement the engine
refuses in preview as in `up` (pulumi-command itself runs nothing in a preview).

Upstream: pulumi v3.276.0 pkg/resource/deploy/step_generator.go (protect refuses a replace);
pulumi-command v1.2.1 provider/pkg/provider/local/commandController.go (no run in preview).
Rationale: docs/design/management-cluster.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
from pulumi_command import local

from kamaji_hami_platform.shell_templates import Text
from kamaji_hami_platform.shell_templates import render as render_script

GUARD_VALUE_ENV = "SETTING_VALUE"


@dataclass(frozen=True)
class CreateOnlySetting:
    """A setting a running resource cannot take: its name in the guard, its config path, why."""

    key: str
    path: str
    reason: str


def guard_name(owner: str, key: str) -> str:
    return f"{owner}-create-only-{key}"


def guard_script(setting: CreateOnlySetting, way_out: str) -> str:
    """What the guard prints on create: the setting, its value, why it is fixed, the way out."""
    return render_script("kamaji_hami_platform", "create_only_guard.sh", path=Text(setting.path),
                         value_env=Text(GUARD_VALUE_ENV), reason=Text(setting.reason), way_out=Text(way_out))


def recorded_values(owner: str, settings: Sequence[CreateOnlySetting],
                    guards: Sequence[local.Command]) -> dict[str, pulumi.Output[str]]:
    """Each guard's value as its own state holds it (its trigger), by guard name: what the running
    platform was created with, also after a targeted `up` that left the guard out (the config's
    value would then claim a change that never ran)."""
    return {guard_name(owner, setting.key): guard.triggers.apply(_first)
            for setting, guard in zip(settings, guards, strict=True)}


def _first(triggers: Sequence[str] | None) -> str:
    return str(triggers[0]) if triggers else ""


def create_only_guards(owner: str, settings: Sequence[CreateOnlySetting],
                       values: Mapping[str, pulumi.Input[str]], way_out: str,
                       parent: pulumi.Resource) -> list[local.Command]:
    """One protected guard per setting, children of `parent`."""
    return [
        local.Command(
            guard_name(owner, setting.key),
            create=guard_script(setting, way_out),
            environment={GUARD_VALUE_ENV: values[setting.key]},
            # The bare value only: rewording the message never replaces (so never refuses) a guard.
            triggers=[values[setting.key]],
            opts=pulumi.ResourceOptions(parent=parent, protect=True))
        for setting in settings
    ]
