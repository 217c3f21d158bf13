"""Real HAMi v2.10.0 (extender and webhook) behind a real kube-scheduler 1.35, judged against the
planner (marker `sim`): many GPU pods created together end only where the planner says they may,
and a plan that says `fits` is never refused.

Each scenario is a tenant a new user might declare (2-3 workers with 1-4 mock A100 80GB cards, the
node and card policies, a HAMi quota or a ResourceQuota on cards), on its own API server with HAMi,
kube-scheduler and kube-controller-manager started as tests/sim/hami.py describes. Each run POSTs
the scenario's batches at once (one thread per pod at a barrier), waits until HAMi and
kube-scheduler have nothing left to do, and reads the end from the bound pods' HAMi annotations;
then the end must be one of `plan_any_order`'s (`OrderPlan.reaches`, up to interchangeable nodes),
and with the verdict `fits` every pod must be created and bound. Runs go with the platform's
mock-mode lock release agent and without it (`--node-lock-timeout` alone): HAMi's bind-failure path
is taken in both, more often without. Each run prints its POST spread, HAMi's bind failures and its
duration.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import pytest

from kamaji_hami_platform.config import TenantConfig, parse_config
from kamaji_hami_platform.config.rules import QUOTA_KEYS
from kamaji_hami_platform.gpu import GpuRequest, plan_sequence
from kamaji_hami_platform.gpu.card_fit import QuotaLeft
from kamaji_hami_platform.gpu.orders import FITS, Batch, OrderPlan, plan_any_order
from kamaji_hami_platform.gpu.placement import CountQuota
from kamaji_hami_platform.gpu.render import QUOTA_NAME
from tests.harness import dev_stack_config
from tests.sim.cluster import tenant_api, toolchain_or_skip
from tests.sim.hami import HamiCluster, RunEnd, gpu_pod, hami_scheduler

pytestmark = pytest.mark.sim

RUNS = 3  # per scenario and agent mode
# With the platform's mock-mode lock release agent, and with the lock timeout alone.
AGENT, TIMEOUT = "agent", "timeout"
MODES = (AGENT, TIMEOUT)
SPREAD_MS = 50  # the POSTs' start times, at most this far apart
PLANNER_ENDS_SHOWN = 3
HAMI_MEMORY_QUOTA, HAMI_CORES_QUOTA, GPU_REQUESTS_QUOTA = QUOTA_KEYS  # as the config accepts them
PLAN_NAMESPACE = "team"  # the planner's name for each run's namespace (a fresh one per run)
# Requests as a user writes them: MiB and % of a card, or a whole card (HAMi's webhook defaults
# gpucores to 100 when no memory is asked: pkg/device/nvidia/device.go defaultExclusiveCoreIfNeeded).
SHARE = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 20000, "nvidia.com/gpucores": 30}
HALF = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 30000, "nvidia.com/gpucores": 50}
WHOLE = {"nvidia.com/gpu": 1}


@dataclass(frozen=True)
class Scenario:
    """Workers with cards, HAMi's policies, the batches POSTed together, the namespace's quota."""

    name: str
    workers: int
    cards: int
    gpu_policy: str
    node_policy: str
    batches: tuple[tuple[Mapping[str, int], int], ...]
    quota: Mapping[str, int] | None = None

    def tenant(self) -> tuple[TenantConfig, str]:
        """The tenant as the dev stack declares it with this shape and policy, validated by the
        config loader as a user's stack file is; and the management cluster's name (card ids)."""
        config = dev_stack_config()
        raw = config["tenants"][0]
        raw.pop("gpuWorkloads", None)
        raw["workers"] = self.workers
        raw["gpus"]["perWorker"] = self.cards
        raw["hami"] = {"gpuSchedulerPolicy": self.gpu_policy, "nodeSchedulerPolicy": self.node_policy}
        if self.quota:
            raw["gpuQuotas"] = {PLAN_NAMESPACE: dict(self.quota)}
        platform = parse_config(config)
        return platform.tenants[0], platform.management.name

    def requests(self) -> list[GpuRequest]:
        requests = [GpuRequest.from_limits(limits) for limits, _ in self.batches]
        assert all(requests), self.batches
        return [r for r in requests if r is not None]

    def plan(self, cluster: HamiCluster) -> OrderPlan:
        batches = [Batch(request, PLAN_NAMESPACE, count)
                   for request, (_, count) in zip(self.requests(), self.batches, strict=True)]
        quota = self.quota or {}
        quotas = ({PLAN_NAMESPACE: QuotaLeft(quota.get(HAMI_MEMORY_QUOTA), quota.get(HAMI_CORES_QUOTA))}
                  if HAMI_MEMORY_QUOTA in quota or HAMI_CORES_QUOTA in quota else None)
        counts = ({PLAN_NAMESPACE: CountQuota(QUOTA_NAME, quota[GPU_REQUESTS_QUOTA])}
                  if GPU_REQUESTS_QUOTA in quota else None)
        return plan_any_order(cluster.nodes, batches, policy=self.gpu_policy, node_policy=self.node_policy,
                              quotas=quotas, counts=counts, every_end=True)

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        """The batches' pods, interleaved (the barrier releases them together anyway)."""
        named = [[gpu_pod(f"{namespace}-b{index}-{i}", namespace, limits) for i in range(count)]
                 for index, (limits, count) in enumerate(self.batches)]
        longest = max(len(pods) for pods in named)
        return [pods[i] for i in range(longest) for pods in named if i < len(pods)]


SCENARIOS = (
    # The dev stack's policy (cards binpack, nodes binpack): five halves on two workers with two
    # cards each, room for eight; the first node takes pods until both its cards are full, so
    # its binds contend for its lock.
    Scenario("binpack", workers=2, cards=2, gpu_policy="binpack", node_policy="binpack",
             batches=((HALF, 5),)),
    # Everything spread, two batches at once that do not both fit: three whole cards and four
    # halves on three single-card workers.
    Scenario("spread", workers=3, cards=1, gpu_policy="spread", node_policy="spread",
             batches=((WHOLE, 3), (HALF, 4))),
    # A HAMi quota of 60000 MiB in the namespace: four shares POSTed, three within it.
    Scenario("hami-quota", workers=2, cards=1, gpu_policy="binpack", node_policy="spread",
             batches=((SHARE, 4),), quota={HAMI_MEMORY_QUOTA: 60000}),
    # A ResourceQuota of four cards over two batches in the namespace: six pods POSTed, and which
    # four the API server admits is the order they reach its quota check in.
    Scenario("card-count", workers=2, cards=4, gpu_policy="spread", node_policy="binpack",
             batches=((SHARE, 3), (HALF, 3)), quota={GPU_REQUESTS_QUOTA: 4}),
)


@pytest.fixture(scope="module")
def bin_dir():
    return toolchain_or_skip()


@pytest.fixture
def report(capsys):
    """Print past pytest's capture: every run's numbers show in the tier's output."""
    def emit(line: str) -> None:
        with capsys.disabled():
            print(line, flush=True)
    return emit


@dataclass
class Scored:
    scenario: str
    mode: str
    run: int
    end: RunEnd
    placed: list[int]
    verdict: str
    problems: list[str]


def _describe_ends(plan: OrderPlan) -> str:
    """A few of the planner's ends, as the real one is shown."""
    lines = [f"planner: {plan.verdict}, {len(plan.final_nodes)} distinct ends over {len(plan.finals)} "
             "branches" + ("" if plan.complete else f" (incomplete: {plan.why})")]
    for nodes in plan.final_nodes[:PLANNER_ENDS_SHOWN]:
        lines.append("  end: " + "; ".join(
            f"{node}: " + ", ".join(f"(used {d.used}, {d.usedmem} MiB, {d.usedcores}%)" for d in cards)
            for node, cards in sorted(nodes.items())))
    placed = sorted({branch[2] for branch in plan.finals})
    lines.append(f"  pods placed per batch over the ends: {placed[:8]}")
    return "\n".join(lines)


def _batch_of(pod: str) -> int:
    """The batch a pod of `Scenario.pods` belongs to (`<namespace>-b<batch>-<i>`)."""
    return int(pod.rsplit("-", 2)[-2].removeprefix("b"))


def _judge(scenario: Scenario, cluster: HamiCluster, plan: OrderPlan,
           end: RunEnd) -> tuple[list[int], list[str]]:
    """The run's pods placed per batch, and what is wrong with its end, if anything."""
    placed = [sum(_batch_of(pod) == index for pod in end.bound) for index in range(len(scenario.batches))]
    problems = []
    if end.spread_ms > SPREAD_MS:
        problems.append(f"the POSTs were not together: {end.spread_ms:.1f} ms apart")
    if not plan.reaches(end.devices(cluster.nodes), end.pods_on, placed):
        problems.append(f"HAMi's end is not among the planner's (placed per batch {placed})")
    if plan.verdict == FITS and (end.refused() or end.pending):
        problems.append("the planner says the batches fit, and some pod was refused or left Pending")
    return placed, problems


def _one_run(scenario: Scenario, cluster: HamiCluster, plan: OrderPlan, mode: str, run: int,
             report) -> Scored:
    """A fresh namespace (and quota), the batches POSTed together, the end judged, the pods gone."""
    namespace = f"{scenario.name}-{mode}-{run}"
    cluster.namespace(namespace, scenario.quota)
    end = cluster.run(namespace, scenario.pods(namespace))
    placed, problems = _judge(scenario, cluster, plan, end)
    report(f"{scenario.name} [{mode}] run {run}: {end.summary()}, placed per batch {placed}"
           + ("" if not problems else " -- WRONG"))
    cluster.forget(namespace)
    return Scored(scenario.name, mode, run, end, placed, plan.verdict, problems)


def _run_scenario(scenario: Scenario, bin_dir, report) -> list[Scored]:
    tenant, cluster_name = scenario.tenant()
    scored: list[Scored] = []
    started = time.monotonic()
    with tenant_api(tenant, bin_dir) as api, hami_scheduler(api, tenant, cluster_name) as cluster:
        plan = scenario.plan(cluster)
        for mode in MODES:
            # The agent once per mode, as its Deployment runs: across the mode's runs.
            agent: AbstractContextManager[None] = cluster.lock_release() if mode == AGENT else nullcontext()
            with agent:
                for run in range(RUNS):
                    scored.append(_one_run(scenario, cluster, plan, mode, run, report))
        report(f"{scenario.name}: planner {plan.verdict}, {time.monotonic() - started:.0f} s in all")
        assert not any(s.problems for s in scored), "\n\n".join(
            f"{s.scenario} [{s.mode}] run {s.run}: {'; '.join(s.problems)}\n{s.end.describe()}\n"
            f"{_describe_ends(plan)}" for s in scored if s.problems)
    return scored


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_end_real_hami_reaches_is_one_the_planner_has(scenario: Scenario, bin_dir, report):
    _run_scenario(scenario, bin_dir, report)


def test_the_harness_runs_the_real_hami(bin_dir, report):
    """The dev stack's `share` workload and one more: real HAMi binds three 20000 MiB / 30 % pods
    on the one card and refuses the fourth with its own event, word for word the planner's."""
    scenario = Scenario("share", workers=1, cards=1, gpu_policy="binpack", node_policy="binpack",
                        batches=((SHARE, 4),))
    tenant, cluster_name = scenario.tenant()
    with tenant_api(tenant, bin_dir) as api, hami_scheduler(api, tenant, cluster_name) as cluster:
        namespace = "share"
        cluster.namespace(namespace)
        with cluster.lock_release():
            end = cluster.run(namespace, scenario.pods(namespace))
        report(f"share: {end.summary()}")
        (node,) = cluster.nodes
        assert len(end.bound) == 3 and end.pods_on == {node: 3}, end.describe()
        assert end.devices(cluster.nodes)[node][0].usedcores == 90, end.describe()
        pod, message = next(iter(end.pending.items()))
        (request,) = scenario.requests()
        planned = plan_sequence(cluster.nodes, [request] * 4, policy=scenario.gpu_policy,
                                node_policy=scenario.node_policy).placements[-1]
        assert message.startswith(planned.scheduler_message), (message, planned.scheduler_message)
        events = api.get("events", "-n", namespace, "--field-selector", f"involvedObject.name={pod}")
        hami = {e["message"] for e in events["items"] if e["reason"] == "FilteringFailed"}
        assert set(planned.hami_events) <= hami, (hami, planned.hami_events)
        assert f"1 nodes CardInsufficientCore({node})" in hami
        created = api.get("pod", "-n", namespace, pod)
        assert created["spec"]["schedulerName"] == "hami-scheduler"  # HAMi's webhook set it

