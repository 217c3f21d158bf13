"""The capacity planner at real sizes: how long a verdict takes, per case and per tenant.

Each case is a stack (or one tenant) planned as `pulumi preview` plans it (`plan_declared_workloads`:
every order HAMi may take the pods in, the kubelet's pod limit, headroom, the smallest fix when a
tenant does not fit), and each tenant's reference-pod count (`gpuCapacity.referencePodsThatFit`);
`compare` plans each side once more. Cases:

- every stack file shipped (the dev stack, examples/*);
- 40 tenants x 8 workers x 8 cards, each with three workloads (training on two cards, inference,
  notebooks): the target is well under a second per tenant;
- the issue-31 sizes, which took a minute or more before: one 1000-replica workload on a
  one-card tenant (does not fit: the smallest fix), a 99-worker x 12-card tenant, 115 small pods on
  one 12-card worker (the kubelet's pod limit), and 4 x 2 cards with two alternating workloads of 12;
- issue 38's: three small workloads on the 99-worker x 12-card tenant (32 s before), held to the
  per-tenant target.

    python -m benchmarks.planner_scale [--json benchmarks/results/planner.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STACK_FILES = (*sorted(ROOT.glob("Pulumi.*.yaml")), *sorted((ROOT / "examples").glob("*/Pulumi.*.yaml")))
LARGE_TENANTS, LARGE_WORKERS, LARGE_CARDS = 40, 8, 8
PER_TENANT_TARGET_S = 1.0
ISSUE_CASE_TARGET_S = 10.0
# Issue 38: several workloads on many identical workers (32 s before; the target is per tenant).
SEVERAL_WORKLOADS_CASE = "3 workloads x 5, 99 workers x 12 cards"
LARGE_WORKLOADS = [
    {"name": "training", "replicas": 8, "gpu": 2, "gpumem": 40000, "gpucores": 50},
    {"name": "inference", "replicas": 40, "gpumem": 20000, "gpucores": 30},
    {"name": "notebooks", "replicas": 48, "gpumem": 8192, "gpucores": 10},
]


def large_stack() -> dict[str, Any]:
    from benchmarks.scale import tenant_config

    config = tenant_config(LARGE_TENANTS)
    for tenant in config["tenants"]:
        tenant.update(workers=LARGE_WORKERS, gpus={"model": "A100-80GB", "perWorker": LARGE_CARDS},
                      gpuWorkloads=copy.deepcopy(LARGE_WORKLOADS))
    return config


def _one_tenant(workloads: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
    tenant = {"name": "t", "kubernetesVersion": "v1.35.0", "podCidr": "10.36.0.0/16",
              "serviceCidr": "10.37.0.0/16", "workers": 1, "gpus": {"model": "A100-80GB", "perWorker": 1},
              "hami": {"gpuSchedulerPolicy": "binpack"}, "gpuWorkloads": workloads, **changes}
    return {"management": {"name": "bench", "metallbAddressRange": "172.30.255.200-172.30.255.250"},
            "tenants": [tenant]}


def issue_cases() -> dict[str, dict[str, Any]]:
    return {
        "1000 replicas, 1 worker x 1 card": _one_tenant(
            [{"name": "big", "replicas": 1000, "gpumem": 20000, "gpucores": 30}]),
        "1000 replicas, 99 workers x 12 cards": _one_tenant(
            [{"name": "w", "replicas": 1000, "gpumem": 20000, "gpucores": 30}], workers=99,
            gpus={"model": "A100-80GB", "perWorker": 12}),
        "115 small pods, 1 worker x 12 cards": _one_tenant(
            [{"name": "small", "replicas": 115, "gpumem": 1000, "gpucores": 0}],
            gpus={"model": "A100-80GB", "perWorker": 12}),
        SEVERAL_WORKLOADS_CASE: _one_tenant(
            [{"name": f"small-{i}", "replicas": 5, "gpumem": 10000 + 1000 * i, "gpucores": 10}
             for i in range(3)], workers=99, gpus={"model": "A100-80GB", "perWorker": 12}),
        "2 x 12 alternating, 4 workers x 2 cards, spread/spread": _one_tenant(
            [{"name": "big", "replicas": 12, "gpumem": 16384, "gpucores": 0},
             {"name": "small", "replicas": 12, "gpumem": 8192, "gpucores": 10}], workers=4,
            gpus={"model": "A100-80GB", "perWorker": 2},
            hami={"gpuSchedulerPolicy": "spread", "nodeSchedulerPolicy": "spread"}),
    }


def plan_config(name: str, config: Any) -> dict[str, Any]:
    """Plan a config (raw, or a stack file's path) as the preview does: seconds, tenants planned,
    verdicts."""
    from kamaji_hami_platform.config import load_stack_file, parse_config
    from kamaji_hami_platform.gpu.capacity import reference_request, tenant_capacity_summary
    from kamaji_hami_platform.gpu.workloads import plan_declared_workloads

    platform_config = load_stack_file(config) if isinstance(config, Path) else parse_config(config)
    start = time.perf_counter()
    plans, _ = plan_declared_workloads(platform_config)
    reference = reference_request(platform_config.reference_pod)
    for tenant in platform_config.tenants:  # each HamiNodePool's referencePodsThatFit
        tenant_capacity_summary(tenant, platform_config.management.name, reference)
    seconds = time.perf_counter() - start
    tenants = max(len(plans), 1)
    return {"case": name, "tenants": len(plans), "seconds": seconds, "per_tenant_s": seconds / tenants,
            "verdicts": sorted({plan.verdict for plan in plans.values()}),
            "fix": next((plan.fix for plan in plans.values() if plan.fix), "")}


def run() -> dict[str, Any]:
    rows = [plan_config(str(path.relative_to(ROOT)), path) for path in STACK_FILES]
    rows.append(plan_config(f"{LARGE_TENANTS} tenants x {LARGE_WORKERS} workers x {LARGE_CARDS} cards",
                            large_stack()))
    issue = [plan_config(name, config) for name, config in issue_cases().items()]
    per_tenant = [*rows, *(r for r in issue if r["case"] == SEVERAL_WORKLOADS_CASE)]
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "stacks": rows, "issue_cases": issue,
            "targets": {"max_per_tenant_s": max(r["per_tenant_s"] for r in per_tenant),
                        "per_tenant_met": all(r["per_tenant_s"] < PER_TENANT_TARGET_S for r in per_tenant),
                        "max_issue_case_s": max(r["seconds"] for r in issue),
                        "issue_cases_met": all(r["seconds"] < ISSUE_CASE_TARGET_S for r in issue)}}


def format_table(report: dict[str, Any]) -> str:
    lines = [f"{'case':<58} {'tenants':>7} {'seconds':>8} {'s/tenant':>8}  verdict"]
    for row in [*report["stacks"], *report["issue_cases"]]:
        verdict = ", ".join(row["verdicts"]) + (f" ({row['fix']})" if row["fix"] else "")
        lines.append(f"{row['case']:<58} {row['tenants']:>7} {row['seconds']:>8.2f} "
                     f"{row['per_tenant_s']:>8.3f}  {verdict}")
    t = report["targets"]
    lines.append(f"targets: stacks at most {t['max_per_tenant_s']:.3f} s per tenant "
                 f"({'met' if t['per_tenant_met'] else 'NOT met'}, target < {PER_TENANT_TARGET_S} s); "
                 f"issue cases at most {t['max_issue_case_s']:.2f} s "
                 f"({'met' if t['issue_cases_met'] else 'NOT met'}, target < {ISSUE_CASE_TARGET_S} s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.planner_scale")
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "planner.json"))
    args = parser.parse_args(argv)
    report = run()
    print(format_table(report))
    output = Path(args.json)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2))
    print(f"wrote {output}")
    return 0 if report["targets"]["per_tenant_met"] and report["targets"]["issue_cases_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
