"""The bounded wait for a tenant's admin access (tenant/admin_access.py), against a stand-in docker."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kamaji_hami_platform.config import ManagementConfig, parse_config
from kamaji_hami_platform.tenant import admin_access
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV
from tests.standins import docker_calls as calls
from tests.standins import run_on_kind_node

pytestmark = pytest.mark.unit

KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- user: {token: s3cret-admin-token}\n"
MANAGEMENT = ManagementConfig()
NODE = "kamaji-control-plane"


def run(script: str, state: Path, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return run_on_kind_node(script, state, NODE, **{KUBECONFIG_ENV: KUBECONFIG, **extra_env})


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
