"""The ci stack (Pulumi.ci.yaml), the stack-per-environment example: validated, through the
program under mocks in preview (fresh) and in up, and through the policy pack."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import pytest

from kamaji_hami_platform.config import ManagementConfig, load_stack_file, parse_config
from policy import rules
from tests.e2e import lifecycle_support as life
from tests.harness import ROOT, PlatformMocks, Program, dev_stack_config, run_program, stack_config
from tests.policy.test_rules import as_resources
from tests.policy_engine import analyze, fixture_from_program

pytestmark = pytest.mark.unit

CI_STACK = ROOT / "Pulumi.ci.yaml"
TCP = "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane"
COMMAND = "command:local:Command"
WORKER = re.compile(r".+-worker-\d+")


def ci_config() -> dict[str, Any]:
    return stack_config(CI_STACK)


@pytest.fixture(scope="module")
def ci_up() -> Program:
    return run_program(ci_config(), stack="ci")


@pytest.fixture(scope="module")
def ci_preview() -> Program:
    """A fresh stack's preview: nothing deployed, every command's output and read unknown."""
    return run_program(ci_config(), preview=True, stack="ci", mocks=PlatformMocks(fresh_preview=True))


@pytest.fixture(params=["ci_up", "ci_preview"])
def ci_program(request) -> Program:
    return request.getfixturevalue(request.param)


def test_the_ci_stack_is_one_tenant_one_worker_one_card_one_etcd():
    platform = load_stack_file(CI_STACK)
    (tenant,) = platform.tenants
    assert tenant.workers == 1 and tenant.gpus is not None and tenant.gpus.per_worker == 1
    assert platform.management.kamaji_etcd_replicas == 1


def test_the_ci_stack_has_its_own_cluster_network_subnet_and_tenant_names():
    """Beside a dev stack on the same Docker host: kind cluster, network and worker containers
    (named after the tenant) must not collide, nor the subnets."""
    ci, dev = parse_config(ci_config()), parse_config(dev_stack_config())
    assert ci.management.name != dev.management.name
    assert ci.management.docker_network != dev.management.docker_network
    assert not {t.name for t in ci.tenants} & {t.name for t in dev.tenants}
    others = (dev.management.docker_subnet, dev.management.tenant_subnet, life.DEFAULT_SUBNET,
              life.DEFAULT_TENANT_SUBNET, ManagementConfig().docker_subnet, ManagementConfig().tenant_subnet)
    for subnet in (ci.management.docker_subnet, ci.management.tenant_subnet):
        for other in others:
            assert not ipaddress.ip_network(subnet).overlaps(ipaddress.ip_network(other)), (subnet, other)


def test_the_lifecycle_run_still_finds_its_default_subnet_free():
    """lifecycle_support reads every Pulumi.*.yaml's subnet and refuses an overlapping one."""
    claims = life.stack_file_claims(ROOT)
    assert "Pulumi.ci.yaml management.dockerSubnet" in {c.owner for c in claims}
    assert "Pulumi.ci.yaml management.tenantSubnet" in {c.owner for c in claims}
    life.check_subnet(life.lifecycle_subnet({}), claims)
    life.check_subnet(life.lifecycle_tenant_subnet({}), claims, life.TENANT_SUBNET_ENV)


def test_one_control_plane_and_one_worker(ci_program):
    assert [r.inputs["metadata"]["name"] for r in ci_program.of_type(TCP)] == ["ci-a"]
    workers = [r.name for r in ci_program.of_type(COMMAND) if WORKER.fullmatch(r.name)]
    assert workers == ["ci-a-worker-0"]


def test_kamaji_etcd_runs_one_replica(ci_program):
    assert ci_program.named("management-kamaji").inputs["values"]["kamaji-etcd"]["replicas"] == 1


def test_kind_and_the_worker_use_the_ci_network(ci_program):
    kind = ci_program.named("management-kind")
    assert kind.inputs["environment"] == {"KIND_EXPERIMENTAL_DOCKER_NETWORK": "kamaji-hami-ci"}
    assert "kind create cluster --name kamaji-ci" in kind.inputs["create"]
    assert "--subnet 172.31.0.0/16" in ci_program.named("management-network").inputs["create"]
    assert "--network kamaji-hami-ci" in ci_program.named("ci-a-worker-0").inputs["create"]


def test_the_policy_rules_pass_on_the_ci_stack(ci_up):
    resources = as_resources(ci_up)
    violations = [m for r in resources for rule in rules.RESOURCE_RULES.values() for m in rule(r)]
    violations += [v.message for rule in rules.STACK_RULES.values() for v in rule(resources)]
    assert violations == []


@pytest.mark.parametrize(("program", "fresh"), [("ci_up", False), ("ci_preview", True)])
def test_the_policy_pack_passes_the_ci_stack(request, program, fresh):
    """Through pulumi-policy's own analyzer servicer, as the CLI runs the pack."""
    assert analyze(fixture_from_program(request.getfixturevalue(program), fresh=fresh)) == []
