"""The wait for MetalLB's validating webhooks, before the platform's address pool is created.

MetalLB's controller serves the IPAddressPool webhook (`failurePolicy: Fail`) only once its own
certificate is in place, after the Helm release counts as ready: an IPAddressPool created at once
is refused (`failed calling webhook "ipaddresspoolvalidationwebhook.metallb.io": ... connect:
connection refused`), as the live tier's existing-cluster run found (issue 42). The pool waits
until a server-side dry run of a pool is accepted. The probe's range is TEST-NET-1 (RFC 5737), which
overlaps no pool a user would have; a dry run stores nothing.
"""

from __future__ import annotations

import json

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management import render
from kamaji_hami_platform.management.access import management_access
from kamaji_hami_platform.shell_templates import Shell
from kamaji_hami_platform.shell_templates import render as render_script

PROBE_NAME = "platform-webhook-probe"
PROBE_RANGE = "192.0.2.1/32"
_PACKAGE = "kamaji_hami_platform.management"
WEBHOOK_WAIT = (60, 5)  # attempts, seconds between them: 5 minutes


def probe_manifest() -> str:
    """An IPAddressPool of the platform's shape, only ever dry-run."""
    pool = {"apiVersion": render.METALLB_API_VERSION, "kind": "IPAddressPool",
            "metadata": {"name": PROBE_NAME, "namespace": render.METALLB_NAMESPACE},
            "spec": render.metallb_pool_spec(PROBE_RANGE)}
    return json.dumps(pool, sort_keys=True, separators=(",", ":"))


def metallb_webhook_wait_script(management: ManagementConfig,
                                attempts: int = WEBHOOK_WAIT[0], interval: int = WEBHOOK_WAIT[1]) -> str:
    """Retry a server-side dry run of an IPAddressPool until MetalLB's webhook accepts it, or fail
    naming why."""
    preamble, kube, hint = management_access(management)
    check = (f"{hint} -n {render.METALLB_NAMESPACE} get pods;"
             f" {hint} -n {render.METALLB_NAMESPACE} logs deploy/metallb-controller")
    return render_script(_PACKAGE, "metallb_webhook_wait.sh", access=preamble, probe=probe_manifest(),
                         attempts=attempts, interval=interval, kubectl=kube, bound=attempts * interval,
                         check=Shell(check))
