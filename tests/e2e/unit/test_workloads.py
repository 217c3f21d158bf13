"""The declared-workloads live case's pure parts: the sequence and pods it creates, and how it judges
what HAMi did against the plan (wrong counts, wrong nodes, wrong order fail; every tie passes)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.gpu import Span
from kamaji_hami_platform.gpu.placement import Placement
from tests.e2e import workloads
from tests.e2e.support import ALLOCATED_ANNOTATION, VGPU_NODE_ANNOTATION
from tests.e2e.workloads import REFUSED, RUNNING, DeclaredPlan, Seen

pytestmark = pytest.mark.unit

TRAIN = {"name": "train", "replicas": 2, "gpumem": 30000, "gpucores": 40}
# Two of these do not fit beside two `train` pods on one A100 80GB: the second is refused for memory.
INFER = {"name": "infer", "replicas": 2, "gpumemPercentage": 25, "gpucores": 10, "type": "A100",
         "namespace": "serving"}
WORKER_0 = "tenant-a-worker-0"
WORKER_1 = "tenant-a-worker-1"


def declared(dev_config: dict[str, Any], items: list[dict[str, Any]], workers: int = 1) -> DeclaredPlan:
    tenant = dev_config["tenants"][0]
    tenant["gpuWorkloads"] = items
    tenant["workers"] = workers
    dev_config["gpuCapacity"] = {"enforcement": "warning"}
    platform = parse_config(dev_config)
    return workloads.declared_plan(platform, platform.tenants[0])


def as_planned(expected: DeclaredPlan, outcome: int = 0) -> list[Seen]:
    """What HAMi does when it follows the plan (one of its outcomes, in sequence order)."""
    places = list(sorted(expected.outcomes)[outcome])
    seen = []
    for replica in expected.replicas:
        placement = expected.placement(replica)
        if not placement.ok:
            seen.append(Seen(replica, REFUSED))
            continue
        spot = next(p for p in places if p[0] in placement.nodes)
        places.remove(spot)
        seen.append(Seen(replica, RUNNING, *spot))
    return seen


@pytest.fixture
def over(dev_config) -> DeclaredPlan:
    """train x2 then infer x2 on tenant-a's one card: three placed, the last refused."""
    return declared(dev_config, [TRAIN, INFER])


class TestSequence:
    def test_workloads_in_declared_order_each_ones_replicas_in_turn(self, over):
        assert [(r.pod, r.position, r.namespace) for r in over.replicas] == [
            ("e2e-train-1", 1, "default"), ("e2e-train-2", 2, "default"),
            ("e2e-infer-1", 3, "serving"), ("e2e-infer-2", 4, "serving")]

    def test_the_plan_is_the_planners_for_that_sequence(self, over):
        assert [(p.ok, p.maybe_refused) for p in over.plan.placements] == [
            (True, False), (True, False), (True, False), (False, False)]
        assert over.exported["workloads"]["infer"]["placed"] == 1
        assert workloads.refusal_codes(over.plan.placements[3]) == ["CardInsufficientMemory"]

    def test_namespaces_first_use_first_and_the_webhooks_blind_spots(self, dev_config):
        """The config refuses kube-system (config.py); the live case checks again what it deploys."""
        from kamaji_hami_platform.config import GpuWorkloadConfig

        expected = declared(dev_config, [TRAIN, INFER])
        system = GpuWorkloadConfig("sys", 1, gpumem=1, namespace="kube-system")
        items = (*(r.workload for r in expected.replicas), system)
        assert workloads.namespaces(items) == ["default", "serving", "kube-system"]
        assert workloads.bypassing_namespaces(items) == ["kube-system"]


class TestPod:
    def test_limits_type_label_and_no_scheduler_name(self, over):
        pod = workloads.replica_pod(over.replicas[2])
        assert pod["metadata"] == {"name": "e2e-infer-1", "namespace": "serving",
                                   "labels": {workloads.WORKLOAD_LABEL: "infer"},
                                   "annotations": {"nvidia.com/use-gputype": "A100"}}
        (container,) = pod["spec"]["containers"]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": "1", "nvidia.com/gpucores": "10",
                                                    "nvidia.com/gpumem-percentage": "25"}
        assert container["image"] == workloads.PAUSE_IMAGE == "registry.k8s.io/pause:3.10"
        assert "command" not in container, "pause sleeps by itself; it has no shell"
        assert "schedulerName" not in pod["spec"], "HAMi's webhook must set it"

    def test_no_type_no_annotation(self, over):
        pod = workloads.replica_pod(over.replicas[0])
        assert "annotations" not in pod["metadata"]
        assert pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] == "30000"


class TestObserved:
    def test_pending_and_unbound_is_refused(self, over):
        assert workloads.observed(over.replicas[3], "Pending", None, {}).state == REFUSED

    def test_running_takes_hamis_node_and_cards(self, over):
        annotations = {VGPU_NODE_ANNOTATION: WORKER_0, ALLOCATED_ANNOTATION: "GPU-1,NVIDIA,30000,40:;"}
        seen = workloads.observed(over.replicas[0], "Running", WORKER_0, annotations)
        assert seen == Seen(over.replicas[0], RUNNING, WORKER_0, ("GPU-1",))

    def test_bound_but_not_running_is_neither(self, over):
        seen = workloads.observed(over.replicas[0], "Pending", WORKER_0, {})
        assert workloads.order_problems(over, [seen]) == [
            "e2e-train-1 (pod 1 of the sequence) is Pending (bound), neither Running nor refused"]


class TestJudge:
    def test_what_the_plan_says_passes(self, over):
        assert workloads.judge(over, as_planned(over)) == []
        assert workloads.running_counts(as_planned(over)) == {"train": 2, "infer": 1}

    def test_a_refused_pod_that_runs_fails_its_count_its_place_and_the_outcome(self, over):
        seen = as_planned(over)
        card = seen[0].cards
        seen[3] = Seen(over.replicas[3], RUNNING, WORKER_0, card)
        problems = workloads.judge(over, seen)
        assert any("e2e-infer-2 (pod 4 of the sequence) runs on" in p for p in problems)
        assert any(p.startswith("HAMi recorded") for p in problems)
        assert "workload infer: 2 of 2 Running, the plan places 1" in problems

    def test_a_placed_pod_refused_fails(self, over):
        seen = as_planned(over)
        seen[0] = Seen(over.replicas[0], REFUSED)
        problems = workloads.judge(over, seen)
        assert problems[0] == ("e2e-train-1 (pod 1 of the sequence) was refused; "
                               f"the plan places it on {WORKER_0}")
        assert "workload train: 1 of 2 Running, the plan places 2" in problems

    def test_the_right_counts_in_the_wrong_order_fail(self, over):
        """infer-1 refused and infer-2 running: one infer pod runs, as planned, but not the one
        the sequence places (the plan assumed one pod at a time, in order)."""
        seen = as_planned(over)
        seen[2], seen[3] = (Seen(over.replicas[2], REFUSED),
                            Seen(over.replicas[3], RUNNING, seen[2].node, seen[2].cards))
        problems = workloads.judge(over, seen)
        assert workloads.count_problems(over.exported, seen) == []
        assert problems == [
            f"e2e-infer-1 (pod 3 of the sequence) was refused; the plan places it on {WORKER_0}",
            f"e2e-infer-2 (pod 4 of the sequence) runs on {WORKER_0}; the plan refuses it: "
            "1/1 CardInsufficientMemory"]

    def test_a_pod_on_another_card_fails_the_outcome(self, over):
        seen = as_planned(over)
        seen[1] = Seen(over.replicas[1], RUNNING, WORKER_0, ("GPU-other",))
        (problem,) = workloads.judge(over, seen)
        assert problem.startswith("HAMi recorded")

    def test_a_missing_or_reordered_pod_is_reported_as_such(self, over):
        seen = as_planned(over)
        assert workloads.judge(over, seen[:3])[0].startswith("observed ['e2e-train-1'")
        assert workloads.judge(over, [seen[1], seen[0], *seen[2:]])[0].startswith("observed")


class TestTies:
    """Two identical workers under binpack: the first pod goes to either; the rest follow it (three
    small pods fit on one card)."""

    @pytest.fixture
    def tied(self, dev_config) -> DeclaredPlan:
        small = {"name": "small", "replicas": 3, "gpumem": 10000, "gpucores": 10}
        return declared(dev_config, [small], workers=2)

    def test_either_node_passes(self, tied):
        assert len(tied.outcomes) == 2
        for outcome in range(2):
            assert workloads.judge(tied, as_planned(tied, outcome)) == [], outcome

    def test_split_across_the_nodes_fails(self, tied):
        seen = as_planned(tied)
        first = seen[0]
        other = WORKER_1 if first.node == WORKER_0 else WORKER_0
        card = next(cards for outcome in tied.outcomes for node, cards in outcome if node == other)
        seen[2] = Seen(tied.replicas[2], RUNNING, other, card)
        (problem,) = workloads.judge(tied, seen)
        assert problem.startswith("HAMi recorded")


class TestCounts:
    def test_exported_counts_single_or_ranges(self):
        assert workloads.span_of(3) == Span(3, 3)
        assert workloads.span_of(2.0) == Span(2, 2)
        assert workloads.span_of({"min": 1, "max": 2}) == Span(1, 2)

    def test_a_count_inside_a_range_passes_and_outside_fails(self, over):
        exported = {"workloads": {"infer": {"placed": {"min": 1, "max": 2}, "replicas": 2}}}
        seen = [Seen(over.replicas[2], RUNNING, WORKER_0, ("c",)), Seen(over.replicas[3], REFUSED)]
        assert workloads.count_problems(exported, seen) == []
        assert workloads.count_problems(exported, [Seen(r.replica, REFUSED) for r in seen]) == [
            "workload infer: 0 of 2 Running, the plan places 1-2"]


def test_refusal_codes_across_nodes_and_branches():
    placement = Placement(1, False, None, [], "n1: 1/2 CardInsufficientCore, 1/2 CardInsufficientMemory; "
                          "n2: 1/1 CardTimeSlicingExhausted | 1/1 CardInsufficientCore")
    assert workloads.refusal_codes(placement) == ["CardInsufficientCore", "CardInsufficientMemory",
                                                  "CardTimeSlicingExhausted"]


class FakeHami:
    """The CoreV1Api calls the live case makes, with a HAMi that places each new pod as the plan's
    first outcome does (or `misplace` says), refusing the rest with a FilteringFailed event."""

    def __init__(self, expected: DeclaredPlan, misplace: dict[str, str] | None = None) -> None:
        self.places = list(sorted(expected.outcomes)[0])
        self.expected, self.misplace = expected, misplace or {}
        self.namespaces = {"default"}
        self.pods: dict[tuple[str, str], Any] = {}
        self.events: list[Any] = []
        self.deleted_namespaces: list[str] = []

    def read_namespace(self, name: str, **_: Any) -> Any:
        from kubernetes.client.exceptions import ApiException

        if name not in self.namespaces:
            raise ApiException(status=404)
        return SimpleNamespace(status=SimpleNamespace(phase="Active"))

    def create_namespace(self, body: dict[str, Any], **_: Any) -> None:
        self.namespaces.add(body["metadata"]["name"])

    def delete_namespace(self, name: str, **_: Any) -> None:
        self.namespaces.discard(name)
        self.deleted_namespaces.append(name)
        self.pods = {key: pod for key, pod in self.pods.items() if key[0] != name}

    def create_namespaced_pod(self, namespace: str, body: dict[str, Any], **_: Any) -> None:
        name = body["metadata"]["name"]
        replica = next(r for r in self.expected.replicas if r.pod == name)
        uid = f"uid-{name}"
        annotations, node = {}, None
        if self.expected.placement(replica).ok:
            node, cards = self.places.pop(next(i for i, p in enumerate(self.places)
                                               if p[0] in self.expected.placement(replica).nodes))
            node = self.misplace.get(name, node)
            annotations = {VGPU_NODE_ANNOTATION: node, ALLOCATED_ANNOTATION: f"{cards[0]},NVIDIA,1,1:;"}
        else:
            reason = self.expected.placement(replica).reason
            self.events.append(SimpleNamespace(reason="FilteringFailed", message=f"1 nodes {reason}",
                                               involved_object=SimpleNamespace(uid=uid)))
        self.pods[(namespace, name)] = SimpleNamespace(
            metadata=SimpleNamespace(name=name, uid=uid, annotations=annotations,
                                     labels=body["metadata"]["labels"]),
            spec=SimpleNamespace(node_name=node),
            status=SimpleNamespace(phase="Running" if node else "Pending"))

    def read_namespaced_pod(self, name: str, namespace: str, **_: Any) -> Any:
        return self.pods[(namespace, name)]

    def list_namespaced_event(self, namespace: str, field_selector: str, **_: Any) -> Any:
        uid = field_selector.split("=", 1)[1]
        return SimpleNamespace(items=[e for e in self.events if e.involved_object.uid == uid])

    def list_namespaced_pod(self, namespace: str, label_selector: str, **_: Any) -> Any:
        return SimpleNamespace(items=[p for (ns, _), p in self.pods.items()
                                      if ns == namespace and label_selector in p.metadata.labels])

    def delete_collection_namespaced_pod(self, namespace: str, label_selector: str, **_: Any) -> None:
        self.pods = {key: pod for key, pod in self.pods.items()
                     if key[0] != namespace or label_selector not in pod.metadata.labels}


class TestLiveCaseAgainstAFakeHami:
    """check_tenant's orchestration: the sequence, the judge, and the cleanup of what it created."""

    @pytest.fixture
    def run(self, dev_config, monkeypatch):
        from tests.e2e import cases
        from tests.e2e import test_declared_workloads as case

        dev_config["tenants"][0]["gpuWorkloads"] = [TRAIN, INFER]
        dev_config["gpuCapacity"] = {"enforcement": "warning"}
        platform = parse_config(dev_config)
        tenant = cases.GpuTenant(None, platform, platform.tenants[0], {})
        expected = workloads.declared_plan(platform, platform.tenants[0])
        monkeypatch.setattr(cases, "check_cards_empty_and_registered", lambda t: None)
        monkeypatch.setattr(cases.time, "sleep", lambda seconds: None)
        monkeypatch.setattr(cases, "cluster_evidence", lambda t: [])
        live = SimpleNamespace(name="dev", platform=platform,
                               outputs={"tenants": {"tenant-a": {"gpuPlan": expected.exported}}})

        def check(fake: FakeHami) -> None:
            monkeypatch.setattr(cases.GpuTenant, "core", lambda self: fake)
            case.check_tenant(live, tenant)

        return expected, check

    def test_as_planned_passes_and_removes_only_what_it_created(self, run):
        expected, check = run
        fake = FakeHami(expected)
        check(fake)
        assert fake.deleted_namespaces == ["serving"], "default existed: only its pods go"
        assert fake.pods == {}

    def test_a_pod_on_another_node_fails_and_still_cleans_up(self, run):
        expected, check = run
        fake = FakeHami(expected, misplace={"e2e-train-2": WORKER_1})
        with pytest.raises(AssertionError, match="HAMi did not do what the plan says"):
            check(fake)
        assert fake.pods == {} and fake.deleted_namespaces == ["serving"]
