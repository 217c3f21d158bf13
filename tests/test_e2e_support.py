"""The pure parts of the live suite: parsing HAMi's annotations and metrics, and the oracle."""

from __future__ import annotations

import pytest

from components.config import parse_config
from tests.e2e import support
from tests.e2e.test_lifecycle import lifecycle_config

pytestmark = pytest.mark.unit


def test_parse_allocation_annotation():
    value = "GPU-a,NVIDIA,20000,30:;"
    assert support.parse_allocation(value) == [[support.Allocation("GPU-a", "NVIDIA", 20000, 30)]]
    two = "GPU-a,NVIDIA,1000,10:GPU-b,NVIDIA,1000,10:;GPU-c,NVIDIA,5,0:;"
    assert [[a.card for a in c] for c in support.parse_allocation(two)] == [["GPU-a", "GPU-b"], ["GPU-c"]]


def test_metric_values_select_by_name_and_card():
    text = ('# HELP x\n'
            'hami_gpu_memory_allocated_bytes{deviceuuid="GPU-a",nodeid="n"} 6.291456e+10\n'
            'hami_gpu_memory_allocated_bytes{deviceuuid="GPU-b",nodeid="n"} 0\n'
            'hami_gpu_core_allocated_ratio{deviceuuid="GPU-a"} 0.9\n')
    assert support.metric_values(text, "memory_allocated", "GPU-a") == [
        ("hami_gpu_memory_allocated_bytes", 62914560000.0)]
    assert support.metric_values(text, "core_allocated", "GPU-a") == [("hami_gpu_core_allocated_ratio", 0.9)]


def test_probe_results_and_reason_code():
    assert support.probe_results("own=open\nother=closed\n") == {"own": "open", "other": "closed"}
    assert support.reason_code("1/1 CardInsufficientCore") == "CardInsufficientCore"


def test_probe_pod_tries_every_target():
    pod = support.probe_pod("p", {"own": "10.0.0.1", "other": "10.0.0.2"}, 6443)
    script = pod["spec"]["containers"][0]["command"][-1]
    assert "other=10.0.0.2 own=10.0.0.1" in script and "nc -z -w 3" in script and "6443" in script


def test_oracle_for_the_dev_stack(dev_config):
    platform = parse_config(dev_config)
    expected = support.expect(platform, platform.tenants[0],
                              {"nvidia.com/gpumem": 20000, "nvidia.com/gpucores": 30}, 4)
    assert len(expected.placed) == 3
    assert [support.reason_code(p.reason) for p in expected.refused] == ["CardInsufficientCore"]


def test_gpu_pod_has_no_scheduler_name_unless_asked():
    assert "schedulerName" not in support.gpu_pod("a", {"nvidia.com/gpumem": 1})["spec"]
    assert support.gpu_pod("a", {}, "x")["spec"]["schedulerName"] == "x"


def test_wait_for_names_what_it_waited_for_and_shows_evidence():
    with pytest.raises(AssertionError, match=r"waiting for the moon(.|\n)*evidence(.|\n)*none"):
        support.wait_for("the moon", lambda: None, timeout=0.01, interval=0.001, evidence=lambda: "none")


def test_lifecycle_stack_gets_its_own_cluster_name(monkeypatch):
    monkeypatch.setenv("E2E_METALLB_RANGE", "172.18.254.10-172.18.254.20")
    config = lifecycle_config("e2e123")
    management = config["kamaji-hami-platform:management"]
    assert management["name"] == "e2e123"
    assert management["metallbAddressRange"] == "172.18.254.10-172.18.254.20"


def test_missing_prerequisite_names_the_missing_tool(monkeypatch):
    monkeypatch.setattr(support.shutil, "which", lambda tool: None)
    assert "Pulumi CLI" in support.missing_prerequisite()
