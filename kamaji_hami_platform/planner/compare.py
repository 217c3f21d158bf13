"""`kamaji-hami-plan compare`: a stack file's declared GPU workloads on the base branch against the
pull request's, side by side, as text or as Markdown for a GitHub job summary.

The base may be missing (a stack new in the pull request) or may not validate (the schema moved,
or it was broken): the comparison says so and shows the head alone, since a review comment that
crashes tells the reviewer nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kamaji_hami_platform.config import ConfigError, load_stack_file
from kamaji_hami_platform.gpu.placement import Span
from kamaji_hami_platform.gpu.workloads import (
    DOES_NOT_FIT,
    FITS,
    UNKNOWN,
    WorkloadPlan,
    WorkloadResult,
    plan_declared_workloads,
    verdict_of,
)

LESS_ROOM = "⚠ less room"
MORE_REFUSED = "⚠ more refused"
REFUSED = "⚠ refused"
UNDECIDED = "? unknown"
MORE_ROOM = "more room"
FEWER_REFUSED = "fewer refused"
NEW_TENANT, NEW_WORKLOAD = "new tenant", "new workload"
REMOVED_TENANT, REMOVED_WORKLOAD = "tenant removed", "workload removed"
ABSENT = "-"


@dataclass
class Side:
    """One stack file: its plans, or why there are none."""

    path: Path
    problem: str = ""
    """Empty when the file validated; else `missing` or the validator's message."""
    missing: bool = False
    plans: dict[str, WorkloadPlan] = field(default_factory=dict)
    tenants: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problem


def load_side(path: Path) -> Side:
    if not path.is_file():
        return Side(path, problem="missing", missing=True)
    try:
        platform = load_stack_file(path)
    except (ConfigError, ValueError) as error:
        return Side(path, problem=str(error))
    plans, _ = plan_declared_workloads(platform)
    return Side(path, plans=plans, tenants=[t.name for t in platform.tenants])


@dataclass
class Row:
    tenant: str
    workload: str
    base: WorkloadResult | None
    head: WorkloadResult | None
    marks: list[str]


def _worse(base: Span, head: Span) -> bool:
    return head.low > base.low or head.high > base.high


def _marks(base: WorkloadResult | None, head: WorkloadResult | None, tenant: str,
           base_side: Side, head_side: Side) -> list[str]:
    marks = _change_marks(base, head, tenant, base_side, head_side)
    if head is not None and head_side.plans[tenant].verdict == UNKNOWN:
        marks.append(UNDECIDED)
    return marks


def _change_marks(base: WorkloadResult | None, head: WorkloadResult | None, tenant: str,
                  base_side: Side, head_side: Side) -> list[str]:
    if head is None:
        return [REMOVED_WORKLOAD if tenant in head_side.tenants else REMOVED_TENANT]
    marks = []
    if base is None and base_side.ok:
        marks.append(NEW_WORKLOAD if tenant in base_side.tenants else NEW_TENANT)
    if base is not None:
        if _worse(base.refused, head.refused):
            marks.append(MORE_REFUSED)
        elif _worse(head.refused, base.refused):
            marks.append(FEWER_REFUSED)
        # Headroom shrinking is the early warning: the next replica someone adds is refused.
        if _worse(head.headroom, base.headroom):
            marks.append(LESS_ROOM)
        elif _worse(base.headroom, head.headroom):
            marks.append(MORE_ROOM)
    if head.refused.high and MORE_REFUSED not in marks:
        marks.append(REFUSED)
    return marks


def _ordered(base: dict[str, WorkloadPlan], head: dict[str, WorkloadPlan]) -> list[str]:
    """Head's order, then what only the base has."""
    return list(head) + [name for name in base if name not in head]


def compare_rows(base: Side, head: Side) -> list[Row]:
    rows = []
    for tenant in _ordered(base.plans, head.plans):
        base_results = {w.name: w for w in base.plans[tenant].workloads} if tenant in base.plans else {}
        head_results = {w.name: w for w in head.plans[tenant].workloads} if tenant in head.plans else {}
        for name in list(head_results) + [n for n in base_results if n not in head_results]:
            b, h = base_results.get(name), head_results.get(name)
            rows.append(Row(tenant, name, b, h, _marks(b, h, tenant, base, head)))
    return rows


def _cells(result: WorkloadResult | None) -> list[str]:
    if result is None:
        return [ABSENT] * 3
    return [f"{result.placed} of {result.replicas}", str(result.refused), str(result.headroom)]


COLUMNS = ["tenant", "workload", "base placed", "base refused", "base headroom", "head placed",
           "head refused", "head headroom", "change"]


def _table(rows: list[Row]) -> list[list[str]]:
    return [[r.tenant, r.workload, *_cells(r.base), *_cells(r.head), ", ".join(r.marks)] for r in rows]


def _base_note(base: Side, head: Side) -> str:
    # Named after the head file: the base is usually a temporary copy read with `git show`.
    if base.missing:
        return f"the base branch has no {head.path.name} (a new stack): every workload is new"
    if not base.ok:
        return f"the base branch's {head.path.name} does not validate, so there is nothing to compare against"
    return ""


def _head_findings(head: Side) -> list[str]:
    """One line per head tenant that does not fit (each refusal and the smallest fix) or whose
    verdict is unknown (why)."""
    lines = []
    for name, plan in head.plans.items():
        if plan.verdict == UNKNOWN:
            lines.append(f"{name}: unknown: {plan.why}.")
        if plan.verdict != DOES_NOT_FIT:
            continue
        refusals = "; ".join(f"{w.name}: {w.kubectl_message or w.reason}"
                             for w in plan.workloads if w.refused.high)
        lines.append(f"{name} does not fit: {refusals} Smallest change that fits: {plan.fix}.")
    return lines


def head_verdict(head: Side) -> str:
    """The head's verdict, as `workloads` and the preview give it (a head that does not validate
    does not fit)."""
    return verdict_of(list(head.plans.values())) if head.ok else DOES_NOT_FIT


def head_fits(head: Side) -> bool:
    return head_verdict(head) == FITS


def format_text(base: Side, head: Side, title: str) -> str:
    lines = [title]
    if not head.ok:
        return "\n".join([*lines, f"head: {head.path.name} does not validate: {head.problem}"])
    if note := _base_note(base, head):
        lines.append(note)
    if not base.plans and not head.plans:
        return "\n".join([*lines, "no tenant declares gpuWorkloads in base or head"])
    table = [COLUMNS, *_table(compare_rows(base, head))]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
              for row in table]
    lines += _head_findings(head)
    if not base.ok and not base.missing:
        lines.append(f"base problem: {base.problem}")
    return "\n".join(lines)


def _details(summary: str, text: str) -> list[str]:
    return ["", f"<details><summary>{summary}</summary>", "", "```", text, "```", "", "</details>"]


def format_markdown(base: Side, head: Side, title: str) -> str:
    lines = [f"### {title}", ""]
    if not head.ok:
        lines.append(f"**{head.path.name} does not validate.**")
        return "\n".join([*lines, *_details("validator", head.problem)])
    if note := _base_note(base, head):
        lines += [f"> {note[0].upper()}{note[1:]}.", ""]
    if not base.plans and not head.plans:
        return "\n".join([*lines, "No tenant declares `gpuWorkloads` in base or head.", ""])
    lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in _table(compare_rows(base, head))]
    findings = _head_findings(head)
    lines += [""] + [f"- **{line}**" for line in findings] if findings else ["", "Everything fits in head."]
    if not base.ok and not base.missing:
        lines += _details("why the base does not validate", base.problem)
    return "\n".join([*lines, ""])


__all__ = ["LESS_ROOM", "MORE_REFUSED", "UNDECIDED", "Row", "Side", "compare_rows", "format_markdown",
           "format_text", "head_fits", "head_verdict", "load_side"]
