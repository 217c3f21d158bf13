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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.management import network_policy, policy_engine
from kamaji_hami_platform.tenant import network_policy as tenant_network_policy
from tests.harness import dev_stack_config
from tests.live import policy_probes as probes
from tests.live.conftest import ROOT, Engine
from tests.netpol_eval import Endpoint, allowed

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


def _carried_image(cluster: Cluster, part: str) -> str:
    """A tag of an image the node image carries (no registry here), by a part of its name."""
    images = cluster.engine.docker("exec", f"{NAME}-control-plane", "crictl", "images", "-o", "json").stdout
    return next(tag for image in json.loads(images)["images"] for tag in image["repoTags"] if part in tag)


def test_a_claim_binds_through_local_path(cluster: Cluster, tmp_path: Path):
    helper = _carried_image(cluster, "/local-path-helper:")
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


def test_network_policies_are_judged_as_kindnetd_judges_them(cluster: Cluster, tmp_path: Path):
    """The CNI runs kindnetd's policy controller (kube-network-policies v0.8.0 with kindnetd's Config,
    the stand-in included): a server that answers a client of its namespace and of another is cut
    off from both by a default-deny ingress policy (a drop: the connect times out, it is not
    refused), then answers only its own namespace when a policy admits that one."""
    server = probes.ProbePod("khp-np", "server", {"app": "server"}, serves=(53,))
    clients = [probes.ProbePod(namespace, "client") for namespace in ("khp-np", "khp-np-other")]
    namespaces = ("khp-np", "khp-np-other")
    deny = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny", "namespace": "khp-np"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
    admit = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
             "metadata": {"name": "admit-own-namespace", "namespace": "khp-np"},
             "spec": {"podSelector": {"matchLabels": {"app": "server"}}, "policyTypes": ["Ingress"],
                      "ingress": [{"from": [{"podSelector": {}}],
                                   "ports": [{"protocol": "TCP", "port": 53}]}]}}
    try:
        address = _start_probe_pods(cluster, namespaces, [server, *clients], tmp_path)[server]
        for client in clients:
            probes.await_verdict(cluster.kubectl, client, address, 53, probes.OPEN)
        probes.apply(cluster.kubectl, [deny], tmp_path, "deny")
        for client in clients:
            probes.await_verdict(cluster.kubectl, client, address, 53, probes.TIMEOUT)
        probes.apply(cluster.kubectl, [admit], tmp_path, "admit")
        probes.await_verdict(cluster.kubectl, clients[0], address, 53, probes.OPEN)
        assert probes.connect(cluster.kubectl, clients[1], address, 53) == probes.TIMEOUT
    finally:
        cluster.kubectl("delete", "namespace", *namespaces, "--wait=true", check=False, timeout=180)


def _start_probe_pods(cluster: Cluster, namespaces: tuple[str, ...], pods: list[probes.ProbePod],
                      folder: Path) -> dict[probes.ProbePod, str]:
    """Namespaces and probe pods, Ready; each pod's address."""
    client_image = _carried_image(cluster, "/kindnetd:")  # bash and sleep
    server_image = _carried_image(cluster, "/coredns:")
    probes.apply(cluster.kubectl, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                                   for name in namespaces], folder, "namespaces")
    probes.apply(cluster.kubectl, [pod.manifest(client_image, server_image) for pod in pods], folder, "pods")
    for namespace in namespaces:
        cluster.kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod", "--all", "--timeout=180s",
                        timeout=210)
    return {pod: cluster.json("pod", "-n", pod.namespace, pod.name)["status"]["podIP"] for pod in pods}


# Stand-ins for the platform's pods, with the labels their charts give them (independent of the
# renderer, so a selector that misses its pod fails): cert-manager v1.21.2
# templates/webhook-deployment.yaml; MetalLB v0.15.3 templates/controller.yaml and _helpers.tpl;
# Kamaji 26.8.2-edge charts/kamaji/templates/controller.yaml; kamaji-etcd v0.15.0 etcd_sts.yaml
# (pod names as its StatefulSet's); the etcd setup Job's pod, labelled by the Job controller only;
# Kamaji's control-plane pods (internal/builders/controlplane/deployment.go).
CERT_MANAGER_WEBHOOK = probes.ProbePod("cert-manager", "webhook", {
    "app.kubernetes.io/name": "webhook", "app.kubernetes.io/instance": "cert-manager",
    "app.kubernetes.io/component": "webhook"}, serves=(10250,))
METALLB_CONTROLLER = probes.ProbePod("metallb-system", "controller", {
    "app.kubernetes.io/name": "metallb", "app.kubernetes.io/instance": "metallb",
    "app.kubernetes.io/component": "controller"}, serves=(9443,))
KAMAJI = probes.ProbePod("kamaji-system", "kamaji", {
    "app.kubernetes.io/name": "kamaji", "app.kubernetes.io/instance": "kamaji",
    "app.kubernetes.io/component": "controller-manager"}, serves=(9443,))
ETCD = tuple(probes.ProbePod("kamaji-system", f"kamaji-etcd-{index}", {
    "app.kubernetes.io/name": "kamaji-etcd", "app.kubernetes.io/instance": "kamaji"}, serves=(2379, 2380))
    for index in (0, 1))
ETCD_SETUP = probes.ProbePod("kamaji-system", "kamaji-etcd-setup", {
    "batch.kubernetes.io/job-name": "kamaji-etcd-setup-2", "job-name": "kamaji-etcd-setup-2"})
OTHER = probes.ProbePod("khp-np-other", "other")


def _control_plane(tenant: str) -> probes.ProbePod:
    return probes.ProbePod(tenant, f"{tenant}-cp", {"kamaji.clastix.io/name": tenant,
                                                    "kamaji.clastix.io/component": "deployment"},
                           serves=(6443,))


def test_the_platform_s_namespaces_admit_only_their_flows(cluster: Cluster, tmp_path: Path):
    """The platform's own NetworkPolicies (management/network_policy.py) with the tenants' (tenant/
    network_policy.py), as the dev stack renders them, judged by kindnetd's controller: Kamaji, the
    datastore's peers, its setup Job and each tenant's control plane reach kamaji-etcd; Kamaji reaches
    DNS and the control planes; nothing else reaches them, no pod reaches a webhook, cert-manager's
    pods reach nothing but the API server, and the node's root (the API server, the kubelet) reaches
    every webhook. Each verdict equals the one tests/netpol_eval.py gives for the same policies (the
    model the unit suite uses must agree with the real engine, or go)."""
    platform = parse_config(dev_stack_config())
    tenants = [tenant.namespace for tenant in platform.tenants]
    control_planes = [_control_plane(tenant) for tenant in tenants]
    plain = probes.ProbePod(tenants[0], "plain")
    pods = [CERT_MANAGER_WEBHOOK, METALLB_CONTROLLER, KAMAJI, *ETCD, ETCD_SETUP, *control_planes, plain,
            OTHER]
    namespaces = tuple(dict.fromkeys(pod.namespace for pod in pods))
    policies = [*network_policy.platform_network_policies(platform.management),
                *(policy for tenant in platform.tenants
                  for policy in tenant_network_policy.network_policies(tenant, platform.management))]
    flows = [  # (from, to, port, what the platform needs)
        (KAMAJI, ETCD[0], 2379, True), (ETCD_SETUP, ETCD[0], 2379, True), (ETCD[1], ETCD[0], 2380, True),
        (ETCD[0], ETCD[1], 2379, True), (control_planes[0], ETCD[0], 2379, True),
        (control_planes[1], ETCD[1], 2379, True), (KAMAJI, control_planes[0], 6443, True),
        (KAMAJI, control_planes[1], 6443, True),
        (plain, ETCD[0], 2379, False), (OTHER, ETCD[0], 2379, False), (OTHER, ETCD[0], 2380, False),
        (KAMAJI, ETCD[0], 2380, False), (CERT_MANAGER_WEBHOOK, ETCD[0], 2379, False),
        (OTHER, KAMAJI, 9443, False), (OTHER, CERT_MANAGER_WEBHOOK, 10250, False),
        (OTHER, METALLB_CONTROLLER, 9443, False), (control_planes[0], KAMAJI, 9443, False),
        (ETCD_SETUP, control_planes[0], 6443, False), (CERT_MANAGER_WEBHOOK, OTHER, 53, False),
        (METALLB_CONTROLLER, control_planes[0], 6443, False),
    ]
    try:
        addresses = _start_probe_pods(cluster, namespaces, [*pods], tmp_path)
        dns = next(Endpoint("kube-system", pod["status"]["podIP"], pod["metadata"]["labels"])
                   for pod in cluster.json("pods", "-n", "kube-system", "-l", "k8s-app=kube-dns")["items"])
        probes.apply(cluster.kubectl, policies, tmp_path, "policies")
        # Settled: the last policy's first verdict turned (a drop where there was an answer).
        probes.await_verdict(cluster.kubectl, OTHER, addresses[ETCD[0]], 2379, probes.TIMEOUT)

        def endpoint(pod: probes.ProbePod) -> Endpoint:
            return Endpoint(pod.namespace, addresses[pod], pod.labels)

        def judged(source: probes.ProbePod, destination: Endpoint, port: int) -> tuple[str, str]:
            real = probes.connect(cluster.kubectl, source, destination.ip, port)
            model = probes.OPEN if allowed(policies, endpoint(source), destination, port) else probes.TIMEOUT
            return real, model

        results = {(source.name, destination.name, port): (*judged(source, endpoint(destination), port), need)
                   for source, destination, port, need in flows}
        results[("kamaji", "coredns", 53)] = (*judged(KAMAJI, dns, 53), True)
        results[("webhook", "coredns", 53)] = (*judged(CERT_MANAGER_WEBHOOK, dns, 53), False)
        wrong = {flow: (real, model, need) for flow, (real, model, need) in results.items()
                 if real != model or real != (probes.OPEN if need else probes.TIMEOUT)}
        assert not wrong, f"(real, model, needed) per flow: {wrong}"
        # The premises of "no rule for the API server": the node's root reaches every webhook, and a
        # pod of a default-deny namespace reaches the API server (its Service, DNATed to the node).
        node = f"{NAME}-control-plane"
        for pod, port in ((CERT_MANAGER_WEBHOOK, 10250), (METALLB_CONTROLLER, 9443), (KAMAJI, 9443)):
            reached = cluster.engine.docker("exec", node, "bash", "-c", probes.CONNECT, addresses[pod],
                                            str(port), check=False).stdout.strip()
            assert reached == probes.OPEN, (pod.name, reached)
        assert probes.connect(cluster.kubectl, CERT_MANAGER_WEBHOOK, "10.96.0.1", 443) == probes.OPEN
        # Beyond the cluster (the kind network's gateway, a closed port): a pod no policy selects is
        # refused there, a pod of a default-deny namespace is dropped, as it is at a tenant's door.
        gateway = cluster.engine.docker("inspect", "--format", "{{range .NetworkSettings.Networks}}"
                                        "{{.Gateway}}{{end}}", node).stdout.strip()
        assert "refused" in probes.connect(cluster.kubectl, OTHER, gateway, 1).lower()
        assert probes.connect(cluster.kubectl, CERT_MANAGER_WEBHOOK, gateway, 1) == probes.TIMEOUT
    finally:
        cluster.kubectl("delete", "namespace", *namespaces, "--wait=true", check=False, timeout=300)


def test_the_platform_s_read_back_sees_the_policy_engine_and_its_absence(cluster: Cluster):
    """`up`'s check that kindnetd judges NetworkPolicies (management/policy_engine.py), run as `up`
    runs it against this cluster's node: it passes where the queue is fed and listened on, and
    stops with the cause named where nothing queues (a queue number nobody uses stands for a
    kernel without nftables' queue, which this check cannot otherwise be shown on here)."""
    config = dev_stack_config()
    config["management"]["name"] = NAME
    management = parse_config(config).management
    passed = cluster.engine.run("sh", "-c", policy_engine.policy_engine_check_script(management), check=False,
                                timeout=300)
    assert passed.returncode == 0, passed.stderr
    assert "kindnetd judges NetworkPolicies" in passed.stdout
    refused = cluster.engine.run("sh", "-c", policy_engine.policy_engine_check_script(
        management, queue=policy_engine.KINDNETD_QUEUE + 1, wait_seconds=4), check=False, timeout=120)
    assert refused.returncode == 1
    assert "NetworkPolicies are not enforced in the kind cluster" in refused.stderr
    assert "CONFIG_NFT_QUEUE" in refused.stderr


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
