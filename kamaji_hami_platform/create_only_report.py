"""The platform's own words for a create-only setting changed on a running platform.

The engine refuses such a change at the setting's guard (create_only_guards.py), with a message
that names only the guard's URN and offers to remove `protect`, which would let the change destroy
what the setting guards. The stack program exports each guard's value as the guard's own state
holds it (`createOnlySettings`; create_only_guards.py `recorded_values`),
reads its own stack's previous outputs in the next preview (a StackReference to itself: the backend's
last checkpoint, empty for a stack never deployed; pulumi pkg/backend/diy/state.go
`getSnapshotStackOutputs`) and reports, as an error of the preview next to the engine's refusal,
each setting whose value differs: its recorded and configured value and the safe way out.
`make preview`/`make up` say the same from the state (tools/upgrade_check.py), also for a stack
deployed before this output existed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

from kamaji_hami_platform import state_backend
from kamaji_hami_platform.config import ManagementConfig, PlatformConfig
from kamaji_hami_platform.create_only_guards import guard_name
from kamaji_hami_platform.management import render as management_render
from kamaji_hami_platform.tenant import admin_credential, control_plane

OUTPUT = "createOnlySettings"
MANAGEMENT_COMPONENT = "management"  # the stack program's ManagementCluster (__main__.py)
PREVIOUS_DEPLOYMENT = "previous-deployment"


@dataclass(frozen=True)
class GuardedSetting:
    """A create-only setting as the config gives it now, with its guard and its way out."""

    guard: str
    path: str
    value: str
    way_out: str
    refused_at: str  # the resources the engine refuses the change at


def guarded_settings(platform: PlatformConfig) -> list[GuardedSetting]:
    """Every create-only guard the stack program registers for this config, with its value."""
    management = platform.management
    values = management_render.management_create_only_values(management)
    found = [GuardedSetting(guard_name(MANAGEMENT_COMPONENT, s.key), s.path, values[s.key],
                            management_render.MANAGEMENT_WAY_OUT, _management_refused_at(management, s.key))
             for s in management_render.management_create_only(management)]
    for tenant in platform.tenants:
        # As the component computes it: a hosts tenant's settings carry no addressBlock
        # (config/settings.py `tenant_settings`), so its component reads 0.
        registered = dataclasses.replace(tenant, address_block=0) if tenant.on_hosts else tenant
        values = control_plane.create_only_values(registered, management)
        found += [GuardedSetting(guard_name(tenant.name, s.key), s.path, values[s.key],
                                 control_plane.create_only_way_out(tenant), guard_name(tenant.name, s.key))
                  for s in control_plane.create_only_settings(tenant)]
    return found


def _management_refused_at(management: ManagementConfig, key: str) -> str:
    """The guard, and for a setting kind creates its cluster with, the cluster too: it keeps the
    value in its own replacement trigger, so it refuses the change even once the guard was
    replaced (after `pulumi state unprotect`)."""
    guard = guard_name(MANAGEMENT_COMPONENT, key)
    if management.is_kind and key in management_render.KIND_CLUSTER_SETTINGS:
        return f"{guard} and {MANAGEMENT_COMPONENT}-{management_render.KIND_CLUSTER_RESOURCE}"
    return guard


def changed_settings(recorded: Mapping[str, Any], platform: PlatformConfig) -> list[str]:
    """One message per guard whose recorded value is not the configured one."""
    messages = []
    for setting in guarded_settings(platform):
        old = recorded.get(setting.guard)
        if isinstance(old, str) and old != setting.value:
            messages.append(f"{setting.path} is {setting.value!r} in the config, but the running platform "
                            f"was created with {old!r}, and it cannot change on a running platform "
                            f"(the engine refuses it at {setting.refused_at}; do not remove `protect`, which "
                            f"would let it destroy what the setting guards). The way out: {setting.way_out}.")
    return messages


def refusing_resources(platform: PlatformConfig) -> set[str]:
    """The resources the engine refuses a changed create-only setting at: every guard, and the
    kind cluster (which keeps its own settings in its replacement trigger)."""
    names = {setting.guard for setting in guarded_settings(platform)}
    if platform.management.is_kind:
        names.add(f"{MANAGEMENT_COMPONENT}-{management_render.KIND_CLUSTER_RESOURCE}")
    return names


def report_changed_settings(platform: PlatformConfig) -> pulumi.Output[pulumi.Resource] | None:
    """In a preview: compare with this stack's previous outputs and report each changed setting as
    an error diagnostic, next to the engine's refusal at its guard (which is what fails the
    preview: a diagnostic alone does not). Not in an update, which that refusal stops anyway (and
    `make up` checks the state first): the read of the stack's own outputs stays out of `up`.

    Call it before any resource it names is constructed: from then on each of them
    (refusing_resources) waits for the report, so the engine's refusal, which stops the preview,
    can never come before the platform's message (a log without a resource is sent at once,
    pulumi sdk/python/lib/pulumi/log.py `_log`). Returns what they wait for (None outside a
    preview)."""
    if not pulumi.runtime.is_dry_run():
        return None
    previous = pulumi.StackReference(PREVIOUS_DEPLOYMENT, stack_name=state_backend.own_stack_name())

    def report(recorded: Any) -> pulumi.Resource:
        for message in changed_settings(recorded if isinstance(recorded, Mapping) else {}, platform):
            pulumi.log.error(message)
        return previous

    reported = previous.get_output(OUTPUT).apply(report)
    # The same read says what changes for the tenants' admin credentials (a warning, not an error).
    previous.get_output("tenants").apply(lambda tenants: [
        pulumi.log.warn(change) for change in admin_credential.credential_changes(
            tenants, platform.management, list(platform.tenants))])
    waiting = refusing_resources(platform)

    def wait_for_the_report(
            args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        if args.name not in waiting:
            return None
        after_the_report = pulumi.ResourceOptions(depends_on=[reported])
        return pulumi.ResourceTransformationResult(args.props,
                                                   pulumi.ResourceOptions.merge(args.opts, after_the_report))

    # SDK-side (the program's own, at each resource's construction): it works under the unit
    # tier's mocks as under the engine, and needs no callback server.
    pulumi.runtime.register_stack_transformation(wait_for_the_report)
    return reported
