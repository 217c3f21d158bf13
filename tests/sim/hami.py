"""HAMi v2.10.0's scheduler for real in the sim tier: its extender and mutating webhook (one
binary, built from the upstream archive by toolchain/hami.sh) behind a real kube-scheduler, with a
kube-controller-manager for quotas and service accounts, on a tenant API server of
tests/sim/cluster.py. A library for the sim tests, not a test module.

What runs is configured as the platform deploys it: HAMi's chart (charts/hami at v2.10.0, read from
the unpacked archive) rendered by hand for the platform's values (`render.hami_values`) over the
chart's defaults, each piece citing the template lines it follows; the mock GPU nodes registered
as the platform registers them; and, per run, the platform's mock-mode node-lock release agent
(`gpu/lock_release.py`) as a host process. Differences from a tenant, on purpose: every listener
is on 127.0.0.1 (the chart binds 0.0.0.0:443 and :9395), the webhook is reached by URL (the chart
names its Service), one replica, and kube-scheduler is v1.35.4 where a tenant pulls the tenant's
kubernetesVersion.

Pods are created "together" by threads that each POST one pod at a barrier; a run ends when HAMi
and kube-scheduler have nothing left to do (`HamiCluster.settled`), and its end is read from the
bound pods' HAMi annotations.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from kamaji_hami_platform.config import TenantConfig
from kamaji_hami_platform.gpu import GpuDevice
from kamaji_hami_platform.gpu import render as hami_render
from kamaji_hami_platform.gpu.devices import tenant_devices
from kamaji_hami_platform.gpu.lock_release import agent_script, lock_release_objects
from kamaji_hami_platform.helm import deep_merge
from tests import tiers
from tests.sim.cluster import ROOT, TenantApi, _ec_key_args, _openssl, free_port

HAMI_BUILD = ROOT / "toolchain" / "hami.sh"
CHART = Path("HAMi") / "charts" / "hami"  # in the build folder: the archive's chart, unpacked
BUILD_TIMEOUT = 1800  # a cold build: about 2.5 minutes on 2 cores, module downloads aside
NAMESPACE = hami_render.HAMI_NAMESPACE  # the release's namespace: `hami-vgpu.namespace`
# Node annotations HAMi reads and writes (v2.10.0 pkg/device/nvidia/device.go HandshakeAnnos,
# pkg/util/nodelock/nodelock.go NodeLockKey).
HANDSHAKE_ANNOTATION = "hami.io/node-handshake"
NODE_LOCK_ANNOTATION = "hami.io/mutex.lock"
# What HAMi's Filter writes on a pod it places (pkg/util/types.go AssignedNodeAnnotations;
# pkg/device/nvidia/device.go PatchAnnotations: SupportDevices[NvidiaGPUDevice]).
VGPU_NODE_ANNOTATION = "hami.io/vgpu-node"
ALLOCATED_ANNOTATION = "hami.io/vgpu-devices-allocated"
# pkg/device/devices.go: one container's cards joined by ":", a pod's containers by ";", each card
# `<uuid>,<type>,<usedmem MiB>,<usedcores %>` (EncodeContainerDevices).
CONTAINER_SEPARATOR, CARD_SEPARATOR = ";", ":"
PAUSE_IMAGE = "registry.invalid/pause:sim"  # never pulled: no kubelet runs
# What a kubelet reports besides the GPUs (as tests/sim/test_scheduler_pod_limit.py's node).
KUBELET_ALLOCATABLE = {"pods": "110", "cpu": "64", "memory": "256Gi"}
NOT_READY_TAINT = "node.kubernetes.io/not-ready:NoSchedule-"  # TaintNodesByCondition's, no kubelet here
# kube-scheduler's reason for a pod no node fits (a FitError), not for a failed bind, which it
# retries after a back-off (kubernetes v1.35.4 pkg/scheduler/schedule_one.go handleSchedulingFailure).
UNSCHEDULABLE = "Unschedulable"
START_TIMEOUT = 60
SETTLE_TIMEOUT = 240
# How long a settled run with a ghost (below) must stay unchanged: longer than kube-scheduler's
# longest back-off (podMaxBackoffSeconds, 10 s), so a retry an event already queued has happened.
GHOST_WAIT = 12
POLL = 0.3
PROBE_AGAIN = 3  # seconds before a node's probe lock is renewed (HamiCluster._probe_released)
LOG_TAIL = 4000

# HAMi's log lines (klog, at the chart's -v=4 the platform keeps: render.DEFAULT_EXTENDER_ARGS),
# v2.10.0 pkg/scheduler/scheduler.go Filter and Bind, register.
FILTER_STARTED = "Starting schedule filter process"
FILTER_PLACED = "Scheduling pod to node"
FILTER_REFUSED = "No available nodes meet the required scores"  # V(4)
BIND_LOCK_FAILED = "Failed to lock node"
BIND_FAILED = "Failed to bind pod"
BIND_SUCCEEDED = "Successfully bound pod to node"
NODE_ADDED = "Node device added"
POD_DELETED = "Pod deleted, cleaning up cache"  # V(4), the pod informer's delete (onDelPod)
# HAMi's pod cache (pkg/device/pods.go AddPod, TakeAndDeletePod): an allocation in, and out.
CACHE_ADDED, CACHE_DROPPED = "Pod added", "Pod taken and deleted"
STORY = (FILTER_STARTED, FILTER_PLACED, FILTER_REFUSED, BIND_LOCK_FAILED, BIND_FAILED, BIND_SUCCEEDED)
STORY_LINES = 80  # of HAMi's log of a run, in a failure's message
LOG_VERBOSITY = 4  # the lines above need klog's -v=4 (the chart's default, which the platform keeps)
_KLOG = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]]+\] "((?:[^"\\]|\\.)*)"(.*)$')
_FIELD = re.compile(r'(\w+)=(?:"((?:[^"\\]|\\.)*)"|(\S+))')


# ---------------------------------------------------------------------------------------------
# The build and the chart
# ---------------------------------------------------------------------------------------------

def hami_build() -> Path:
    """The folder with HAMi's `scheduler` and its unpacked source (built when missing); a tier
    that cannot build it cannot run (tests/tiers.py)."""
    try:
        result = subprocess.run(["bash", str(HAMI_BUILD)], capture_output=True, text=True,
                                timeout=BUILD_TIMEOUT, check=False)
    except FileNotFoundError as error:
        tiers.unavailable("sim", f"HAMi's scheduler cannot be built here: {error}")
    if result.returncode != 0:
        tiers.unavailable("sim", f"HAMi's scheduler build failed: {result.stderr.strip()[-2000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


def chart_values(build: Path, tenant: TenantConfig) -> dict[str, Any]:
    """The values HAMi's chart renders with: its values.yaml under the platform's (Helm merges
    maps key by key; lists and scalars replace)."""
    defaults = yaml.safe_load((build / CHART / "values.yaml").read_text())
    return deep_merge(defaults, hami_render.hami_values(tenant))


def _flag(value: Any) -> str:
    """A value as Go's text/template prints it into an argument (bools lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def extender_command(values: Mapping[str, Any], *, binary: Path, port: int, cert: Path, key: Path,
                     device_config: Path, metrics_port: int) -> list[str]:
    """The `vgpu-scheduler-extender` container's command as charts/hami/templates/scheduler/
    deployment.yaml@v2.10.0 lines 101-138 render it (admission webhook enabled: lines 103-106),
    every flag one cmd/scheduler/main.go@v2.10.0 defines (init, lines 66-86). Here: on 127.0.0.1
    with a free port instead of 0.0.0.0:443, and metrics on a free loopback port instead of
    `scheduler.metricsBindAddress` (":9395", every interface); the files are this run's."""
    scheduler = values["scheduler"]
    assert scheduler["admissionWebhook"]["enabled"], "the platform's HAMi serves its webhook"
    policy = scheduler["defaultSchedulerPolicy"]
    command = [str(binary), f"--http_bind=127.0.0.1:{port}", f"--cert_file={cert}", f"--key_file={key}",
               f"--scheduler-name={values['schedulerName']}",
               f"--metrics-bind-address=127.0.0.1:{metrics_port}",
               f"--node-scheduler-policy={policy['nodeSchedulerPolicy']}",
               f"--gpu-scheduler-policy={policy['gpuSchedulerPolicy']}",
               f"--force-overwrite-default-scheduler={_flag(scheduler['forceOverwriteDefaultScheduler'])}",
               f"--device-config-file={device_config}",
               f"--leader-elect={_flag(scheduler['leaderElect'])}",
               f"--leader-elect-resource-name={values['schedulerName']}",
               f"--leader-elect-resource-namespace={NAMESPACE}"]
    # Lines 119-135: flags the platform's values never set (checked, so a change shows here).
    assert not values["devices"]["ascend"]["enabled"] and not values["devices"]["iluvatar"]["enabled"]
    assert not scheduler.get("nodeLabelSelector") and not values.get("legacyMetrics")
    extra = list(scheduler["extender"]["extraArgs"])  # lines 136-138
    verbosity = max((int(arg.split("=", 1)[1]) for arg in extra if arg.startswith(("-v=", "--v="))),
                    default=0)
    assert verbosity >= LOG_VERBOSITY, f"HAMi logs Filter's refusals at -v={LOG_VERBOSITY}, not with {extra}"
    return [*command, *extra]


def extender_env(values: Mapping[str, Any], kubeconfig: Path, home: Path) -> dict[str, str]:
    """The container's env (deployment.yaml lines 82-100: POD_NAME and POD_NAMESPACE from the
    downward API, HAMI_NODELOCK_EXPIRE from `scheduler.nodeLockExpire`, which the platform's
    `--node-lock-timeout` overrides: main.go line 114), and the kubeconfig HAMi's client reads
    from KUBECONFIG before the in-cluster config (pkg/util/client/client.go loadKubeConfig)."""
    assert not values["global"].get("managedNodeSelectorEnable")  # lines 95-100: no NODE_SELECTOR_*
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "KUBECONFIG": str(kubeconfig),
           "POD_NAME": f"{hami_render.HAMI_RELEASE}-scheduler-sim", "POD_NAMESPACE": NAMESPACE}
    if values["scheduler"].get("nodeLockExpire"):
        env["HAMI_NODELOCK_EXPIRE"] = str(values["scheduler"]["nodeLockExpire"])
    return env


_VALUE = re.compile(r'\{\{-?\s*\.Values\.([\w.]+)(?:\s*\|\s*default\s+("[^"]*"|\S+))?\s*-?\}\}')


def _lookup(values: Mapping[str, Any], path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def device_config(build: Path, values: Mapping[str, Any]) -> str:
    """device-config.yaml as charts/hami/templates/scheduler/device-configmap.yaml@v2.10.0
    renders it: no `device-config.content` in the values and no files/device-config.yaml in the
    chart (lines 11-14), so the inline document from line 16 to the closing `{{ end }}`, whose
    only template actions are `{{ .Values.<path> }}`, some with `| default <value>` (Helm's
    default: an empty, false or zero value takes it). Any other action fails here."""
    assert not (values.get("device-config") or {}).get("content")
    assert not (build / CHART / "files" / "device-config.yaml").exists()
    text = (build / CHART / "templates" / "scheduler" / "device-configmap.yaml").read_text()
    body = text.split("{{- else }}\n", 1)[1].rsplit("{{ end }}", 1)[0]

    def substitute(match: re.Match[str]) -> str:
        value = _lookup(values, match[1])
        if not value and match[2] is not None:
            value = match[2].strip('"')
        assert value is not None, f"device-configmap.yaml reads {match[1]}, which the values lack"
        return _flag(value)

    rendered = _VALUE.sub(substitute, body)
    assert "{{" not in rendered, "a template action device_config does not render"
    lines = rendered.splitlines()
    return "\n".join(line[4:] if line.startswith("    ") else line.strip() for line in lines) + "\n"


def managed_resources(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """charts/hami/templates/_helpers.tpl@v2.10.0 `hami-vgpu.scheduler.managedResources` (lines
    195-264): HAMi's resources, each ignored by kube-scheduler's own fit, so only the extender
    counts them."""
    names = [values[key] for key in ("resourceName", "resourceMem", "resourceCores", "resourceMemPercentage",
                                     "resourcePriority", "mluResourceName", "dcuResourceName",
                                     "dcuResourceMem", "dcuResourceCores")]
    names += ["metax-tech.com/gpu", values["metaxResourceName"], values["metaxResourceCore"],
              values["metaxResourceMem"]]
    devices = values["devices"]
    for vendor, always in (("ascend", False), ("mthreads", False), ("enflame", False), ("kunlun", False),
                           ("awsneuron", True), ("iluvatar", False), ("vastai", False), ("biren", False),
                           ("amd", True)):
        if always or devices[vendor].get("enabled"):
            names += devices[vendor].get("customresources") or []
    return [{"name": name, "ignoredByScheduler": True} for name in names]


def scheduler_configuration(values: Mapping[str, Any], *, extender_port: int,
                            kubeconfig: Path) -> dict[str, Any]:
    """kube-scheduler's KubeSchedulerConfiguration as charts/hami/templates/scheduler/
    configmap.yaml@v2.10.0 renders it for Kubernetes >= 1.26 (lines 14-43: v1, leader election on
    the release's lease, one profile `hami-scheduler`, HAMi as the HTTPS extender on 127.0.0.1 that
    filters and binds), the extender's port this run's; `clientConnection.kubeconfig` instead of
    the pod's in-cluster config."""
    scheduler = values["scheduler"]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": scheduler["leaderElect"], "resourceName": values["schedulerName"],
                           "resourceNamespace": NAMESPACE},
        "profiles": [{"schedulerName": values["schedulerName"]}],
        "extenders": [{"urlPrefix": f"https://127.0.0.1:{extender_port}", "enableHTTPS": True,
                       "tlsConfig": {"insecure": True}, "filterVerb": "filter", "bindVerb": "bind",
                       "nodeCacheCapable": True, "weight": 1, "httpTimeout": "30s",
                       "managedResources": managed_resources(values)}],
    }


def scheduler_command(values: Mapping[str, Any], binary: Path, config: Path) -> list[str]:
    """The `kube-scheduler` container's command (deployment.yaml lines 46-51, Kubernetes >= 1.22:
    `scheduler.kubeScheduler.extraNewArgs`, `--config=/config/config.yaml -v=4`), the config this
    run's, and no HTTPS listener (`--secure-port=0`: the chart's 10259 serves only probes)."""
    args = [arg if not arg.startswith("--config=") else f"--config={config}"
            for arg in values["scheduler"]["kubeScheduler"]["extraNewArgs"]]
    return [str(binary), *args, "--secure-port=0"]


def webhook_configuration(values: Mapping[str, Any], *, port: int, ca_bundle: bytes) -> dict[str, Any]:
    """HAMi's MutatingWebhookConfiguration as charts/hami/templates/scheduler/webhook.yaml@v2.10.0
    renders it for the platform's values (no cert-manager, no custom URL: the chart names its
    Service, here a URL to 127.0.0.1 with this run's CA)."""
    webhook = values["scheduler"]["admissionWebhook"]
    namespaces = [{"key": "hami.io/webhook", "operator": "NotIn", "values": ["ignore"]}]
    if webhook.get("whitelistNamespaces"):  # lines 37-42
        namespaces.append({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                           "values": list(webhook["whitelistNamespaces"])})
    assert not webhook["namespaceSelector"].get("matchLabels"), "lines 28-31: not rendered here"
    assert not webhook["objectSelector"].get("matchLabels"), "lines 48-51: not rendered here"
    return {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": f"{hami_render.HAMI_RELEASE}-webhook"},  # `hami-vgpu.scheduler.webhook`
        "webhooks": [{
            "admissionReviewVersions": ["v1beta1"],
            "clientConfig": {"url": f"https://127.0.0.1:{port}/webhook",
                             "caBundle": base64.b64encode(ca_bundle).decode()},
            "failurePolicy": webhook["failurePolicy"], "matchPolicy": "Equivalent", "name": "vgpu.hami.io",
            "namespaceSelector": {"matchExpressions": namespaces},
            "objectSelector": {"matchExpressions": [{"key": "hami.io/webhook", "operator": "NotIn",
                                                     "values": ["ignore"]}]},
            "reinvocationPolicy": webhook["reinvocationPolicy"],
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["pods"], "scope": "*"}],
            "sideEffects": "None", "timeoutSeconds": 10,
        }],
    }


# ---------------------------------------------------------------------------------------------
# Pods, their POSTs and HAMi's record of them
# ---------------------------------------------------------------------------------------------

def gpu_pod(name: str, namespace: str, limits: Mapping[str, int]) -> dict[str, Any]:
    """One GPU pod as a workload's replica is: a container with HAMi's limits (the keys
    GpuWorkloadConfig.limits writes; GpuRequest.from_limits reads them as HAMi's webhook does),
    no service account token (no kubelet mounts one)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": PAUSE_IMAGE,
                                     "resources": {"limits": {k: str(v) for k, v in limits.items()}}}]}}


@dataclass(frozen=True)
class Post:
    """One pod's POST: when it was sent (monotonic seconds), the status and the refusal, if any."""

    pod: str
    started: float
    status: int
    message: str = ""

    @property
    def created(self) -> bool:
        return self.status == 201


@dataclass(frozen=True)
class Card:
    """One card's use as HAMi recorded it on the bound pods."""

    used: int = 0
    usedmem: int = 0
    usedcores: int = 0


@dataclass(frozen=True)
class BindFailure:
    """A bind HAMi failed: its node lock was taken (pkg/util/nodelock/nodelock.go: `is locked`
    while another bind holds it, `has been locked within` for a bound pod's lock not yet released
    or expired), or the bind itself was refused."""

    pod: str
    node: str
    error: str

    @property
    def stale_lock(self) -> bool:
        """The lock of a pod bound before (what the release agent frees), not a bind in flight."""
        return "has been locked within" in self.error


@dataclass
class RunEnd:
    """What a run ended with: per node its cards' use and its GPU pods, the pods bound and
    Pending per name, HAMi's bind failures, the pods HAMi placed more than once (after a failed
    bind) with each node it chose, the POSTs, and HAMi's log of the run's Filters and Binds."""

    cards: dict[str, dict[str, Card]]
    pods_on: dict[str, int]
    bound: dict[str, str]
    pending: dict[str, str]
    bind_failures: list[BindFailure]
    replaced: dict[str, list[str]]
    ghosts: list[str]
    posts: list[Post]
    seconds: float
    story: list[str] = field(default_factory=list)

    @property
    def spread_ms(self) -> float:
        starts = [post.started for post in self.posts]
        return (max(starts) - min(starts)) * 1000

    @property
    def moved(self) -> dict[str, list[str]]:
        """Pods HAMi placed again on another node than before (their stale allocation dropped)."""
        return {pod: nodes for pod, nodes in self.replaced.items() if len(set(nodes)) > 1}

    def refused(self) -> dict[str, str]:
        return {post.pod: post.message for post in self.posts if not post.created}

    def devices(self, nodes: Mapping[str, list[GpuDevice]]) -> dict[str, list[GpuDevice]]:
        """The nodes' cards with the use the bound pods record (the planner's GpuDevice)."""
        def used(node: str, card: GpuDevice) -> GpuDevice:
            use = self.cards[node].get(card.id, Card())
            return replace(card, used=use.used, usedmem=use.usedmem, usedcores=use.usedcores)

        return {node: [used(node, card) for card in cards] for node, cards in nodes.items()}

    def summary(self) -> str:
        stale = sum(failure.stale_lock for failure in self.bind_failures)
        return (f"POST spread {self.spread_ms:.1f} ms, {len(self.bind_failures)} bind failures ({stale} on a "
                f"bound pod's lock), {len(self.replaced)} pods placed again ({len(self.moved)} elsewhere), "
                f"{self.seconds:.1f} s, {len(self.bound)} bound, {len(self.refused())} refused at creation, "
                f"{len(self.pending)} Pending" + (f" ({len(self.ghosts)} holding a ghost allocation)"
                                                  if self.ghosts else ""))

    def describe(self) -> str:
        lines = [self.summary()]
        for node, cards in sorted(self.cards.items()):
            lines.append(f"  {node}: {self.pods_on.get(node, 0)} GPU pods, cards "
                         + ", ".join(f"{card[-6:]}=(used {c.used}, {c.usedmem} MiB, {c.usedcores}%)"
                                     for card, c in sorted(cards.items())))
        lines += [f"  Pending {pod}: {why}" for pod, why in sorted(self.pending.items())]
        lines += [f"  refused {pod}: {why}" for pod, why in sorted(self.refused().items())]
        lines += [f"  bind failure: {f.pod} on {f.node}: {f.error}" for f in self.bind_failures]
        lines += [f"  placed again: {pod} on {' then '.join(nodes)}"
                  for pod, nodes in sorted(self.replaced.items())]
        lines.append("  HAMi's log of the run (Filter, Bind):")
        lines += [f"    {line}" for line in self.story[-STORY_LINES:]]
        return "\n".join(lines)


def parse_allocation(value: str) -> list[tuple[str, int, int]]:
    """`hami.io/vgpu-devices-allocated` -> (card uuid, MiB, cores %) per card of every container."""
    cards = []
    for container in value.split(CONTAINER_SEPARATOR):
        for entry in filter(None, container.split(CARD_SEPARATOR)):
            uuid, _vendor, memory, cores = entry.split(",")[:4]
            cards.append((uuid, int(memory), int(cores)))
    return cards


@dataclass(frozen=True)
class LogLine:
    index: int
    message: str
    fields: dict[str, str]


def read_log(path: Path, start: int = 0) -> list[LogLine]:
    """HAMi's structured klog lines from byte `start` on: the quoted message and its key=value
    fields (klog's InfoS/ErrorS format)."""
    with path.open("rb") as handle:
        handle.seek(start)
        text = handle.read().decode(errors="replace")
    lines = []
    for index, raw in enumerate(text.splitlines()):
        match = _KLOG.match(raw)
        if match:
            fields = {m[1]: m[2] if m[2] is not None else m[3] for m in _FIELD.finditer(match[2])}
            lines.append(LogLine(index, match[1], fields))
    return lines


@dataclass
class FilterHistory:
    """Per pod, in the order HAMi's log has them: its Filter calls and their outcomes, and what
    HAMi's pod cache did with it (pkg/device/pods.go: `Pod added` by Filter and by the pod
    informer, `Pod taken and deleted` when Filter takes a retried pod's earlier allocation back)."""

    outcome: dict[str, str] = field(default_factory=dict)  # pod -> placed | refused | running
    last_refusal: dict[str, int] = field(default_factory=dict)
    placements: dict[str, list[str]] = field(default_factory=dict)  # pod -> the node of each placing
    cached: dict[str, bool] = field(default_factory=dict)  # pod -> an allocation in HAMi's cache
    last_freeing: int = -1  # the last time an allocation left HAMi's cache: cards came free

    @classmethod
    def of(cls, lines: list[LogLine], pods: set[str]) -> FilterHistory:
        history = cls()
        for line in lines:
            pod = (line.fields.get("pod") or line.fields.get("podName") or "").rsplit("/", 1)[-1]
            if pod not in pods:
                continue
            if line.message == FILTER_STARTED:
                history.outcome[pod] = "running"
            elif line.message == FILTER_PLACED:
                history.outcome[pod] = "placed"
                history.placements.setdefault(pod, []).append(line.fields.get("nodeID", "?"))
            elif line.message == FILTER_REFUSED:
                history.outcome[pod] = "refused"
                history.last_refusal[pod] = line.index
            elif line.message == CACHE_ADDED:
                history.cached[pod] = True
            elif line.message == CACHE_DROPPED:
                history.cached[pod] = False
                history.last_freeing = line.index
        return history


@dataclass
class Settled:
    """A run's state when nothing is left to happen: bound pod -> node, Pending pod ->
    kube-scheduler's message, the Pending pods whose allocation HAMi's cache still holds."""

    bound: dict[str, str]
    pending: dict[str, str]
    ghosts: list[str]
    history: FilterHistory

    def same(self, other: Settled) -> bool:
        return (self.bound, sorted(self.pending), self.ghosts) == (other.bound, sorted(other.pending),
                                                                   other.ghosts)


def _story(lines: list[LogLine], names: set[str]) -> list[str]:
    """HAMi's Filter and Bind lines about these pods, one short line each (a failure's evidence)."""
    story = []
    for line in lines:
        pod = (line.fields.get("pod") or line.fields.get("podName") or "").rsplit("/", 1)[-1]
        if line.message in STORY and pod in names:
            node = line.fields.get("nodeID") or line.fields.get("node") or ""
            story.append(" ".join(filter(None, (line.message, pod, node, line.fields.get("err")))))
    return story


# ---------------------------------------------------------------------------------------------
# The running pieces
# ---------------------------------------------------------------------------------------------

@dataclass
class Processes:
    """Processes started for a cluster, each in a session of its own with its log in `work`."""

    work: Path
    running: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, name: str, command: list[str], env: Mapping[str, str] | None = None) -> subprocess.Popen:
        with (self.work / f"{name}.log").open("ab") as log:  # the child keeps its own descriptor
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=self.work,
                                       env=dict(env) if env is not None else None, start_new_session=True)
        self.running[name] = process
        return process

    def stop(self, name: str) -> None:
        process = self.running.pop(name, None)
        if process is None:
            return
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)
        else:  # the group's other members (the agent's background followers, its kubectl)
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    def stop_all(self) -> None:
        for name in reversed(list(self.running)):
            self.stop(name)

    def check(self) -> None:
        for name, process in self.running.items():
            if process.poll() is not None:
                raise AssertionError(f"{name} exited ({process.returncode}):\n{self.tail(name)}")

    def tail(self, name: str, size: int = LOG_TAIL) -> str:
        log = self.work / f"{name}.log"
        return log.read_text(errors="replace")[-size:] if log.exists() else "(no log)"


def serving_certificate(folder: Path) -> tuple[Path, Path, bytes]:
    """A CA and a certificate for 127.0.0.1 it signed (the API server verifies the webhook's
    against the caBundle): the cert, its key and the CA's PEM."""
    ca_key, ca_crt = folder / "hami-ca.key", folder / "hami-ca.crt"
    key, csr, crt, ext = (folder / f"hami.{suffix}" for suffix in ("key", "csr", "crt", "ext"))
    _openssl("req", "-x509", *_ec_key_args(ca_key), "-subj", "/CN=sim-hami-ca", "-days", "1",
             "-out", str(ca_crt))
    _openssl("req", "-new", *_ec_key_args(key), "-subj", "/CN=127.0.0.1", "-out", str(csr))
    ext.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_crt), "-CAkey", str(ca_key), "-CAcreateserial",
             "-days", "1", "-extfile", str(ext), "-out", str(crt))
    return crt, key, ca_crt.read_bytes()


def _admin_token(kubeconfig: Path) -> str:
    config = yaml.safe_load(kubeconfig.read_text())
    return config["users"][0]["user"]["token"]


@dataclass
class HamiCluster:
    """HAMi's scheduler, kube-scheduler and kube-controller-manager on a tenant API server, with
    the tenant's mock GPU nodes registered."""

    api: TenantApi
    tenant: TenantConfig
    nodes: dict[str, list[GpuDevice]]
    values: dict[str, Any]
    processes: Processes
    token: str
    _probed: dict[str, float] = field(default_factory=dict)
    _ghosted: tuple[float, Settled] | None = None

    @property
    def work(self) -> Path:
        return self.processes.work

    @property
    def hami_log(self) -> Path:
        return self.work / "hami-scheduler.log"

    def kubectl_ok(self, *args: str, stdin: str | None = None) -> str:
        result = self.api.kubectl(*args, stdin=stdin)
        if result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr}\n{self.logs()}")
        return result.stdout

    def logs(self) -> str:
        """The tail of every process's log, for a failure message."""
        return "\n".join(f"--- {name} ---\n{self.processes.tail(name, 1500)}"
                         for name in self.processes.running)

    def wait(self, check: Any, what: str, timeout: float = START_TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.processes.check()
            found = check()
            if found:
                return found
            time.sleep(POLL)
        raise AssertionError(f"not within {timeout:.0f} s: {what}\n{self.logs()}")

    # --- namespaces and the lock release agent -------------------------------------------------

    def namespace(self, name: str, quota: Mapping[str, int] | None = None) -> None:
        """A fresh namespace with the platform's quota object (render.quota_objects) when given,
        once the `default` ServiceAccount exists (admission needs it) and the quota has its first
        status (the ResourceQuota admission refuses pods until the controller wrote it)."""
        self.kubectl_ok("create", "namespace", name)
        if quota:
            tenant = replace(self.tenant, gpu_quotas={name: dict(quota)})
            self.api.apply(hami_render.quota_objects(tenant))
            self.wait(lambda: self.api.get("resourcequota", "-n", name, hami_render.QUOTA_NAME)
                      .get("status", {}).get("hard"), f"the quota of {name} gets its status")
        self.wait(lambda: self.api.kubectl("get", "serviceaccount", "default", "-n", name).returncode == 0,
                  f"the default ServiceAccount of {name}")

    def clear_locks(self) -> None:
        """Take every node lock off (a run starts on unlocked nodes)."""
        for node in self.nodes:
            self.kubectl_ok("annotate", "node", node, f"{NODE_LOCK_ANNOTATION}-")

    @contextmanager
    def lock_release(self) -> Iterator[None]:
        """The platform's mock-mode lock release agent, its rendered program run by `sh -c` as its
        Deployment runs it (lock_release_objects: the container's command and env), with this
        cluster's kubectl first on PATH and the admin kubeconfig. Ready once it released a probe
        lock on every node (a lock naming a pod that does not exist: `gone`)."""
        deployment = lock_release_objects(sorted(self.nodes), "unused")[-1]
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["command"] == ["sh", "-c", agent_script()]
        home = self.work / "lock-release-home"
        home.mkdir(exist_ok=True)
        env = {item["name"]: item["value"] for item in container["env"]}
        env.update(HOME=str(home), KUBECONFIG=str(self.api.kubeconfig),
                   PATH=f"{self.api.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        log = self.work / "lock-release.log"
        start = log.stat().st_size if log.exists() else 0
        self._probed.clear()
        self.processes.start("lock-release", container["command"], env)
        try:
            self.wait(lambda: self._probe_released(log, start),
                      "the lock release agent releases a probe lock on every node")
            yield
        finally:
            self.processes.stop("lock-release")

    def _probe_released(self, log: Path, start: int) -> bool:
        """Whether the agent released a probe lock (one naming a pod that does not exist) on every
        node; a node without one gets a new probe every PROBE_AGAIN seconds. The agent releases a
        lock at the resourceVersion its watch saw it at, so a node written in between (HAMi's
        handshakes, just after its start) keeps that lock, and the agent follows a lock once per
        value: only a new value (the time in it) is followed again."""
        released = log.read_bytes()[start:].decode(errors="replace")
        waiting = [node for node in self.nodes if f"released {node}'s lock" not in released]
        now = time.monotonic()
        for node in waiting:
            if now - self._probed.get(node, -PROBE_AGAIN) >= PROBE_AGAIN:
                stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                self.kubectl_ok("annotate", "--overwrite", "node", node,
                                f"{NODE_LOCK_ANNOTATION}={stamp},sim-probe,lock-release-probe")
                self._probed[node] = now
        return not waiting

    # --- a run ---------------------------------------------------------------------------------

    def post_together(self, pods: Sequence[dict[str, Any]]) -> list[Post]:
        """POST every pod at once: one thread per pod, each with its own TLS connection made and
        its whole request written out beforehand, released together by a barrier; after it, a
        thread only notes the time and writes its request (little Python work between threads that
        take turns on the GIL: the start times stay within milliseconds on 2 busy cores)."""
        host, port = self.api.url.removeprefix("https://").split(":")
        context = ssl.create_default_context()  # no ALPN: the API server answers in HTTP/1.1
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        barrier = threading.Barrier(len(pods))
        posts: list[Post | None] = [None] * len(pods)

        def post(index: int, pod: dict[str, Any]) -> None:
            body = json.dumps(pod).encode()
            head = (f"POST /api/v1/namespaces/{pod['metadata']['namespace']}/pods HTTP/1.1\r\n"
                    f"Host: {host}:{port}\r\nAuthorization: Bearer {self.token}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n")
            with context.wrap_socket(socket.create_connection((host, int(port)), timeout=60)) as tls:
                barrier.wait(timeout=30)
                started = time.monotonic()
                tls.sendall(head.encode() + body)
                response = http.client.HTTPResponse(tls)
                response.begin()
                answer = json.loads(response.read() or b"{}")
            message = "" if response.status == 201 else answer.get("message", str(answer))
            posts[index] = Post(pod["metadata"]["name"], started, response.status, message)

        threads = [threading.Thread(target=post, args=(i, pod)) for i, pod in enumerate(pods)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=90)
        assert all(posts), f"a POST did not finish: {posts}"
        return [post for post in posts if post is not None]

    def pods(self, namespace: str) -> list[dict[str, Any]]:
        return self.api.get("pods", "-n", namespace)["items"]

    def settled(self, namespace: str, names: set[str], log_start: int) -> Settled | None:
        """The run's state once nothing is left to happen, else None.

        Nothing is left when every created pod is bound, or Pending as unschedulable (reason
        `Unschedulable`: a FitError, not a failed bind waiting for its retry) with HAMi's last
        Filter of it a refusal, after the last time an allocation left HAMi's pod cache. That is
        the only way cards come free while pods are placed: Filter first takes a retried pod's
        earlier allocation back (v2.10.0 pkg/scheduler/scheduler.go Filter, TakeAndDeletePod; a
        failed bind keeps it until then), and HAMi's refusal only grows with use (more use on a
        card never makes it fit, nor leaves more quota). So a pod refused after it stays refused,
        whatever event kube-scheduler retries it on (an extender's refusal is retried on any
        cluster event: kubernetes v1.35.4 pkg/scheduler/schedule_one.go findNodesThatFitPod,
        `ExtenderName`). One exception is named: a Pending pod placed once, whose bind failed,
        carries HAMi's annotations, and the pod informer puts its allocation back in the cache
        on any update of the pod (scheduler.go onUpdatePod -> onAddPod), a ghost that holds cards
        until the pod's next Filter (`Settled.ghosts`)."""
        pods = {p["metadata"]["name"]: p for p in self.pods(namespace)}
        assert set(pods) <= names, set(pods) - names
        history = FilterHistory.of(read_log(self.hami_log, log_start), set(pods))
        bound, pending = {}, {}
        for name, pod in pods.items():
            if pod["spec"].get("nodeName"):
                bound[name] = pod["spec"]["nodeName"]
                continue
            condition = next((c for c in pod.get("status", {}).get("conditions", [])
                              if c["type"] == "PodScheduled"), None)
            unschedulable = (condition is not None and condition["status"] == "False"
                             and condition.get("reason") == UNSCHEDULABLE)
            if (not unschedulable or history.outcome.get(name) != "refused"
                    or history.last_refusal[name] < history.last_freeing):
                return None
            pending[name] = condition.get("message", "")
        ghosts = sorted(name for name in pending if history.cached.get(name))
        return Settled(bound, pending, ghosts, history)

    def end_of(self, namespace: str, bound: Mapping[str, str]) -> tuple[dict, dict]:
        """Per node its cards' use and its GPU pods, from the bound pods' HAMi annotations."""
        cards: dict[str, dict[str, Card]] = {node: {} for node in self.nodes}
        pods_on: dict[str, int] = dict.fromkeys(self.nodes, 0)
        for pod in self.pods(namespace):
            name, node = pod["metadata"]["name"], pod["spec"].get("nodeName")
            if name not in bound:
                continue
            annotations = pod["metadata"].get("annotations", {})
            assert annotations.get(VGPU_NODE_ANNOTATION) == node, (name, node, annotations)
            pods_on[node] += 1
            for uuid, memory, cores in parse_allocation(annotations[ALLOCATED_ANNOTATION]):
                assert uuid in {d.id for d in self.nodes[node]}, (name, uuid, node)
                card = cards[node].get(uuid, Card())
                cards[node][uuid] = Card(card.used + 1, card.usedmem + memory, card.usedcores + cores)
        return cards, pods_on

    def bind_failures(self, lines: list[LogLine], names: set[str]) -> list[BindFailure]:
        """HAMi's failed binds of these pods (Bind: `Failed to lock node`, `Failed to bind pod`)."""
        failures = []
        for line in lines:
            pod = (line.fields.get("pod") or "").rsplit("/", 1)[-1]
            if line.message in (BIND_LOCK_FAILED, BIND_FAILED) and pod in names:
                failures.append(BindFailure(pod, line.fields.get("node", "?"), line.fields.get("err", "")))
        return failures

    def run(self, namespace: str, pods: Sequence[dict[str, Any]]) -> RunEnd:
        """POST the pods together, wait until nothing is left to happen, read the end."""
        self.clear_locks()
        log_start = self.hami_log.stat().st_size
        began = time.monotonic()
        posts = self.post_together(pods)
        names = {post.pod for post in posts if post.created}
        end = self.wait(lambda: self._final(namespace, names, log_start), f"the pods of {namespace} settle",
                        SETTLE_TIMEOUT)
        seconds = time.monotonic() - began
        cards, pods_on = self.end_of(namespace, end.bound)
        lines = read_log(self.hami_log, log_start)
        replaced = {pod: nodes for pod, nodes in end.history.placements.items() if len(nodes) > 1}
        return RunEnd(cards, pods_on, end.bound, end.pending, self.bind_failures(lines, names), replaced,
                      end.ghosts, posts, seconds, _story(lines, names))

    def _final(self, namespace: str, names: set[str], log_start: int) -> Settled | None:
        """The settled state, once it holds: at once without ghosts; with one, once the same state
        held for GHOST_WAIT seconds (a retry already queued has come by then; a later one waits
        for a cluster event, or kube-scheduler's flush of unschedulable pods after 5 minutes)."""
        now = self.settled(namespace, names, log_start) if names else Settled({}, {}, [], FilterHistory())
        if now is None or not now.ghosts:
            self._ghosted = None
            return now
        if self._ghosted is None or not self._ghosted[1].same(now):
            self._ghosted = (time.monotonic(), now)
        return now if time.monotonic() - self._ghosted[0] >= GHOST_WAIT else None

    def forget(self, namespace: str) -> None:
        """Delete a run's pods at once (no kubelet finishes a graceful delete) and wait until HAMi
        dropped them from its cache (its pod informer's delete: onDelPod logs each at -v=4)."""
        names = {p["metadata"]["name"] for p in self.pods(namespace)}
        if not names:
            return
        log_start = self.hami_log.stat().st_size
        self.kubectl_ok("delete", "pods", "--all", "-n", namespace, "--grace-period=0", "--force",
                        "--wait=false")

        def dropped() -> bool:
            gone = {line.fields.get("pod", "").rsplit("/", 1)[-1]
                    for line in read_log(self.hami_log, log_start) if line.message == POD_DELETED}
            return names <= gone

        self.wait(dropped, f"HAMi drops the pods of {namespace}")


# ---------------------------------------------------------------------------------------------
# Starting it
# ---------------------------------------------------------------------------------------------

def _register_nodes(api: TenantApi, tenant: TenantConfig, nodes: Mapping[str, list[GpuDevice]]) -> None:
    """Each GPU node as a kubelet and the platform leave it: the Node with a kubelet's status
    (Ready, cpu, memory, pods), the platform's registration applied as its NodePatch applies it
    (render.gpu_node_metadata: the label and, in mock mode, the device list) and the capacity its
    CronJob patches into the status (render.capacity_patch, the cards' slots)."""
    mock = tenant.gpus is None or tenant.gpus.mock
    for node, devices in nodes.items():
        api.apply([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}], manager="sim-kubelet")
        status = {"status": {"capacity": KUBELET_ALLOCATABLE, "allocatable": KUBELET_ALLOCATABLE,
                             "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                             "message": "simulated"}]}}
        for patch in (["--type=merge", "-p", json.dumps(status)],
                      ["--type=json", "-p", hami_render.capacity_patch(sum(d.count for d in devices))]):
            result = api.kubectl("patch", "node", node, "--subresource=status", *patch)
            assert result.returncode == 0, result.stderr
        result = api.kubectl("taint", "node", node, NOT_READY_TAINT)
        assert result.returncode == 0, result.stderr
        metadata = hami_render.gpu_node_metadata(node, devices, mock)
        api.apply([{"apiVersion": "v1", "kind": "Node", "metadata": metadata}])


def _registered(cluster: HamiCluster) -> bool:
    """HAMi has every node's cards: it logged each node's devices (register: `Node device added`)
    and wrote its handshake request on each (pkg/device/devices.go CheckHealth)."""
    added = {line.fields.get("nodeName") for line in read_log(cluster.hami_log) if line.message == NODE_ADDED}
    if not set(cluster.nodes) <= added:
        return False
    return all(cluster.api.get("node", node)["metadata"].get("annotations", {}).get(HANDSHAKE_ANNOTATION, "")
               .startswith("Requesting_") for node in cluster.nodes)


def _extender_ready(port: int) -> bool:
    """HAMi's /readyz answers (it waits for its caches: cmd/scheduler/main.go, routes.ReadyzRoute)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=2)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


@contextmanager
def hami_scheduler(api: TenantApi, tenant: TenantConfig, cluster_name: str) -> Iterator[HamiCluster]:
    """HAMi's scheduler and webhook, kube-scheduler and kube-controller-manager for `tenant` on a
    running API server, the tenant's mock GPU nodes registered with HAMi; stopped on exit."""
    assert api.work is not None
    build = hami_build()
    values = chart_values(build, tenant)
    nodes = tenant_devices(tenant, cluster_name)
    work = api.work / "hami"
    work.mkdir()
    processes = Processes(work)
    cluster = HamiCluster(api, tenant, nodes, values, processes, _admin_token(api.kubeconfig))
    try:
        # kube-controller-manager: only the ResourceQuota status and each namespace's `default`
        # ServiceAccount (kubernetes v1.35.4 cmd/kube-controller-manager/app/core.go: aliases
        # `resourcequota` and `serviceaccount`), with the admin's credentials.
        processes.start("kube-controller-manager", [
            str(api.bin / "kube-controller-manager"), "--kubeconfig", str(api.kubeconfig),
            "--controllers=resourcequota,serviceaccount", "--leader-elect=false",
            "--bind-address=127.0.0.1", f"--secure-port={free_port()}"])
        crt, key, ca = serving_certificate(work)
        config = work / "device-config.yaml"
        config.write_text(device_config(build, values))
        port = free_port()
        processes.start("hami-scheduler", extender_command(
            values, binary=build / "scheduler", port=port, cert=crt, key=key, device_config=config,
            metrics_port=free_port()), extender_env(values, api.kubeconfig, work))
        cluster.wait(lambda: _extender_ready(port), "HAMi's scheduler serves HTTPS")
        api.apply([webhook_configuration(values, port=port, ca_bundle=ca)])
        # The nodes before kube-scheduler: HAMi registers nodes only while it leads, and it
        # follows kube-scheduler's lease (v2.10.0 pkg/util/leaderelection: the holder's identity
        # starts with its host name), reading them when it takes the lead, on a node's add and
        # every 15 s (pkg/scheduler/scheduler.go RegisterFromNodeAnnotations), never on a node's
        # update: a device list applied after the node's add waits for the next period.
        _register_nodes(api, tenant, nodes)
        scheduler_config = work / "kube-scheduler-config.yaml"
        scheduler_config.write_text(yaml.safe_dump(scheduler_configuration(
            values, extender_port=port, kubeconfig=api.kubeconfig)))
        processes.start("kube-scheduler",
                        scheduler_command(values, api.bin / "kube-scheduler", scheduler_config))
        cluster.wait(lambda: _registered(cluster), "HAMi registers every GPU node", 15 + START_TIMEOUT)
        yield cluster
    finally:
        processes.stop_all()
