"""The engine-preview benchmark's replays (the figures are measured by `python -m
benchmarks.engine_preview` with the real engine: docs/development/benchmark.md). Here, at 2
tenants under the mocks: the structure replay registers the program's tree again, and neither
replay runs any code of the platform's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import engine_preview

pytestmark = pytest.mark.unit

TENANTS = 2


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[engine_preview.Run, dict[str, Path]]:
    run, structure, flat = engine_preview.record(TENANTS)
    return run, engine_preview.write_replays(tmp_path_factory.mktemp("replays"), structure, flat)


def tree(run: engine_preview.Run) -> dict[str, tuple[str, str, bool]]:
    return {reg.urn: (reg.type, reg.parent, reg.custom) for reg in run.program.registrations}


def test_the_structure_replay_registers_the_programs_tree(recorded):
    run, folders = recorded
    replay = engine_preview.replay_under_mocks(folders["structure"], TENANTS)
    assert tree(replay) == tree(run)
    assert {reg.type for reg in run.program.registrations if not reg.custom} == {
        "kamaji-hami-platform:index:ManagementCluster", "kamaji-hami-platform:index:KamajiTenant",
        "kamaji-hami-platform:index:HamiNodePool"}
    # Everything else the SDK sent as well: inputs, options, dependencies, providers, outputs.
    assert engine_preview.differences(run, replay) == []


def test_a_replay_that_strays_is_told(recorded, tmp_path):
    run, folders = recorded
    folder = tmp_path / "strayed"
    folder.mkdir()
    for name in ("__main__.py", "Pulumi.yaml"):
        (folder / name).write_text((folders["structure"] / name).read_text())
    data = json.loads((folders["structure"] / "replay.json").read_text())
    protected = next(event for event in data["events"]
                     if event.get("kind") == "custom" and event["options"].get("protect"))
    protected["options"]["protect"] = False
    (folder / "replay.json").write_text(json.dumps(data))
    found = engine_preview.differences(run, engine_preview.replay_under_mocks(folder, TENANTS))
    assert found and all(f"::{protected['name']}:" in line for line in found)


def test_the_replays_run_nothing_of_the_platform(recorded):
    run, folders = recorded
    for mode in ("structure", "flat"):
        assert engine_preview.imported_platform_modules(folders[mode] / "__main__.py") == []
    data: dict[str, Any] = json.loads((folders["structure"] / "replay.json").read_text())
    classes = {event["class"] for event in data["events"] if "class" in event}
    assert classes and all(path.startswith(("pulumi_kubernetes.", "pulumi_command.")) for path in classes)
    flat = json.loads((folders["flat"] / "flat.json").read_text())
    custom = sum(reg.custom for reg in run.program.registrations)
    assert len(flat["resources"]) + len(flat["providers"]) == custom
