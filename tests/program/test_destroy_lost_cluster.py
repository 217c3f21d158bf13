"""`make down` after the kind cluster was deleted by hand (`kind delete cluster`, a Docker reset).

Every Kubernetes object of the platform is `deleted_with` the kind cluster's command or its
tenant's control plane, and in a destroy the engine skips the provider's delete for a resource
whose `deleted_with` resource is deleted too (pulumi/pulumi v3.276.0
pkg/resource/deploy/step.go `DeleteStep.Apply`: `isDeletedWith(s.old.DeletedWith,
s.otherDeletions)` comes before the provider's `Delete`). The engine still loads and configures
each resource's provider; a Kubernetes provider whose cluster does not answer configures anyway,
marking it unreachable instead of failing (pulumi-kubernetes v4.32.0
provider/pkg/provider/provider.go `Configure`: `k.clusterUnreachable = true`; only a call that
needs the cluster fails then; `make down` bounds each of its requests with
PULUMI_K8S_CLIENT_TIMEOUT). A destroy runs no program and no refresh.

So the deletes that act on the outside world are the Commands' delete scripts. This test plans
`make down` over the deployed dev stack (tests/plan_model.py: the engine's skip rule as modeled
there, not the engine itself), then runs each delete script the plan keeps, dependents first as
the engine orders them, against stand-in tools in which the kind cluster is gone and the tenant
API servers (its pods) do not answer: every one succeeds, and nothing is left.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from kamaji_hami_platform.tenant import node_join
from tests.harness import Program, dev_stack_config, run_program
from tests.plan_model import COMMAND, plan
from tests.standins import FAKES, run_script, stand_in

pytestmark = pytest.mark.unit

KUBECONFIG = "apiVersion: v1\nkind: Config\n"


@pytest.fixture(scope="module")
def deployed() -> Program:
    config = dev_stack_config()
    config["tenants"][0]["workers"] = 2
    return run_program(config)


def make_down_calls(program: Program) -> list:
    """(step, registration) for each delete `make down` (--ignore-protect) hands a provider."""
    by_name = {reg.name: reg for reg in program.registrations}
    steps = plan(program, SimpleNamespace(registrations=[]), ignore_protect=True)
    return [(step, by_name[step.name]) for step in steps
            if step.op == "delete" and not step.why.startswith("skipped") and by_name[step.name].custom
            and not step.type.startswith("pulumi:providers:")]


def kind_without_clusters(tmp_path: Path) -> Path:
    """A stand-in kind that lists no cluster (it was deleted), recording its calls."""
    stand_in(tmp_path / "bin", "kind", f"""#!/bin/sh
printf '%s\\n' "$*" >> {tmp_path}/kind.calls
[ "$1 $2" = "get clusters" ] && echo "No kind clusters found." >&2
exit 0
""")
    return tmp_path / "bin"


def sh(script: str, tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """A script of the stack with the stand-in docker (state in tmp_path/docker) and that kind."""
    return run_script(script, tools=(tmp_path / "bin", FAKES), docker_state=tmp_path / "docker", cwd=tmp_path,
                      env={node_join.KUBECONFIG_ENV: KUBECONFIG, **extra})


KIND_NODE = "kamaji-control-plane"


def host_as_left_by_a_lost_cluster(program: Program, tmp_path: Path) -> list[str]:
    """The platform's network, each tenant's own network and joined workers, as `up` left them;
    then the kind node is gone (Docker detaches a removed container from every network)."""
    by_name = {reg.name: reg for reg in program.registrations}
    assert sh(by_name["management-network"].inputs["create"], tmp_path).returncode == 0
    containers = tmp_path / "docker" / "containers"
    containers.mkdir(parents=True, exist_ok=True)
    (containers / KIND_NODE).write_text("kamaji\n")
    for network in ("tenant-a-network", "tenant-b-network"):
        result = sh(by_name[network].inputs["create"], tmp_path)
        assert result.returncode == 0, result.stderr
    workers = [reg.name for reg in program.registrations
               if reg.type == COMMAND and re.fullmatch(r"tenant-[ab]-worker-\d+", reg.name)]
    for name in workers:
        result = sh(by_name[name].inputs["create"], tmp_path)
        assert result.returncode == 0, result.stderr
    (containers / KIND_NODE).unlink()
    for attachment in (tmp_path / "docker" / "attached").glob(f"*/{KIND_NODE}"):
        attachment.unlink()
    return workers


def test_no_kubernetes_object_is_deleted_through_its_provider(deployed):
    calls = make_down_calls(deployed)
    assert {reg.type for _, reg in calls} == {COMMAND}
    with_scripts = sorted(reg.name for _, reg in calls if reg.inputs.get("delete"))
    assert with_scripts == ["management-kind", "management-network", "tenant-a-door", "tenant-a-network",
                            "tenant-a-worker-0", "tenant-a-worker-0-leave", "tenant-a-worker-1",
                            "tenant-a-worker-1-leave", "tenant-b-door", "tenant-b-network",
                            "tenant-b-worker-0", "tenant-b-worker-0-leave"]


def test_the_network_goes_after_everything_attached_to_it(deployed):
    """The engine deletes dependents first: every worker and the kind cluster depend on the
    network command, so its delete (which refuses while containers are attached) comes last."""
    network = next(reg.urn for reg in deployed.registrations if reg.name == "management-network")
    kind = next(reg for reg in deployed.registrations if reg.name == "management-kind")
    for reg in deployed.registrations:
        if reg.name in ("management-kind", "tenant-a-worker-0", "tenant-a-worker-1", "tenant-b-worker-0",
                        "tenant-a-door", "tenant-b-door"):  # each door is on the platform's network too
            assert network in depends_transitively(deployed, reg), reg.name
    for tenant in ("tenant-a", "tenant-b"):
        own = next(reg for reg in deployed.registrations if reg.name == f"{tenant}-network")
        assert deployed.depends_on(own, kind), "a tenant's network after the kind node (its component's)"
        for reg in deployed.registrations:
            if re.fullmatch(rf"{tenant}-(worker-\d+|door)", reg.name) and reg.type == COMMAND:
                assert own.urn in depends_transitively(deployed, reg), reg.name


def dependents_first(program: Program, regs: list) -> list[tuple[str, str]]:
    """(name, delete script) in an order the engine may delete them: a resource only once
    nothing that depends on it (transitively) is left (pulumi deletes dependents first)."""
    left, ordered = list(regs), []
    while left:
        ready = [r for r in left if not any(r.urn in depends_transitively(program, other)
                                            for other in left if other is not r)]
        assert ready, "a dependency cycle"
        ordered += [(r.name, r.inputs["delete"]) for r in ready]
        left = [r for r in left if r not in ready]
    return ordered


def depends_transitively(program: Program, reg) -> set[str]:
    by_urn = {r.urn: r for r in program.registrations}
    found, todo = set(), list(reg.dependencies)
    while todo:
        urn = todo.pop()
        if urn not in found:
            found.add(urn)
            todo += by_urn[urn].dependencies if urn in by_urn else []
    return found


def test_make_down_finishes_when_the_kind_cluster_was_deleted_by_hand(deployed, tmp_path):
    kind_without_clusters(tmp_path)
    workers = host_as_left_by_a_lost_cluster(deployed, tmp_path)
    state = tmp_path / "docker"
    scripts = [reg for _, reg in make_down_calls(deployed) if reg.inputs.get("delete")]
    for name, script in dependents_first(deployed, scripts):
        # make down: KHP_SKIP_DRAIN=1; the tenant API servers were pods of the lost cluster.
        result = sh(script, tmp_path, **{node_join.SKIP_DRAIN_ENV: "1"}, FAKE_API_DOWN="1")
        assert result.returncode == 0, f"{name}: {result.stderr}"
    assert not [w for w in workers if (state / "containers" / w).exists()], "every worker container removed"
    assert not (state / "networks" / "kamaji-hami").exists(), "the network removed"
    assert not list((state / "networks").glob("kamaji-hami-tenant-*")), "each tenant's network removed"
    kind_calls = (tmp_path / "kind.calls").read_text().splitlines()
    assert kind_calls == ["get clusters"], "nothing to delete: kind only looked"
