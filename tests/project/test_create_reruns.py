"""Every local Command's create runs again when the Command is updated, so each must be safe to
run over what its first run made (issue 38, item 7).

No Command of the platform has an `update` script, and pulumi-command then runs `create` on an
update ("If not specified, the create command will be run on update", pulumi-command v1.2.1
provider/pkg/provider/local/command.go CommandInputs.Update). A release that changes a script, an
interpreter or an environment updates every such Command in place, so every create runs again on
a running platform. This module holds the list: each kind of Command the shipped stacks register,
with the test that runs its create a second time over its first run's result and checks the
second run changes nothing (or only reads). A new kind of Command fails here until it has one.
"""

from __future__ import annotations

import importlib
import json
import re

import pytest

from kamaji_hami_platform.config import HostConfig, SshEndpointConfig, TenantConfig
from kamaji_hami_platform.create_only_guards import GUARD_VALUE_ENV, CreateOnlySetting, guard_script
from kamaji_hami_platform.tenant import host_join
from tests.harness import ROOT
from tests.standins import run_script

pytestmark = pytest.mark.unit

STACK_RECORDS = ("dev", "production")
COMMAND = "command:local:Command"
HERE = "tests/project/test_create_reruns.py"
# Each kind of Command (its name with the tenant, node and setting made generic) and the test that
# runs its create again.
RERUN_TESTS = {
    "management-kind": "tests/management/test_render.py::TestKind::"
                       "test_create_is_guarded_by_an_existence_check",
    "management-network": "tests/management/test_docker_network.py::TestCreate::"
                          "test_running_it_again_keeps_it",
    "management-docker-host":
        "tests/management/test_docker_host.py::test_running_the_check_again_prints_the_same_and_leaves_nothing",
    "management-kubeconfig": "tests/management/test_render.py::TestKind::"
                             "test_the_kubeconfig_command_only_reads_so_running_it_again_is_harmless",
    "management-kindnet-limits": "tests/management/test_kindnet.py::test_a_second_run_changes_nothing",
    "management-policy-engine": "tests/management/test_policy_engine.py::"
                                "test_it_only_reads_so_running_it_again_is_harmless",
    "management-cluster-check": "tests/management/test_existing.py::TestClusterCheck::"
                                "test_without_a_default_kamaji_etcds_bound_volumes_pass",
    "management-kamaji-chart": "tests/management/test_kamaji_chart.py::"
                               "test_a_verified_chart_is_reused_without_downloading",
    "management-kamaji-webhook": "tests/management/test_kamaji_webhook.py::TestKamajiWebhookWait::"
                                 "test_running_it_again_makes_dry_runs_only",
    "management-metallb-webhook": "tests/management/test_metallb_webhook.py::"
                                  "test_running_it_again_makes_dry_runs_only",
    "management-kamaji-datastores": "tests/management/test_metallb_webhook.py::"
                                    "test_the_datastores_commands_create_only_prints",
    "management-create-only-<setting>": f"{HERE}::test_a_guards_create_only_prints_and_prints_the_same_again",
    "<tenant>-create-only-<setting>": f"{HERE}::test_a_guards_create_only_prints_and_prints_the_same_again",
    "<tenant>-network": "tests/tenant/test_own_network.py::TestCreate::test_running_it_again_creates_nothing",
    "<tenant>-door": "tests/live/test_door.py::test_running_the_create_again_keeps_the_door",
    "<tenant>-admin-access": "tests/tenant/test_admin_access.py::TestTenantAdminAccess::"
                             "test_running_it_again_only_asks_again_and_removes_its_file_again",
    "<tenant>-tenant-admin-credential": "tests/sim/test_tenant_admin.py::"
                                        "test_running_it_again_issues_another_working_credential",
    "<tenant>-worker-image": "tests/tenant/test_node_join.py::TestWorkerImage::"
                             "test_the_image_is_pulled_once_and_found_when_the_create_runs_again",
    # A container worker, and a host's Ready wait: both are named <tenant>-<node>.
    "<tenant>-<node>": ("tests/tenant/test_node_join.py::TestDockerHostAndState::"
                        "test_an_update_reruns_create_and_a_joined_running_worker_is_left_as_it_is",
                        "tests/ssh/test_host_join_ssh.py::TestReady::test_running_it_again_only_reads_the_node"),
    "<tenant>-<node>-join": "tests/ssh/test_host_join_ssh.py::TestJoin::test_a_second_run_is_harmless",
    "<tenant>-<node>-leave": f"{HERE}::test_a_hosts_leave_create_only_prints_and_prints_the_same_again",
}


def command_kind(name: str, tenants: set[str], nodes: set[str]) -> str:
    """A Command's name with its tenant, node and create-only setting made generic."""
    name = re.sub(r"create-only-\w+$", "create-only-<setting>", name)
    for node in sorted(nodes, key=len, reverse=True):
        name = re.sub(rf"-{re.escape(node)}(?=-|$)", "-<node>", name)
    for tenant in sorted(tenants, key=len, reverse=True):
        if name.startswith(f"{tenant}-"):
            return "<tenant>" + name[len(tenant):]
    return name


def command_kinds() -> set[str]:
    kinds = set()
    for stack in STACK_RECORDS:
        resources = json.loads((ROOT / "tests/fixtures/stack-resources" / f"{stack}.json").read_text())
        tenants = {r["name"] for r in resources if r["type"] == "kamaji-hami-platform:index:KamajiTenant"}
        nodes = {match.group(1) for r in resources
                 for match in [re.fullmatch(r".*-((?:worker-\d+)|(?:[a-z]+-node-\d+))", r["name"])] if match}
        kinds |= {command_kind(r["name"], tenants, nodes) for r in resources if r["type"] == COMMAND}
    return kinds


def test_every_kind_of_command_has_a_test_that_runs_its_create_again():
    assert command_kinds() == set(RERUN_TESTS)


@pytest.mark.parametrize("node_id", sorted({node for tests in RERUN_TESTS.values()
                                            for node in ((tests,) if isinstance(tests, str) else tests)}))
def test_each_named_test_exists(node_id):
    path, *names = node_id.split("::")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    found = module
    for name in names:
        found = getattr(found, name, None)
        assert found is not None, f"{node_id}: no {name}"
    assert callable(found)


def _twice_with_no_tool(script: str, **env: str) -> list[str]:
    """The script run twice with nothing on PATH: it can only print (sh builtins)."""
    outputs = []
    for _ in range(2):
        result = run_script(script, shell="sh", tools=(), env={"PATH": "/nonexistent", **env})
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    return outputs


def test_a_guards_create_only_prints_and_prints_the_same_again():
    setting = CreateOnlySetting("podCidr", "tenants[name=t].podCidr", "the pods' network")
    script = guard_script(setting, "a new tenant")
    first, again = _twice_with_no_tool(script, **{GUARD_VALUE_ENV: "10.36.0.0/16"})
    assert first == again == ("tenants[name=t].podCidr=10.36.0.0/16 is create-only: the pods' network. "
                              "To change it: a new tenant.\n")


def test_a_hosts_leave_create_only_prints_and_prints_the_same_again():
    host = HostConfig("gpu-node-1", SshEndpointConfig(address="10.0.0.5", user="root", private_key="k",
                                                      host_key="ssh-ed25519 AAAA"))
    tenant = TenantConfig(name="t", kubernetes_version="v1.35.0", control_plane_replicas=1,
                          pod_cidr="10.244.0.0/16", service_cidr="10.96.0.0/16", workers=1, gpus=None,
                          hosts=(host,))
    first, again = _twice_with_no_tool(host_join.worker_script(tenant, host))
    assert first == again == "host gpu-node-1 (10.0.0.5) is a worker of tenant t\n"
