"""Upgrades judged by the real engine: each recorded stack of an earlier version (main at 294ec8a,
the code released as 0.1.0, at 4dc9ef2 and at a48b3f2: tests/fixtures/upgrade-from/, mock
registrations of each, not engine-written states) deployed as that version's `up` would leave it
(its Kubernetes objects on the sim tier's API servers, its state imported with `pulumi stack
import`: tests/engine/recorded_deployment.py), then previewed with today's
program and the edits its upgrade notes ask for (docs/operations/upgrades.md): nothing protected or
holding data is replaced or deleted, nothing is refused.

The plan model (tests/plan_model.py), which the unit tier's upgrade tests use, is held to the
engine here: for each case, every resource the engine replaces or deletes, the model must too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kamaji_hami_platform.config import PROJECT
from tests.engine.checked_inputs import checked_inputs
from tests.engine.engine import Engine, Preview
from tests.engine.proxy import TierProxy, write_local_chart
from tests.engine.recorded_deployment import Deployment, RecordedStack, clusters, deploy
from tests.harness import ROOT, SECRET_SIG, SECRET_VALUE, dev_stack_config, production_config, run_program
from tests.plan_model import REFUSED, Step, failed, preview_plan
from tests.program.test_upgrades import BEFORE_OWN_NETWORKS, as_the_notes_say, ci_config, previewed, today
from tests.recorded_state import UPGRADE_FROM, recorded_state, recorded_versions
from tests.stack_resources import record as record_program

pytestmark = pytest.mark.engine

TCP = "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane"
COMMAND = "command:local:Command"
# Steps that replace or delete (pkg/resource/deploy/step.go StepOp values).
LOSING_OPS = {"delete", "delete-replaced", "create-replacement", "replace", "discard", "discard-replaced",
              "read-replacement", "remove-pending-replace"}
# How the engine's and the plan model's steps are compared (reads and their discards left out).
VERDICT_OPS = {"replaced": {"replace", "create-replacement", "delete-replaced"}, "deleted": {"delete"},
               "updated": {"update"}}
# The record's stack name and project as the recording program named them.
STACKS = {"dev": ("dev", PROJECT), "ci": ("ci", PROJECT), "production": ("prod", PROJECT),
          "two-tenants": ("lab", "two-tenants")}
EXAMPLE = Path("examples/two-tenants")


def holds_data(step: dict[str, Any]) -> bool:
    """What a replacement or delete would lose (as tests/program/test_upgrades.py `holds_data`):
    anything protected, a control plane, a Docker network or a worker container, a host's leave."""
    old = step.get("old") or {}
    name = step["urn"].rsplit("::", 1)[-1]
    return (bool(old.get("protect")) or step["type"] == TCP
            or (step["type"] == COMMAND
                and (name.endswith(("-kind", "-network", "-leave")) or "-worker-" in name)))


def _deleted_first(steps: list[tuple[str, str]]) -> set[str]:
    """The names replaced delete-first: their `delete-replaced` comes before their replacement."""
    first: dict[str, str] = {}
    for op, name in steps:
        if op in ("delete-replaced", "create-replacement"):
            first.setdefault(name, op)
    return {name for name, op in first.items() if op == "delete-replaced"}


def engine_verdict(preview: Preview) -> dict[str, set[str]]:
    """What the engine's preview replaces (and which of those delete-first), updates, deletes and
    refuses, by resource name."""
    names = {op: {step["urn"].rsplit("::", 1)[-1] for step in preview.steps if step["op"] in ops}
             for op, ops in VERDICT_OPS.items()}
    refusals = re.findall(r'unable to (?:replace|delete) resource "[^"]*::([^":]+)"', preview.text())
    names["refused"] = set(refusals)
    names["deleted first"] = _deleted_first([(step["op"], step["urn"].rsplit("::", 1)[-1])
                                             for step in preview.steps])
    return names


def model_verdict(steps: list[Step]) -> dict[str, set[str]]:
    """The same, from the plan model's steps (tests/plan_model.py)."""
    names = {op: {step.name for step in steps if step.op in ops} for op, ops in VERDICT_OPS.items()}
    names["refused"] = {step.name for step in steps if step.op == REFUSED}
    names["deleted first"] = _deleted_first([(step.op, step.name) for step in steps])
    return names


def assert_agree(engine: dict[str, set[str]], model: dict[str, set[str]]) -> None:
    disagreements = {kind: {"engine only": sorted(engine[kind] - model[kind]),
                            "model only": sorted(model[kind] - engine[kind])}
                     for kind in engine if engine[kind] != model[kind]}
    assert not disagreements, disagreements


def lost(preview: Preview) -> list[str]:
    return [f"{step['op']} {step['urn'].rsplit('::', 1)[-1]}" for step in preview.steps
            if step["op"] in LOSING_OPS and holds_data(step)]


def keep_the_example_on_the_shared_network(main: Path) -> None:
    """The two-tenants example's tenants given `worker_network="shared"`, as a user of the example
    writes it after reading the upgrade notes (tests/program/test_upgrades.py does it with mocks)."""
    text = main.read_text()
    assert text.count("TenantSettings(name=") == 2
    main.write_text(text.replace("TenantSettings(name=", 'TenantSettings(worker_network="shared", name='))


def today_config(stack: str, version: str) -> tuple[dict[str, Any], dict[str, str]]:
    """Today's config of a stack recorded at `version`, as its upgrade notes have users edit it,
    and its secrets."""
    if stack == "two-tenants":
        return {}, {}
    if stack == "dev":
        return as_the_notes_say(version, dev_stack_config()), {}
    if stack == "ci":
        return as_the_notes_say(version, ci_config()), {}
    config, secret_keys = production_config()
    return ({key: value for key, value in config.items() if key not in secret_keys},
            {"managementKubeconfig": "", **{f"sshPrivateKeys.{name}": key
                                            for name, key in config["sshPrivateKeys"].items()}})


@contextmanager
def deployed(engine: Engine, sim_bin: Path, crds: list[dict[str, Any]], proxy: TierProxy, version: str,
             record: str,
             folder: Path = UPGRADE_FROM, exports: dict[str, Any] | None = None,
             config: dict[str, Any] | None = None,
             edit: Callable[[list[dict[str, Any]]], None] | None = None) -> Iterator[tuple[str, Path]]:
    """The recorded stack deployed: its objects on API servers, its state imported into a stack of
    the tier (named as it was recorded), today's config (or `config`) in the stack file of a
    fresh project copy."""
    stack, project_name = STACKS[record]
    recorded = RecordedStack(version, record, stack, project_name, folder, exports)
    project = engine.project_copy(f"{version}-{record}")
    program = project / EXAMPLE if record == "two-tenants" else project
    for folder, name, chart_version in recorded.local_charts():
        write_local_chart(program / folder, name, chart_version)
    if record == "two-tenants" and version in BEFORE_OWN_NETWORKS:
        keep_the_example_on_the_shared_network(program / "__main__.py")
    if record == "two-tenants":
        engine.install(program)
    with clusters(recorded.tenants(), sim_bin, crds, proxy) as running:
        live = deploy(recorded, running)
        today, secrets = today_config(record, version)
        for value in secrets.values():
            # `pulumi config set` drops the last newline of a value read from stdin: the stored
            # key, which the recorded program was handed, is without it.
            live.replacements[value] = value.removesuffix("\n")
        config = today if config is None else config
        if "managementKubeconfig" in secrets:
            secrets["managementKubeconfig"] = running.kubeconfig("management")
        engine.new_stack(stack, config={f"{project_name}:{key}": value for key, value in config.items()},
                         cwd=program, secrets=secrets)
        try:
            providers = engine.export(stack, cwd=program)["deployment"]["secrets_providers"]
            deployment = Deployment(recorded, running, live)
            deployment.checked = checked_inputs(engine, deployment.to_check(), recorded.local_charts())
            document = deployment.document(providers)
            if edit:
                edit(document["deployment"]["resources"])
            engine.import_state(stack, document, cwd=program)
            yield stack, program
        finally:
            engine.remove_stack(stack, cwd=program)


CASES = [(version, record) for version in recorded_versions() for record in STACKS
         if (ROOT / "tests/fixtures/upgrade-from" / version / f"{record}.json").is_file()]


@pytest.mark.parametrize(("version", "record"), CASES)
def test_an_upgrade_previewed_by_the_engine_loses_nothing_and_refuses_nothing(
        engine, sim_bin, management_crds, proxy, version, record, monkeypatch):
    """And the plan model, which the unit tier's upgrade tests use, replaces, updates, deletes and
    refuses exactly what the engine does."""
    with deployed(engine, sim_bin, management_crds, proxy, version, record) as (stack, project):
        preview = engine.preview(stack, cwd=project)
    assert preview.returncode == 0, preview.text()
    assert preview.violations() == [], preview.text()
    assert lost(preview) == [], preview.text()
    assert_agree(engine_verdict(preview), model_verdict(previewed(version, record, monkeypatch)))


def recorded_today(folder: Path, config: dict[str, Any], record: str = "dev") -> dict[str, Any]:
    """Today's program's stack recorded into `folder/today/<record>.json` (as a release records its
    stacks: the production example's with its secrets), and its exports in the wire form (secret
    ones marked), which its state's stack holds."""
    if record == "production":
        _, secret_keys = production_config()
        program = run_program(config, stack=STACKS[record][0], secret_keys=secret_keys)
    else:
        program = run_program(config, stack=STACKS[record][0])
    (folder / "today").mkdir(exist_ok=True)
    (folder / "today" / f"{record}.json").write_text(record_program(program))
    return {name: {SECRET_SIG: SECRET_VALUE, "value": value} if name in program.secret_exports else value
            for name, value in program.exports.items()}


def test_a_second_preview_of_a_deployed_stack_changes_nothing(engine, sim_bin, management_crds, proxy,
                                                               tmp_path):
    """Today's program over the state its own `up` leaves: every resource the same (the engine
    reads the admin Secrets and its own last outputs, and changes nothing)."""
    exports = recorded_today(tmp_path, dev_stack_config())
    with deployed(engine, sim_bin, management_crds, proxy, "today", "dev", tmp_path, exports,
                  dev_stack_config()) as (stack, project):
        preview = engine.preview(stack, cwd=project)
    assert preview.returncode == 0, preview.text()
    assert preview.unexpected_warnings() == [], preview.text()
    changed = {step["urn"].rsplit("::", 1)[-1]: step["op"] for step in preview.steps
               if step["op"] not in ("same", "read")}
    assert changed == {}, preview.text()


def test_a_changed_create_only_setting_is_refused_naming_both_values(engine, sim_bin, management_crds,
                                                                     proxy, tmp_path):
    """A planted violation on a stack with state: tenant-a's podCidr changed. The engine refuses
    the protected guard's replacement, and the program names the setting, both values and the way
    out (kamaji_hami_platform/create_only_report.py, from the stack's last outputs)."""
    exports = recorded_today(tmp_path, dev_stack_config())
    config = dev_stack_config()
    created_with = config["tenants"][0]["podCidr"]
    config["tenants"][0]["podCidr"] = "10.99.0.0/16"
    with deployed(engine, sim_bin, management_crds, proxy, "today", "dev", tmp_path, exports,
                  config) as (stack, project):
        preview = engine.preview(stack, cwd=project)
    assert preview.returncode != 0, preview.text()
    said = preview.text()
    assert "tenant-a-create-only-podCidr" in said and "marked for protection" in said, said
    assert (f"tenants[name=tenant-a].podCidr is '10.99.0.0/16' in the config, but the running platform "
            f"was created with '{created_with}'") in said, said
    # The refused guard's replacement is all the preview planned to lose (and it is refused).
    assert {step.split(" ", 1)[1] for step in lost(preview)} == {"tenant-a-create-only-podCidr"}, said


def test_an_unprotected_state_whose_cluster_changed_loses_its_control_planes_in_model_and_engine(
        engine, sim_bin, management_crds, proxy, monkeypatch):
    """The review's case, where the check must find a loss: a 0.1.0 (294ec8a) dev state whose resources are
    not protected and whose management provider named another cluster. The engine replaces the
    control planes (a new provider replaces what it serves), and the plan model says the same."""
    other_cluster = "a-cluster-an-earlier-main-named"

    def unprotect_and_move(resources: list[dict[str, Any]]) -> None:
        for resource in resources:
            resource.pop("protect", None)
            if resource["urn"].endswith("::management-k8s"):
                resource["inputs"]["clusterIdentifier"] = other_cluster
                resource["outputs"]["clusterIdentifier"] = other_cluster

    with deployed(engine, sim_bin, management_crds, proxy, "294ec8a", "dev",
                  edit=unprotect_and_move) as (stack, project):
        preview = engine.preview(stack, cwd=project)
    assert preview.returncode == 0, preview.text()
    assert {"replace tenant-a-control-plane", "replace tenant-b-control-plane"} <= set(lost(preview))

    before = recorded_state("294ec8a", "dev")
    for reg in before.registrations:
        reg.options = {**reg.options, "protect": False}
        if reg.name == "management-k8s":
            reg.inputs = {**reg.inputs, "clusterIdentifier": other_cluster}
    model = preview_plan(before, lambda mocks: today("dev", monkeypatch, mocks))
    assert_agree(engine_verdict(preview), model_verdict(model))


def test_a_new_management_cluster_in_one_run_fails_in_the_preview_as_the_model_says(
        engine, sim_bin, management_crds, proxy, tmp_path):
    """Day 2, the most destructive plan: a new kind node image on a deployed dev stack, previewed
    with `--ignore-protect` (the user chose to start over in one run, as the day-2 docs offered).
    The engine's preview fails: the kind cluster's delete-first cascade deletes the management
    provider while the tenants' admin Secrets, read through it, stay (a cascade never takes a
    read), and it refuses to save that state. The plan model fails at the same provider
    (tests/program/test_day2.py); `make down` then `make up` is the way (docs/operations/day-2.md)."""
    exports = recorded_today(tmp_path, dev_stack_config())
    config = dev_stack_config()
    config["management"]["nodeImage"] = "kindest/node:v1.35.1"
    with deployed(engine, sim_bin, management_crds, proxy, "today", "dev", tmp_path, exports,
                  config) as (stack, project):
        preview = engine.preview(stack, "--ignore-protect", cwd=project)
    assert preview.returncode != 0, preview.text()
    assert re.search(r"failed to verify snapshot: resource \S+::tenant-[ab]-admin-kubeconfig refers to "
                     r"unknown provider \S+::management-k8s::", preview.text()), preview.text()
    before = recorded_state("today", "dev", tmp_path)
    model = preview_plan(before, lambda mocks: run_program(config, preview=True, mocks=mocks),
                         ignore_protect=True)
    assert failed(model) == ["management-k8s"]
    assert_agree(engine_verdict(preview), model_verdict(model))


def test_a_kind_setting_stays_refused_after_its_guard_was_replaced_once(engine, sim_bin, management_crds,
                                                                        proxy, tmp_path):
    """Issue 38, item 5: a new kind node image on a deployed dev stack whose guard a user
    unprotected (`pulumi state unprotect`, as the engine's refusal suggests). An `up` that skips
    its preview replaces the guard and is refused at the protected kind cluster; the cluster keeps
    the image it was created with. The next preview must still refuse the cluster, which keeps its
    settings in its own state (`replacement_trigger`): with `replace_with` alone, which fires only
    in the run that replaces the guard, it planned nothing, and the outputs claimed the new image."""
    exports = recorded_today(tmp_path, dev_stack_config())
    config = dev_stack_config()
    created_with = config["management"]["nodeImage"]
    config["management"]["nodeImage"] = "kindest/node:v1.35.1"
    guard = "management-create-only-nodeImage"

    def unprotect_the_guard(resources: list[dict[str, Any]]) -> None:
        for resource in resources:
            if resource["urn"].endswith(f"::{guard}"):
                resource.pop("protect")

    with deployed(engine, sim_bin, management_crds, proxy, "today", "dev", tmp_path, exports, config,
                  edit=unprotect_the_guard) as (stack, project):
        result = engine.up(stack, "--skip-preview", cwd=project)
        said = result.stdout + result.stderr
        assert result.returncode != 0, said
        assert re.search(r'unable to replace resource "[^"]*::management-kind"', said), said
        resources = engine.export(stack, cwd=project)["deployment"]["resources"]
        state = {r["urn"].rsplit("::", 1)[-1]: r for r in resources if not r.get("delete")}
        assert state[guard]["inputs"]["triggers"] == ["kindest/node:v1.35.1"], state[guard]
        assert created_with in state["management-kind"]["inputs"]["triggers"]

        preview = engine.preview(stack, cwd=project)
    assert preview.returncode != 0, preview.text()
    # Refused at the cluster (and, as the preview goes on, at the first control plane of its
    # delete-first cascade), not at the guard, which already holds the new value.
    refused = engine_verdict(preview)["refused"]
    assert "management-kind" in refused and guard not in refused, preview.text()
    assert "management.nodeImage is 'kindest/node:v1.35.1' in the config" in preview.text()


def test_a_targeted_up_that_leaves_a_guard_out_keeps_its_recorded_value(engine, sim_bin, management_crds,
                                                                        proxy, tmp_path):
    """Issue 38, item 10: tenant-a's podCidr changed, then an `up --target` of the management
    cluster's component and one of its guards (tenant-a's guard left out, so not refused). The
    stack's `createOnlySettings` must keep what tenant-a's guard holds (the value it was created
    with), so the next preview still says the change in the platform's words: built from the
    config, it recorded the new value and the message hid itself."""
    from tests.engine.test_targeted_up import management_targets

    exports = recorded_today(tmp_path, dev_stack_config())
    config = dev_stack_config()
    created_with = config["tenants"][0]["podCidr"]
    config["tenants"][0]["podCidr"] = "10.99.0.0/16"
    guard = "tenant-a-create-only-podCidr"
    with deployed(engine, sim_bin, management_crds, proxy, "today", "dev", tmp_path, exports,
                  config) as (stack, project):
        result = engine.up(stack, *management_targets(stack), cwd=project)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
        (root,) = [r for r in engine.export(stack, cwd=project)["deployment"]["resources"]
                   if r["type"] == "pulumi:pulumi:Stack"]
        assert root["outputs"]["createOnlySettings"][guard] == created_with, root["outputs"]
        preview = engine.preview(stack, cwd=project)
    assert preview.returncode != 0, preview.text()
    assert (f"tenants[name=tenant-a].podCidr is '10.99.0.0/16' in the config, but the running platform "
            f"was created with '{created_with}'") in preview.text(), preview.text()
