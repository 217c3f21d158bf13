"""The offline capacity planner: what HAMi would do with N identical GPU pods in each tenant of
a stack file, as a table or JSON. No cluster and no Pulumi CLI needed.

    kamaji-hami-plan plan --stack dev --pod gpumem=20000,gpucores=30 --count 4 [--json]
    kamaji-hami-plan workloads --stack dev [--add-workers tenant-a=1] [--cards-per-worker tenant-a=2] [--json]
    kamaji-hami-plan compare --base BASE_FILE --head HEAD_FILE [--markdown]
    python -m kamaji_hami_platform.planner plan ...            (the same)

`--stack NAME` reads `Pulumi.NAME.yaml` in the current directory; `--stack-file PATH` any file.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kamaji_hami_platform.config import ConfigError, PlatformConfig, load_stack, load_stack_file
from kamaji_hami_platform.gpu.capacity import plan_tenant
from kamaji_hami_platform.gpu.card_fit import GpuRequest
from kamaji_hami_platform.gpu.devices import (
    GPU_CORES_RESOURCE,
    GPU_MEMORY_PERCENTAGE_RESOURCE,
    GPU_MEMORY_RESOURCE,
    GPU_RESOURCE,
    GpuCapacity,
    tenant_devices,
)
from kamaji_hami_platform.gpu.workloads import DOES_NOT_FIT, FITS, UNKNOWN
from kamaji_hami_platform.planner.compare import format_markdown, format_text, head_verdict, load_side
from kamaji_hami_platform.planner.workloads_report import (
    ADD_WORKERS,
    CARDS_PER_WORKER,
    format_workloads,
    load_with_what_ifs,
    parse_what_if,
    workloads_report,
)

_POD_KEYS = {"gpu": GPU_RESOURCE, "gpumem": GPU_MEMORY_RESOURCE,
             "gpumem-percentage": GPU_MEMORY_PERCENTAGE_RESOURCE, "gpucores": GPU_CORES_RESOURCE}


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


EXIT_FITS, EXIT_DOES_NOT_FIT, EXIT_BAD_ARGUMENTS, EXIT_UNKNOWN = 0, 1, 2, 3
EXIT_BY_VERDICT = {FITS: EXIT_FITS, DOES_NOT_FIT: EXIT_DOES_NOT_FIT, UNKNOWN: EXIT_UNKNOWN}
WORKLOADS_EPILOG = """exit status: 0 when every declared replica fits in every order HAMi may take them in, 1
when one does not (or may not), 2 for bad arguments or a stack file that does not validate, 3 when the
planner could show neither (unknown)."""
COMPARE_EPILOG = """exit status: 0 when everything fits in HEAD, 1 when something does not or HEAD does not
validate, 2 for bad arguments, 3 when HEAD's verdict is unknown. A missing or invalid BASE is reported,
not an error."""


def _add_stack_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--stack", default="dev",
                         help="stack whose Pulumi.<stack>.yaml (in the current directory) to read")
    command.add_argument("--stack-file", type=Path, help="a stack file to read instead of --stack")
    command.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _stack_path(args: argparse.Namespace) -> Path:
    return args.stack_file or Path.cwd() / f"Pulumi.{args.stack}.yaml"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kamaji-hami-plan",
                                     description="Offline HAMi placement planner for a stack's tenants.")
    commands = parser.add_subparsers(dest="command", required=True)
    plan_cmd = commands.add_parser("plan", help="place N identical GPU pods in every tenant")
    _add_stack_arguments(plan_cmd)
    plan_cmd.add_argument("--pod", default="gpumem=20000,gpucores=30",
                          help="pod limits: gpu=N,gpumem=MiB,gpumem-percentage=P,gpucores=P")
    plan_cmd.add_argument("--count", type=int, default=4, help="number of pods to place")
    workloads_cmd = commands.add_parser(
        "workloads", help="plan each tenant's declared gpuWorkloads", epilog=WORKLOADS_EPILOG,
        description="Each tenant's declared gpuWorkloads planned as HAMi would place them: per workload "
                    "placed, refused, headroom, the refusal kubectl would show; per card what is left; "
                    "`fits` or the smallest change that fits.")
    _add_stack_arguments(workloads_cmd)
    for flag, meaning in ((ADD_WORKERS, "plan with N more workers of TENANT's shape"),
                          (CARDS_PER_WORKER, "plan with N cards per worker of TENANT (gpus.perWorker)")):
        workloads_cmd.add_argument(flag, action="append", default=[], metavar="TENANT=N",
                                   help=f"what-if: {meaning}; repeatable, validated like the stack file")
    compare_cmd = commands.add_parser(
        "compare", help="declared gpuWorkloads of a base stack file against a head one (pull requests)",
        epilog=COMPARE_EPILOG)
    compare_cmd.add_argument("--base", type=Path, required=True,
                             help="the base branch's stack file (may be missing: a new stack)")
    compare_cmd.add_argument("--head", type=Path, required=True, help="the pull request's stack file")
    compare_cmd.add_argument("--title", help="heading (default: GPU capacity: <head file name>)")
    compare_cmd.add_argument("--markdown", action="store_true", help="Markdown for a GitHub job summary")
    return parser


def _plan(args: argparse.Namespace) -> int:
    if args.count < 1:
        raise ValueError("--count must be at least 1")
    platform = load_stack_file(args.stack_file) if args.stack_file else load_stack(args.stack)
    report = plan_report(platform, parse_pod(args.pod), args.count)
    print(json.dumps(report, indent=2) if args.json else format_table(report))
    return EXIT_FITS


def _workloads(args: argparse.Namespace) -> int:
    what_ifs = [parse_what_if(ADD_WORKERS, spec) for spec in args.add_workers]
    what_ifs += [parse_what_if(CARDS_PER_WORKER, spec) for spec in args.cards_per_worker]
    path = _stack_path(args)
    platform, changes = load_with_what_ifs(path, what_ifs)
    report = workloads_report(platform, path.name, changes)
    print(json.dumps(report.as_output(), indent=2) if args.json else format_workloads(report))
    return EXIT_BY_VERDICT[report.verdict]


def _compare(args: argparse.Namespace) -> int:
    if not args.head.is_file():
        raise ValueError(f"--head: no stack file {args.head}")
    base, head = load_side(args.base), load_side(args.head)
    title = args.title or f"GPU capacity: {args.head.name}"
    print(format_markdown(base, head, title) if args.markdown else format_text(base, head, title))
    return EXIT_BY_VERDICT[head_verdict(head)]


COMMANDS = {"plan": _plan, "workloads": _workloads, "compare": _compare}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (ValueError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_ARGUMENTS

