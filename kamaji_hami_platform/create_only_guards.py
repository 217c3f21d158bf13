"""Settings a running platform cannot take, refused by `pulumi preview` before anything changes.

One guard per setting: a `local.Command` named `<owner>-create-only-<setting>`, `protect`ed,
with the setting's value as its only replacement trigger. A changed value asks the engine to
replace a protected resource, which it refuses in preview as in `up` ("unable to replace
resource ...<owner>-create-only-<setting> as it is currently marked for protection":
pulumi/pulumi v3.276.0 pkg/resource/deploy/step_generator.go, where a preview marks the
deployment failed and continues so every refusal shows, and an update stops before any
step of that resource). pulumi-command itself runs nothing in a preview
(pulumi-command v1.2.1 provider/pkg/provider/local/commandController.go), which is why a
guard that only fails in its own script would refuse halfway through `up`.

Setting by setting: a setting added in a later release is a new guard (a create), never a
changed trigger of an existing one, so no existing stack is refused for it. The trigger is
the bare value, so rewording the message below never replaces (and so never refuses) a guard.

The refusal itself is the engine's; the guard's `create` prints what it records and the way
out, and `pulumi preview --diff` shows the old and new value (the trigger) next to it.
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


def create_only_guards(owner: str, settings: Sequence[CreateOnlySetting],
                       values: Mapping[str, pulumi.Input[str]], way_out: str,
                       parent: pulumi.Resource) -> list[local.Command]:
    """One protected guard per setting, children of `parent`."""
    return [
        local.Command(
            guard_name(owner, setting.key),
            create=guard_script(setting, way_out),
            environment={GUARD_VALUE_ENV: values[setting.key]},
            triggers=[values[setting.key]],
            opts=pulumi.ResourceOptions(parent=parent, protect=True))
        for setting in settings
    ]
