"""The bounded waits for Kamaji's webhook and for tenant admin access, run against a stand-in docker."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform.config import ManagementConfig, parse_config
from kamaji_hami_platform.management import kamaji_webhook
from kamaji_hami_platform.management.render import KAMAJI_NAMESPACE
from kamaji_hami_platform.tenant import admin_access
from kamaji_hami_platform.tenant.control_plane import API_VERSION, KIND
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV

pytestmark = pytest.mark.unit

FAKES = Path(__file__).parent / "fakes"
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- user: {token: s3cret-admin-token}\n"
MANAGEMENT = ManagementConfig()
NODE = "kamaji-control-plane"


def run(script: str, state: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    (state / "containers").mkdir(parents=True, exist_ok=True)
    (state / "containers" / NODE).touch()
    env = {**os.environ, "PATH": f"{FAKES}:{os.environ['PATH']}", "FAKE_DOCKER_STATE": str(state),
           KUBECONFIG_ENV: KUBECONFIG, **extra_env}
    return subprocess.run(["/bin/bash", "-c", script], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def calls(state: Path) -> list[str]:
    return (state / "calls").read_text().splitlines()


class TestKamajiWebhookWait:
    def test_waits_until_a_dry_run_is_accepted(self, tmp_path):
        script = kamaji_webhook.kamaji_webhook_wait_script(MANAGEMENT, attempts=5, interval=0)
        result = run(script, tmp_path, FAKE_WEBHOOK_FAILURES="3")
        assert result.returncode == 0, result.stderr
        dry_runs = [c for c in calls(tmp_path) if "create --dry-run=server" in c]
        assert len(dry_runs) == 4
        assert dry_runs[0].startswith(f"exec -i {NODE} kubectl --kubeconfig /etc/kubernetes/admin.conf")

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


class TestTenantAdminAccess:
    @pytest.fixture
    def tenant(self, dev_config):
        return parse_config(dev_config).tenants[0]

    def test_waits_until_the_admin_may_do_everything(self, tenant, tmp_path):
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, attempts=5, interval=0)
        result = run(script, tmp_path, FAKE_CAN_I_NO="2")
        assert result.returncode == 0, result.stderr
        checks = [c for c in calls(tmp_path) if "auth can-i" in c]
        assert len(checks) == 3
        assert checks[0] == (f"exec {NODE} kubectl --kubeconfig /tmp/tenant-a-admin-access.conf "
                             "auth can-i * * --all-namespaces")

    def test_fails_after_its_bound_with_what_to_check(self, tenant, tmp_path):
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, attempts=2, interval=0)
        result = run(script, tmp_path, FAKE_CAN_I_NO="10")
        assert result.returncode == 1
        assert "tenant tenant-a: the admin kubeconfig was not authorized" in result.stderr
        assert "last answer: no" in result.stderr and "kubeadm:cluster-admins" in result.stderr

    def test_kubeconfig_reaches_the_node_over_stdin_and_is_removed(self, tenant, tmp_path):
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, attempts=1, interval=0)
        run(script, tmp_path)
        assert (tmp_path / "stdin" / NODE).read_text() == KUBECONFIG
        assert not any("s3cret" in call for call in calls(tmp_path)), "kubeconfig on a command line"
        assert calls(tmp_path)[-1] == f"exec {NODE} rm -f /tmp/tenant-a-admin-access.conf"
        assert f"${KUBECONFIG_ENV}" in script and "s3cret" not in script
