"""GPU model of the platform: devices, HAMi's fit, and a capacity planner.

Public API: `GpuDevice`, `GpuRequest`, `fit`, `FitResult`, `plan`, `plan_nodes`,
`plan_sequence`, `Plan`, `Placement`, `Span` (see `components.gpu_devices`,
`components.gpu_fit` and `components.gpu_plan`: where HAMi may pick any of several tied nodes,
the plan lists them and gives each count as a range over those choices).

Planner, offline, from a stack's config file:

    python -m components.gpu plan --stack dev --pod gpumem=20000,gpucores=30 --count 4 [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from components.config import PROJECT, ConfigError, PlatformConfig, TenantConfig, parse_config
from components.gpu_devices import (
    GPU_CORES_RESOURCE,
    GPU_MEMORY_PERCENTAGE_RESOURCE,
    GPU_MEMORY_RESOURCE,
    GPU_RESOURCE,
    GpuCapacity,
    GpuDevice,
    tenant_devices,
)
from components.gpu_fit import FitResult, GpuRequest, fit
from components.gpu_plan import (
    Placement,
    Plan,
    Span,
    capacity,
    plan,
    plan_nodes,
    plan_sequence,
    pods_that_fit,
    possible_outcomes,
)

__all__ = [
    "FitResult",
    "GpuDevice",
    "GpuRequest",
    "Placement",
    "Plan",
    "Span",
    "capacity",
    "fit",
    "plan",
    "plan_nodes",
    "plan_sequence",
    "plan_tenant",
    "pods_that_fit",
    "possible_outcomes",
    "reference_request",
]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
_POD_KEYS = {"gpu": GPU_RESOURCE, "gpumem": GPU_MEMORY_RESOURCE,
             "gpumem-percentage": GPU_MEMORY_PERCENTAGE_RESOURCE, "gpucores": GPU_CORES_RESOURCE}


def reference_request(platform: PlatformConfig) -> GpuRequest:
    shape = platform.reference_pod
    request = GpuRequest.from_limits({GPU_RESOURCE: shape.gpu, GPU_MEMORY_RESOURCE: shape.gpumem,
                                      GPU_CORES_RESOURCE: shape.gpucores})
    assert request is not None
    return request


def plan_tenant(tenant: TenantConfig, cluster: str, pods: list[GpuRequest]) -> Plan:
    """Plan pods on a tenant's GPU nodes with the tenant's HAMi policies, every tie followed."""
    return plan_sequence(tenant_devices(tenant, cluster), pods, policy=tenant.hami.gpu_scheduler_policy,
                         node_policy=tenant.hami.node_scheduler_policy)


def tenant_capacity_summary(tenant: TenantConfig, cluster: str, request: GpuRequest) -> dict[str, Any]:
    """Capacity of a tenant and how many pods of the reference shape it takes (stack output):
    a number, or `{min, max}` when it depends on how HAMi breaks node ties."""
    nodes = tenant_devices(tenant, cluster)
    devices = [d for ds in nodes.values() for d in ds]
    fitting = capacity(nodes, request, policy=tenant.hami.gpu_scheduler_policy,
                       node_policy=tenant.hami.node_scheduler_policy)
    return {**GpuCapacity.of(devices).as_output(), "referencePodsThatFit": fitting.as_output()}


def parse_pod(spec: str) -> GpuRequest:
    """`gpumem=20000,gpucores=30` -> the request HAMi builds from those limits."""
    limits: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, _, value = part.partition("=")
        if key not in _POD_KEYS or not value:
            raise ValueError(f"--pod: {part!r} is not one of {', '.join(k + '=N' for k in _POD_KEYS)}")
        limits[_POD_KEYS[key]] = value
    request = GpuRequest.from_limits(limits)
    if request is None:
        raise ValueError(f"--pod: {spec!r} asks for no NVIDIA resource HAMi would schedule")
    return request


def load_stack(stack: str, root: Path = PROJECT_ROOT) -> PlatformConfig:
    path = root / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise ValueError(f"no stack config {path.name} in {root}")
    document = yaml.safe_load(path.read_text()) or {}
    prefix = f"{PROJECT}:"
    raw = {key[len(prefix):]: value for key, value in (document.get("config") or {}).items()
           if key.startswith(prefix)}
    return parse_config(raw)


def plan_report(platform: PlatformConfig, request: GpuRequest, count: int) -> dict[str, Any]:
    report: dict[str, Any] = {"request": asdict(request), "tenants": {}}
    for tenant in platform.tenants:
        devices = [d for ds in tenant_devices(tenant, platform.management.name).values() for d in ds]
        planned = plan_tenant(tenant, platform.management.name, [request] * count)
        report["tenants"][tenant.name] = {
            "gpuSchedulerPolicy": tenant.hami.gpu_scheduler_policy,
            "nodeSchedulerPolicy": tenant.hami.node_scheduler_policy,
            "capacity": GpuCapacity.of(devices).as_output(),
            "placements": [asdict(p) for p in planned.placements],
            "summary": {"podsPlaced": planned.placed.as_output(), "podsRefused": planned.refused.as_output(),
                        "cardsUsed": planned.cards_used.as_output(), "certain": planned.certain,
                        "branches": planned.branches, "complete": planned.complete},
        }
    return report


def _span(value: int | dict[str, int]) -> str:
    return str(value) if isinstance(value, int) else f"{value['min']}-{value['max']}"


def _placement_line(p: dict[str, Any]) -> list[str]:
    share = f"{p['memory_mib']} MiB, {p['cores']} % cores per card"
    if p["ok"] and len(p["nodes"]) == 1:
        return [f"  {p['pod']:>3}  {p['node']:<20} {','.join(p['device_ids']):<40} placed ({share})"]
    if p["ok"]:
        return [f"  {p['pod']:>3}  {'tie: ' + ','.join(p['nodes']):<61} placed on one of them ({share})"]
    if p["maybe_refused"]:
        return [f"  {p['pod']:>3}  {'tie: ' + ','.join(p['nodes']):<61} placed or refused, "
                f"as earlier ties went: {p['reason']}"]
    lines = [f"  {p['pod']:>3}  {'-':<20} {'-':<40} refused: {p['reason']}"]
    if p["scheduler_message"]:
        lines.append(f"  {'':>3}  kubectl describe pod: {p['scheduler_message']}")
    return lines


def format_table(report: dict[str, Any]) -> str:
    request = report["request"]
    memory = f"{request['memreq']} MiB" if request["memreq"] else f"{request['mempercentagereq']} %"
    lines = [f"pod shape: {request['nums']} card(s), {memory} memory, {request['coresreq']} % cores"]
    for name, tenant in report["tenants"].items():
        capacity = tenant["capacity"]
        lines += ["", f"{name}  (gpu policy {tenant['gpuSchedulerPolicy']}, node policy "
                      f"{tenant['nodeSchedulerPolicy']}; {capacity['cards']} card(s), "
                      f"{capacity['memoryMiB']} MiB, {capacity['cores']} cores, {capacity['slots']} slots)",
                  f"  {'pod':>3}  {'node':<20} {'card':<40} result"]
        for placement in tenant["placements"]:
            lines += _placement_line(placement)
        summary = tenant["summary"]
        lines.append(f"  placed {_span(summary['podsPlaced'])}, refused {_span(summary['podsRefused'])}, "
                     f"cards in use {_span(summary['cardsUsed'])} ({_verdict(summary)})")
    return "\n".join(lines)


def _verdict(summary: dict[str, Any]) -> str:
    counts = (summary["podsPlaced"], summary["podsRefused"], summary["cardsUsed"])
    if summary["certain"]:
        verdict = "certain"
    elif all(isinstance(count, int) for count in counts):
        verdict = "counts certain; HAMi picks between tied nodes at random"
    else:
        verdict = "HAMi picks between tied nodes at random: each range covers every choice"
    if not summary["complete"]:
        verdict += f"; only the first {summary['branches']} branches followed"
    return verdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.gpu",
                                     description="Offline HAMi placement planner for a stack's tenants.")
    commands = parser.add_subparsers(dest="command", required=True)
    plan_cmd = commands.add_parser("plan", help="place N identical GPU pods in every tenant")
    plan_cmd.add_argument("--stack", default="dev", help="stack whose Pulumi.<stack>.yaml to read")
    plan_cmd.add_argument("--pod", default="gpumem=20000,gpucores=30",
                          help="pod limits: gpu=N,gpumem=MiB,gpumem-percentage=P,gpucores=P")
    plan_cmd.add_argument("--count", type=int, default=4, help="number of pods to place")
    plan_cmd.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    try:
        if args.count < 1:
            raise ValueError("--count must be at least 1")
        report = plan_report(load_stack(args.stack), parse_pod(args.pod), args.count)
    except (ValueError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
