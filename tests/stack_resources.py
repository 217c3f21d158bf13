"""Every resource a stack registers, as recorded: its URN, type, parent, provider, dependencies,
inputs (the wire form: secrets marked) and options, in a stable order. The record of the dev and
production stacks (tests/fixtures/stack-resources/) is what an existing stack has: a change shows
in review, and one made on purpose gets an upgrade note in CHANGELOG.md.

    python -m tests.stack_resources    # record the stacks again after a deliberate change
"""

from __future__ import annotations

import json
from typing import Any

from kamaji_hami_platform.gpu import lock_release
from kamaji_hami_platform.tenant import tenant_admin
from tests.harness import ROOT, Program, dev_stack_config, production_config, run_program

RECORDS = ROOT / "tests" / "fixtures" / "stack-resources"
# What the bounded tenant admin adds to each kind tenant (tenant/tenant_admin.py,
# tenant/admin_credential.py), by resource name after the tenant's: new in an existing stack's next up.
BOUNDED_ADMIN_RESOURCES = (
    "tenant-admin-credential",
    *(f"{kind}-{policy}" for kind in ("validatingadmissionpolicy", "validatingadmissionpolicybinding")
      for policy in (tenant_admin.POD_POLICY, tenant_admin.NAMESPACE_POLICY, tenant_admin.ROLE_POLICY,
                     tenant_admin.PLATFORM_ROLES_POLICY, tenant_admin.VOLUME_POLICY)),
    *(f"clusterrole-{role}" for role in (tenant_admin.ADMIN_ROLE, tenant_admin.EXTENSIONS_ROLE,
                                         tenant_admin.NAMESPACE_ADMIN_ROLE)),
    *(f"clusterrolebinding-{role}" for role in (tenant_admin.ADMIN_ROLE, tenant_admin.EXTENSIONS_ROLE)),
)
# Mock mode's node-lock release (gpu/lock_release.py, issue 41), by the name part after
# `<tenant>-gpus-lock-release-`: new in an existing stack's next up.
LOCK_RELEASE_RESOURCES = tuple(f"{kind}-{namespace}{lock_release.LOCK_RELEASE_AGENT}" for kind, namespace in (
    ("serviceaccount", f"{lock_release.NAMESPACE}-"), ("clusterrole", ""), ("clusterrolebinding", ""),
    ("deployment", f"{lock_release.NAMESPACE}-")))
# The platform's own namespaces' NetworkPolicies (management/network_policy.py, issue 40), by the
# name part after `management-networkpolicy-`.
PLATFORM_POLICIES = ("cert-manager-default-deny", "metallb-system-default-deny", "kamaji-system-default-deny",
                     *(f"kamaji-system-allow-{name}" for name in ("dns-egress", "datastore-egress",
                                                                 "datastore-ingress", "controller-egress")))


def _stable(value: Any) -> Any:
    """Lists of URNs sorted (the order dependencies arrive in is the SDK's, not the program's)."""
    if isinstance(value, dict):
        return {key: _stable(item) for key, item in value.items()}
    if isinstance(value, list):
        items = [_stable(item) for item in value]
        if items and all(isinstance(item, str) and item.startswith("urn:") for item in items):
            items.sort()
        return items
    return value


def record(program: Program) -> str:
    resources = [{"type": reg.type, "name": reg.name, "urn": reg.urn, "parent": reg.parent,
                  "provider": reg.provider, "dependencies": sorted(reg.dependencies), "custom": reg.custom,
                  "wire": reg.wire, "options": reg.options}
                 for reg in sorted(program.registrations, key=lambda reg: reg.urn)]
    return json.dumps(_stable(resources), indent=1, sort_keys=True).replace(str(ROOT), "<ROOT>")


def stacks() -> dict[str, Program]:
    config, secret_keys = production_config()
    return {"dev": run_program(dev_stack_config()),
            "production": run_program(config, stack="prod", secret_keys=secret_keys)}


if __name__ == "__main__":
    RECORDS.mkdir(parents=True, exist_ok=True)
    for name, program in stacks().items():
        (RECORDS / f"{name}.json").write_text(record(program))
    print(f"recorded the dev and production stacks' resources in {RECORDS.relative_to(ROOT)}")
