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
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, bound=30, interval=0)
        result = run(script, tmp_path, FAKE_CAN_I_NO="2")
        assert result.returncode == 0, result.stderr
        checks = [c for c in calls(tmp_path) if "auth can-i" in c]
        assert len(checks) == 3
        # The kind node is on no tenant network: the API's Service at its cluster address, under the
        # name its certificate carries for Kamaji's own clients (Kamaji 26.8.2-edge
        # internal/kubeadm/configuration.go certSANs).
        assert checks[0] == (f"exec {NODE} timeout 30 kubectl --kubeconfig /tmp/tenant-a-admin-access.conf "
                             "--server https://10.96.0.77:6443 --tls-server-name=tenant-a.tenant-a.svc "
                             "--request-timeout=15s auth can-i * * --all-namespaces")

    def test_without_the_api_service_it_stops_naming_it(self, tenant, tmp_path):
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, bound=30, interval=0)
        result = run(script, tmp_path, FAKE_NO_SERVICE="1")
        assert result.returncode == 1
        assert "cannot find the cluster address of tenant tenant-a's API Service (tenant-a/tenant-a)" \
            in result.stderr
        assert not [c for c in calls(tmp_path) if "auth can-i" in c]

    def test_fails_after_its_bound_with_what_to_check(self, tenant, tmp_path):
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, bound=0, interval=0)
        result = run(script, tmp_path, FAKE_CAN_I_NO="10")
        assert result.returncode == 1
        assert "tenant tenant-a: the admin kubeconfig was not authorized within 0s" in result.stderr
        assert "last answer: no" in result.stderr and "kubeadm:cluster-admins" in result.stderr
        assert "Docker network" not in result.stderr

    @pytest.mark.parametrize(("env", "last"), [
        ({"FAKE_CAN_I_UNANSWERED": "10"},
         "last: Unable to connect to the server: dial tcp 172.30.255.200:6443: i/o timeout"),
        ({"FAKE_CAN_I_CUT_OFF": "10"}, "last: no answer within 30s"),
    ])
    def test_an_api_that_does_not_answer_names_the_docker_network(self, tenant, tmp_path, env, last):
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, bound=0, interval=0)
        result = run(script, tmp_path, **env)
        assert result.returncode == 1
        first, network = result.stderr.splitlines()
        assert first == ("tenant tenant-a: the tenant API did not answer within 0s "
                         f"(1 of 1 tries unanswered; {last}).")
        assert network.startswith(
            "The kind node reaches the tenant API at its Service's cluster address; its workers and this "
            "host through its door kamaji-tenant-a-door on kamaji-hami-tenant-a.")
        assert "-n tenant-a get service tenant-a" in network and "docker logs kamaji-tenant-a-door" in network
        assert "kubeadm:cluster-admins" not in result.stderr

    def test_tries_the_api_did_not_answer_are_tried_again_within_the_bound(self, tenant, tmp_path):
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, bound=30, interval=0)
        result = run(script, tmp_path, FAKE_CAN_I_UNANSWERED="2")
        assert result.returncode == 0, result.stderr
        assert len([c for c in calls(tmp_path) if "auth can-i" in c]) == 3

    def test_running_it_again_only_asks_again_and_removes_its_file_again(self, tenant, tmp_path):
        """An update runs the create again (issue 38, item 7): it writes its temporary kubeconfig,
        asks `auth can-i` and removes the file, each time; nothing else."""
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, bound=30, interval=0)
        for _ in range(2):
            result = run(script, tmp_path)
            assert result.returncode == 0, result.stderr
        conf = "/tmp/tenant-a-admin-access.conf"
        kinds = ["write" if "cat > " in c else "ask" if "auth can-i" in c else "look up" if "get service" in c
                 else "remove" if f"rm -f {conf}" in c else c for c in calls(tmp_path)]
        assert kinds == ["write", "look up", "ask", "remove"] * 2, calls(tmp_path)

    def test_kubeconfig_reaches_the_node_over_stdin_and_is_removed(self, tenant, tmp_path):
        script = admin_access.tenant_admin_access_script(tenant, MANAGEMENT, bound=0, interval=0)
        run(script, tmp_path)
        assert (tmp_path / "stdin" / NODE).read_text() == KUBECONFIG
        assert not any("s3cret" in call for call in calls(tmp_path)), "kubeconfig on a command line"
        assert calls(tmp_path)[-1] == f"exec {NODE} rm -f /tmp/tenant-a-admin-access.conf"
        assert f"${KUBECONFIG_ENV}" in script and "s3cret" not in script
