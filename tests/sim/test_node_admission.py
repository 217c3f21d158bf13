"""Only the nodes the config lists may register, on a real kube-apiserver 1.35 (marker `sim`).

The platform's rendered ValidatingAdmissionPolicy and binding (tenant/node_admission.py), applied
server-side as the platform applies them, judged by the real API server with the platform's
admission plugins and `Node,RBAC` authorization. Kubelets authenticate as kubelets do: a client
certificate for `system:node:<name>` in the group `system:nodes` (the Node authorizer and
NodeRestriction see them as nodes). No kubelet runs here: a kubelet's requests are made with
kubectl and its credential (its registration is a CREATE of its Node, kubernetes v1.35.4
pkg/kubelet/kubelet_node_status.go tryRegisterWithAPIServer).

Enforcement is eventually consistent (the API server must observe a policy before it enforces
it): every check after an apply first waits, bounded, until the API server refuses what the new
list refuses, with server-side dry runs that create nothing.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from kamaji_hami_platform.config import TenantConfig, load_stack_file, parse_config
from kamaji_hami_platform.tenant import node_admission
from kamaji_hami_platform.tenant.control_plane import ADMISSION_CONTROLLERS
from tests.harness import PRODUCTION_STACK, dev_stack_config
from tests.sim.cluster import TenantApi, tenant_api, toolchain

pytestmark = pytest.mark.sim

ENFORCED_WITHIN = 30  # seconds; the policy informer sees a change in well under a second
NODES_GROUP = node_admission.NODES_GROUP
DENIED = (f"ValidatingAdmissionPolicy '{node_admission.NAME}' with binding '{node_admission.NAME}' "
          "denied request")
STRANGER = "old-gpu-host"  # never in the config


def tenant_with(workers: int) -> TenantConfig:
    config = dev_stack_config()
    config["tenants"][0]["workers"] = workers
    return parse_config(config).tenants[0]


@pytest.fixture(scope="module")
def api() -> Iterator[TenantApi]:
    try:
        bin_dir = toolchain()
    except RuntimeError as error:
        if os.environ.get("CI"):
            raise  # in CI a missing toolchain is a failure, never a skip
        pytest.skip(f"the sim toolchain is not available here: {str(error).splitlines()[0]}")
    with tenant_api(tenant_with(2), bin_dir) as running:
        yield running


@pytest.fixture(scope="module")
def kubelet(api) -> Callable[[str], Path]:
    """The kubeconfig of a node's kubelet: its client certificate (made once per node)."""
    made: dict[str, Path] = {}

    def credential(node: str) -> Path:
        if node not in made:
            made[node] = api.client_kubeconfig(f"system:node:{node}", (NODES_GROUP,))
        return made[node]

    return credential


def node_object(name: str) -> dict:
    """What a kubelet posts to register (metadata only; its status comes with later patches)."""
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def register(api: TenantApi, kubelet: Path, node: str, dry_run: bool = False):
    flags = ["--dry-run=server"] if dry_run else []
    return api.kubectl("create", *flags, "-f", "-", stdin=json.dumps(node_object(node)), kubeconfig=kubelet)


def kubelet_patch(api: TenantApi, kubelet: Path, path: str, patch: dict) -> tuple[int, str]:
    """A strategic-merge PATCH as the kubelet sends it (kubectl patch would GET first, which a
    node may not do on nodes/status): its client certificate, straight to the API server."""
    user = yaml.safe_load(kubelet.read_text())["users"][0]["user"]
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the sim's own server
    context.load_cert_chain(user["client-certificate"], user["client-key"])
    url = urlsplit(api.url)
    connection = http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=30)
    try:
        connection.request("PATCH", path, body=json.dumps(patch),
                           headers={"Content-Type": "application/strategic-merge-patch+json"})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def wait_until(api: TenantApi, kubelet: Callable[[str], Path], node: str, admitted: bool) -> None:
    """Until the API server enforces a list with (or without) `node`: a dry run creates nothing."""
    deadline = time.monotonic() + ENFORCED_WITHIN
    while time.monotonic() < deadline:
        result = register(api, kubelet(node), node, dry_run=True)
        if (result.returncode == 0) == admitted and (admitted or DENIED in result.stderr):
            return
        time.sleep(0.5)
    raise AssertionError(f"the policy did not {'admit' if admitted else 'refuse'} {node} within "
                         f"{ENFORCED_WITHIN}s")


def wait_until_refused(api: TenantApi, kubelet: Callable[[str], Path], node: str) -> None:
    wait_until(api, kubelet, node, admitted=False)


def apply_policy(api: TenantApi, tenant: TenantConfig, kubelet: Callable[[str], Path]) -> None:
    api.apply(node_admission.node_admission_objects(tenant))
    wait_until_refused(api, kubelet, STRANGER)


def test_a_listed_kubelet_registers_and_an_unlisted_one_is_refused_with_the_message(api, kubelet):
    """With the platform's admission plugins, which do not name ValidatingAdmissionPolicy: it is
    on by default, and --enable-admission-plugins only adds to the default-on set."""
    assert "ValidatingAdmissionPolicy" not in ADMISSION_CONTROLLERS
    apply_policy(api, tenant_with(2), kubelet)
    for node in ("tenant-a-worker-0", "tenant-a-worker-1"):
        created = register(api, kubelet(node), node)
        assert created.returncode == 0, created.stderr
    refused = register(api, kubelet(STRANGER), STRANGER)
    assert refused.returncode != 0
    assert "(Forbidden)" in refused.stderr
    assert (f"{DENIED}: node {STRANGER} is not a node of tenant tenant-a in the kamaji-hami-platform "
            "config, so it may not register") in refused.stderr
    assert "raise tenants[name=tenant-a].workers" in refused.stderr
    assert "NotFound" in api.kubectl("get", "node", STRANGER).stderr


def test_a_listed_kubelet_updates_its_node_and_registers_again_after_a_restart(api, kubelet):
    """A restarted kubelet's CREATE is admitted and meets AlreadyExists, on which it gets its
    Node and patches it (tryRegisterWithAPIServer); its status and metadata updates pass."""
    node = "tenant-a-worker-0"
    again = register(api, kubelet(node), node)
    assert again.returncode != 0 and "AlreadyExists" in again.stderr, again.stderr
    status = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                         "lastHeartbeatTime": "2026-12-02T10:00:00Z"}]}}
    code, body = kubelet_patch(api, kubelet(node), f"/api/v1/nodes/{node}/status", status)
    assert code == 200, body
    attach = {"metadata": {"annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}}}
    code, body = kubelet_patch(api, kubelet(node), f"/api/v1/nodes/{node}", attach)
    assert code == 200, body
    assert api.get("node", node)["status"]["conditions"][0]["reason"] == "KubeletReady"


def test_the_platforms_own_requests_are_not_judged(api, kubelet):
    """As the tenant's admin: a server-side apply that creates a Node of a name the list does not
    have (a NodePatch's delete when the node is already gone, pulumi-kubernetes ssa Relinquish)
    and its delete pass; only kubelets are judged."""
    api.apply([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": STRANGER}}], manager="platform-gpus")
    assert api.get("node", STRANGER)["metadata"]["name"] == STRANGER
    deleted = api.kubectl("delete", "node", STRANGER)
    assert deleted.returncode == 0, deleted.stderr


def test_after_the_list_shrinks_a_removed_node_cannot_come_back(api, kubelet):
    """workers 2 -> 1: the policy is updated first, and the removed node's kubelet, still holding
    a valid certificate, can no longer change its Node's metadata; its status reports still pass
    (the drain's volume detach waits for them); its leave then cordons (the drain's first step, a
    PATCH, as the admin) and deletes its Node; the kubelet can no longer register. The listed node
    keeps working."""
    removed, kept = "tenant-a-worker-1", "tenant-a-worker-0"
    apply_policy(api, tenant_with(1), kubelet)
    wait_until_refused(api, kubelet, removed)
    code, body = kubelet_patch(api, kubelet(removed), f"/api/v1/nodes/{removed}",
                               {"metadata": {"labels": {"gpu": "many"}}})
    assert code == 403 and f"node {removed} is not a node of tenant tenant-a" in body, body
    assert "gpu" not in api.get("node", removed)["metadata"].get("labels", {})
    unmounted = {"status": {"volumesInUse": []}}
    code, body = kubelet_patch(api, kubelet(removed), f"/api/v1/nodes/{removed}/status", unmounted)
    assert code == 200, body
    for leave in (("cordon", removed), ("delete", "node", removed)):
        result = api.kubectl(*leave)
        assert result.returncode == 0, result.stderr
    back = register(api, kubelet(removed), removed)
    assert back.returncode != 0 and f"{DENIED}: node {removed} is not a node of tenant" in back.stderr
    assert "NotFound" in api.kubectl("get", "node", removed).stderr
    again = register(api, kubelet(kept), kept)
    assert "AlreadyExists" in again.stderr, again.stderr
    heartbeat = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                            "lastHeartbeatTime": "2026-12-02T10:01:00Z"}]}}
    code, body = kubelet_patch(api, kubelet(kept), f"/api/v1/nodes/{kept}/status", heartbeat)
    assert code == 200, body


def test_a_removed_name_added_back_registers_again(api, kubelet):
    """workers 1 -> 2 again: the name is listed, its kubelet registers."""
    apply_policy(api, tenant_with(2), kubelet)
    node = "tenant-a-worker-1"
    wait_until(api, kubelet, node, admitted=True)
    created = register(api, kubelet(node), node)
    assert created.returncode == 0, created.stderr


def test_a_host_tenants_policy_names_its_hosts_and_says_how_to_add_one(api, kubelet):
    """examples/production's ml-prod: its hosts register, another machine is told to be listed in
    tenants[name=ml-prod].hosts."""
    prod = load_stack_file(PRODUCTION_STACK)
    ml_prod = prod.tenants[0]
    api.apply(node_admission.node_admission_objects(ml_prod, prod.management))
    first = ml_prod.hosts[0].name
    wait_until(api, kubelet, first, admitted=True)
    created = register(api, kubelet(first), first)
    assert created.returncode == 0, created.stderr
    wait_until_refused(api, kubelet, "tenant-a-worker-0")
    refused = register(api, kubelet(STRANGER), STRANGER)
    assert (f"{DENIED}: node {STRANGER} is not a node of tenant ml-prod in the kamaji-hami-platform config"
            in refused.stderr), refused.stderr
    assert "list it in tenants[name=ml-prod].hosts and run pulumi up" in refused.stderr


def test_the_longest_list_the_config_accepts_is_enforced(api, kubelet):
    """99 workers of a 40-character tenant: the API server takes the policy (it compiles every
    expression on create) and evaluates it within its cost limits: the last worker registers, a
    stranger is refused. The platform's binding is removed first (its list has none of them)."""
    config = dev_stack_config()
    config["management"]["name"] = "k" * 40
    config["tenants"][0].update(name="t" + "x" * 38 + "a", workers=99)
    tenant = parse_config(config).tenants[0]
    objects = node_admission.node_admission_objects(tenant)
    assert len(objects[0]["spec"]["validations"][0]["expression"]) > 5000
    assert api.kubectl("delete", "validatingadmissionpolicybinding", node_admission.NAME).returncode == 0
    api.apply(objects)
    # Enforced first: between the old binding's delete and the new one's, every node is admitted,
    # so "the last worker is admitted" alone could pass before the new policy is in force.
    wait_until_refused(api, kubelet, STRANGER)
    last = tenant.worker_names()[-1]
    wait_until(api, kubelet, last, admitted=True)
    created = register(api, kubelet(last), last)
    assert created.returncode == 0, created.stderr
    refused = register(api, kubelet(STRANGER), STRANGER)
    assert f"{DENIED}: node {STRANGER} is not a node of tenant {tenant.name}" in refused.stderr
