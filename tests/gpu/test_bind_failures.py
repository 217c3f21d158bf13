"""HAMi's bind-failure path and creation in any order in the walk over orders (issue 41).

Project-HAMi/HAMi v2.10.0: `Filter` records a pod's allocation (pkg/scheduler/scheduler.go ~1135);
`Bind` fails while another pod holds the node's lock (pkg/util/nodelock/nodelock.go `LockNode`, no
wait) and its `fail` keeps the allocation (~1036-1045); the retried pod's next `Filter` drops it
(~1092) and places the pod on the usage of that moment. So a stale allocation can steer the pods
filtered meanwhile, and "usage only grows" is false. A count quota admits whichever pods the API
server sees first.
"""

from __future__ import annotations

import pytest

from kamaji_hami_platform.gpu import GpuDevice, GpuRequest
from kamaji_hami_platform.gpu.card_fit import QuotaLeft
from kamaji_hami_platform.gpu.orders import DOES_NOT_FIT, FITS, Batch, OrderPlan, plan_any_order
from kamaji_hami_platform.gpu.placement import CountQuota, usage_of

pytestmark = pytest.mark.unit

A100 = {"count": 10, "devmem": 81920, "devcore": 100, "type": "NVIDIA A100-SXM4-80GB"}
SHARE = GpuRequest(1, 20000, coresreq=30)
HALF = GpuRequest(1, 30000, coresreq=50)


def cards(node: str, count: int) -> list[GpuDevice]:
    return [GpuDevice(id=f"{node}-GPU-{i}", index=i, **A100) for i in range(count)]


def two_nodes(per_node: int) -> dict[str, list[GpuDevice]]:
    return {name: cards(name, per_node) for name in ("a", "b")}


def ends(plan: OrderPlan) -> set:
    return {(state, placed) for state, _, placed, _ in plan.finals}


def loaded(nodes: dict[str, list[GpuDevice]], pods: dict[str, list[tuple[int, GpuRequest]]]
           ) -> dict[str, list[GpuDevice]]:
    """The nodes' cards with these pods' usage (node -> (card position, request) per pod)."""
    result = {name: [GpuDevice(**{**vars(d)}) for d in devices] for name, devices in nodes.items()}
    for name, placed in pods.items():
        for position, request in placed:
            card = result[name][position]
            card.used += 1
            card.usedmem += request.memory_on(card)
            card.usedcores += request.coresreq
    return result


class TestBindFailures:
    def test_a_plan_that_fits_when_every_bind_succeeds_is_refused_after_a_failed_one(self):
        """2 nodes x 2 cards, binpack/binpack: three 40000 MiB / 0 % pods and two 60000 MiB / 60 %
        ones fit in every order of successful binds; a stale allocation sends a 40000 MiB pod to a
        third card, and one 60000 MiB pod finds no card: `fits` would be false."""
        batches = [Batch(GpuRequest(1, 40000, coresreq=0), None, 3), Batch(GpuRequest(1, 60000, coresreq=60),
                                                                          None, 2)]
        kwargs = {"policy": "binpack", "node_policy": "binpack"}
        assert plan_any_order(two_nodes(2), batches, bind_failures=False, **kwargs).verdict == FITS
        planned = plan_any_order(two_nodes(2), batches, **kwargs)
        assert planned.verdict == DOES_NOT_FIT and planned.complete
        assert "CardInsufficientMemory" in " ".join(planned.outcomes[1].refusals)

    def test_a_failed_bind_reaches_an_end_no_order_of_successful_binds_does(self):
        """One 30 % pod and two 50 % ones on 2 nodes x 2 cards, binpack/binpack: the 50 % pods
        share a card; which card they share depends on where the 30 % pod stood when they were
        filtered, and a stale allocation can stand where no bound pod ever did."""
        nodes = two_nodes(2)
        batches = [Batch(SHARE, None, 1), Batch(HALF, None, 2)]
        walked = plan_any_order(nodes, batches, policy="binpack", node_policy="binpack", every_end=True)
        bound_only = plan_any_order(nodes, batches, policy="binpack", node_policy="binpack", every_end=True,
                                    bind_failures=False)
        assert walked.verdict == bound_only.verdict == FITS
        assert ends(bound_only) < ends(walked)
        seen = loaded(nodes, {"b": [(0, HALF), (0, HALF), (1, SHARE)]})
        assert walked.reaches(seen, {"b": 3}, [1, 2])
        assert not bound_only.reaches(seen, {"b": 3}, [1, 2])

    def test_a_bind_fails_when_a_pod_filtered_later_takes_the_lock_first(self):
        """kube-scheduler binds in the background (v1.35.4 pkg/scheduler/schedule_one.go): Y lands
        on the empty node n, X follows (n now scores higher), X's bind takes n's lock first and Y's
        fails; kube-scheduler forgets Y, so n has room for the second X (its pod limit is 2), and
        Y's retry finds n full of pods and m short of memory. Deciding a bind's fate when the pod
        is placed missed this: every bind's outcome waits while other pods are placed."""
        card = {"count": 10, "devmem": 81920, "devcore": 100, "type": "NVIDIA A100-SXM4-80GB"}
        nodes = {"m": [GpuDevice(id="m0", index=0, used=1, usedmem=60000, usedcores=30, **card)],
                 "n": [GpuDevice(id="n0", index=0, **card)]}
        y, x = GpuRequest(1, 30000, coresreq=70), GpuRequest(1, 10000, coresreq=10)
        kwargs = {"policy": "binpack", "node_policy": "binpack", "pod_room": {"n": 2, "m": 5}}
        batches = [Batch(y, None, 1), Batch(x, None, 2)]
        assert plan_any_order(nodes, batches, bind_failures=False, **kwargs).verdict == FITS
        planned = plan_any_order(nodes, batches, every_end=True, **kwargs)
        assert planned.verdict == DOES_NOT_FIT and planned.complete
        assert "m: 1/1 CardInsufficientMemory; n: Too many pods" in planned.outcomes[0].refusals
        assert planned.placed(0) == (0, 1)

    def test_one_card_is_the_same_with_or_without_failed_binds(self):
        """The headline: three 20000 MiB / 30 % pods share the card, a fourth is refused."""
        one = {"a": cards("a", 1)}
        walked = plan_any_order(one, [Batch(SHARE, None, 4)], every_end=True)
        bound_only = plan_any_order(one, [Batch(SHARE, None, 4)], every_end=True, bind_failures=False)
        assert ends(walked) == ends(bound_only)
        assert walked.placed(0) == (3, 3) and walked.verdict == DOES_NOT_FIT
        assert "1/1 CardInsufficientCore" in walked.outcomes[0].refusals

    def test_an_end_is_recognised_under_any_naming_of_alike_nodes(self):
        nodes = two_nodes(1)
        walked = plan_any_order(nodes, [Batch(SHARE, None, 4)], policy="binpack", node_policy="binpack",
                                every_end=True)
        for full, other in (("a", "b"), ("b", "a")):
            seen = loaded(nodes, {full: [(0, SHARE)] * 3, other: [(0, SHARE)]})
            assert walked.reaches(seen, {full: 3, other: 1}, [4])
        # binpack fills the busier card first; two and two only when a retried pod's Filter still
        # counts its own old allocation (HAMi's informer put it back: the card looks full)
        even = loaded(nodes, {"a": [(0, SHARE)] * 2, "b": [(0, SHARE)] * 2})
        assert walked.reaches(even, {"a": 2, "b": 2}, [4])
        bound_only = plan_any_order(nodes, [Batch(SHARE, None, 4)], policy="binpack", node_policy="binpack",
                                    every_end=True, bind_failures=False)
        assert not bound_only.reaches(even, {"a": 2, "b": 2}, [4])
        assert [usage_of(d) for d in nodes.values()] == [((0, 0, 0),), ((0, 0, 0),)], "inputs untouched"

    def test_the_bound_still_proves_fits_when_each_pod_holds_one_allocation(self):
        """50 pods of 20000 MiB / 30 % on 2 nodes x 9 cards: 3 per card, 54 places; at any moment
        each pod holds at most one allocation, stale or not, so none can be refused."""
        nodes = {name: cards(name, 9) for name in ("a", "b")}
        assert plan_any_order(nodes, [Batch(SHARE, None, 50)], stop_at_refusal=True).verdict == FITS


class TestCreationInAnyOrder:
    def test_which_pods_a_count_quota_refuses_is_an_order(self):
        """Two batches in one namespace under requests.nvidia.com/gpu: 3, two pods each: the API
        server admits whichever three come first."""
        counts = {"ml": CountQuota("hami-gpu-quota", 3)}
        batches = [Batch(SHARE, "ml", 2), Batch(HALF, "ml", 2)]
        planned = plan_any_order(two_nodes(1), batches, counts=counts, every_end=True)
        assert planned.verdict == DOES_NOT_FIT
        assert {placed for _, placed in ends(planned)} == {(2, 1), (1, 2)}
        assert any("exceeded quota: hami-gpu-quota" in r for o in planned.outcomes for r in o.refusals)

    def test_the_webhook_may_see_pods_already_placed(self):
        """HAMi's webhook checks a pod against what HAMi allocated for the namespace when the pod is
        created (pkg/scheduler/webhook.go fitResourceQuota): a pod created after two were placed is
        denied there, one created before is refused by FitQuota; both can happen."""
        quotas = {"ml": QuotaLeft(50000, None)}
        planned = plan_any_order({"a": cards("a", 1)}, [Batch(SHARE, "ml", 3)], quotas=quotas, every_end=True)
        refusals = planned.outcomes[0].refusals
        assert planned.placed(0) == (2, 2)
        assert any("vgpu.hami.io" in r for r in refusals) and "1/1 ResourceQuotaNotFit" in refusals
