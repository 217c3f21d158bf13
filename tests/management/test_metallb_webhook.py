"""The bounded wait for MetalLB's IPAddressPool webhook (management/metallb_webhook.py), against a
stand-in docker; and the delete of Kamaji's DataStores before its uninstall
(management/kamaji_webhook.py), against a stand-in kubectl."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management import access, kamaji_webhook, metallb_webhook, render
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV
from tests.standins import docker_calls as calls
from tests.standins import run_on_kind_node

pytestmark = pytest.mark.unit

KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- user: {token: s3cret-admin-token}\n"
MANAGEMENT = ManagementConfig()
NODE = "kamaji-control-plane"


def run(script: str, state: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return run_on_kind_node(script, state, NODE, **{KUBECONFIG_ENV: KUBECONFIG, **extra_env})


def test_waits_until_a_dry_run_is_accepted(tmp_path):
    script = metallb_webhook.metallb_webhook_wait_script(MANAGEMENT, attempts=5, interval=0)
    result = run(script, tmp_path, FAKE_WEBHOOK_FAILURES="3")
    assert result.returncode == 0, result.stderr
    assert sum("create --dry-run=server" in c for c in calls(tmp_path)) == 4


def test_running_it_again_makes_dry_runs_only(tmp_path):
    """An update runs the create again: each run only asks with a dry run, nothing is stored."""
    script = metallb_webhook.metallb_webhook_wait_script(MANAGEMENT, attempts=5, interval=0)
    for _ in range(2):
        result = run(script, tmp_path)
        assert result.returncode == 0, result.stderr
    kubectl = [c for c in calls(tmp_path) if " kubectl " in c]
    assert len(kubectl) == 2 and all("create --dry-run=server" in c for c in kubectl), kubectl


def test_fails_after_its_bound_naming_the_last_error(tmp_path):
    script = metallb_webhook.metallb_webhook_wait_script(MANAGEMENT, attempts=3, interval=0)
    result = run(script, tmp_path, FAKE_WEBHOOK_FAILURES="10")
    assert result.returncode == 1
    assert "did not accept a dry-run IPAddressPool within 0s" in result.stderr
    assert "check: " in result.stderr and "logs deploy/metallb-controller" in result.stderr


def test_a_denial_is_an_answer_the_webhook_serves(tmp_path):
    """MetalLB judges the probe against the pools there (one holding 192.0.2.1, an invalid one): a
    denial says it serves, where waiting five minutes and failing on every run would not help."""
    script = metallb_webhook.metallb_webhook_wait_script(MANAGEMENT, attempts=3, interval=0)
    denial = 'CIDR "192.0.2.1/32" overlaps with already defined CIDR'
    result = run(script, tmp_path, FAKE_WEBHOOK_DENIES=denial)
    assert result.returncode == 0, result.stderr
    assert "MetalLB's IPAddressPool webhook answers (it judged the dry run:" in result.stdout
    assert sum("--dry-run=server" in c for c in calls(tmp_path)) == 1


def test_the_probe_is_a_pool_of_the_platforms_shape_in_metallbs_namespace_on_test_net():
    probe = json.loads(metallb_webhook.probe_manifest())
    assert (probe["apiVersion"], probe["kind"]) == (render.METALLB_API_VERSION, "IPAddressPool")
    assert probe["metadata"] == {"name": metallb_webhook.PROBE_NAME, "namespace": render.METALLB_NAMESPACE}
    assert probe["spec"] == render.metallb_pool_spec("192.0.2.1/32")


def test_default_bound_is_minutes_not_forever():
    attempts, interval = metallb_webhook.WEBHOOK_WAIT
    assert 60 <= attempts * interval <= 900


# --- Kamaji's DataStores before its uninstall (existing clusters) --------------------------------

KUBECTL = """#!/bin/sh
printf '%s\\n' "$*" >> "$STATE/kubectl.log"
case "$*" in
  *"get crd"*) if [ -f "$STATE/unreachable" ]; then
                 echo 'The connection to the server was refused' >&2; exit 1
               fi
               [ -f "$STATE/crd" ] && exit 0
               echo 'Error from server (NotFound): customresourcedefinitions "x" not found' >&2; exit 1 ;;
  *"delete "*) if [ -f "$STATE/stuck" ]; then
                 echo 'error: timed out waiting for the condition' >&2; exit 1
               fi
               echo 'datastore.kamaji.clastix.io "default" deleted' ;;
esac
"""
EXISTING = ManagementConfig(mode="existing", kubeconfig_context="prod")


def delete(tmp_path: Path, *switches: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "kubectl").write_text(KUBECTL)
    (bin_dir / "kubectl").chmod(0o755)
    for switch in switches:
        (tmp_path / switch).write_text("")
    script = kamaji_webhook.kamaji_datastores_delete_script(EXISTING, timeout=7)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "STATE": str(tmp_path),
           access.MANAGEMENT_KUBECONFIG_ENV: KUBECONFIG}
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env, timeout=30)


def test_the_charts_datastores_go_first_and_delete_waits_for_them(tmp_path):
    """Helm's own DataStores only (its release's labels), waited for while Kamaji still runs."""
    result = delete(tmp_path, "crd")
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "kubectl.log").read_text().splitlines()
    deletes = [c for c in calls if " delete " in f" {c}"]
    assert len(deletes) == 1
    assert ("delete datastores.kamaji.clastix.io -l app.kubernetes.io/managed-by=Helm,"
            "app.kubernetes.io/instance=kamaji --ignore-not-found --wait=true --timeout=7s") in deletes[0]
    assert KUBECONFIG not in result.stdout + result.stderr


def test_without_kamajis_crds_there_is_nothing_to_delete(tmp_path):
    result = delete(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "no Kamaji DataStores to delete (datastores.kamaji.clastix.io is not installed)" in result.stdout
    assert not any(" delete " in f" {c}" for c in (tmp_path / "kubectl.log").read_text().splitlines())


def test_a_datastore_that_does_not_go_stops_the_destroy_naming_it(tmp_path):
    """Better a stop that says why than an uninstall that waits out its 15 minutes and leaves it."""
    result = delete(tmp_path, "crd", "stuck")
    assert result.returncode == 1
    assert "Kamaji's DataStores (app.kubernetes.io/managed-by=Helm,app.kubernetes.io/instance=kamaji)" \
        " were not deleted within 7s" in result.stderr
    assert "timed out waiting for the condition" in result.stderr
    assert "get datastores.kamaji.clastix.io -o yaml" in result.stderr


def test_a_cluster_that_does_not_answer_is_said_and_the_destroy_goes_on(tmp_path):
    result = delete(tmp_path, "unreachable")
    assert result.returncode == 0
    assert "could not be looked up before its uninstall (The connection to the server was refused)" \
        in result.stderr
    assert "patch datastores.kamaji.clastix.io default --type=json" in result.stderr


def test_the_datastores_commands_create_only_prints(tmp_path):
    """Its create runs again on an update: it only says what its delete will do."""
    for _ in range(2):
        result = subprocess.run(["sh", "-c", kamaji_webhook.DATASTORES_NOTE], capture_output=True, text=True,
                                timeout=30, env={"PATH": os.environ["PATH"]})
        assert result.returncode == 0 and "deleted before its uninstall" in result.stdout
