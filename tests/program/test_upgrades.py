"""Upgrades: today's program planned (tests/plan_model.py) over a stack's state as an earlier
version left it (tests/recorded_state.py, tests/fixtures/upgrade-from/<version or commit>/), for
every shipped stack: dev, ci, the production example and the two-tenants example.

- `294ec8a`: main at 294ec8a, the code released as 0.1.0 (the resources the restructure kept);
- `4dc9ef2`: main before tenants had networks of their own (issue 29), dev and production;
- `a48b3f2`: main before issue 38, every shipped stack: what the next release plans from.

Each folder holds mock registrations, not states the engine wrote: what the program registered
under mocks (tests/stack_resources.py `record`: types, names, inputs, options, dependencies), with
no provider outputs or IDs. The unit tier plans over them with the plan model; the engine tier
turns them into states (tests/engine/recorded_deployment.py: objects applied to sim API servers,
outputs read back, IDs as the providers write them). States written by real runs come from the
live tier (issue 42).

Each is planned with the edits its upgrade notes ask for (CHANGELOG.md, docs/operations/
upgrades.md): tenants created then keep `workerNetwork: shared`. Nothing that holds data or a
joined node is replaced or deleted, nothing is refused; what does change is listed.
A release records its stacks here (`python -m tests.recorded_state <version>`), so the next one is
checked against it.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import yaml

from kamaji_hami_platform.tenant import component as tenant_component
from tests.harness import ROOT, PlatformMocks, Program, dev_stack_config, production_config, run_program
from tests.plan_model import plan, preview_plan, refused, stopped
from tests.recorded_state import recorded_state, recorded_versions
from tests.stack_resources import LOCK_RELEASE_RESOURCES

pytestmark = pytest.mark.unit

EXAMPLE_MAIN = ROOT / "examples" / "two-tenants" / "__main__.py"
TCP = "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane"
COMMAND = "command:local:Command"
# Recorded before each kind tenant got a Docker network of its own (issue 29): its notes keep the
# tenants they created on the shared network.
BEFORE_OWN_NETWORKS = ("294ec8a", "4dc9ef2")
REPLACE_OR_DELETE = ("delete", "delete-replaced", "create-replacement", "replace", "discard")


def holds_data(reg) -> bool:
    """What a replacement or delete would lose: anything protected (the kind cluster, control
    planes, guards), a control plane, a Docker network or a worker container (its /var), and a
    host's `-leave` (replacing it resets the host)."""
    name = reg.name
    return (bool(reg.options.get("protect")) or reg.type == TCP
            or (reg.type == COMMAND
                and (name.endswith(("-kind", "-network", "-leave")) or "-worker-" in name)))


def lost(before: SimpleNamespace, steps) -> list[str]:
    """The steps that replace or delete what holds data (by the old state's registrations)."""
    old = {reg.name: reg for reg in before.registrations}
    return [str(step) for step in steps
            if step.op in REPLACE_OR_DELETE and step.name in old and holds_data(old[step.name])]


def kept_on_the_shared_network(config: dict) -> dict:
    config = copy.deepcopy(config)
    for tenant in config["tenants"]:
        if "hosts" not in tenant:
            tenant["workerNetwork"] = "shared"
    return config


def ci_config() -> dict:
    document = yaml.safe_load((ROOT / "Pulumi.ci.yaml").read_text())
    return {key.split(":", 1)[1]: value for key, value in document["config"].items()}


def example_kept_on_the_shared_network(monkeypatch: pytest.MonkeyPatch,
                                       mocks: PlatformMocks | None = None) -> Program:
    """The two-tenants example, its tenants given `worker_network="shared"` as a user of the
    example would write it after reading the upgrade notes."""
    original = tenant_component.tenant_config
    monkeypatch.setattr(tenant_component, "tenant_config",
                        lambda settings, where: original({"worker_network": "shared", **settings}, where))
    return run_program({}, main=EXAMPLE_MAIN, project="two-tenants", stack="lab", preview=True, mocks=mocks)


def as_the_notes_say(version: str, config: dict) -> dict:
    """A stack file as its upgrade notes from `version` have users edit it: a kind stack created
    before tenants had networks of their own keeps them on the shared one."""
    return kept_on_the_shared_network(config) if version in BEFORE_OWN_NETWORKS else config


def today(stack: str, monkeypatch: pytest.MonkeyPatch, mocks: PlatformMocks | None = None,
          version: str = "294ec8a") -> Program:
    """Today's program over a stack recorded at `version`, as a preview runs it (under `mocks`)."""
    if stack == "dev":
        return run_program(as_the_notes_say(version, dev_stack_config()), preview=True, mocks=mocks)
    if stack == "ci":
        return run_program(as_the_notes_say(version, ci_config()), stack="ci", preview=True, mocks=mocks)
    if stack == "production":
        config, secret_keys = production_config()
        return run_program(config, stack="prod", secret_keys=secret_keys, preview=True, mocks=mocks)
    if version in BEFORE_OWN_NETWORKS:
        return example_kept_on_the_shared_network(monkeypatch, mocks)
    return run_program({}, main=EXAMPLE_MAIN, project="two-tenants", stack="lab", preview=True, mocks=mocks)


def previewed(version: str, stack: str, monkeypatch: pytest.MonkeyPatch) -> list:
    """What `pulumi preview` of today's program shows over the recorded stack."""
    return preview_plan(recorded_state(version, stack),
                        lambda mocks: today(stack, monkeypatch, mocks, version))


STACKS = ("dev", "ci", "production", "two-tenants")
CASES = [(version, stack) for version in recorded_versions() for stack in STACKS
         if (ROOT / "tests/fixtures/upgrade-from" / version / f"{stack}.json").is_file()]


@pytest.mark.parametrize(("version", "stack"), CASES)
def test_an_upgrade_loses_nothing_and_refuses_nothing(version, stack, monkeypatch):
    before = recorded_state(version, stack)
    steps = previewed(version, stack, monkeypatch)
    assert not refused(steps) and not stopped(steps), [str(s) for s in steps]
    assert lost(before, steps) == []


def test_every_shipped_stack_of_the_release_is_recorded():
    assert {stack for version, stack in CASES if version == "294ec8a"} == {"dev", "ci", "production",
                                                                         "two-tenants"}


@pytest.mark.parametrize("stack", ["dev", "ci", "two-tenants"])
def test_from_0_1_0_a_kind_stack_gets_node_admission_and_updates_only(stack, monkeypatch):
    steps = previewed("294ec8a", stack, monkeypatch)
    # `read`: the stack program's StackReference to its own last outputs, in every preview.
    assert {step.op for step in steps} - {"read"} == {"create", "update"}
    assert {step.name.split("-", 2)[-1] for step in steps if step.op == "create"} >= {
        "validatingadmissionpolicy-kamaji-hami-platform-nodes"}


def test_from_0_1_0_worker_hosts_rejoin_from_this_host_as_the_notes_say(monkeypatch):
    """Each host's join becomes a local command (the old remote one deleted: it has no delete, so
    nothing runs on the host); its Ready wait and GPU registration are updated in place (the join's
    id in the wait's environment and on the registration), its leave too: no host is reset and
    nothing is replaced (docs/operations/upgrades.md)."""
    steps = previewed("294ec8a", "production", monkeypatch)
    hosts = ("ml-prod-gpu-node-1", "ml-prod-gpu-node-2", "ml-prod-gpu-node-3", "sandbox-cpu-node-1")
    registrations = {host.replace("-", "-gpus-", 1) if host.startswith("sandbox")
                     else host.replace("ml-prod-", "ml-prod-gpus-", 1) for host in hosts}
    assert {s.name for s in steps if s.op == "create-replacement"} == set()
    updated = {s.name for s in steps if s.op == "update"}
    assert {*hosts, *registrations, *(f"{host}-leave" for host in hosts)} <= updated
    assert {s.name for s in steps if s.op == "create" and s.name.endswith("-join")} == {
        f"{host}-join" for host in hosts}


def test_moving_a_running_tenant_to_a_network_of_its_own_is_refused_in_preview():
    """Left at the default (own), a tenant created on the shared network is refused by the guard it
    already has, before anything is touched (and `make preview` names the setting first:
    tests/tools/test_upgrade_check.py)."""
    steps = preview_plan(recorded_state("4dc9ef2", "dev"),
                         lambda mocks: run_program(dev_stack_config(), preview=True, mocks=mocks))
    assert sorted(refused(steps)) == [f"{t}-create-only-addressBlock" for t in ("tenant-a", "tenant-b")]
    assert {"tenant-a-worker-0", "tenant-b-worker-0"} <= {s.name for s in steps if s.op == "delete-replaced"}


def test_the_check_catches_an_upgrade_that_would_replace_what_holds_data():
    """The review's case: a state whose kind cluster and control planes were not protected (and
    whose management provider named another cluster) planned their delete-first replacement
    without a refusal. The check above would fail on it."""
    before = recorded_state("294ec8a", "dev")
    for reg in before.registrations:
        reg.options = {**reg.options, "protect": False}
        if reg.name == "management-k8s":
            reg.inputs = {**reg.inputs, "clusterIdentifier": "a-cluster-an-earlier-main-named"}
    steps = plan(before, run_program(kept_on_the_shared_network(dev_stack_config())))
    assert not refused(steps)
    assert {"tenant-a-control-plane", "tenant-b-control-plane"} <= {
        line.split(" ")[1] for line in lost(before, steps)}


def test_a_change_of_what_a_later_release_hands_kind_replaces_no_running_cluster(monkeypatch):
    """The kind cluster's trigger list and kind config are ignored after its create: a release may
    change them (tests/program/test_day2.py has the monkeypatched render)."""
    before = recorded_state("294ec8a", "dev")
    kind = next(reg for reg in before.registrations if reg.name == "management-kind")
    kind.inputs = {**kind.inputs, "triggers": ["what", "an", "older", "release", "listed"]}
    steps = plan(before, run_program(kept_on_the_shared_network(dev_stack_config())))
    # At most its create script runs again (an update: pulumi-command runs `create` then).
    assert {s.op for s in steps if s.name == "management-kind"} <= {"update"}
    assert all("triggers" not in s.why for s in steps if s.name == "management-kind")



def test_from_a48b3f2_a_host_stack_updates_its_hosts_in_place(monkeypatch):
    """Issue 38 changed the leave's host reset (a host without this stack's marker is left as it
    is) and the join's failure path (it resets only what kubeadm wrote): each host's `-leave` and
    `-join` is updated in place (the join runs again: a joined host answers "already joined"), its
    Ready wait and GPU registration updated too (the join's id moved from the wait's triggers to its
    environment and onto the registration), and nothing is replaced: the preview knows none of the
    updated join's output, and the wait's triggers no longer hold it (docs/operations/upgrades.md;
    the engine tier holds this model to the engine's preview of the same state)."""
    steps = previewed("a48b3f2", "production", monkeypatch)
    hosts = ("ml-prod-gpu-node-1", "ml-prod-gpu-node-2", "ml-prod-gpu-node-3", "sandbox-cpu-node-1")
    registrations = {"ml-prod-gpus-gpu-node-1", "ml-prod-gpus-gpu-node-2", "ml-prod-gpus-gpu-node-3",
                     "sandbox-gpus-cpu-node-1"}
    # And every command that holds a secret starts its shell without the caller's BASH_ENV and
    # SHELLOPTS (a new interpreter: each such command is updated, its create run again).
    clean_shell = {"management-cluster-check", "management-kamaji-webhook", "ml-prod-admin-access",
                   "sandbox-admin-access"}
    # And the hosts' token group gets its own bindings, and the node admission policy judges a
    # kubelet's updates too (issue 38, item 3).
    join_access = {f"{tenant}-{binding}" for tenant in ("ml-prod", "sandbox") for binding in (
        "clusterrolebinding-kamaji-hami-platform-hosts-system-node-bootstrapper",
        "clusterrolebinding-kamaji-hami-platform-hosts-kubeadm-get-nodes",
        "rolebinding-kube-system-kamaji-hami-platform-hosts-kubeadm-nodes-kubeadm-config",
        "rolebinding-kube-system-kamaji-hami-platform-hosts-kubeadm-kubelet-config")}
    node_admission = {f"{tenant}-validatingadmissionpolicy-kamaji-hami-platform-nodes"
                      for tenant in ("ml-prod", "sandbox")}
    # And the mock tenant gets the node-lock release (issue 41), created.
    # And HAMi's Services lose their node ports (issue 40): each tenant's release is updated.
    hami_releases = {f"{tenant}-gpus-hami" for tenant in ("ml-prod", "sandbox")}
    # And every Kubernetes provider takes back, by force, a field the platform sets that a hand
    # changed (issue 42): an update of each provider, which replaces nothing it manages.
    providers = {"management-k8s", "ml-prod-k8s", "sandbox-k8s"}
    # And (issue 42) the pool waits for MetalLB's webhook (a new wait, created), and a command whose
    # delete takes the chart's DataStores before Kamaji's uninstall (created).
    assert {(step.op, step.name) for step in steps if step.op != "read"} == {
        ("update", name) for name in (*hosts, *registrations, *(f"{host}-leave" for host in hosts),
                                      *(f"{host}-join" for host in hosts), *clean_shell, *node_admission,
                                      *hami_releases, *providers)
    } | {("create", name) for name in (*join_access, "management-metallb-webhook",
                                       "management-kamaji-datastores")} | {
        ("create", f"sandbox-gpus-lock-release-{name}") for name in LOCK_RELEASE_RESOURCES}
