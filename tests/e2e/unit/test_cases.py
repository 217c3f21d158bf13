"""The GPU cases' logic against a stand-in API: refusals matched by UID and held across a
back-off, waits that outlive API errors, the pods that fill a tenant, TC-08's bound and victim,
and the oracle when HAMi's node choice ties."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.gpu import Span
from tests.e2e import cases, support

pytestmark = pytest.mark.unit


def pod(name: str, uid: str, node: str | None = None, annotations: dict[str, str] | None = None) -> Any:
    return SimpleNamespace(metadata=SimpleNamespace(name=name, uid=uid, namespace=cases.NAMESPACE,
                                                    annotations=annotations or {}),
                           spec=SimpleNamespace(node_name=node, scheduler_name="hami-scheduler"),
                           status=SimpleNamespace(phase="Running" if node else "Pending"))


def event(uid: str, reason: str, message: str) -> Any:
    return SimpleNamespace(reason=reason, message=message, involved_object=SimpleNamespace(uid=uid))


class FakeCore:
    """The CoreV1Api calls the cases make, over in-memory pods, events and node annotations."""

    def __init__(self) -> None:
        self.pods: dict[str, Any] = {}
        self.events: list[Any] = []
        self.node_annotations: dict[str, dict[str, str]] = {}
        self.allocatable: dict[str, dict[str, str]] = {}
        self.metrics_text = ""

    def read_namespaced_pod(self, name: str, namespace: str, **_: Any) -> Any:
        return self.pods[name]

    def list_namespaced_event(self, namespace: str, field_selector: str, **_: Any) -> Any:
        key, value = field_selector.split("=", 1)
        assert key == "involvedObject.uid", "events must be matched by the pod's UID"
        return SimpleNamespace(items=[e for e in self.events if e.involved_object.uid == value])

    def read_node(self, name: str, **_: Any) -> Any:
        return SimpleNamespace(metadata=SimpleNamespace(annotations=self.node_annotations.get(name, {})),
                               status=SimpleNamespace(allocatable=self.allocatable.get(name, {})))

    def list_pod_for_all_namespaces(self, **_: Any) -> Any:
        return SimpleNamespace(items=list(self.pods.values()))


@pytest.fixture
def tenant(dev_config, monkeypatch) -> cases.GpuTenant:
    platform = parse_config(dev_config)
    fake = FakeCore()
    t = cases.GpuTenant(None, platform, platform.tenants[0], {})
    monkeypatch.setattr(cases.GpuTenant, "core", lambda self: fake)
    monkeypatch.setattr(cases.GpuTenant, "metrics", lambda self: fake.metrics_text)
    monkeypatch.setattr(cases, "evidence", lambda t, pods, namespace=None: "evidence")
    return t


def two_cards_per_worker(dev_config) -> cases.GpuTenant:
    dev_config["tenants"][0]["gpus"]["perWorker"] = 2
    platform = parse_config(dev_config)
    return cases.GpuTenant(None, platform, platform.tenants[0], {})


class TestWaitRefused:
    REFUSAL = "1 nodes CardInsufficientCore(tenant-a-worker-0)"

    def test_an_event_of_an_earlier_pod_with_the_same_name_does_not_count(self, tenant, monkeypatch):
        core = tenant.core()
        core.pods["p"] = pod("p", "uid-new")
        core.events.append(event("uid-old", support.FILTERING_FAILED, self.REFUSAL))
        monkeypatch.setattr(cases, "POD_TIMEOUT", 0)
        with pytest.raises(AssertionError, match="FilteringFailed naming CardInsufficientCore on p"):
            cases.wait_refused(tenant, "p", "CardInsufficientCore")

    def test_the_pod_must_stay_pending_across_one_scheduler_back_off(self, tenant, monkeypatch):
        core = tenant.core()
        core.pods["p"] = pod("p", "uid-1")
        core.events.append(event("uid-1", support.FILTERING_FAILED, self.REFUSAL))
        slept = []

        def back_off(seconds: float) -> None:
            slept.append(seconds)
            core.pods["p"] = pod("p", "uid-1", node="tenant-a-worker-0")

        monkeypatch.setattr(cases.time, "sleep", back_off)
        with pytest.raises(AssertionError, match="scheduled within one back-off"):
            cases.wait_refused(tenant, "p", "CardInsufficientCore")
        assert slept and slept[0] > cases.SCHEDULER_BACKOFF

    def test_a_refusal_that_holds_returns_hamis_message(self, tenant, monkeypatch):
        core = tenant.core()
        core.pods["p"] = pod("p", "uid-1")
        core.events += [event("uid-1", "Scheduling", "x"),
                        event("uid-1", support.FILTERING_FAILED, self.REFUSAL)]
        monkeypatch.setattr(cases.time, "sleep", lambda seconds: None)
        assert cases.wait_refused(tenant, "p", "CardInsufficientCore") == self.REFUSAL


class TestWaitFor:
    def test_an_api_error_is_not_yet_and_shows_in_the_evidence(self):
        from kubernetes.client.exceptions import ApiException

        answers = iter([ApiException(status=503, reason="leader moved"), None, "ok"])

        def probe() -> str | None:
            answer = next(answers)
            if isinstance(answer, Exception):
                raise answer
            return answer

        assert support.wait_for("x", probe, timeout=5, interval=0) == "ok"

        def failing() -> None:
            raise ApiException(status=503, reason="leader moved")

        with pytest.raises(AssertionError, match=r"(?s)last API error.*503.*evidence"):
            support.wait_for("x", failing, timeout=0, interval=0, evidence=lambda: "e")

    def test_a_bug_in_the_probe_is_not_waited_out(self):
        def broken() -> None:
            raise KeyError("status")

        with pytest.raises(KeyError):
            support.wait_for("x", broken, timeout=60, interval=0)


class TestCardsEmptyAndRegistered:
    """TC-00, the GPU cases' precondition."""

    @staticmethod
    def registered(tenant: cases.GpuTenant, metrics: str = "0") -> FakeCore:
        from kamaji_hami_platform.gpu.devices import node_register_annotation

        core = tenant.core()
        for node, devices in tenant.devices().items():
            tenant.cards[node] = [d.id for d in devices]
            core.node_annotations[node] = {"hami.io/node-nvidia-register": node_register_annotation(devices)}
            core.allocatable[node] = {"nvidia.com/gpu": str(sum(d.count for d in devices))}
            for d in devices:
                core.metrics_text += (f'hami_gpu_memory_allocated_bytes{{device_uuid="{d.id}"}} {metrics}\n'
                                      f'hami_gpu_core_allocated_ratio{{device_uuid="{d.id}"}} {metrics}\n')
        return core

    def test_registered_and_unused_cards_pass(self, tenant):
        self.registered(tenant)
        cases.check_cards_empty_and_registered(tenant)

    def test_a_pod_holding_a_share_fails_it(self, tenant):
        core = self.registered(tenant)
        core.pods["someone"] = pod("someone", "u", "tenant-a-worker-0",
                                   {support.VGPU_NODE_ANNOTATION: "tenant-a-worker-0"})
        with pytest.raises(AssertionError, match="hold GPU shares before the cases start"):
            cases.check_cards_empty_and_registered(tenant)

    def test_cards_in_use_by_hamis_count_fail_it(self, tenant, monkeypatch):
        self.registered(tenant, metrics="90")
        monkeypatch.setattr(cases, "METRICS_TIMEOUT", 0)
        with pytest.raises(AssertionError, match="metrics at 0 MiB / 0 cores"):
            cases.check_cards_empty_and_registered(tenant)

    def test_allocatable_that_is_not_the_slots_fails_it(self, tenant, monkeypatch):
        core = self.registered(tenant)
        core.allocatable["tenant-a-worker-0"] = {"nvidia.com/gpu": "0"}
        monkeypatch.setattr(cases, "POD_TIMEOUT", 0)
        with pytest.raises(AssertionError, match="cards of tenant-a registered"):
            cases.check_cards_empty_and_registered(tenant)


class TestFill:
    def test_one_card_takes_three_reference_pods(self, dev_config):
        platform = parse_config(dev_config)
        t = cases.GpuTenant(None, platform, platform.tenants[0], {})
        assert cases.fill_pods(t) == ["share-1", "share-2", "share-3"]

    def test_two_cards_per_worker_take_six_and_the_seventh_is_refused_for_cores(self, dev_config):
        """Today's TC-06 unpacked one refusal from a plan of four pods: here nothing is refused."""
        t = two_cards_per_worker(dev_config)
        pods = cases.fill_pods(t)
        assert pods[-1] == "share-6" and len(pods) == 6
        assert t.plan(cases.SHARE, 4).refused == []
        (refused,) = t.plan(cases.SHARE, len(pods) + 1).refused
        assert cases.refusal_code(refused.reason) == "CardInsufficientCore"

    def test_the_code_of_a_refusal_on_several_nodes(self):
        reason = "n1: 1/1 CardInsufficientCore; n2: 1/1 CardInsufficientCore"
        assert cases.refusal_code(reason) == "CardInsufficientCore"


class TestLockBound:
    def test_derived_from_the_tenants_node_lock_timeout(self, dev_config):
        dev_config["tenants"][0]["hami"]["nodeLockTimeout"] = "2m"
        t = two_cards_per_worker(dev_config)
        assert cases.lock_bound(t) == 120 + cases.SCHEDULER_BACKOFF + cases.LOCK_SLACK



class TestLocksOf:
    def test_the_locks_naming_the_pods_on_their_nodes(self, tenant):
        core = tenant.core()
        on = {"share-1": "w0", "share-2": "w1", "share-3": "w1"}
        for name, node in on.items():
            core.pods[name] = pod(name, name, node, {support.VGPU_NODE_ANNOTATION: node})
        core.node_annotations = {
            "w0": {support.NODE_LOCK_ANNOTATION: "2026-12-03T10:00:00Z,other,share-1"},
            "w1": {support.NODE_LOCK_ANNOTATION: f"2026-12-03T10:00:00Z,{cases.NAMESPACE},share-3"}}
        locks = cases.locks_of(tenant, list(on))
        assert {node: lock.pod for node, lock in locks.items()} == {"w1": "share-3"}

    def test_none_once_released(self, tenant):
        core = tenant.core()
        core.pods["share-1"] = pod("share-1", "u", "w0", {support.VGPU_NODE_ANNOTATION: "w0"})
        core.node_annotations = {"w0": {}}
        assert cases.locks_of(tenant, ["share-1"]) == {}


class TestOracleWithTies:
    def test_either_worker_may_take_the_three_pods_but_not_both(self, dev_config):
        """Two identical workers tie for the first pod (HAMi v2.10.0 pkg/scheduler/score.go);
        binpack keeps the next two beside it."""
        dev_config["tenants"][0]["workers"] = 2
        platform = parse_config(dev_config)
        expected = support.expect(platform, platform.tenants[0], cases.SHARE, 3)
        assert expected.plan.cards_used == Span(1, 1) and len(expected.placed) == 3
        devices = cases.GpuTenant(None, platform, platform.tenants[0], {}).devices()
        nodes = {node: tuple(d.id for d in cards) for node, cards in devices.items()}
        assert len(nodes) == 2
        for node, cards in nodes.items():
            assert support.explains(expected, [(node, cards)] * 3)
        split = [*nodes.items(), next(iter(nodes.items()))]
        assert not support.explains(expected, split)
