"""The inputs a state holds for recorded resources: what their real providers' `Check` returns for
the recorded inputs, read from a preview of a flat replay of them (tests/engine/check_replay.py).
The preview's events show each planned create's checked inputs (`resourcePreEvent` `new.inputs`),
secrets masked: those are taken back from the recorded inputs at the same path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.engine.engine import ROOT, Engine
from tests.engine.proxy import write_local_chart
from tests.harness import SECRET_SIG, SECRET_VALUE

REPLAY = Path(__file__).with_name("check_replay.py")
MASKED = "[secret]"
STACK = "check"
ENGINE_INTERNAL = "__internal"


def _restore_secrets(checked: Any, wire: Any) -> Any:
    """`checked` with each masked secret replaced by the recorded one at the same path (wire form)."""
    if isinstance(checked, dict):
        if checked.get(SECRET_SIG) == SECRET_VALUE:
            if not (isinstance(wire, dict) and wire.get(SECRET_SIG) == SECRET_VALUE):
                raise AssertionError(f"Check made a secret of a recorded plain value: {wire!r:.80}")
            return wire
        recorded = wire if isinstance(wire, dict) else {}
        return {key: _restore_secrets(item, recorded.get(key)) for key, item in checked.items()}
    if isinstance(checked, list):
        recorded = wire if isinstance(wire, list) else []
        return [_restore_secrets(item, recorded[index] if index < len(recorded) else None)
                for index, item in enumerate(checked)]
    if checked == MASKED:
        raise AssertionError("a masked value outside a secret")
    return checked


def checked_inputs(engine: Engine, resources: list[dict[str, Any]],
                   local_charts: list[tuple[str, str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(type, name) -> the inputs `Check` returned, in the wire form (secrets marked). `resources`:
    `[{"type", "name", "inputs", "provider"}]`, providers first; `local_charts`: (folder, name,
    version) of charts the releases take from a folder."""
    folder = engine.work / f"check-replay-{len(list(engine.work.glob('check-replay-*')))}"
    folder.mkdir()
    (folder / "Pulumi.yaml").write_text(yaml.safe_dump({
        "name": "check-replay", "runtime": {"name": "python", "options": {
            "toolchain": "pip", "virtualenv": str(ROOT / ".venv")}}}))
    shutil.copy(REPLAY, folder / "__main__.py")
    (folder / "resources.json").write_text(json.dumps(resources))
    for chart, name, version in local_charts:
        write_local_chart(folder / chart, name, version)
    engine.new_stack(STACK, cwd=folder)
    try:
        preview = engine.preview(STACK, cwd=folder, policy=False)
    finally:
        engine.remove_stack(STACK, cwd=folder)
    assert preview.returncode == 0, preview.text()
    recorded = {(resource["type"], resource["name"]): resource["inputs"] for resource in resources}
    checked = {}
    for step in preview.steps:
        key = (step["type"], step["urn"].rsplit("::", 1)[-1])
        if step["op"] == "create" and key in recorded:
            # The engine's own bookkeeping of a provider's inputs, not the provider's checked inputs.
            inputs = {name: item for name, item in step["new"]["inputs"].items() if name != ENGINE_INTERNAL}
            checked[key] = _restore_secrets(inputs, recorded[key])
    missing = set(recorded) - set(checked)
    assert not missing, f"no checked inputs for {sorted(missing)}"
    return checked
