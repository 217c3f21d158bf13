"""Stack configuration: the only module that reads Pulumi config.

`parse_config` turns the raw config mapping into frozen, typed objects and
validates all of it before any resource is registered. Every problem names its
config path (`tenants[1].podCidr: ...`) and all problems are reported together
in one `ConfigError`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kamaji_hami_platform import names, versions
from kamaji_hami_platform.management import docker_network

PROJECT = "kamaji-hami-platform"

# kind's own networks in the management cluster (set explicitly in the kind config).
MANAGEMENT_POD_CIDR = "10.244.0.0/16"
MANAGEMENT_SERVICE_CIDR = "10.96.0.0/16"

# Kamaji runs each tenant's controller-manager with --allocate-node-cidrs and
# --cluster-cidr=<podCidr>, without --node-cidr-mask-size (26.8.2-edge,
# internal/builders/controlplane/deployment.go), so every node takes a /24 of
# the pod CIDR (kube-controller-manager's IPv4 default): a node beyond the last
# /24 never gets a range and stays NotReady.
NODE_POD_CIDR_PREFIX = 24
GPU_POLICIES = ("binpack", "spread")
NODE_POLICIES = ("binpack", "spread")
DEFAULT_NODE_LOCK_TIMEOUT = "5s"
# HAMi orders a node's cards with Go's sort.Sort, an insertion sort (stable) for at
# most 12 elements and pdqsort (unstable) beyond (Go src/sort/zsortinterface.go
# `maxInsertion = 12`): up to 12 cards, tied cards keep their registration order,
# which the planner relies on (kamaji_hami_platform/gpu/card_fit.py order_devices). Real nodes
# carry 8 cards or fewer.
MAX_CARDS_PER_NODE = 12
# Namespaces of the management cluster that a tenant (whose name is its
# namespace) must never take over.
RESERVED_NAMESPACES = (
    "cert-manager", "default", "kamaji-system", "kube-node-lease", "kube-public",
    "kube-system", "local-path-storage", "metallb-system",
)
# GPU quota keys somebody enforces. HAMi 2.10.0 enforces `limits.` + its memory
# and core resource names (pkg/device/quota.go managedQuotaName, IsManagedQuota);
# Kubernetes counts an extended resource such as nvidia.com/gpu only under
# `requests.` (its quota evaluator ignores `limits.` for extended resources).
QUOTA_KEYS = ("limits.nvidia.com/gpumem", "limits.nvidia.com/gpucores", "requests.nvidia.com/gpu")
# Keys that look right and that nobody enforces -> the key that does the job.
MISLEADING_QUOTA_KEYS = {"limits.nvidia.com/gpu": "requests.nvidia.com/gpu"}
HAMI_QUOTA_PREFIX = "limits.nvidia.com/"
# Namespaces HAMi's admission webhook leaves alone (the platform's
# scheduler.admissionWebhook.whitelistNamespaces): their pods keep the default scheduler, so
# HAMi's quota, checked by that webhook and when HAMi's scheduler fits a pod
# (pkg/device/nvidia/device.go fitQuota), never applies there.
WEBHOOK_EXCLUDED_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")

_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_K8S_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")
_DURATION = re.compile(r"^(\d+)(s|m)$")
_DOCKER_NETWORK = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.-]*$")
_IMAGE = re.compile(r"^[a-z0-9.\-/:_]+:[A-Za-z0-9_.\-]+(@sha256:[a-f0-9]{64})?$")


class ConfigError(ValueError):
    """The stack configuration is invalid; `problems` lists every finding."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid stack configuration:\n  - " + "\n  - ".join(self.problems))


@dataclass(frozen=True)
class GpuModel:
    """A GPU model as HAMi sees it: memory, compute, slots and product string."""

    name: str
    memory_mib: int
    cores: int
    split_count: int
    product: str


BUILTIN_GPU_MODELS: Mapping[str, GpuModel] = {
    "A100-80GB": GpuModel("A100-80GB", 81920, 100, 10, "NVIDIA A100-SXM4-80GB"),
}


@dataclass(frozen=True)
class HamiSettings:
    """HAMi scheduler settings of one tenant."""

    gpu_scheduler_policy: str = "spread"
    node_scheduler_policy: str = "binpack"
    node_lock_timeout: str = DEFAULT_NODE_LOCK_TIMEOUT
    # With the webhook failing closed, a second (leader-elected) scheduler pod
    # keeps GPU pod creation working while one restarts.
    scheduler_replicas: int = 2

    @property
    def node_lock_timeout_seconds(self) -> int:
        return duration_seconds(self.node_lock_timeout)


def duration_seconds(text: str) -> int:
    """`5s` / `1m` (the durations the config accepts) in seconds; 0 for anything else."""
    match = _DURATION.match(text)
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1) if match else 0


@dataclass(frozen=True)
class GpuPool:
    """The GPUs each worker of a tenant carries."""

    model: GpuModel
    per_worker: int
    mock: bool = True


@dataclass(frozen=True)
class TenantConfig:
    """One tenant: its control plane, networks, workers and GPUs."""

    name: str
    kubernetes_version: str
    control_plane_replicas: int
    pod_cidr: str
    service_cidr: str
    workers: int
    gpus: GpuPool | None
    hami: HamiSettings = field(default_factory=HamiSettings)
    gpu_quotas: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # Which /25 of the Docker network's worker addresses is this tenant's (docker_network.py).
    address_block: int = 0

    @property
    def namespace(self) -> str:
        return self.name

    @property
    def dns_service_ip(self) -> str:
        """Kamaji's own default: the 10th address of the service CIDR."""
        return str(ipaddress.ip_network(self.service_cidr)[10])

    def worker_names(self) -> list[str]:
        return [names.worker_name(self.name, index) for index in range(self.workers)]


@dataclass(frozen=True)
class ManagementConfig:
    """The kind management cluster."""

    name: str = "kamaji"
    node_image: str = versions.KIND_NODE_IMAGE
    # A network of the platform's own (not kind's `kind`): its IPv4 subnet must be configured
    # for workers to have fixed addresses (kamaji_hami_platform/management/docker_network.py).
    docker_network: str = "kamaji-hami"
    docker_subnet: str = "172.30.0.0/16"
    metallb_address_range: str | None = None
    kamaji_etcd_replicas: int = 3

    @property
    def pool_range(self) -> str:
        """The MetalLB range: configured, or the default of the network's layout."""
        return self.metallb_address_range or docker_network.layout(self.docker_subnet).default_pool_range()


@dataclass(frozen=True)
class PodShape:
    """A reference GPU workload: HAMi resource limits of one container."""

    gpumem: int = 20000
    gpucores: int = 30
    gpu: int = 1


@dataclass(frozen=True)
class PlatformConfig:
    """The whole validated stack configuration."""

    management: ManagementConfig
    tenants: tuple[TenantConfig, ...]
    gpu_models: Mapping[str, GpuModel]
    reference_pod: PodShape = field(default_factory=PodShape)


class _Problems:
    """Collects problems so that all of them are reported at once."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path}: {message}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _mapping(value: Any, path: str, problems: _Problems) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.add(path, f"must be a mapping, got {type(value).__name__}")
        return {}
    return value


def _unknown_keys(obj: Mapping[str, Any], allowed: tuple[str, ...], path: str,
                  problems: _Problems) -> None:
    for key in obj:
        if key not in allowed:
            problems.add(f"{path}.{key}", f"unknown key (allowed: {', '.join(allowed)})")


def _string(obj: Mapping[str, Any], key: str, path: str, problems: _Problems,
            default: str | None = None) -> str | None:
    value = obj.get(key, default)
    if value is None:
        problems.add(f"{path}.{key}", "is required")
        return None
    if not isinstance(value, str) or not value:
        problems.add(f"{path}.{key}", f"must be a non-empty string, got {value!r}")
        return None
    return value


def _integer(obj: Mapping[str, Any], key: str, path: str, problems: _Problems,
             default: int | None = None, minimum: int = 1,
             maximum: int | None = None) -> int | None:
    value = obj.get(key, default)
    if value is None:
        problems.add(f"{path}.{key}", "is required")
        return None
    if not _is_int(value):
        problems.add(f"{path}.{key}", f"must be an integer, got {value!r}")
        return None
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        qualifier = "positive, " if minimum == 1 else ""
        problems.add(f"{path}.{key}", f"must be {qualifier}{bound}, got {value}")
        return None
    return value


def _dns_label(name: str | None, path: str, problems: _Problems, max_length: int = 63) -> None:
    if name is None:
        return
    if len(name) > max_length or not _DNS_1035.match(name):
        problems.add(path, f"{name!r} is not a DNS-1035 label of at most {max_length} "
                           "characters (lowercase letters, digits and '-', starting with a letter)")


def _ipv4_network(value: str | None, path: str, problems: _Problems,
                  min_prefix: int, max_prefix: int) -> ipaddress.IPv4Network | None:
    if value is None:
        return None
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as error:
        problems.add(path, f"{value!r} is not a valid CIDR ({error})")
        return None
    if not isinstance(network, ipaddress.IPv4Network):
        problems.add(path, f"{value!r} must be an IPv4 CIDR")
        return None
    if not min_prefix <= network.prefixlen <= max_prefix:
        problems.add(path, f"{value!r} must have a prefix between /{min_prefix} and /{max_prefix}")
        return None
    return network


def _kubernetes_version(value: str | None, path: str, problems: _Problems) -> None:
    if value is None:
        return
    match = _K8S_VERSION.match(value)
    if not match:
        problems.add(path, f"{value!r} must look like v1.35.0 (the kindest/node and "
                           "registry.k8s.io/kube-scheduler tag format)")
        return
    major, minor = int(match.group(1)), int(match.group(2))
    if major != versions.KUBERNETES_MAJOR or not (
            versions.TENANT_MIN_MINOR <= minor <= versions.TENANT_MAX_MINOR):
        problems.add(path, f"{value!r} is outside v1.{versions.TENANT_MIN_MINOR}-"
                           f"v1.{versions.TENANT_MAX_MINOR}, the range Kamaji "
                           f"{versions.KAMAJI_IMAGE_TAG} accepts")


def _parse_gpu_models(raw: Any, problems: _Problems) -> dict[str, GpuModel]:
    models = dict(BUILTIN_GPU_MODELS)
    for name, spec in _mapping(raw, "gpuModels", problems).items():
        path = f"gpuModels.{name}"
        if name in BUILTIN_GPU_MODELS:
            problems.add(path, "redefines a built-in GPU model")
            continue
        spec = _mapping(spec, path, problems)
        _unknown_keys(spec, ("memoryMiB", "cores", "splitCount", "product"), path, problems)
        memory = _integer(spec, "memoryMiB", path, problems, maximum=2**31 - 1)
        cores = _integer(spec, "cores", path, problems, maximum=100)
        split = _integer(spec, "splitCount", path, problems, maximum=1024)
        product = _string(spec, "product", path, problems)
        if product is not None and "nvidia" not in product.lower():
            problems.add(f"{path}.product", f"{product!r} must contain 'NVIDIA': HAMi only "
                                            "registers NVIDIA devices whose type says so")
            product = None
        if None not in (memory, cores, split, product):
            models[str(name)] = GpuModel(str(name), memory, cores, split, product)  # type: ignore[arg-type]
    return models


def _parse_hami(raw: Any, path: str, problems: _Problems) -> HamiSettings:
    obj = _mapping(raw, path, problems)
    _unknown_keys(obj, ("gpuSchedulerPolicy", "nodeSchedulerPolicy", "nodeLockTimeout",
                        "schedulerReplicas"), path, problems)
    defaults = HamiSettings()
    gpu = _string(obj, "gpuSchedulerPolicy", path, problems, defaults.gpu_scheduler_policy)
    node = _string(obj, "nodeSchedulerPolicy", path, problems, defaults.node_scheduler_policy)
    timeout = _string(obj, "nodeLockTimeout", path, problems, defaults.node_lock_timeout)
    replicas = _integer(obj, "schedulerReplicas", path, problems, defaults.scheduler_replicas,
                        maximum=3)
    if gpu is not None and gpu not in GPU_POLICIES:
        problems.add(f"{path}.gpuSchedulerPolicy", f"{gpu!r} must be one of {', '.join(GPU_POLICIES)}")
    if node is not None and node not in NODE_POLICIES:
        problems.add(f"{path}.nodeSchedulerPolicy",
                     f"{node!r} must be one of {', '.join(NODE_POLICIES)}")
    if timeout is not None and not 1 <= duration_seconds(timeout) <= 300:
        problems.add(f"{path}.nodeLockTimeout",
                     f"{timeout!r} must be a duration like '5s' or '1m', between 1s and 5m")
    if None in (gpu, node, timeout, replicas):
        return defaults
    return HamiSettings(gpu, node, timeout, replicas)  # type: ignore[arg-type]


def _parse_gpus(raw: Any, path: str, workers: int | None, models: Mapping[str, GpuModel],
                problems: _Problems) -> GpuPool | None:
    if raw is None:
        return None
    obj = _mapping(raw, path, problems)
    _unknown_keys(obj, ("model", "perWorker", "mock"), path, problems)
    model_name = _string(obj, "model", path, problems)
    per_worker = _integer(obj, "perWorker", path, problems, default=1,
                          maximum=MAX_CARDS_PER_NODE)
    mock = obj.get("mock", True)
    if not isinstance(mock, bool):
        problems.add(f"{path}.mock", f"must be true or false, got {mock!r}")
    model = models.get(model_name) if model_name is not None else None
    if model_name is not None and model is None:
        problems.add(f"{path}.model", f"unknown GPU model {model_name!r} "
                                      f"(defined: {', '.join(sorted(models))})")
    if workers == 0:
        problems.add(path, "GPUs are requested but the tenant has 0 workers")
    if model is None or per_worker is None or not isinstance(mock, bool):
        return None
    return GpuPool(model, per_worker, mock)


def _parse_quotas(raw: Any, path: str, problems: _Problems) -> dict[str, dict[str, int]]:
    """namespace in the tenant cluster -> HAMi quota limits."""
    quotas: dict[str, dict[str, int]] = {}
    for namespace, limits in _mapping(raw, path, problems).items():
        ns_path = f"{path}.{namespace}"
        _dns_label(namespace if isinstance(namespace, str) else None, ns_path, problems)
        quota: dict[str, int] = {}
        for key, value in _mapping(limits, ns_path, problems).items():
            if key in MISLEADING_QUOTA_KEYS:
                problems.add(f"{ns_path}.{key}", f"is enforced by nobody (Kubernetes counts "
                                                 f"extended resources only as requests): use "
                                                 f"{MISLEADING_QUOTA_KEYS[key]}")
            elif key.startswith(HAMI_QUOTA_PREFIX) and namespace in WEBHOOK_EXCLUDED_NAMESPACES:
                problems.add(f"{ns_path}.{key}", f"is enforced by nobody in {namespace}: HAMi's webhook "
                                                 f"skips that namespace, so its pods never reach HAMi's "
                                                 f"quota checks (requests.nvidia.com/gpu still applies)")
            elif key not in QUOTA_KEYS:
                problems.add(f"{ns_path}.{key}", f"is not a GPU quota key HAMi or Kubernetes "
                                                 f"enforces (allowed: {', '.join(QUOTA_KEYS)})")
            elif not _is_int(value) or value < 0:
                problems.add(f"{ns_path}.{key}", f"must be a non-negative integer, got {value!r}")
            else:
                quota[key] = value
        if not quota and isinstance(limits, Mapping) and not limits:
            problems.add(ns_path, "must set at least one quota key")
        quotas[str(namespace)] = quota
    return quotas


_TENANT_KEYS = ("name", "kubernetesVersion", "controlPlaneReplicas", "podCidr", "serviceCidr",
                "workers", "gpus", "hami", "gpuQuotas", "addressBlock")


def _parse_tenant(raw: Any, index: int, models: Mapping[str, GpuModel],
                  problems: _Problems) -> TenantConfig | None:
    path = f"tenants[{index}]"
    if not isinstance(raw, Mapping) or not raw:
        problems.add(path, "must be a non-empty mapping")
        return None
    obj = raw
    _unknown_keys(obj, _TENANT_KEYS, path, problems)
    name = _string(obj, "name", path, problems)
    # `<name>-worker-<n>` and `<name>-admin-kubeconfig` must stay valid names.
    _dns_label(name, f"{path}.name", problems, max_length=40)
    if name in RESERVED_NAMESPACES:
        problems.add(f"{path}.name", f"{name!r} is a namespace the management cluster uses")
    version = _string(obj, "kubernetesVersion", path, problems)
    _kubernetes_version(version, f"{path}.kubernetesVersion", problems)
    replicas = _integer(obj, "controlPlaneReplicas", path, problems, default=1, maximum=5)
    pod_cidr = _string(obj, "podCidr", path, problems)
    service_cidr = _string(obj, "serviceCidr", path, problems)
    pod_net = _ipv4_network(pod_cidr, f"{path}.podCidr", problems, 8, 22)
    service_net = _ipv4_network(service_cidr, f"{path}.serviceCidr", problems, 12, 28)
    workers = _integer(obj, "workers", path, problems, default=1, minimum=0, maximum=names.MAX_WORKERS)
    address_block = _integer(obj, "addressBlock", path, problems, default=index, minimum=0)
    gpus = _parse_gpus(obj.get("gpus"), f"{path}.gpus", workers, models, problems)
    hami = _parse_hami(obj.get("hami"), f"{path}.hami", problems)
    quotas = _parse_quotas(obj.get("gpuQuotas"), f"{path}.gpuQuotas", problems)
    if pod_net is not None and workers is not None:
        _check_node_ranges(pod_net, workers, path, problems)
    if None in (name, version, replicas, pod_net, service_net, workers, address_block):
        return None
    if "gpus" in obj and gpus is None:
        return None
    return TenantConfig(name, version, replicas, pod_cidr, service_cidr, workers,  # type: ignore[arg-type]
                        gpus, hami, quotas, address_block)  # type: ignore[arg-type]


def _check_node_ranges(pod_net: ipaddress.IPv4Network, workers: int, path: str,
                       problems: _Problems) -> None:
    """Every worker needs its own /24 of the pod CIDR (see NODE_POD_CIDR_PREFIX)."""
    ranges = 2 ** max(NODE_POD_CIDR_PREFIX - pod_net.prefixlen, 0)
    if workers > ranges:
        problems.add(f"{path}.workers", f"{workers} workers need {workers} node ranges of "
                                        f"/{NODE_POD_CIDR_PREFIX}, but podCidr {pod_net} holds "
                                        f"only {ranges}: use at most {ranges} workers (a running "
                                        "tenant keeps its podCidr; only a new tenant can take a "
                                        "larger one)")


def _check_address_blocks(tenants: list[TenantConfig], management: ManagementConfig,
                          problems: _Problems) -> None:
    """Each tenant a block of worker addresses of its own, inside the network's worker region."""
    blocks = docker_network.layout(management.docker_subnet).blocks
    owner: dict[int, str] = {}
    for index, tenant in enumerate(tenants):
        path = f"tenants[{index}].addressBlock"
        if tenant.address_block >= blocks:
            problems.add(path, f"{tenant.address_block} is outside 0..{blocks - 1}: "
                               f"management.dockerSubnet {management.docker_subnet} holds {blocks} "
                               "tenants' worker addresses; use a larger subnet")
        elif tenant.address_block in owner:
            problems.add(path, f"{tenant.address_block} is also {owner[tenant.address_block]}'s: "
                               "each tenant needs its own")
        else:
            owner[tenant.address_block] = f"tenants[{index}] ({tenant.name})"


def _check_overlaps(tenants: list[TenantConfig], management: ManagementConfig,
                    problems: _Problems) -> None:
    claimed: list[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network]] = [
        ("the management cluster's pod CIDR", ipaddress.ip_network(MANAGEMENT_POD_CIDR)),
        ("the management cluster's service CIDR", ipaddress.ip_network(MANAGEMENT_SERVICE_CIDR)),
    ]
    docker_subnet = ipaddress.ip_network(management.docker_subnet)
    for owner, other in claimed:
        if docker_subnet.overlaps(other):
            problems.add("management.dockerSubnet", f"{docker_subnet} overlaps {owner} ({other})")
    claimed.append(("management.dockerSubnet", docker_subnet))
    for index, tenant in enumerate(tenants):
        for key, cidr in (("podCidr", tenant.pod_cidr), ("serviceCidr", tenant.service_cidr)):
            network = ipaddress.ip_network(cidr)
            for owner, other in claimed:
                if network.overlaps(other):
                    problems.add(f"tenants[{index}].{key}", f"{cidr} overlaps {owner} ({other})")
            claimed.append((f"tenants[{index}].{key}", network))


def _check_generated_names(management: ManagementConfig, raw_tenants: list[Any],
                           tenants: list[TenantConfig], problems: _Problems) -> None:
    """Every name Kubernetes, kind or Docker will see, from the valid parts of the config."""
    index: dict[str, int] = {}
    for i, raw in enumerate(raw_tenants):
        if isinstance(raw, Mapping) and isinstance(raw.get("name"), str):
            index.setdefault(raw["name"], i)
    shapes = [names.TenantShape(f"tenants[{index[t.name]}].name", t.name, t.workers, t.gpus is not None)
              for t in tenants]
    for path, problem in names.check(management.name, shapes):
        problems.add(path, problem)


def _parse_management(raw: Any, problems: _Problems) -> ManagementConfig:
    obj = _mapping(raw, "management", problems)
    _unknown_keys(obj, ("name", "nodeImage", "dockerNetwork", "dockerSubnet", "metallbAddressRange",
                        "kamajiEtcdReplicas"), "management", problems)
    defaults = ManagementConfig()
    name = _string(obj, "name", "management", problems, defaults.name)
    _dns_label(name, "management.name", problems, max_length=40)
    image = _string(obj, "nodeImage", "management", problems, defaults.node_image)
    if image is not None and not _IMAGE.match(image):
        problems.add("management.nodeImage", f"{image!r} must be an image with an explicit tag")
    network = _string(obj, "dockerNetwork", "management", problems, defaults.docker_network)
    if network is not None and not _DOCKER_NETWORK.match(network):
        problems.add("management.dockerNetwork", f"{network!r} is not a Docker network name")
    subnet = _string(obj, "dockerSubnet", "management", problems, defaults.docker_subnet)
    subnet_net = _ipv4_network(subnet, "management.dockerSubnet", problems,
                               docker_network.MIN_PREFIX, docker_network.MAX_PREFIX)
    address_range = obj.get("metallbAddressRange")
    if address_range is not None and subnet_net is not None:
        _check_address_range(address_range, docker_network.layout(str(subnet_net)), problems)
    etcd = _integer(obj, "kamajiEtcdReplicas", "management", problems,
                    default=defaults.kamaji_etcd_replicas, maximum=5)
    if None in (name, image, network, subnet_net, etcd):
        return defaults
    return ManagementConfig(name, image, network, subnet, address_range, etcd)  # type: ignore[arg-type]


def _check_address_range(value: Any, layout: docker_network.NetworkLayout, problems: _Problems) -> None:
    path = "management.metallbAddressRange"
    if not isinstance(value, str) or value.count("-") != 1:
        problems.add(path, f"{value!r} must look like 172.30.255.200-172.30.255.250")
        return
    try:
        first, last = docker_network.parse_range(value)
    except ValueError:
        problems.add(path, f"{value!r} must be two IPv4 addresses joined by '-'")
        return
    if first > last:
        problems.add(path, f"{value!r} starts after it ends")
    elif not (first in layout.pool_quarter and last in layout.pool_quarter):
        problems.add(path, f"{value!r} must lie in {layout.pool_quarter}, the last quarter of "
                           f"management.dockerSubnet: the quarters before it are Docker's own "
                           "addresses (the kind node) and the workers' fixed addresses")


def _parse_reference_pod(raw: Any, problems: _Problems) -> PodShape:
    obj = _mapping(raw, "referencePod", problems)
    _unknown_keys(obj, ("gpumem", "gpucores", "gpu"), "referencePod", problems)
    defaults = PodShape()
    gpumem = _integer(obj, "gpumem", "referencePod", problems, defaults.gpumem,
                      maximum=2**31 - 1)
    gpucores = _integer(obj, "gpucores", "referencePod", problems, defaults.gpucores,
                        minimum=0, maximum=100)
    gpu = _integer(obj, "gpu", "referencePod", problems, defaults.gpu, maximum=MAX_CARDS_PER_NODE)
    if None in (gpumem, gpucores, gpu):
        return defaults
    return PodShape(gpumem, gpucores, gpu)  # type: ignore[arg-type]


def parse_config(raw: Mapping[str, Any]) -> PlatformConfig:
    """Validate the raw stack config; raise one ConfigError listing every problem."""
    problems = _Problems()
    if not isinstance(raw, Mapping):
        raise ConfigError([f"<root>: must be a mapping, got {type(raw).__name__}"])
    management = _parse_management(raw.get("management"), problems)
    models = _parse_gpu_models(raw.get("gpuModels"), problems)
    raw_tenants = raw.get("tenants")
    tenants: list[TenantConfig] = []
    if not isinstance(raw_tenants, list) or not raw_tenants:
        problems.add("tenants", "must be a non-empty list of tenants")
        raw_tenants = []
    for index, raw_tenant in enumerate(raw_tenants):
        tenant = _parse_tenant(raw_tenant, index, models, problems)
        if tenant is not None:
            tenants.append(tenant)
    seen: dict[str, int] = {}
    for index, raw_tenant in enumerate(raw_tenants):
        name = raw_tenant.get("name") if isinstance(raw_tenant, Mapping) else None
        if isinstance(name, str) and name in seen:
            problems.add(f"tenants[{index}].name",
                         f"duplicate tenant name {name!r} (also tenants[{seen[name]}])")
        elif isinstance(name, str):
            seen[name] = index
    _check_overlaps(tenants, management, problems)
    _check_address_blocks(tenants, management, problems)
    _check_generated_names(management, raw_tenants, tenants, problems)
    reference_pod = _parse_reference_pod(raw.get("referencePod"), problems)
    if problems.items:
        raise ConfigError(problems.items)
    return PlatformConfig(management, tuple(tenants), models, reference_pod)


CONFIG_KEYS = ("management", "tenants", "gpuModels", "referencePod")


def load_config() -> PlatformConfig:
    """Read the stack config through Pulumi and validate it."""
    import pulumi

    config = pulumi.Config(PROJECT)
    raw: dict[str, Any] = {}
    problems: list[str] = []
    for key in CONFIG_KEYS:
        try:
            value = config.get_object(key)
        except Exception as error:  # Pulumi raises its own JSON errors here.
            problems.append(f"{key}: is not valid structured config ({type(error).__name__})")
            continue
        if value is not None:
            raw[key] = value
    if problems:
        raise ConfigError(problems)
    return parse_config(raw)


def load_stack_file(path: Path) -> PlatformConfig:
    """The platform config of a stack file (`Pulumi.<stack>.yaml`), validated; without Pulumi."""
    if not path.is_file():
        raise ValueError(f"no stack config {path.name} in {path.parent}")
    document = yaml.safe_load(path.read_text()) or {}
    prefix = f"{PROJECT}:"
    raw = {key[len(prefix):]: value for key, value in (document.get("config") or {}).items()
           if key.startswith(prefix)}
    return parse_config(raw)


def load_stack(stack: str, root: Path | None = None) -> PlatformConfig:
    """`Pulumi.<stack>.yaml` of `root` (default: the current directory, the Pulumi project's)."""
    return load_stack_file((root or Path.cwd()) / f"Pulumi.{stack}.yaml")
