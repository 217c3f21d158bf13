"""`kamaji-hami-plan workloads`: a stack's declared GPU workloads planned as HAMi would place them,
as a table or JSON, optionally after what-if changes to the stack's config (more workers, more
cards per worker). The changed config goes through parse_config again, so a what-if can ask for
nothing the validator would refuse in the stack file itself.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kamaji_hami_platform.config import (
    ConfigError,
    PlatformConfig,
    TenantConfig,
    parse_config,
    read_stack_file,
)
from kamaji_hami_platform.gpu.workloads import (
    FITS,
    UNKNOWN,
    WorkloadPlan,
    WorkloadResult,
    plan_declared_workloads,
    verdict_of,
)

ADD_WORKERS = "--add-workers"
CARDS_PER_WORKER = "--cards-per-worker"
NO_WORKLOADS = "no tenant declares gpuWorkloads (see \"GPU capacity as code\" in the README)"


@dataclass(frozen=True)
class WhatIf:
    """One what-if flag: `tenant=value`."""

    flag: str
    tenant: str
    value: int



def refusal_label(message: str) -> str:
    """Where a user sees the refusal: a pod refused at creation (HAMi's webhook, a ResourceQuota)
    never exists to describe; kubectl prints the error when it creates it."""
    return "kubectl describe pod" if message.startswith("0/") else "kubectl create (refused)"

def parse_what_if(flag: str, spec: str) -> WhatIf:
    """`tenant-a=2` -> WhatIf; a positive integer only (a what-if adds, it never removes)."""
    tenant, _, value = spec.partition("=")
    if not tenant or not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"{flag} {spec!r}: expected TENANT=N with N a positive integer")
    return WhatIf(flag, tenant.strip(), int(value))


def _raw_tenant(raw: dict[str, Any], name: str, flag: str) -> dict[str, Any]:
    tenants = [t for t in raw.get("tenants") or [] if isinstance(t, dict)]
    for tenant in tenants:
        if tenant.get("name") == name:
            return tenant
    known = ", ".join(str(t.get("name")) for t in tenants) or "none"
    raise ValueError(f"{flag}: no tenant {name!r} in the stack (tenants: {known})")


def apply_what_ifs(raw: Mapping[str, Any], current: PlatformConfig,
                   what_ifs: list[WhatIf]) -> tuple[dict[str, Any], list[str]]:
    """The raw config with the what-ifs applied in order, and one line per change."""
    changed = copy.deepcopy(dict(raw))
    # The parsed config gives each key its default where the stack file leaves it out.
    parsed = {t.name: t for t in current.tenants}
    workers = {name: t.workers for name, t in parsed.items()}
    lines = []
    for what_if in what_ifs:
        tenant = _raw_tenant(changed, what_if.tenant, what_if.flag)
        if what_if.flag == ADD_WORKERS:
            before = workers[what_if.tenant]
            workers[what_if.tenant] = tenant["workers"] = before + what_if.value
            lines.append(f"{what_if.tenant}: workers {before} -> {tenant['workers']}")
        else:
            lines.append(_set_cards(tenant, parsed[what_if.tenant], what_if.value))
    return changed, lines


def _set_cards(raw_tenant: dict[str, Any], tenant: TenantConfig, per_worker: int) -> str:
    if tenant.gpus is None or not isinstance(raw_tenant.get("gpus"), dict):
        raise ValueError(f"{CARDS_PER_WORKER}: tenant {tenant.name!r} has no gpus to change")
    before = raw_tenant["gpus"].get("perWorker", tenant.gpus.per_worker)
    raw_tenant["gpus"]["perWorker"] = per_worker
    return f"{tenant.name}: gpus.perWorker {before} -> {per_worker}"


def load_with_what_ifs(path: Path, what_ifs: list[WhatIf]) -> tuple[PlatformConfig, list[str]]:
    """The stack file's config with the what-ifs applied, validated again."""
    raw = read_stack_file(path)
    current = parse_config(raw)
    if not what_ifs:
        return current, []
    changed, lines = apply_what_ifs(raw, current, what_ifs)
    try:
        return parse_config(changed), lines
    except ConfigError as error:
        raise ValueError(f"the what-if config ({'; '.join(lines)}) does not validate: {error}") from None


@dataclass
class WorkloadsReport:
    """The declared workloads of every tenant that has some."""

    stack_file: str
    what_if: list[str]
    plans: dict[str, WorkloadPlan]
    tenants: dict[str, TenantConfig]

    @property
    def verdict(self) -> str:
        return verdict_of(list(self.plans.values()))

    @property
    def fits(self) -> bool:
        return self.verdict == FITS

    def as_output(self) -> dict[str, Any]:
        return {"stackFile": self.stack_file, "whatIf": self.what_if, "fits": self.fits,
                "verdict": self.verdict,
                "tenants": {name: plan.as_output() for name, plan in self.plans.items()}}


def workloads_report(platform: PlatformConfig, stack_file: str, what_if: list[str]) -> WorkloadsReport:
    plans, _ = plan_declared_workloads(platform)
    return WorkloadsReport(stack_file, what_if, plans, {t.name: t for t in platform.tenants})


WORKLOAD_HEADER = f"  {'workload':<24} {'namespace':<16} {'replicas':>8} {'placed':>7} {'refused':>7} " \
                  f"{'headroom':>8}"
CARD_HEADER = f"  {'left after them: node':<24} {'card':<40} {'memory MiB':>11} {'cores %':>8} {'slots':>6}"


def _workload_lines(result: WorkloadResult) -> list[str]:
    lines = [f"  {result.name:<24} {result.namespace:<16} {result.replicas:>8} {result.placed!s:>7} "
             f"{result.refused!s:>7} {result.headroom!s:>8}"]
    if result.refused.high:
        message = result.kubectl_message or result.reason
        lines.append(f"    {refusal_label(result.kubectl_message)}: {message}")
    return lines


def _tenant_heading(tenant: TenantConfig) -> str:
    cards = f"{tenant.gpus.per_worker} {tenant.gpus.model.name} each" if tenant.gpus else "no GPUs"
    return (f"{tenant.name}  (gpu policy {tenant.hami.gpu_scheduler_policy}, node policy "
            f"{tenant.hami.node_scheduler_policy}; {tenant.workers} worker(s), {cards})")


def verdict(plan: WorkloadPlan) -> str:
    """`fits`, the smallest fix, or `unknown` and why; with a note when HAMi's choices decide."""
    if plan.verdict == UNKNOWN:
        return f"unknown: {plan.why}; neither fits nor does not fit is shown"
    text = "fits" if plan.fits else f"does not fit; smallest change that fits: {plan.fix}"
    if not plan.certain:
        text += " (ranges: the order HAMi takes the pods in and its picks between tied nodes decide)"
    if not plan.complete:
        text += (" (the verdict holds for every order; nodes, headroom and what each card has left "
                 "cover the orders followed)")
    return text


def format_workloads(report: WorkloadsReport) -> str:
    lines = [f"stack file: {report.stack_file}"]
    lines += [f"what-if: {line}" for line in report.what_if]
    if not report.plans:
        return "\n".join([*lines, NO_WORKLOADS])
    for name, plan in report.plans.items():
        lines += ["", _tenant_heading(report.tenants[name]), WORKLOAD_HEADER]
        for result in plan.workloads:
            lines += _workload_lines(result)
        lines.append(CARD_HEADER)
        lines += [f"  {c.node:<24} {c.card:<40} {c.memory_mib!s:>11} {c.cores!s:>8} {c.slots!s:>6}"
                  for c in plan.cards]
        lines.append(f"  {verdict(plan)}")
    return "\n".join(lines)


__all__ = ["WhatIf", "WorkloadsReport", "apply_what_ifs", "format_workloads", "load_with_what_ifs",
           "parse_what_if", "verdict", "workloads_report"]
