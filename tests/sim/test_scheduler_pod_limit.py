"""The kubelet's pod limit, as a real kube-scheduler 1.35 applies it (marker `sim`), against the
planner (issue 31): a worker's own pods count, the pods past its `maxPods` are refused with the
message the planner gives, and HAMi is never asked (no extender here: kube-scheduler alone refuses).

kube-scheduler, kube-apiserver and etcd are built from their Go modules (toolchain/build.sh). The
node has no kubelet: its status says what a kubelet with the default `maxPods` (110) reports, the
platform's own pods on it are bound by name, as the DaemonSet controller and an earlier scheduling
left them.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.gpu import GpuDevice, GpuRequest, plan_sequence
from kamaji_hami_platform.gpu.node_pods import KUBELET_MAX_PODS, floating_pods, gpu_pod_room
from tests.harness import dev_stack_config
from tests.sim.cluster import TenantApi, tenant_api, toolchain_or_skip

pytestmark = pytest.mark.sim

NODE = "tenant-a-worker-0"
NAMESPACE = "default"
SCHEDULE_TIMEOUT = 120
GPU_PODS = 110  # more than the room the platform's own pods leave


@pytest.fixture(scope="module")
def scheduled() -> Iterator[tuple[TenantApi, object, Path]]:
    tenant = parse_config(dev_stack_config()).tenants[0]
    bin_dir = toolchain_or_skip()
    with tenant_api(tenant, bin_dir) as api:
        assert api.work is not None
        log = api.work / "kube-scheduler.log"
        scheduler = subprocess.Popen(
            [str(bin_dir / "kube-scheduler"), "--kubeconfig", str(api.kubeconfig), "--leader-elect=false",
             "--secure-port=0"],
            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield api, tenant, log
        finally:
            os.killpg(scheduler.pid, 15)
            scheduler.wait(timeout=20)


def _node() -> dict:
    allocatable = {"pods": str(KUBELET_MAX_PODS), "cpu": "64", "memory": "256Gi"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {"gpu": "on"}},
            "status": {"capacity": allocatable, "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "simulated"}]}}


def _pod(name: str, node: str | None = None) -> dict:
    spec: dict = {"automountServiceAccountToken": False,
                  "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec}


def _pods(api: TenantApi) -> list[dict]:
    return api.get("pods", "-n", NAMESPACE)["items"]


def _unschedulable(pod: dict) -> str | None:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return condition.get("message", "")
    return None


def test_pods_past_max_pods_are_refused_as_the_planner_says(scheduled):
    api, tenant, log = scheduled
    result = api.kubectl("create", "-f", "-", stdin=json.dumps(_node()))
    assert result.returncode == 0, result.stderr
    status = json.dumps({"status": _node()["status"]})
    result = api.kubectl("patch", "node", NODE, "--subresource=status", "--type=merge", "-p", status)
    assert result.returncode == 0, result.stderr
    # No node lifecycle controller here to lift the not-ready taint the TaintNodesByCondition
    # admission plugin puts on a new Node, nor a token controller to create the default account.
    result = api.kubectl("taint", "node", NODE, "node.kubernetes.io/not-ready:NoSchedule-")
    assert result.returncode == 0, result.stderr
    api.kubectl("create", "serviceaccount", "default", "-n", NAMESPACE)
    # The platform's own pods on the one worker: its DaemonSets' and the floating Deployments'.
    platform = KUBELET_MAX_PODS - gpu_pod_room(tenant) + sum(floating_pods(tenant).values())
    bound = [_pod(f"platform-{i}", NODE) for i in range(platform)]
    gpu = [_pod(f"gpu-{i}") for i in range(GPU_PODS)]
    api.apply([*bound, *gpu])

    deadline = time.monotonic() + SCHEDULE_TIMEOUT
    while True:
        pods = [p for p in _pods(api) if p["metadata"]["name"].startswith("gpu-")]
        placed = [p for p in pods if p["spec"].get("nodeName")]
        refused = [p for p in pods if _unschedulable(p) is not None]
        if len(placed) + len(refused) == GPU_PODS:
            break
        assert time.monotonic() < deadline, (f"{len(placed)} placed, {len(refused)} refused of {GPU_PODS} "
                                             f"after {SCHEDULE_TIMEOUT}s:\n{Path(log).read_text()[-3000:]}")
        time.sleep(1)

    cards = [GpuDevice(id=f"GPU-{i}", index=i, count=10, devmem=81920, devcore=100, type="NVIDIA A100")
             for i in range(12)]
    planned = plan_sequence({NODE: cards}, [GpuRequest(1, 1000, coresreq=0)] * GPU_PODS,
                            pod_room={NODE: gpu_pod_room(tenant)},
                            floating=sum(floating_pods(tenant).values()))
    assert len(placed) == planned.placed.low == planned.placed.high == KUBELET_MAX_PODS - platform, \
        {_unschedulable(p) for p in refused}
    message = planned.placements[-1].scheduler_message
    assert message == "0/1 nodes are available: 1 Too many pods."
    assert all(_unschedulable(p).startswith(message) for p in refused), [_unschedulable(p) for p in refused]
