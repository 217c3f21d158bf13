"""The fit model against HAMi 2.10.0's rules (pkg/device/nvidia/device.go Fit), and the planner."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kamaji_hami_platform.config import PlatformConfig, load_stack
from kamaji_hami_platform.gpu import GpuDevice, GpuRequest, fit, plan
from kamaji_hami_platform.gpu.card_fit import order_devices
from kamaji_hami_platform.gpu.placement import Span, plan_nodes, plan_sequence
from kamaji_hami_platform.planner import cli as planner

pytestmark = pytest.mark.unit

A100 = {"count": 10, "devmem": 81920, "devcore": 100, "type": "NVIDIA A100-SXM4-80GB"}
SHARE = GpuRequest(nums=1, memreq=20000, coresreq=30)


def card(index: int = 0, **changes) -> GpuDevice:
    return GpuDevice(**{"id": f"GPU-{index}", "index": index, **A100, **changes})


class TestReferenceScenario:
    def test_three_share_one_card_and_the_fourth_is_refused_for_cores(self):
        placements = plan([card()], [SHARE] * 4)
        assert [p.ok for p in placements] == [True, True, True, False]
        assert {tuple(p.device_ids) for p in placements[:3]} == {("GPU-0",)}
        assert placements[3].reason == "1/1 CardInsufficientCore"

    def test_more_than_the_card_memory_is_refused_for_memory(self):
        result = fit([card()], GpuRequest(nums=1, memreq=90000))
        assert (result.ok, result.reason) == (False, "1/1 CardInsufficientMemory")

    def test_plan_does_not_touch_the_callers_devices(self):
        devices = [card()]
        plan(devices, [SHARE] * 3)
        assert devices[0].used == devices[0].usedmem == devices[0].usedcores == 0


class TestRequestFromLimits:
    def test_share_request(self):
        request = GpuRequest.from_limits({"nvidia.com/gpumem": 20000, "nvidia.com/gpucores": 30})
        assert request == GpuRequest(nums=1, memreq=20000, mempercentagereq=101, coresreq=30)

    def test_gpu_alone_is_the_whole_card_exclusively(self):
        assert GpuRequest.from_limits({"nvidia.com/gpu": 1}) == GpuRequest(
            nums=1, memreq=0, mempercentagereq=100, coresreq=100)

    def test_gpumem_without_cores_shares_with_zero_cores(self):
        assert GpuRequest.from_limits({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1000}).coresreq == 0

    def test_full_percentage_without_cores_is_exclusive(self):
        request = GpuRequest.from_limits({"nvidia.com/gpumem-percentage": 100})
        assert (request.mempercentagereq, request.coresreq) == (100, 100)

    def test_partial_percentage(self):
        request = GpuRequest.from_limits({"nvidia.com/gpumem-percentage": 25, "nvidia.com/gpucores": 20})
        assert (request.memreq, request.mempercentagereq, request.coresreq) == (0, 25, 20)
        assert request.memory_on(card()) == 20480

    def test_percentage_outside_0_100_is_denied_like_the_webhook(self):
        with pytest.raises(ValueError, match="0-100"):
            GpuRequest.from_limits({"nvidia.com/gpumem-percentage": 150})

    def test_containers_without_nvidia_resources_are_ignored(self):
        assert GpuRequest.from_limits({"cpu": "1"}) is None


class TestReasonCodes:
    """One test per NVIDIA (non-MIG) reason code, each set up to reach that check first."""

    def test_unhealthy_card(self):
        assert fit([card(health=False)], SHARE).reason == "1/1 CardNotHealth"

    def test_cordoned_card(self):
        assert fit([card()], SHARE, cordoned_ids=frozenset({"GPU-0"})).reason == "1/1 CardCordoned"

    @pytest.mark.parametrize("annotations", [
        {"nvidia.com/use-gputype": "H100"},
        {"nvidia.com/nouse-gputype": "a100"},
        {"nvidia.com/vgpu-mode": "mig"},
    ])
    def test_type_annotations(self, annotations):
        assert fit([card()], SHARE, pod_annotations=annotations).reason == "1/1 CardTypeMismatch"

    def test_type_annotation_matching_is_a_case_insensitive_substring(self):
        assert fit([card()], SHARE, pod_annotations={"nvidia.com/use-gputype": "a100"}).ok

    @pytest.mark.parametrize("annotations", [
        {"nvidia.com/use-gpuuuid": "GPU-other"}, {"nvidia.com/nouse-gpuuuid": "GPU-0"}])
    def test_uuid_annotations(self, annotations):
        assert fit([card()], SHARE, pod_annotations=annotations).reason == "1/1 CardUuidMismatch"

    def test_type_is_checked_before_uuid(self):
        annotations = {"nvidia.com/use-gputype": "H100", "nvidia.com/use-gpuuuid": "GPU-other"}
        assert fit([card()], SHARE, pod_annotations=annotations).reason == "1/1 CardTypeMismatch"

    def test_split_count_exhausted(self):
        full = card(used=10, usedmem=10000, usedcores=50)
        assert fit([full], GpuRequest(nums=1, memreq=100, coresreq=1)).reason == \
            "1/1 CardTimeSlicingExhausted"

    def test_memory_is_checked_before_cores(self):
        busy = card(used=3, usedmem=70000, usedcores=90)
        assert fit([busy], SHARE).reason == "1/1 CardInsufficientMemory"

    def test_whole_card_on_a_used_card_is_an_exclusive_conflict(self):
        used = card(used=1, usedmem=1000, usedcores=0)
        assert fit([used], GpuRequest(nums=1, memreq=1000, coresreq=100)).reason == \
            "1/1 ExclusiveDeviceAllocateConflict"

    def test_mutex_policy_refuses_any_used_card(self):
        assert fit([card(used=1, usedmem=1, usedcores=1)], SHARE, policy="mutex").reason == \
            "1/1 ExclusiveDeviceAllocateConflict"

    def test_compute_units_exhausted_for_a_zero_core_request(self):
        cores_full = card(used=1, usedmem=10000, usedcores=100)
        assert fit([cores_full], GpuRequest(nums=1, memreq=1000, coresreq=0)).reason == \
            "1/1 CardComputeUnitsExhausted"

    def test_multi_card_shortfall(self):
        devices = [card(0), card(1, used=10)]
        result = fit(devices, GpuRequest(nums=2, memreq=1000, coresreq=10))
        assert result.reason == "1/2 AllocatedCardsInsufficientRequest, 1/2 CardTimeSlicingExhausted"

    def test_more_cards_than_the_node_has(self):
        assert fit([card()], GpuRequest(nums=2, memreq=1000)).reason == "NodeInsufficientDevice"

    def test_percentage_request_checks_the_resolved_memory(self):
        half_used = card(used=1, usedmem=50000, usedcores=10)
        result = fit([half_used], GpuRequest(nums=1, mempercentagereq=50, coresreq=10))
        assert result.reason == "1/1 CardInsufficientMemory"  # 40960 MiB > 31920 free
        assert fit([card()], GpuRequest(nums=1, mempercentagereq=50, coresreq=10)).ok

    def test_numa_bind_restarts_selection_on_another_numa_node(self):
        devices = [card(0, numa=0), card(1, numa=1)]
        result = fit(devices, GpuRequest(nums=2, memreq=1000, coresreq=10),
                     pod_annotations={"nvidia.com/numa-bind": "true"})
        assert result.reason == "1/2 AllocatedCardsInsufficientRequest, 1/2 NumaNotFit"

    def test_several_codes_are_counted_and_joined_sorted(self):
        devices = [card(0, health=False), card(1, used=10), card(2, used=10)]
        assert fit(devices, SHARE).reason == "1/3 CardNotHealth, 2/3 CardTimeSlicingExhausted"


class TestCardOrder:
    def node(self) -> list[GpuDevice]:
        return [card(0), card(1, used=1, usedmem=20000, usedcores=30), card(2)]

    def test_binpack_fills_the_most_used_card(self):
        assert fit(self.node(), SHARE, policy="binpack").device_ids == ["GPU-1"]

    def test_spread_picks_the_least_used_card(self):
        node = [card(0, used=1, usedmem=20000, usedcores=30), card(1),
                card(2, used=2, usedmem=40000, usedcores=60)]
        assert fit(node, SHARE, policy="spread").device_ids == ["GPU-1"]

    def test_ties_go_to_the_highest_index_as_fit_walks_from_the_end(self):
        assert fit(self.node(), SHARE, policy="spread").device_ids == ["GPU-2"]

    def test_no_policy_walks_the_given_list_from_its_end(self):
        assert fit(self.node(), SHARE).device_ids == ["GPU-2"]

    def test_binpack_plans_three_pods_on_one_card_spread_on_three(self):
        devices = [card(0), card(1), card(2)]
        binpack = {p.device_ids[0] for p in plan(devices, [SHARE] * 3, policy="binpack")}
        spread = {p.device_ids[0] for p in plan(devices, [SHARE] * 3, policy="spread")}
        assert len(binpack) == 1 and len(spread) == 3

    def test_tied_cards_keep_the_registration_order(self):
        """A single policy's Less compares score, then NUMA, nothing else (HAMi v2.10.0
        pkg/scheduler/policy/gpu_policy.go); Go's sort.Sort is stable up to 12 elements."""
        devices = [card(2), card(0), card(1)]
        assert [d.index for d in order_devices(devices, SHARE, "binpack")] == [2, 0, 1]

    def test_numa_bind_keeps_numa_groups_together_before_the_score(self):
        """gpu_policy.go Less: with numa-bind, binpack sorts NUMA descending and the score within
        a group, so Fit (walking from the end) collects two cards of NUMA 0."""
        devices = [card(0, numa=0), card(1, numa=1), card(2, numa=0, used=1, usedmem=1000, usedcores=10)]
        request = GpuRequest(nums=2, memreq=1000, coresreq=10)
        assert [d.index for d in order_devices(devices, request, "binpack", numa_bind=True)] == [1, 0, 2]
        result = fit(devices, request, policy="binpack", pod_annotations={"nvidia.com/numa-bind": "true"})
        assert result.ok and sorted(result.device_ids) == ["GPU-0", "GPU-2"]

    def test_a_card_failing_health_does_not_break_a_numa_group(self):
        """Fit's NUMA bookkeeping comes after the health, cordon and type checks (device.go)."""
        devices = [card(0, numa=0), card(1, numa=1, health=False), card(2, numa=0)]
        request = GpuRequest(nums=2, memreq=1000, coresreq=10)
        result = fit(devices, request, pod_annotations={"nvidia.com/numa-bind": "1"})
        assert result.ok and result.device_ids == ["GPU-2", "GPU-0"]

    def test_an_empty_vgpu_mode_annotation_matches_no_card(self):
        """device.go checkType: `strings.Contains(mode, d.Mode)` with mode "" is false."""
        assert fit([card(0)], SHARE, pod_annotations={"nvidia.com/vgpu-mode": ""}).reason == \
            "1/1 CardTypeMismatch"

    def test_unknown_policy_is_refused(self):
        with pytest.raises(ValueError, match="topology-aware"):
            fit([card()], SHARE, policy="topology-aware")


class TestNodes:
    def test_binpack_nodes_keep_pods_on_one_node_whichever_it_is(self):
        """Two empty nodes tie; binpack then keeps filling the node HAMi took."""
        planned = plan_sequence({"n1": [card(0)], "n2": [card(1)]}, [SHARE] * 3, node_policy="binpack")
        assert [p.nodes for p in planned.placements] == [["n1", "n2"]] * 3
        assert planned.cards_used == Span(1, 1) and planned.placed == Span(3, 3)

    def test_spread_nodes_alternate_whichever_comes_first(self):
        planned = plan_sequence({"n1": [card(0)], "n2": [card(1)]}, [SHARE] * 2, node_policy="spread")
        assert [p.nodes for p in planned.placements] == [["n1", "n2"]] * 2
        assert planned.cards_used == Span(2, 2)

    def test_refusal_on_several_nodes_names_each(self):
        placements = plan_nodes({"n1": [card(0)], "n2": [card(1)]}, [GpuRequest(nums=1, memreq=90000)])
        assert placements[0].reason == "n1: 1/1 CardInsufficientMemory; n2: 1/1 CardInsufficientMemory"


class TestNodeTies:
    """HAMi scores nodes in parallel goroutines over a Go map, appends the fitting ones as they
    finish (HAMi v2.10.0 pkg/scheduler/score.go calcScoreWithOptions), sorts by score and takes
    the last (scheduler.go Filter, policy/node_policy.go NodeScoreList.Less): between nodes of
    equal score the winner changes from run to run."""

    def test_tied_nodes_are_all_named_and_none_is_claimed(self):
        (first,) = plan_nodes({"b": [card(0)], "a": [card(1)]}, [SHARE])
        assert first.ok and first.nodes == ["a", "b"] and first.node is None and first.tie
        assert first.device_ids == [], "which card depends on which node"
        assert (first.memory_mib, first.cores) == (20000, 30)

    def test_a_node_that_scores_higher_is_certain(self):
        busy = [card(0, used=1, usedmem=20000, usedcores=30)]
        (first,) = plan_nodes({"a": [card(1)], "b": busy}, [SHARE], node_policy="binpack")
        assert (first.node, first.nodes, first.device_ids) == ("b", ["b"], ["GPU-0"])

    def test_counts_that_depend_on_the_tie_are_given_as_a_range(self):
        """Empty nodes tie whatever their size: a 40 GiB pod on the 50 GiB node leaves room for
        the 70 GiB pod on the 80 GiB one, on the 80 GiB node it leaves room nowhere."""
        small, large = card(0, devmem=50000), card(1, devmem=80000)
        pods = [GpuRequest(nums=1, memreq=40000, coresreq=10), GpuRequest(nums=1, memreq=70000, coresreq=10)]
        planned = plan_sequence({"small": [small], "large": [large]}, pods, node_policy="binpack")
        assert planned.placed == Span(1, 2) and planned.refused == Span(0, 1)
        assert planned.placements[0].nodes == ["large", "small"]
        second = planned.placements[1]
        assert second.maybe_refused and not second.ok and second.nodes == ["large"]
        assert not planned.certain

    def test_interchangeable_nodes_cost_one_branch(self):
        nodes = {f"n{i:02d}": [card(i)] for i in range(16)}
        planned = plan_sequence(nodes, [SHARE] * 48, node_policy="spread")
        assert planned.branches == 1 and planned.complete
        assert planned.placed == Span(48, 48) and planned.cards_used == Span(16, 16)

    def test_possible_outcomes_list_what_hami_may_record_by_name(self):
        """What a live run is judged against: binpack keeps three pods on whichever node took the
        first; spread alternates, starting on either."""
        from kamaji_hami_platform.gpu.placement import possible_outcomes

        nodes = {"n1": [card(0)], "n2": [card(1)]}
        packed = possible_outcomes(nodes, [SHARE] * 3, node_policy="binpack")
        assert packed == {(("n1", ("GPU-0",)),) * 3, (("n2", ("GPU-1",)),) * 3}
        spread = possible_outcomes(nodes, [SHARE] * 3, node_policy="spread")
        assert spread == {(("n1", ("GPU-0",)),) * 2 + (("n2", ("GPU-1",)),),
                          (("n1", ("GPU-0",)),) + (("n2", ("GPU-1",)),) * 2}

    def test_possible_outcomes_refuse_to_guess_beyond_the_limit(self):
        from kamaji_hami_platform.gpu.placement import possible_outcomes

        nodes = {f"n{i}": [card(i)] for i in range(6)}
        with pytest.raises(ValueError, match="more than 4 ways"):
            possible_outcomes(nodes, [SHARE] * 2, node_policy="spread", limit=4)

    def test_node_scores_are_float32_as_hami_computes_them(self):
        """A float64 sum would separate what HAMi's float32 score ties (node_policy.go)."""
        from kamaji_hami_platform.gpu.placement import f32, node_score

        node = [card(0, used=1, usedmem=1, usedcores=1)]
        expected = f32(10 * f32(f32(f32(1 / 10) + f32(1 / 100)) + f32(1 / 81920)))
        assert node_score(node) == expected


class TestRefusalText:
    def test_kube_schedulers_line_and_hamis_events(self):
        """kube-scheduler v1.35 framework/types.go FitError.Error; HAMi score.go
        recordFilteringFailures and scheduler.go Filter."""
        nodes = {"n1": [card(0)], "n2": [card(1)]}
        (refused,) = plan_nodes(nodes, [GpuRequest(nums=1, memreq=90000)])
        assert refused.scheduler_message == "0/2 nodes are available: 2 1/1 CardInsufficientMemory."
        assert refused.hami_events == ["2 nodes CardInsufficientMemory(n1,n2)",
                                       "no available node, 2 nodes do not meet"]

    def test_different_reasons_are_counted_apart_and_sorted(self):
        busy = card(1, used=1, usedmem=0, usedcores=90)
        nodes = {"n1": [card(0, devmem=10000)], "n2": [busy]}
        (refused,) = plan_nodes(nodes, [SHARE])
        assert refused.scheduler_message == \
            "0/2 nodes are available: 1 1/1 CardInsufficientCore, 1 1/1 CardInsufficientMemory."

    def test_a_node_out_of_slots_is_refused_by_hami_not_kube_scheduler(self):
        """HAMi's chart makes kube-scheduler ignore nvidia.com/gpu (charts/hami/templates/
        _helpers.tpl managedResources `ignoredByScheduler: true`; kubernetes v1.35
        noderesources/fit.go skips ignored resources): HAMi's Fit refuses the card whose task
        slots are taken (device.go `dev.Count <= dev.Used`)."""
        placements = plan([card(0, count=2)], [GpuRequest(nums=1, memreq=1000, coresreq=1)] * 3)
        refused = placements[2]
        assert refused.reason == "1/1 CardTimeSlicingExhausted"
        assert refused.scheduler_message == "0/1 nodes are available: 1 1/1 CardTimeSlicingExhausted."
        assert refused.hami_events == ["1 nodes CardTimeSlicingExhausted(node)",
                                       "no available node, 1 nodes do not meet"]


class TestDefaults:
    def test_the_planners_defaults_are_hamis(self):
        """HAMi v2.10.0 cmd/scheduler/main.go: --gpu-scheduler-policy spread,
        --node-scheduler-policy binpack (chart values.yaml the same)."""
        import inspect

        from kamaji_hami_platform.gpu import placement as gpu_plan

        for function in (gpu_plan.plan_nodes, gpu_plan.plan_sequence, gpu_plan.pods_that_fit):
            parameters = inspect.signature(function).parameters
            assert parameters["policy"].default == "spread"
            assert parameters["node_policy"].default == "binpack"
        assert inspect.signature(gpu_plan.plan).parameters["policy"].default == "spread"
        assert len({p.device_ids[0] for p in plan([card(0), card(1)], [SHARE] * 2)}) == 2


class TestMemoryGivenBothWays:
    """A pod that sets nvidia.com/gpumem and nvidia.com/gpumem-percentage."""

    def test_a_full_percentage_makes_it_exclusive_whatever_gpumem_says(self):
        """The webhook's defaultExclusiveCoreIfNeeded (HAMi v2.10.0 pkg/device/nvidia/device.go):
        with a percentage, exclusive exactly when it is 100."""
        both = GpuRequest.from_limits({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 20000,
                                       "nvidia.com/gpumem-percentage": 100})
        assert both.coresreq == 100
        half = GpuRequest.from_limits({"nvidia.com/gpu": 1, "nvidia.com/gpumem": 20000,
                                       "nvidia.com/gpumem-percentage": 50})
        assert half.coresreq == 0

    def test_charged_by_gpumem_not_the_percentage(self):
        """Fit's memreq and AddResourceUsage take gpumem when it is set (device.go)."""
        request = GpuRequest(nums=1, memreq=10000, mempercentagereq=50, coresreq=10)
        (placed,) = plan([card(0, devmem=81920)], [request])
        assert placed.memory_mib == 10000

    def test_real_cards_are_ranked_by_their_usage_alone(self):
        """ComputeScore skips the request on a card whose type is not the request's
        (policy/gpu_policy.go `if container.Type != ds.Device.Type { continue }`): an NVIDIA
        request is "NVIDIA" (device.go NvidiaGPUDevice), a real card its model. Two empty cards of
        80 and 40 GiB then tie whatever the request asks, and Fit takes the later one."""
        cards = [card(0, devmem=81920), card(1, devmem=40960)]
        for request in (GpuRequest(nums=1, memreq=10000, mempercentagereq=50, coresreq=10),
                        GpuRequest(nums=1, memreq=10000, coresreq=10)):
            assert fit(cards, request, policy="spread").device_ids == ["GPU-1"]

    def test_a_card_typed_as_the_request_is_ranked_by_the_percentage(self):
        """Where the types are equal, ComputeScore counts the percentage of each card, not gpumem:
        50 % weighs alike on both cards (a tie, the later card), 10000 MiB weighs more on the
        40 GiB card (spread's pick: the 80 GiB one)."""
        cards = [card(0, devmem=81920, type="NVIDIA"), card(1, devmem=40960, type="NVIDIA")]
        both = GpuRequest(nums=1, memreq=10000, mempercentagereq=50, coresreq=10)
        assert fit(cards, both, policy="spread").device_ids == ["GPU-1"]
        gpumem_only = GpuRequest(nums=1, memreq=10000, coresreq=10)
        assert fit(cards, gpumem_only, policy="spread").device_ids == ["GPU-0"]

    def test_no_memory_asked_is_no_memory_charged(self):
        """Fit's memreq starts at 0 and takes the percentage only when one is set (device.go)."""
        assert GpuRequest(nums=1).memory_on(card(0)) == 0
        assert fit([card(0, usedmem=81920)], GpuRequest(nums=1)).ok


_cards = st.builds(
    lambda i, count, mem, cores: GpuDevice(id=f"GPU-{i}", index=i, count=count, devmem=mem,
                                           devcore=cores, type="NVIDIA X"),
    st.integers(0, 7), st.integers(1, 12), st.integers(1, 100000), st.sampled_from([50, 100]))
_requests = st.builds(
    GpuRequest, nums=st.integers(1, 3), memreq=st.integers(0, 90000),
    mempercentagereq=st.sampled_from([101, 10, 25, 50, 100]), coresreq=st.integers(0, 120))


@settings(max_examples=300, deadline=None)
@given(devices=st.lists(_cards, min_size=1, max_size=6, unique_by=lambda d: d.id),
       pods=st.lists(_requests, max_size=30), policy=st.sampled_from(["binpack", "spread", "mutex"]))
def test_plan_never_overcommits_a_card(devices, pods, policy):
    from kamaji_hami_platform.gpu.card_fit import charge

    state = [GpuDevice(**vars(d)) for d in devices]
    for placement, request in zip(plan(devices, pods, policy=policy), pods, strict=True):
        if placement.ok:
            assert len(placement.device_ids) == request.nums == len(set(placement.device_ids))
            charge(state, request, placement.device_ids)
        for d in state:
            assert d.used <= d.count and d.usedmem <= d.devmem and d.usedcores <= d.devcore


class TestPlanner:
    def test_table_for_the_dev_stack(self, capsys):
        assert planner.main(["plan", "--stack", "dev", "--pod", "gpumem=20000,gpucores=30",
                         "--count", "4"]) == 0
        out = capsys.readouterr().out
        assert out.count("placed (20000 MiB, 30 % cores per card)") == 6
        assert out.count("refused: 1/1 CardInsufficientCore") == 2

    def test_json(self, capsys):
        assert planner.main(["plan", "--stack", "dev", "--pod", "gpumem=90000", "--count", "1",
                         "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        (placement,) = report["tenants"]["tenant-a"]["placements"]
        assert placement["reason"] == "1/1 CardInsufficientMemory"

    @staticmethod
    def two_workers() -> PlatformConfig:
        from dataclasses import replace

        platform = load_stack("dev")
        return replace(platform, tenants=[replace(platform.tenants[0], workers=2)])

    def test_table_names_tied_nodes_and_says_which_counts_are_certain(self):
        """Two identical workers tie for the first pod (HAMi v2.10.0 pkg/scheduler/score.go):
        no row may claim one node, and the seventh pod's refusal reads as kubectl shows it."""
        report = planner.plan_report(self.two_workers(), planner.parse_pod("gpumem=20000,gpucores=30"), 7)
        table = planner.format_table(report)
        assert table.count("tie: tenant-a-worker-0,tenant-a-worker-1") == 6
        assert "kubectl describe pod: 0/2 nodes are available: 2 1/1 CardInsufficientCore." in table
        assert "placed 6, refused 1, cards in use 2 (counts certain; HAMi picks between tied nodes" in table

    def test_json_gives_every_possible_node_and_the_summary(self):
        report = planner.plan_report(self.two_workers(), planner.parse_pod("gpumem=20000,gpucores=30"), 7)
        tenant = json.loads(json.dumps(report))["tenants"]["tenant-a"]
        first, last = tenant["placements"][0], tenant["placements"][-1]
        assert first["node"] is None and first["nodes"] == ["tenant-a-worker-0", "tenant-a-worker-1"]
        assert last["scheduler_message"] == "0/2 nodes are available: 2 1/1 CardInsufficientCore."
        assert tenant["summary"] == {"podsPlaced": 6, "podsRefused": 1, "cardsUsed": 2, "certain": False,
                                     "branches": 1, "complete": True}

    def test_a_count_that_depends_on_a_tie_is_a_range_in_outputs(self):
        assert Span(3, 3).as_output() == 3
        assert Span(1, 2).as_output() == {"min": 1, "max": 2}

    @pytest.mark.parametrize("args", [["--pod", "vram=1"], ["--stack", "missing"], ["--count", "0"]])
    def test_bad_arguments_are_clear_errors(self, capsys, args):
        assert planner.main(["plan", *args]) == 2
        assert capsys.readouterr().err.startswith("error: ")


def test_planner_matches_a_brute_force_over_every_tie():
    """plan_sequence caches answers per node shape and merges branches of interchangeable nodes;
    a brute force that asks every node for every pod and follows every tie by name (exact states
    only) must find the same nodes per pod and the same counts."""
    import copy

    from kamaji_hami_platform.config import GpuModelConfig
    from kamaji_hami_platform.gpu.card_fit import charge
    from kamaji_hami_platform.gpu.devices import mock_devices
    from kamaji_hami_platform.gpu.placement import node_score

    model = GpuModelConfig("A", 40000, 100, 4, "NVIDIA A")
    nodes = {f"n{i}": mock_devices(model, 2, "c", "t", f"n{i}") for i in range(3)}
    nodes["n2"][0].usedmem, nodes["n2"][0].used, nodes["n2"][0].usedcores = 5000, 1, 10
    shapes = [GpuRequest(nums=1, memreq=15000, coresreq=30), GpuRequest(nums=2, memreq=5000, coresreq=10),
              GpuRequest(nums=1, memreq=0, mempercentagereq=50, coresreq=0)]
    pods = [shapes[i % 3] for i in range(24)]

    def key(state):
        return tuple((n, tuple((d.used, d.usedmem, d.usedcores) for d in state[n])) for n in sorted(state))

    branches = {key(nodes): (nodes, 0)}
    seen_nodes, refused_somewhere, placed_somewhere = [], [], []
    for request in pods:
        following, chosen, refused, placed = {}, set(), False, False
        for state, count in branches.values():
            answers = {}
            for name, devices in state.items():
                answers[name] = fit(devices, request, policy="spread")
            fitting = {name: node_score(state[name]) for name, answer in answers.items() if answer.ok}
            if not fitting:
                refused = True
                following.setdefault(key(state), (state, count))
                continue
            placed = True
            best = max(fitting.values())
            for name in (n for n, score in fitting.items() if score == best):
                chosen.add(name)
                successor = copy.deepcopy(state)
                charge(successor[name], request, answers[name].device_ids)
                following.setdefault(key(successor), (successor, count + 1))
        branches = following
        seen_nodes.append(sorted(chosen))
        refused_somewhere.append(refused)
        placed_somewhere.append(placed)
    counts = [count for _, count in branches.values()]

    planned = plan_sequence(nodes, pods, policy="spread", node_policy="binpack")
    assert planned.complete
    assert [p.nodes for p in planned.placements] == seen_nodes
    certain = [p and not r for p, r in zip(placed_somewhere, refused_somewhere, strict=True)]
    assert [p.ok for p in planned.placements] == certain
    assert planned.placed == Span(min(counts), max(counts))
    assert any(len(n) > 1 for n in seen_nodes), "the scenario must contain ties"
    assert any(refused_somewhere), "the scenario must contain refusals"


@settings(max_examples=150, deadline=None)
@given(devices=st.lists(_cards, min_size=1, max_size=4, unique_by=lambda d: d.id),
       nodes=st.integers(1, 3), request=_requests, policy=st.sampled_from(["binpack", "spread", "mutex"]),
       node_policy=st.sampled_from(["binpack", "spread"]), room=st.sampled_from([None, 1, 3]),
       preload=st.integers(0, 4))
def test_headroom_node_by_node_is_the_walk_over_every_order(devices, nodes, request, policy, node_policy,
                                                           room, preload):
    """Without a quota, what a state takes is the sum of what each node takes alone (issue 38,
    item 13: 99 x 12 cards walked order by order took seconds): the every-order walk must find
    exactly that count, low and high, from a state some pods already left uneven."""
    from dataclasses import replace as copy_card

    from kamaji_hami_platform.gpu.placement import Filler, _Planner, moves_from

    layout = {f"n{i}": [copy_card(d, id=f"{d.id}-n{i}") for d in devices] for i in range(nodes)}
    pod_room = None if room is None else {name: room for name in layout}
    planner = _Planner(layout, policy, node_policy, pod_room, 0, [request])
    state = planner.starts()[0]
    for _ in range(preload):  # some pods placed first, on the first of the best nodes
        _, moves = moves_from(planner, state, request)
        if not moves:
            break
        state = moves[0].successor
    filler = Filler(planner, request)
    assert filler._more_node_by_node(state) == filler._more_over_every_order(state, None)
