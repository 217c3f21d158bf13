"""A kind cluster from the node image built here, with no registry (toolchain/live/node-image/): the
node image is built into the session's engine, or loaded from its cached archive when its inputs
are unchanged (build.sh's node-<key>.tar: a warm run loads it in seconds, a cold one builds every
piece, about 20 minutes on 2 cores with empty caches), a cluster of one node is created in the
engine's namespace with kind-config.yaml, and it must come up: the node Ready with the kubelet and
containerd built here, every system pod Running from images the node image carries (no pull), a
claim bound through local-path, NetworkPolicies judged by kindnetd's own policy controller (the
stand-in CNI runs it: toolchain/live/node-image/kindnetd-standin.sh), the engine still without a
way out, and nothing left after the delete. Tests run in file order; the last one deletes the
cluster."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.live.conftest import ROOT, Engine

pytestmark = pytest.mark.live

NODE_IMAGE = ROOT / "toolchain" / "live" / "node-image"
NAME = "khp-live"
KUBERNETES = "v1.35.4"
CONTAINERD = "2.4.2"
# Pod name prefixes of what kubeadm, kind's manifests (CNI, storage) and CoreDNS run.
SYSTEM_PODS = {"kube-system": ("kube-apiserver-", "kube-controller-manager-", "kube-scheduler-", "etcd-",
                               "coredns-", "kube-proxy-", "kindnet-"),
               "local-path-storage": ("local-path-provisioner-",)}


@dataclass(frozen=True)
class Cluster:
    engine: Engine
    image: str
    kubeconfig: Path

    def kubectl(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        return self.engine.run("kubectl", "--kubeconfig", str(self.kubeconfig), *args, check=check,
                               timeout=timeout)

    def json(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)


def _script(name: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(NODE_IMAGE / name), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def _cluster(engine: Engine, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return _script("cluster.sh", str(engine.bin), str(engine.root), *args, timeout=timeout)


@pytest.fixture(scope="module")
def node_image(engine: Engine) -> str:
    built = _script("build.sh", str(engine.bin), str(engine.root), timeout=2400)
    assert built.returncode == 0, built.stderr[-4000:]
    return built.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def cluster(engine: Engine, node_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    kubeconfig = tmp_path_factory.mktemp("kind") / "kubeconfig"
    try:
        created = _cluster(engine, "create", NAME, node_image, str(kubeconfig), timeout=600)
        assert created.returncode == 0, created.stderr[-4000:]
        yield Cluster(engine, node_image, kubeconfig)
    finally:
        _cluster(engine, "delete", NAME, str(kubeconfig), timeout=300)


def test_the_node_image_is_built_here_and_says_what_it_carries(engine: Engine, node_image: str):
    """Tagged by the hash of its inputs; -standin-cni unless KINDNET_SRC gave the real kindnetd."""
    standin = "" if os.environ.get("KINDNET_SRC") else "-standin-cni"
    assert re.fullmatch(rf"kindest/node:{KUBERNETES}-khp-[0-9a-f]{{16}}{standin}", node_image), node_image
    version = engine.docker("run", "--rm", "--pull=never", "--entrypoint", "cat", node_image, "/kind/version")
    assert version.stdout.strip() == KUBERNETES


def test_the_node_is_ready_with_the_kubelet_and_containerd_built_here(cluster: Cluster):
    cluster.kubectl("wait", "--for=condition=Ready", "node", "--all", "--timeout=300s", timeout=330)
    (node,) = cluster.json("nodes")["items"]
    info = node["status"]["nodeInfo"]
    assert info["kubeletVersion"] == KUBERNETES
    assert info["containerRuntimeVersion"] in (f"containerd://{CONTAINERD}", f"containerd://v{CONTAINERD}")
    assert "bookworm" in info["osImage"]


def test_every_system_pod_runs(cluster: Cluster):
    """API server, controller manager, scheduler, etcd, CoreDNS, kube-proxy, the CNI, local-path."""
    for namespace in SYSTEM_PODS:
        cluster.kubectl("wait", "--for=condition=Ready", "pod", "--all", "-n", namespace, "--timeout=300s",
                        timeout=330)
    for namespace, prefixes in SYSTEM_PODS.items():
        pods = cluster.json("pods", "-n", namespace)["items"]
        phases = {pod["metadata"]["name"]: pod["status"]["phase"] for pod in pods}
        assert all(phase == "Running" for phase in phases.values()), phases
        for prefix in prefixes:
            assert any(name.startswith(prefix) for name in phases), f"no {prefix}* in {namespace}: {phases}"


def test_no_image_was_pulled(cluster: Cluster):
    """Every container started from an image the node image carries: the kubelet pulled nothing."""
    events = cluster.json("events", "-A")["items"]
    pulling = [event["message"] for event in events if event["reason"] in ("Pulling", "Failed", "BackOff")]
    assert not pulling, pulling
    pulled = [event["message"] for event in events if event["reason"] == "Pulled"]
    assert pulled and all("already present on machine" in message for message in pulled), pulled


def test_a_claim_binds_through_local_path(cluster: Cluster, tmp_path: Path):
    images = cluster.engine.docker("exec", f"{NAME}-control-plane", "crictl", "images", "-o", "json").stdout
    helper = next(tag for image in json.loads(images)["images"] for tag in image["repoTags"]
                  if "/local-path-helper:" in tag)
    manifest = tmp_path / "claim.json"
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "khp-claim"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "16Mi"}}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "khp-writer"},
           "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "writer", "image": helper, "imagePullPolicy": "Never",
                                    "command": ["sh", "-c", "echo written > /data/proof"],
                                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "khp-claim"}}]}}
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [claim, pod]}))
    cluster.kubectl("apply", "-n", "default", "-f", str(manifest))
    try:
        cluster.kubectl("wait", "-n", "default", "--for=jsonpath={.status.phase}=Succeeded", "pod/khp-writer",
                        "--timeout=180s", timeout=210)
        bound = cluster.json("pvc", "-n", "default", "khp-claim")
        assert bound["status"]["phase"] == "Bound"
        volume = cluster.json("pv", bound["spec"]["volumeName"])["spec"]
        path = (volume.get("hostPath") or volume["local"])["path"]
        written = cluster.engine.docker("exec", f"{NAME}-control-plane", "cat", f"{path}/proof")
        assert written.stdout.strip() == "written"
    finally:
        cluster.kubectl("delete", "-n", "default", "-f", str(manifest), check=False, timeout=180)


def _carried_image(cluster: Cluster, part: str) -> str:
    """A tag of an image the node image carries (no registry here), by a part of its name."""
    images = cluster.engine.docker("exec", f"{NAME}-control-plane", "crictl", "images", "-o", "json").stdout
    return next(tag for image in json.loads(images)["images"] for tag in image["repoTags"] if part in tag)


# A TCP connect from bash (/dev/tcp), given 3 s: "open", or "timeout" when nothing answered (a
# drop); a refusal or reset prints bash's error instead, so a missing server cannot pass as a drop.
CONNECT = ('(exec 3<>"/dev/tcp/$0/$1" && echo open) 2>&1 & probe=$!; for _ in 1 2 3 4 5 6; do '
           'sleep 0.5; kill -0 "$probe" 2>/dev/null || { wait "$probe"; exit; }; done; '
           'kill "$probe" 2>/dev/null; echo timeout')


def _connect(cluster: Cluster, namespace: str, pod: str, address: str, port: int) -> str:
    result = cluster.kubectl("exec", "-n", namespace, pod, "--", "bash", "-c", CONNECT, address, str(port),
                             check=False, timeout=60)
    return (result.stdout.strip().splitlines() or [result.stderr.strip()])[-1]


def _await_verdict(cluster: Cluster, namespace: str, pod: str, address: str, port: int, want: str) -> None:
    """Policies are programmed asynchronously: the verdict must settle to `want` within 60 s."""
    seen = []
    for _ in range(20):
        seen.append(_connect(cluster, namespace, pod, address, port))
        if seen[-1] == want:
            return
        time.sleep(1)
    raise AssertionError(f"{namespace}/{pod} -> {address}:{port}: wanted {want}, saw {seen}")


def test_network_policies_are_judged_as_kindnetd_judges_them(cluster: Cluster, tmp_path: Path):
    """The CNI runs kindnetd's policy controller (kube-network-policies v0.8.0 with kindnetd's Config,
    the stand-in included): a server that answers a client of its namespace and of another is cut
    off from both by a default-deny ingress policy (a drop: the connect times out, it is not
    refused), then answers only its own namespace when a policy admits that one."""
    server_image = _carried_image(cluster, "/coredns:")  # CoreDNS without a Corefile: whoami on :53
    client_image = _carried_image(cluster, "/kindnetd:")  # bash and sleep
    namespaces = ("khp-np", "khp-np-other")

    def pod(namespace: str, name: str, image: str, command: list[str]) -> dict:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                               "labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": image, "imagePullPolicy": "Never",
                                         "command": command}],
                         "terminationGracePeriodSeconds": 0}}

    sleeper = ["bash", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"]
    objects = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in namespaces]
    objects += [pod("khp-np", "server", server_image, ["/coredns"]),
                pod("khp-np", "client", client_image, sleeper),
                pod("khp-np-other", "client", client_image, sleeper)]
    manifest = tmp_path / "probes.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    policies = tmp_path / "policies.json"
    policies.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": "default-deny", "namespace": "khp-np"},
         "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}]}))
    admit = tmp_path / "admit.json"
    admit.write_text(json.dumps(
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": "admit-own-namespace", "namespace": "khp-np"},
         "spec": {"podSelector": {"matchLabels": {"app": "server"}}, "policyTypes": ["Ingress"],
                  "ingress": [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 53}]}]}}))
    cluster.kubectl("apply", "-f", str(manifest))
    try:
        for namespace in namespaces:
            cluster.kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod", "--all",
                            "--timeout=180s", timeout=210)
        server = cluster.json("pod", "-n", "khp-np", "server")["status"]["podIP"]
        for namespace in namespaces:
            _await_verdict(cluster, namespace, "client", server, 53, "open")
        cluster.kubectl("apply", "-f", str(policies))
        for namespace in namespaces:
            _await_verdict(cluster, namespace, "client", server, 53, "timeout")
        cluster.kubectl("apply", "-f", str(admit))
        _await_verdict(cluster, "khp-np", "client", server, 53, "open")
        assert _connect(cluster, "khp-np-other", "client", server, 53) == "timeout"
    finally:
        cluster.kubectl("delete", "namespace", *namespaces, "--wait=true", check=False, timeout=180)


def test_the_engine_still_has_no_way_out(cluster: Cluster):
    """kind's network and the node's veth are the engine's own: still no default route, no uplink."""
    checked = cluster.engine.script("engine-check.sh", str(cluster.engine.root))
    assert "no default route" in checked.stderr


def test_delete_leaves_no_kind_container(cluster: Cluster):
    engine = cluster.engine
    deleted = _cluster(engine, "delete", NAME, str(cluster.kubeconfig), timeout=300)
    assert deleted.returncode == 0, deleted.stderr[-4000:]
    left = engine.docker("ps", "-a", "-q", "--filter", "label=io.x-k8s.kind.cluster").stdout.strip()
    assert left == ""
    assert not (engine.root / "lib-modules.created").exists()
