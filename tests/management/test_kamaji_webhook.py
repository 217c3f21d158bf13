"""The bounded wait for Kamaji's webhooks (management/kamaji_webhook.py), against a stand-in docker."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform.config import ManagementConfig, parse_config
from kamaji_hami_platform.management import kamaji_webhook
from kamaji_hami_platform.management.render import KAMAJI_NAMESPACE
from kamaji_hami_platform.tenant.control_plane import API_VERSION, KIND
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV
from tests.standins import docker_calls as calls
from tests.standins import run_on_kind_node

pytestmark = pytest.mark.unit

KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- user: {token: s3cret-admin-token}\n"
MANAGEMENT = ManagementConfig()
NODE = "kamaji-control-plane"


def run(script: str, state: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return run_on_kind_node(script, state, NODE, **{KUBECONFIG_ENV: KUBECONFIG, **extra_env})


class TestKamajiWebhookWait:
    def test_waits_until_a_dry_run_is_accepted(self, tmp_path):
        script = kamaji_webhook.kamaji_webhook_wait_script(MANAGEMENT, attempts=5, interval=0)
        result = run(script, tmp_path, FAKE_WEBHOOK_FAILURES="3")
        assert result.returncode == 0, result.stderr
        dry_runs = [c for c in calls(tmp_path) if "create --dry-run=server" in c]
        assert len(dry_runs) == 4
        assert dry_runs[0].startswith(f"exec -i {NODE} kubectl --kubeconfig /etc/kubernetes/admin.conf")

    def test_running_it_again_makes_dry_runs_only(self, tmp_path):
        """An update runs the create again (issue 38, item 7): each run only asks with a dry run."""
        script = kamaji_webhook.kamaji_webhook_wait_script(MANAGEMENT, attempts=5, interval=0)
        for _ in range(2):
            result = run(script, tmp_path)
            assert result.returncode == 0, result.stderr
        kubectl = [c for c in calls(tmp_path) if " kubectl " in c]
        assert len(kubectl) == 2 and all("create --dry-run=server" in c for c in kubectl), kubectl

    def test_fails_after_its_bound_naming_the_last_error(self, tmp_path):
        script = kamaji_webhook.kamaji_webhook_wait_script(MANAGEMENT, attempts=3, interval=0)
        result = run(script, tmp_path, FAKE_WEBHOOK_FAILURES="10")
        assert result.returncode == 1
        assert "did not accept a dry-run TenantControlPlane within 0s" in result.stderr
        assert 'failed calling webhook "mtenantcontrolplane.kb.io"' in result.stderr
        assert sum("--dry-run=server" in c for c in calls(tmp_path)) == 3

    def test_default_bound_is_minutes_not_forever(self):
        attempts, interval = kamaji_webhook.WEBHOOK_WAIT
        assert 60 <= attempts * interval <= 900

    def test_probe_is_the_platforms_own_tenant_control_plane_shape(self, dev_config):
        """The dry run passes Kamaji's mutating and validating TCP webhooks (both
        failurePolicy Fail) with the spec the platform renders, in a namespace that exists."""
        probe = json.loads(kamaji_webhook.webhook_probe_manifest())
        assert (probe["apiVersion"], probe["kind"]) == (API_VERSION, KIND)
        assert probe["metadata"] == {"name": kamaji_webhook.WEBHOOK_PROBE_NAME, "namespace": KAMAJI_NAMESPACE}
        tenant = parse_config(dev_config).tenants[0]
        tenant_spec = kamaji_webhook.tcp_render.tenant_control_plane(tenant)["spec"]
        assert set(probe["spec"]) == set(tenant_spec)
        assert probe["spec"]["kubernetes"]["kubelet"] == tenant_spec["kubernetes"]["kubelet"]
