"""A stack's state as an earlier version of the program left it, from a record of its registrations
(tests/stack_resources.py's format), for planning an upgrade with tests/plan_model.py: what
`pulumi up` with today's program would do to a stack that earlier version deployed.

    tests/fixtures/upgrade-from/<commit>/<stack>.json   the stack's resources at that commit

Each record is what the program registered under mocks at that commit (294ec8a is the code
released as 0.1.0), not a state the engine wrote: no provider outputs, no IDs. The engine tier
builds states from them (tests/engine/recorded_deployment.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.harness import ROOT, Registration, _plain

UPGRADE_FROM = ROOT / "tests" / "fixtures" / "upgrade-from"


def _dependency_order(registrations: list[Registration]) -> list[Registration]:
    """Parents, providers and dependencies first, as a state file is ordered (the record sorts by
    URN); plan_model reads the old state in that order."""
    by_urn = {reg.urn: reg for reg in registrations}
    ordered: list[Registration] = []
    placed: set[str] = set()

    def place(reg: Registration) -> None:
        if reg.urn in placed:
            return
        placed.add(reg.urn)
        provider = reg.provider.rsplit("::", 1)[0] if reg.provider else ""  # "<urn>::<id>"
        for urn in [reg.parent, provider, *reg.dependencies]:
            if urn in by_urn:
                place(by_urn[urn])
        ordered.append(reg)

    for reg in registrations:
        place(reg)
    return ordered


def recorded_versions() -> list[str]:
    """The versions (release numbers, or commits of main) whose stacks are recorded."""
    return sorted(path.name for path in UPGRADE_FROM.iterdir() if path.is_dir())


def recorded_state(commit: str, stack: str, folder: Path = UPGRADE_FROM) -> SimpleNamespace:
    """The registrations of `stack` as recorded at `commit`, shaped as a Program for plan_model."""
    path: Path = folder / commit / f"{stack}.json"
    records = json.loads(path.read_text().replace("<ROOT>", str(ROOT)))
    registrations = [Registration(type=r["type"], name=r["name"], urn=r["urn"], parent=r["parent"],
                                  provider=r["provider"], dependencies=r["dependencies"], custom=r["custom"],
                                  inputs=_plain(r["wire"]), wire=r["wire"], options=r["options"])
                     for r in records]
    return SimpleNamespace(registrations=_dependency_order(registrations))


def record_release(version: str) -> list[Path]:
    """Record today's program's shipped stacks (dev, ci, production, two-tenants) as `version`: what
    the next release's upgrade tests plan from (tests/program/test_upgrades.py)."""
    import yaml

    from tests.harness import dev_stack_config, production_config, run_program
    from tests.stack_resources import record

    folder = UPGRADE_FROM / version
    folder.mkdir(parents=True, exist_ok=True)
    ci = {key.split(":", 1)[1]: value
          for key, value in yaml.safe_load((ROOT / "Pulumi.ci.yaml").read_text())["config"].items()}
    config, secret_keys = production_config()
    programs = {"dev": lambda: run_program(dev_stack_config()),
                "ci": lambda: run_program(ci, stack="ci"),
                "production": lambda: run_program(config, stack="prod", secret_keys=secret_keys),
                "two-tenants": lambda: run_program({}, main=ROOT / "examples" / "two-tenants" / "__main__.py",
                                                   project="two-tenants", stack="lab")}
    written = []
    for stack, run in programs.items():
        path = folder / f"{stack}.json"
        path.write_text(record(run()))
        written.append(path)
    return written


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.recorded_state <version>  (record the shipped stacks as it)")
    for path in record_release(sys.argv[1]):
        print(path.relative_to(ROOT))
