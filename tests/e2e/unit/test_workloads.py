"""The declared-workloads live case's pure parts: the sequence and pods it creates, and how it judges
what HAMi did against the plan (wrong counts, wrong nodes, wrong order fail; every tie passes)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.gpu import Span
from tests.e2e import workloads
from tests.e2e.support import ALLOCATED_ANNOTATION, VGPU_NODE_ANNOTATION, Allocation
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


def as_planned(expected: DeclaredPlan, order: list[int] | None = None) -> list[Seen]:
    """What HAMi does when it takes the created pods in this order (replica indexes; default the
    declared one), the first tied node each time: the planner's own sequence on the same cards."""
    from kamaji_hami_platform.gpu.placement import plan_sequence
    from kamaji_hami_platform.gpu.workloads import workload_request

    order = list(range(len(expected.replicas))) if order is None else order
    created = [i for i in order
               if expected.replicas[i].number <= expected.created[expected.replicas[i].workload.name]]
    nodes = {name: expected.planner.base[name] for name in expected.planner.names}
    planned = plan_sequence(nodes, [workload_request(expected.replicas[i].workload) for i in created],
                            policy=expected.planner.policy, node_policy=expected.planner.node_policy)
    seen: dict[int, Seen] = {}
    for i, placement in zip(created, planned.placements, strict=True):
        replica = expected.replicas[i]
        if not placement.ok:
            seen[i] = Seen(replica, REFUSED)
            continue
        node = placement.node or placement.nodes[0]
        ids = placement.device_ids or [d.id for d in nodes[node]][:len(placement.device_ids) or 1]
        seen[i] = Seen(replica, RUNNING, node, tuple(Allocation(card, "NVIDIA", placement.memory_mib,
                                                                placement.cores) for card in ids))
    for i, replica in enumerate(expected.replicas):
        if i not in seen:
            seen[i] = workloads.refused_at_creation(replica, expected.creation_refusals[replica.workload.name]
                                                    .replace('"<pod>"', f'"{replica.pod}"'))
    return [seen[i] for i in range(len(expected.replicas))]


@pytest.fixture
def over(dev_config) -> DeclaredPlan:
    """train x2 and infer x2 on tenant-a's one card: either workload first, the other's last pod
    is refused (train first: infer-2 lacks memory; infer first: train-2 does)."""
    return declared(dev_config, [TRAIN, INFER])


class TestReplicas:
    def test_workloads_as_declared_each_ones_replicas_in_turn(self, over):
        assert [(r.pod, r.position, r.namespace) for r in over.replicas] == [
            ("e2e-train-1", 1, "default"), ("e2e-train-2", 2, "default"),
            ("e2e-infer-1", 3, "serving"), ("e2e-infer-2", 4, "serving")]

    def test_the_oracle_is_the_walk_over_every_order(self, over):
        assert over.exported["workloads"]["infer"]["placed"] == {"min": 1, "max": 2}
        assert over.exported["workloads"]["train"]["placed"] == {"min": 1, "max": 2}
        assert {placed for _, _, placed, _ in over.walk.finals} == {(2, 1), (1, 2)}
        assert workloads.refusal_codes(over.reasons(over.replicas[3].workload)) == ["CardInsufficientMemory"]

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

    def test_running_takes_hamis_node_cards_and_charge(self, over):
        annotations = {VGPU_NODE_ANNOTATION: WORKER_0, ALLOCATED_ANNOTATION: "GPU-1,NVIDIA,30000,40:;"}
        seen = workloads.observed(over.replicas[0], "Running", WORKER_0, annotations)
        assert seen == Seen(over.replicas[0], RUNNING, WORKER_0, (Allocation("GPU-1", "NVIDIA", 30000, 40),))

    def test_bound_but_not_running_is_neither(self, over):
        seen = workloads.observed(over.replicas[0], "Pending", WORKER_0, {})
        assert workloads.pod_problems(over, seen) == [
            "e2e-train-1 is Pending (bound), neither Running nor refused"]


class TestJudge:
    def test_either_order_hami_may_take_passes(self, over):
        assert workloads.judge(over, as_planned(over)) == []
        assert workloads.judge(over, as_planned(over, [2, 3, 0, 1])) == []
        assert workloads.running_counts(as_planned(over, [2, 3, 0, 1])) == {"train": 1, "infer": 2}

    def test_a_refused_pod_that_runs_fails_the_cards_end_though_its_count_is_in_range(self, over):
        seen = as_planned(over)
        seen[3] = Seen(over.replicas[3], RUNNING, WORKER_0, seen[2].cards)
        problems = workloads.judge(over, seen)
        assert any(p.startswith("the cards are left as no order HAMi may take leaves them") for p in problems)
        assert "workload infer: 2 of 2 Running, the plan places 1-2" not in problems, "2 is in the range"

    def test_a_pod_charged_other_than_planned_fails_on_its_own(self, over):
        """An accounting error the old multiset of (node, cards) could not see."""
        seen = as_planned(over)
        card = seen[0].cards[0]
        seen[0] = Seen(over.replicas[0], RUNNING, WORKER_0, (Allocation(card.card, "NVIDIA", 20000, 40),))
        problems = workloads.judge(over, seen)
        assert problems[0] == (f"e2e-train-1 is charged 20000 MiB and 40 % cores on {card.card}; the plan "
                               "charges 30000 MiB and 40 %")

    def test_a_pod_on_a_node_its_workload_may_not_take_fails(self, over):
        seen = as_planned(over)
        seen[1] = Seen(over.replicas[1], RUNNING, "elsewhere", seen[1].cards)
        problems = workloads.judge(over, seen)
        assert problems[0].startswith("e2e-train-2 runs on elsewhere; its workload's pods may go only to")

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
        seen = as_planned(tied)
        assert workloads.judge(tied, seen) == []
        other = WORKER_1 if seen[0].node == WORKER_0 else WORKER_0
        card = tied.planner.base[other][0].id
        moved = [Seen(s.replica, RUNNING, other, (Allocation(card, "NVIDIA", 10000, 10),)) for s in seen]
        assert workloads.judge(tied, moved) == []

    def test_split_across_the_nodes_fails(self, tied):
        seen = as_planned(tied)
        other = WORKER_1 if seen[0].node == WORKER_0 else WORKER_0
        card = tied.planner.base[other][0].id
        seen[2] = Seen(tied.replicas[2], RUNNING, other, (Allocation(card, "NVIDIA", 10000, 10),))
        (problem,) = workloads.judge(tied, seen)
        assert problem.startswith("the cards are left as no order HAMi may take leaves them")


class TestQuotas:
    """Tenants with gpuQuotas are judged too: the API server's refusal at creation, pod by pod."""

    @pytest.fixture
    def quota(self, dev_config) -> DeclaredPlan:
        dev_config["tenants"][0]["gpuQuotas"] = {"ml": {"requests.nvidia.com/gpu": 2}}
        return declared(dev_config, [{**TRAIN, "replicas": 3, "gpucores": 10, "namespace": "ml"}])

    def test_the_refusal_at_creation_passes_with_the_pods_own_name(self, quota):
        seen = as_planned(quota)
        assert seen[2].state == workloads.REFUSED_AT_CREATION
        assert workloads.judge(quota, seen) == []

    def test_another_refusal_or_none_fails(self, quota):
        seen = as_planned(quota)
        seen[2] = workloads.refused_at_creation(quota.replicas[2], 'admission webhook "x" denied')
        (problem,) = workloads.judge(quota, seen)
        assert problem.startswith("e2e-train-3 was refused at creation with")


class TestCounts:
    def test_exported_counts_single_or_ranges(self):
        assert workloads.span_of(3) == Span(3, 3)
        assert workloads.span_of(2.0) == Span(2, 2)
        assert workloads.span_of({"min": 1, "max": 2}) == Span(1, 2)

    def test_a_count_inside_a_range_passes_and_outside_fails(self, over):
        exported = {"workloads": {"infer": {"placed": {"min": 1, "max": 2}, "replicas": 2}}}
        seen = [Seen(over.replicas[2], RUNNING, WORKER_0, ()), Seen(over.replicas[3], REFUSED)]
        assert workloads.count_problems(exported, seen) == []
        assert workloads.count_problems(exported, [Seen(r.replica, REFUSED) for r in seen]) == [
            "workload infer: 0 of 2 Running, the plan places 1-2"]


def test_refusal_codes_across_nodes_and_branches():
    reasons = ["n1: 1/2 CardInsufficientCore, 1/2 CardInsufficientMemory; n2: 1/1 CardTimeSlicingExhausted",
               "1/1 CardInsufficientCore", "Too many pods"]
    assert workloads.refusal_codes(reasons) == ["CardInsufficientCore", "CardInsufficientMemory",
                                                "CardTimeSlicingExhausted", "Too many pods"]


class FakeHami:
    """The CoreV1Api calls the live case makes, with a HAMi that does what `seen` says (one order
    the plan allows, unless a test changes it): Running pods annotated with their cards, refused
    ones with a FilteringFailed event, pods refused at creation with a 403."""

    def __init__(self, expected: DeclaredPlan, seen: list[Seen]) -> None:
        self.expected, self.seen = expected, {s.replica.pod: s for s in seen}
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
        from kubernetes.client.exceptions import ApiException

        name = body["metadata"]["name"]
        seen, uid = self.seen[name], f"uid-{name}"
        if seen.state == workloads.REFUSED_AT_CREATION:
            raise ApiException(status=403, reason=seen.message)
        annotations, node = {}, None
        if seen.state == RUNNING:
            node = seen.node
            allocated = "".join(f"{c.card},NVIDIA,{c.memory_mib},{c.cores}:" for c in seen.cards)
            annotations = {VGPU_NODE_ANNOTATION: node, ALLOCATED_ANNOTATION: f"{allocated};"}
        else:
            reason = self.expected.reasons(seen.replica.workload)[0]
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
        fake = FakeHami(expected, as_planned(expected, [2, 3, 0, 1]))
        check(fake)
        assert fake.deleted_namespaces == ["serving"], "default existed: only its pods go"
        assert fake.pods == {}

    def test_a_pod_on_another_node_fails_and_still_cleans_up(self, run):
        expected, check = run
        seen = as_planned(expected)
        seen[1] = Seen(seen[1].replica, RUNNING, WORKER_1, seen[1].cards)
        fake = FakeHami(expected, seen)
        with pytest.raises(AssertionError, match="HAMi did not do what the plan says"):
            check(fake)
        assert fake.pods == {} and fake.deleted_namespaces == ["serving"]


@pytest.mark.parametrize(("reason", "message", "refused"), [
    ("FilteringFailed", "no available node, 1 nodes do not meet", True),
    ("FailedScheduling", "0/1 nodes are available: 1 Too many pods.", True),
    # A failed bind: kube-scheduler records it as FailedScheduling with the extender's error and
    # retries the pod (seen live: HAMi's node lock held by a pod created with it).
    ("FailedScheduling", "node tenant-a-worker-0 is locked: node lock contention", False),
    ("BindingFailed", "node tenant-a-worker-0 has been locked within 5s: node lock contention", False),
    ("FilteringSucceed", "find fit node(tenant-a-worker-0)", False),
    ("FailedScheduling", None, False),
])
def test_only_a_refusal_for_want_of_a_node_counts_not_a_failed_bind(reason, message, refused):
    from tests.e2e.test_declared_workloads import is_refusal

    assert is_refusal(reason, message) is refused
