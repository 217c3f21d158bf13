"""GPU capacity as code: declared workloads validated, planned as HAMi would place them,
exported in every preview, and a stack whose workloads do not fit refused before any resource."""

from __future__ import annotations

import copy
from dataclasses import replace

import pulumi
import pytest

from kamaji_hami_platform.config import ConfigError, parse_config
from kamaji_hami_platform.gpu.placement import WEBHOOK_DENIED, Span
from kamaji_hami_platform.gpu.workloads import plan_declared_workloads, plan_workloads, smallest_fix
from tests.harness import ROOT, run_program

pytestmark = pytest.mark.unit

SHARE = {"name": "share", "replicas": 3, "gpumem": 20000, "gpucores": 30}


def refused(config: dict, *paths_and_texts: tuple[str, str]) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(config)
    for path, text in paths_and_texts:
        assert any(p.startswith(f"{path}: ") and text in p for p in caught.value.problems), \
            (path, text, caught.value.problems)


def tenant_with(dev_config: dict, *workloads: dict, **changes):
    config = copy.deepcopy(dev_config)
    config["tenants"][0]["gpuWorkloads"] = list(workloads)
    config["tenants"][0].update(changes)
    return parse_config(config)


class TestDeclaration:
    def test_the_dev_stack_declares_the_missions_workload(self, dev_config):
        platform = parse_config(dev_config)
        for tenant in platform.tenants:
            (share,) = tenant.gpu_workloads
            assert (share.replicas, share.gpumem, share.gpucores) == (3, 20000, 30)
            assert share.namespace == "default"
        assert platform.gpu_capacity_enforcement == "mandatory"

    def test_every_problem_with_its_path_at_once(self, dev_config):
        dev_config["tenants"][0]["gpuWorkloads"] = [
            {"name": "big", "gpumem": 90000, "gpu": 2, "type": "H100"},
            {"name": "big", "gpumemPercentage": 10},
            {"name": "both", "gpumem": 1000, "gpumemPercentage": 10},
            {"name": "none"},
            {"name": "cores", "gpumem": 1, "gpucores": 101, "replicas": 0},
        ]
        dev_config["gpuCapacity"] = {"enforcement": "soft"}
        refused(dev_config,
                ("tenants[0].gpuWorkloads[0].gpumem", "90000 MiB, but each A100-80GB card has 81920 MiB"),
                ("tenants[0].gpuWorkloads[0].gpu", "2 cards per pod, but each worker has 1"),
                ("tenants[0].gpuWorkloads[0].type", "'H100' names no part of 'NVIDIA A100-SXM4-80GB'"),
                ("tenants[0].gpuWorkloads[1].name", "duplicate workload name 'big'"),
                ("tenants[0].gpuWorkloads[2]", "give exactly one of gpumem (MiB) and gpumemPercentage"),
                ("tenants[0].gpuWorkloads[3]", "give exactly one of gpumem"),
                ("tenants[0].gpuWorkloads[4].gpucores", "must be between 0 and 100, got 101"),
                ("tenants[0].gpuWorkloads[4].replicas", "must be positive, between 1 and 1000, got 0"),
                ("gpuCapacity.enforcement", "'soft' must be one of mandatory, warning"))

    def test_type_is_a_list_as_hami_reads_it(self, dev_config):
        """pkg/device/devices.go CheckType: comma-separated, trimmed, any entry part of the card's type."""
        assert tenant_with(dev_config, {**SHARE, "type": "H100, a100"}).tenants[0].gpu_workloads[0].type
        dev_config["tenants"][0]["gpuWorkloads"] = [{**SHARE, "type": "H100,L40"}]
        refused(dev_config, ("tenants[0].gpuWorkloads[0].type", "'H100,L40' names no part of"))

    def test_a_namespace_hamis_webhook_skips_is_refused(self, dev_config):
        dev_config["tenants"][0]["gpuWorkloads"] = [{**SHARE, "namespace": "kube-system"}]
        refused(dev_config, ("tenants[0].gpuWorkloads[0].namespace", "HAMi's webhook skips kube-system"))

    def test_a_tenant_without_gpus_cannot_declare_gpu_workloads(self, dev_config):
        del dev_config["tenants"][1]["gpus"]
        dev_config["tenants"][1]["gpuWorkloads"] = [SHARE]
        refused(dev_config, ("tenants[1].gpuWorkloads[0]", "the tenant has no gpus"))


class TestPlan:
    def test_the_missions_workload_fits_one_card_with_no_headroom(self, dev_config):
        """Three 20000 MiB / 30 % pods share the A100; a fourth would need 120 % cores."""
        platform = parse_config(dev_config)
        plan = plan_workloads(platform.tenants[0], platform.management.name)
        (share,) = plan.workloads
        assert plan.fits and plan.certain and plan.fix == ""
        assert (share.placed, share.refused, share.headroom) == (Span(3, 3), Span(0, 0), Span(0, 0))
        (card,) = plan.cards
        assert (card.memory_mib, card.cores, card.slots) == (Span(21920, 21920), Span(10, 10), Span(7, 7))

    def test_four_replicas_are_refused_for_cores_with_the_smallest_fix(self, dev_config):
        platform = tenant_with(dev_config, {**SHARE, "replicas": 4})
        plan = plan_workloads(platform.tenants[0], platform.management.name)
        (share,) = plan.workloads
        assert not plan.fits and share.refused == Span(1, 1) and share.placed == Span(3, 3)
        assert share.reason == "1/1 CardInsufficientCore"
        assert share.kubectl_message == "0/1 nodes are available: 1 1/1 CardInsufficientCore."
        assert plan.fix == ("1 more worker(s) of this tenant's shape (workers: 2) or "
                            "1 more card(s) per worker (gpus.perWorker: 2)")

    def test_the_declared_order_does_not_decide_which_workload_hami_takes_first(self, dev_config):
        """Pods created together reach HAMi in the queue's order, priority then the time each
        entered the queue (kubernetes v1.35.4 pkg/scheduler/framework/plugins/queuesort/
        priority_sort.go `Less`), not the order declared. The big pod first (50 % cores) leaves room
        for one small pod (30 %); the small ones first (60 %) leave none for the big one: either
        declaration may end either way, so neither fits."""
        big = {"name": "big", "replicas": 1, "gpumem": 60000, "gpucores": 50}
        small = {"name": "small", "replicas": 2, "gpumem": 10000, "gpucores": 30}
        first = plan_workloads(tenant_with(dev_config, big, small).tenants[0], "kamaji")
        second = plan_workloads(tenant_with(dev_config, small, big).tenants[0], "kamaji")
        assert [w.placed for w in first.workloads] == [Span(0, 1), Span(1, 2)]
        assert [w.placed for w in second.workloads] == [Span(1, 2), Span(0, 1)]
        assert first.verdict == second.verdict == "does not fit"

    def test_a_tie_between_nodes_makes_each_cards_leftovers_a_range(self, dev_config):
        """Two identical workers tie for the first pod (HAMi v2.10.0 pkg/scheduler/score.go): its
        card may be either node's, so no card's leftovers are certain, while the counts are."""
        platform = tenant_with(dev_config, {"name": "a", "gpumem": 40000, "gpucores": 10},
                               {"name": "b", "gpumem": 70000, "gpucores": 10}, workers=2)
        plan = plan_workloads(platform.tenants[0], "kamaji")
        assert plan.fits and not plan.certain
        assert [w.placed for w in plan.workloads] == [Span(1, 1), Span(1, 1)]
        assert plan.workloads[0].nodes == ["tenant-a-worker-0", "tenant-a-worker-1"]
        assert {card.memory_mib for card in plan.cards} == {Span(11920, 41920)}

    def test_more_workers_when_cards_per_worker_are_at_their_limit(self, dev_config):
        platform = tenant_with(dev_config, {**SHARE, "replicas": 37})
        tenant = platform.tenants[0]
        tenant = replace(tenant, gpus=replace(tenant.gpus, per_worker=12))
        assert smallest_fix(tenant, "kamaji") == "1 more worker(s) of this tenant's shape (workers: 2)"

    def test_more_cards_when_the_pod_cidr_holds_no_more_workers(self, dev_config):
        """A /22 holds 4 workers (a /24 each): the fix is cards."""
        platform = tenant_with(dev_config, {**SHARE, "replicas": 13}, podCidr="10.36.0.0/22", workers=4)
        assert smallest_fix(platform.tenants[0], "kamaji") == "1 more card(s) per worker (gpus.perWorker: 2)"

    def test_more_workers_and_more_cards_when_neither_alone_is_enough(self, dev_config):
        """A /22 holds 4 workers; 50 pods (3 per card) need more than 4 workers of 1 card and more
        than 12 cards on 1 worker: the fewest cards in all is 2 workers of 9 (18 cards)."""
        platform = tenant_with(dev_config, {**SHARE, "replicas": 50}, podCidr="10.36.0.0/22")
        assert smallest_fix(platform.tenants[0], "kamaji") == (
            "1 more worker(s) of this tenant's shape (workers: 2) with 8 more card(s) per worker "
            "(gpus.perWorker: 9)")

    def test_headroom_counts_the_quota(self, dev_config):
        platform = tenant_with(dev_config, {**SHARE, "replicas": 2, "namespace": "ml"},
                               gpuQuotas={"ml": {"requests.nvidia.com/gpu": 2}})
        assert plan_workloads(platform.tenants[0], "kamaji").workloads[0].headroom == Span(0, 0)

    def test_no_fix_within_the_limits_says_so(self, dev_config):
        platform = tenant_with(dev_config, {**SHARE, "replicas": 200}, podCidr="10.36.0.0/22")
        assert smallest_fix(platform.tenants[0], "kamaji").startswith(
            "no more workers or cards within the config's limits (up to 4 workers, 12 cards per worker) "
            "would do: make the workloads smaller")

    def test_the_refusal_names_the_workload_by_path(self, dev_config):
        platform = tenant_with(dev_config, {**SHARE, "replicas": 4})
        _, problems = plan_declared_workloads(platform)
        assert problems == [
            "tenants[0].gpuWorkloads[0] (tenant-a/share): 1 of 4 replicas refused: 0/1 nodes are "
            "available: 1 1/1 CardInsufficientCore. Smallest change that fits: 1 more worker(s) of this "
            "tenant's shape (workers: 2) or 1 more card(s) per worker (gpus.perWorker: 2)."]
        assert f"  - {problems[0]}" in (ROOT / "docs" / "gpu-capacity.md").read_text(), \
            "docs/gpu-capacity.md shows the real message"


class TestQuotas:
    """A namespace's gpuQuotas, counted as their enforcers count them, in the order pods are created."""

    def test_kubernetes_refuses_to_create_a_pod_over_the_gpu_request_quota(self, dev_config):
        """ResourceQuota admission (k8s.io/apiserver v0.35.4 admission/plugin/resourcequota/
        controller.go): every created pod counts, and the message is the API server's."""
        platform = tenant_with(dev_config, {**SHARE, "namespace": "ml"},
                               gpuQuotas={"ml": {"requests.nvidia.com/gpu": 2}})
        plan = plan_workloads(platform.tenants[0], "kamaji")
        (share,) = plan.workloads
        assert (share.placed, share.refused, share.headroom) == (Span(2, 2), Span(1, 1), Span(0, 0))
        assert share.reason == share.kubectl_message == (
            'pods "<pod>" is forbidden: exceeded quota: hami-gpu-quota, '
            "requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, "
            "limited: requests.nvidia.com/gpu=2")
        assert plan.fix == "raise gpuQuotas: ml requests.nvidia.com/gpu to at least 3 (now 2)"

    def test_the_third_pod_is_refused_by_the_webhook_or_by_hamis_quota_check(self, dev_config):
        """HAMi's webhook checks a pod against what the namespace's *placed* pods use
        (pkg/scheduler/webhook.go fitResourceQuota over QuotaManager.Used, which grows when HAMi
        allocates: pkg/device/quota.go AddUsage). Three pods created together all passed it in the
        real run, and the scheduler's FitQuota refused the third (ResourceQuotaNotFit); but a pod
        created after two were placed (a ReplicaSet creates 1, then 2) is denied by the webhook: the
        plan names both."""
        platform = tenant_with(dev_config, {**SHARE, "namespace": "ml"},
                               gpuQuotas={"ml": {"limits.nvidia.com/gpumem": 50000}})
        (share,) = plan_workloads(platform.tenants[0], "kamaji").workloads
        assert (share.placed, share.refused, share.headroom) == (Span(2, 2), Span(1, 1), Span(0, 0))
        assert share.reason == f"{WEBHOOK_DENIED} | 1/1 ResourceQuotaNotFit"
        assert share.kubectl_message == (f"{WEBHOOK_DENIED} | 0/1 nodes are available: "
                                         "1 1/1 ResourceQuotaNotFit.")

    def test_a_pending_pod_still_counts_and_which_pod_the_count_quota_refuses_is_an_order(self, dev_config):
        """The real run (5 repeats): three pods of `a` pass HAMi's webhook, one stays Pending with
        ResourceQuotaNotFit, and, since a Pending pod counts toward requests.nvidia.com/gpu
        (kubernetes v1.35.4 pkg/quota/v1/evaluator/core/pods.go counts every non-terminal pod), `b`'s
        pod is refused by the ResourceQuota when it is created. Created in another order (issue 41:
        the API server admitted a3+b3 where the declared order gives a4+b2), `b` comes first and the
        quota refuses `a`'s third: `b` is placed in some orders, and `a` may meet all three refusals."""
        platform = tenant_with(dev_config, {"name": "a", "replicas": 3, "gpumem": 10000, "gpucores": 30,
                                            "namespace": "ml"},
                               {"name": "b", "gpumem": 10000, "gpucores": 0, "namespace": "ml"},
                               gpuQuotas={"ml": {"limits.nvidia.com/gpucores": 60,
                                                 "requests.nvidia.com/gpu": 3}})
        plan = plan_workloads(platform.tenants[0], "kamaji")
        a, b = plan.workloads
        count = ('pods "<pod>" is forbidden: exceeded quota: hami-gpu-quota, requested: '
                 "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=3, "
                 "limited: requests.nvidia.com/gpu=3")
        assert (a.placed, a.refused) == (Span(2, 2), Span(1, 1))
        assert a.reason == f"{count} | {WEBHOOK_DENIED} | 1/1 ResourceQuotaNotFit"
        assert (b.placed, b.refused, b.reason) == (Span(0, 1), Span(0, 1), count)
        assert plan.fix == ("raise gpuQuotas: ml limits.nvidia.com/gpucores to at least 90 (now 60); "
                            "ml requests.nvidia.com/gpu to at least 4 (now 3)")

    def test_a_percentage_pod_passes_the_webhook_and_hami_refuses_it_per_card(self, dev_config):
        """The webhook counts a percentage as 0 MiB (GenerateResourceRequests leaves Memreq 0); the
        scheduler's fitQuota counts the card's share: ResourceQuotaNotFit."""
        platform = tenant_with(dev_config, {"name": "p", "replicas": 3, "gpumemPercentage": 25,
                                            "gpucores": 10, "namespace": "ml"},
                               gpuQuotas={"ml": {"limits.nvidia.com/gpumem": 50000}})
        (share,) = plan_workloads(platform.tenants[0], "kamaji").workloads
        assert (share.placed, share.refused) == (Span(2, 2), Span(1, 1))
        assert share.reason == "1/1 ResourceQuotaNotFit"
        assert share.kubectl_message == "0/1 nodes are available: 1 1/1 ResourceQuotaNotFit."

    def test_a_quota_of_another_namespace_changes_nothing(self, dev_config):
        platform = tenant_with(dev_config, SHARE, gpuQuotas={"ml": {"limits.nvidia.com/gpucores": 10}})
        plan = plan_workloads(platform.tenants[0], "kamaji")
        assert plan.fits and plan.workloads[0].placed == Span(3, 3)

    def test_the_quota_counts_every_card_of_a_pod(self):
        """fitQuota sums the pod's cards picked so far with this one (device.go)."""
        from kamaji_hami_platform.gpu.card_fit import GpuRequest, QuotaLeft, fit
        from kamaji_hami_platform.gpu.devices import GpuDevice

        cards = [GpuDevice(id=f"GPU-{i}", index=i, count=10, devmem=81920, devcore=100, type="NVIDIA A100")
                 for i in range(2)]
        request = GpuRequest(nums=2, memreq=20000, coresreq=10)
        assert fit(cards, request, quota=QuotaLeft(memory=40000)).ok
        assert fit(cards, request, quota=QuotaLeft(memory=30000)).reason == \
            "1/2 AllocatedCardsInsufficientRequest, 1/2 ResourceQuotaNotFit"
        assert fit(cards, request, quota=QuotaLeft(cores=15)).reason == \
            "1/2 AllocatedCardsInsufficientRequest, 1/2 ResourceQuotaNotFit"


class TestProgram:
    def test_every_preview_exports_the_plan(self, dev_config):
        program = run_program(dev_config, preview=True)
        plan = program.exports["tenants"]["tenant-a"]["gpuPlan"]
        assert plan["fits"] is True
        assert plan["workloads"]["share"] == {
            "namespace": "default", "replicas": 3, "placed": 3, "refused": 0, "nodes": ["tenant-a-worker-0"],
            "reason": "", "kubectlMessage": "", "headroom": 0}

    def test_a_stack_whose_workloads_do_not_fit_is_refused_before_any_resource(self, dev_config):
        dev_config["tenants"][0]["gpuWorkloads"] = [{**SHARE, "replicas": 4}]
        with pytest.raises(Exception) as caught:
            run_program(dev_config, preview=True)
        error = caught.value
        while error is not None and not isinstance(error, pulumi.RunError):
            error = error.__cause__ or error.__context__
        assert isinstance(error, pulumi.RunError), caught.value
        assert "tenants[0].gpuWorkloads[0] (tenant-a/share): 1 of 4 replicas refused" in str(error)
        assert "CardInsufficientCore" in str(error) and "gpuCapacity.enforcement: warning" in str(error)

    def test_a_warning_stack_deploys_and_says_so(self, dev_config, monkeypatch):
        warnings: list[str] = []
        monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
        dev_config["tenants"][0]["gpuWorkloads"] = [{**SHARE, "replicas": 4}]
        dev_config["gpuCapacity"] = {"enforcement": "warning"}
        program = run_program(dev_config, preview=True)
        assert program.exports["tenants"]["tenant-a"]["gpuPlan"]["fits"] is False
        assert program.of_type("kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane")
        assert len(warnings) == 1 and "1 of 4 replicas refused" in warnings[0]
