"""The wait for Kamaji's TenantControlPlane webhooks, before any tenant is created.

Kamaji's TenantControlPlane webhooks fail closed (`failurePolicy: Fail`), and the controller
reports Ready on a bare ping (clastix/kamaji 26.8.2-edge cmd/manager/cmd.go
`AddReadyzCheck("readyz", healthz.Ping)`), so the Helm release can be "ready" before the webhook
serves. The tenants' control planes wait until a server-side dry run of a TCP of the platform's
own shape is accepted.
"""

from __future__ import annotations

import json

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.management.access import management_access
from kamaji_hami_platform.management.render import KAMAJI_NAMESPACE, KAMAJI_RELEASE
from kamaji_hami_platform.shell_templates import Shell
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.tenant import control_plane as tcp_render

WEBHOOK_PROBE_NAME = "platform-webhook-probe"
# The chart's DataStores (kamaji-etcd's `default`, labelled by Helm as the release's), deleted before
# Kamaji's uninstall (kamaji_datastores_delete_script): clastix/kamaji 26.8.2-edge
# controllers/datastore_controller.go removes api/v1alpha1 DataStoreTCPFinalizer only while it runs.
DATASTORE_CRD = "datastores.kamaji.clastix.io"
DATASTORE_DELETE_SECONDS = 120
_PACKAGE = "kamaji_hami_platform.management"
WEBHOOK_WAIT = (60, 5)  # attempts, seconds between them: 5 minutes
# A synthetic tenant whose TCP is only ever dry-run, never created.
_PROBE_TENANT = TenantConfig(
    name=WEBHOOK_PROBE_NAME, kubernetes_version=versions.KIND_NODE_VERSION,
    control_plane_replicas=1, pod_cidr="10.36.0.0/16", service_cidr="10.37.0.0/16",
    workers=0, gpus=None)


def webhook_probe_manifest() -> str:
    """A TCP rendered by the platform's own renderer, placed in kamaji-system (which exists
    once Kamaji is installed); its server-side dry run passes both Kamaji webhooks."""
    tcp = tcp_render.tenant_control_plane(_PROBE_TENANT)
    tcp["metadata"] = {"name": WEBHOOK_PROBE_NAME, "namespace": KAMAJI_NAMESPACE}
    return json.dumps(tcp, sort_keys=True, separators=(",", ":"))


def kamaji_webhook_wait_script(management: ManagementConfig,
                               attempts: int = WEBHOOK_WAIT[0], interval: int = WEBHOOK_WAIT[1]) -> str:
    """Retry a server-side dry run of a TCP until Kamaji's webhooks accept it, or fail naming why."""
    preamble, kube, hint = management_access(management)
    check = (f"{hint} -n {KAMAJI_NAMESPACE} get pods,certificates;"
             f" {hint} -n {KAMAJI_NAMESPACE} logs deploy/kamaji")
    # The hint is a command line for the user, shown inside the message's double quotes.
    return render_script(_PACKAGE, "kamaji_webhook_wait.sh", access=preamble, probe=webhook_probe_manifest(),
                         attempts=attempts, interval=interval, kubectl=kube, bound=attempts * interval,
                         check=Shell(check))


# The create of the command whose delete that is: it only says what the delete will do.
DATASTORES_NOTE = ("echo \"Kamaji's DataStores of this release are deleted before its uninstall, while its "
                   "controller can release them\"")


def kamaji_datastores_delete_script(management: ManagementConfig,
                                    timeout: int = DATASTORE_DELETE_SECONDS) -> str:
    """Delete the Kamaji release's DataStores while its controller still runs (the delete of a
    command of its own that goes just before the release): on an existing cluster the uninstall
    would otherwise wait on their finalizer until its timeout, and leave them."""
    preamble, kube, hint = management_access(management)
    selector = f"app.kubernetes.io/managed-by=Helm,app.kubernetes.io/instance={KAMAJI_RELEASE}"
    return render_script(_PACKAGE, "kamaji_datastores_delete.sh", access=preamble, kubectl=kube,
                         crd=DATASTORE_CRD, selector=selector, timeout=timeout, kubectl_hint=Shell(hint),
                         check=Shell(f"{hint} get {DATASTORE_CRD} -o yaml;"
                                     f" {hint} -n {KAMAJI_NAMESPACE} logs deploy/kamaji"))
