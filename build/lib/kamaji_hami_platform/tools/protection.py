"""Release a tenant's protection, so that removing it from `tenants` can delete it.

A tenant's control plane and its create-only guards are `protect`ed: the engine refuses to
delete or replace them, in preview too, and that is what keeps a mistyped `tenants` list
from deleting a tenant's datastore. Removing a tenant on purpose is two steps:

    python -m kamaji_hami_platform.tools.protection --stack dev --tenant tenant-b   # make unprotect-tenant
    # then remove tenant-b from `tenants` and `make up`

This clears the protect flag of exactly that tenant's protected resources (`pulumi state
unprotect`, which changes nothing but the flag); the next `up` protects what is still in
the program again. Resource inputs and outputs are never printed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from kamaji_hami_platform.tools.stack_state import (
    PULUMI_TIMEOUT_SECONDS,
    STACK_NAME,
    Refused,
    deployment_of,
    export_state,
    resource_name,
    run,
    state_resources,
    stderr_tail,
)

TENANT_TYPE = "kamaji-hami-platform:index:KamajiTenant"
EXIT_DONE, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2


def tenant_protected(export: dict[str, Any], tenant: str) -> list[str]:
    """URNs of the protected resources of the KamajiTenant named `tenant`, in state order."""
    resources = state_resources(deployment_of(export))
    components = [r["urn"] for r in resources
                  if r.get("type") == TENANT_TYPE and resource_name(r.get("urn", "")) == tenant]
    if not components:
        raise Refused(f"the stack has no tenant {tenant!r}")
    return [r["urn"] for r in resources if r.get("protect") and r.get("parent") in components]


def unprotect(stack: str, urns: list[str]) -> None:
    result = run(["pulumi", "state", "unprotect", "--yes", "--stack", stack, *urns],
                 timeout=PULUMI_TIMEOUT_SECONDS)
    if result.returncode != 0:
        raise Refused(f"`pulumi state unprotect` failed (exit {result.returncode}): "
                      f"{stderr_tail(result.stderr)}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m kamaji_hami_platform.tools.protection",
        description="Unprotect one tenant's control plane and guards, so removing it from `tenants` "
                    "can delete it (the tenant's data goes with it).")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--tenant", required=True, help="the tenant's name, as in `tenants`")
    args = parser.parse_args(argv)
    if not STACK_NAME.fullmatch(args.stack):
        parser.error(f"--stack {args.stack!r} is not a stack name")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        export = export_state(args.stack)
        urns = tenant_protected(export, args.tenant)
        if not urns:
            print(f"tenant {args.tenant}: nothing of it is protected")
            return EXIT_DONE
        unprotect(args.stack, urns)
    except Refused as reason:
        print(f"refused: {reason}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"tenant {args.tenant}: unprotected " + ", ".join(resource_name(u) for u in urns) + ".")
    print(f"Next: remove {args.tenant} from `tenants` in Pulumi.{args.stack.rsplit('/', 1)[-1]}.yaml, "
          "then make preview and KHP_SKIP_DRAIN=1 make up (its control plane, datastore and workers "
          "are deleted; its workers need no drain, nothing is left to move to). A make up that "
          "keeps the tenant protects it again.")
    return EXIT_DONE


if __name__ == "__main__":
    sys.exit(main())
