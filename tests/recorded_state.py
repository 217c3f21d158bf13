"""A stack's state as an earlier version of the program left it, from a record of its registrations
(tests/stack_resources.py's format), for planning an upgrade with tests/plan_model.py: what
`pulumi up` with today's program would do to a stack that earlier version deployed.

    tests/fixtures/upgrade-from/<commit>/<stack>.json   the stack's resources at that commit
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
        provider = reg.provider.split("::")[0] if reg.provider else ""
        for urn in [reg.parent, provider, *reg.dependencies]:
            if urn in by_urn:
                place(by_urn[urn])
        ordered.append(reg)

    for reg in registrations:
        place(reg)
    return ordered


def recorded_state(commit: str, stack: str) -> SimpleNamespace:
    """The registrations of `stack` as recorded at `commit`, shaped as a Program for plan_model."""
    path: Path = UPGRADE_FROM / commit / f"{stack}.json"
    records = json.loads(path.read_text().replace("<ROOT>", str(ROOT)))
    registrations = [Registration(type=r["type"], name=r["name"], urn=r["urn"], parent=r["parent"],
                                  provider=r["provider"], dependencies=r["dependencies"], custom=r["custom"],
                                  inputs=_plain(r["wire"]), wire=r["wire"], options=r["options"])
                     for r in records]
    return SimpleNamespace(registrations=_dependency_order(registrations))
