"""The validated configuration: frozen, typed objects (`*Config`) the components and the planner
read. Only the validator builds them (config/loader.py `parse_config`, or the components from their
`*Settings`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kamaji_hami_platform import names, network, versions
from kamaji_hami_platform.config.rules import (
    DEFAULT_NODE_LOCK_TIMEOUT,
    LOAD_BALANCER,
    MODE_KIND,
    WORKER_NETWORK_OWN,
)


@dataclass(frozen=True)
class GpuModelConfig:
    """A GPU model as HAMi sees it: memory, compute, slots and product string."""

    name: str
    memory_mib: int
    cores: int
    split_count: int
    product: str


BUILTIN_GPU_MODELS: Mapping[str, GpuModelConfig] = {
    "A100-80GB": GpuModelConfig("A100-80GB", 81920, 100, 10, "NVIDIA A100-SXM4-80GB"),
}


@dataclass(frozen=True)
class HamiConfig:
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


_DURATION = re.compile("([0-9]+)(s|m)")


def duration_seconds(text: str) -> int:
    """`5s` / `1m` (the durations the config accepts) in seconds; 0 for anything else."""
    match = _DURATION.fullmatch(text)
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1) if match else 0


@dataclass(frozen=True)
class GpuPoolConfig:
    """The GPUs each worker of a tenant carries."""

    model: GpuModelConfig
    per_worker: int
    mock: bool = True


@dataclass(frozen=True)
class GpuWorkloadConfig:
    """A GPU workload a tenant declares: `replicas` pods, each asking `gpu` cards with either
    `gpumem` MiB or `gpumem_percentage` % of each card's memory, and `gpucores` % of its compute."""

    name: str
    replicas: int
    gpu: int = 1
    gpumem: int | None = None
    gpumem_percentage: int | None = None
    gpucores: int | None = None
    type: str | None = None
    namespace: str = "default"

    def limits(self) -> dict[str, int]:
        """The container limits its pods carry (HAMi's resource names): no gpucores when the
        workload leaves it out, so HAMi's webhook defaults it as it would for the real pod."""
        limits = {"nvidia.com/gpu": self.gpu}
        if self.gpucores is not None:
            limits["nvidia.com/gpucores"] = self.gpucores
        if self.gpumem is not None:
            limits["nvidia.com/gpumem"] = self.gpumem
        if self.gpumem_percentage is not None:
            limits["nvidia.com/gpumem-percentage"] = self.gpumem_percentage
        return limits


class SecretText:
    """A secret config value: its text is never part of a repr, a message or an exception.

    `value` is None when only the stack file's ciphertext was read (the planner's path)."""

    __slots__ = ("value",)

    def __init__(self, value: str | None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "SecretText(<secret>)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretText) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


@dataclass(frozen=True)
class SshEndpointConfig:
    """How to reach a host over SSH: address, user, port, the name of its private key in the
    stack's secret `sshPrivateKeys`, and its pinned host key (or, on purpose, none)."""

    address: str
    user: str = "root"
    port: int = 22
    private_key: str = "default"
    host_key: str | None = None
    insecure_skip_host_key_check: bool = False


@dataclass(frozen=True)
class HostConfig:
    """A machine that joins a tenant as a worker node, reached over SSH (through a bastion or not)."""

    name: str
    ssh: SshEndpointConfig
    bastion: SshEndpointConfig | None = None

    @property
    def address(self) -> str:
        """Its IPv4 address: the SSH address and the address it reaches the tenant API from."""
        return self.ssh.address


@dataclass(frozen=True)
class TenantConfig:
    """One tenant: its control plane, networks, workers and GPUs."""

    name: str
    kubernetes_version: str
    control_plane_replicas: int
    pod_cidr: str
    service_cidr: str
    workers: int
    gpus: GpuPoolConfig | None
    hami: HamiConfig = field(default_factory=HamiConfig)
    gpu_quotas: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # Which /25 of the Docker network's worker addresses (shared) or which /24 of tenantSubnet
    # (own network) is this tenant's (network.py).
    address_block: int = 0
    gpu_workloads: tuple[GpuWorkloadConfig, ...] = ()
    # Worker hosts joined over SSH (management mode existing); `workers` is then their number.
    hosts: tuple[HostConfig, ...] = ()
    # The Service's node ports when the management cluster exposes tenant APIs as NodePort.
    api_node_port: int | None = None
    konnectivity_node_port: int | None = None
    # kind: a Docker network of its own (the default), or the platform's shared one (in 0.1.0).
    worker_network: str = WORKER_NETWORK_OWN

    @property
    def kubernetes_minor(self) -> int:
        """The minor of kubernetesVersion (v1.35.0: 35)."""
        return int(self.kubernetes_version.lstrip("v").split(".")[1])

    @property
    def own_network(self) -> bool:
        """Its worker containers are on a Docker network of their own (kind, not hosts)."""
        return not self.hosts and self.worker_network == WORKER_NETWORK_OWN

    @property
    def on_hosts(self) -> bool:
        """Its workers are machines reached over SSH, not containers on the platform's network."""
        return bool(self.hosts)

    @property
    def namespace(self) -> str:
        return self.name

    @property
    def dns_service_ip(self) -> str:
        """Kamaji's own default: the 10th address of the service CIDR."""
        return str(ipaddress.ip_network(self.service_cidr)[10])

    def worker_names(self) -> list[str]:
        if self.hosts:
            return [host.name for host in self.hosts]
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
    mode: str = MODE_KIND
    # existing: a context of a kubeconfig file (else the stack's secret managementKubeconfig).
    kubeconfig_context: str | None = None
    kubeconfig_file: str | None = None
    install_cert_manager: bool = True
    install_metallb: bool = True
    api_exposure: str = LOAD_BALANCER
    # existing, NodePort: the management node address workers and Pulumi reach node ports on.
    node_port_address: str | None = None
    # existing: where Pulumi's host and operators reach tenant APIs from (as the control plane
    # pods see them), besides each tenant's own worker hosts.
    api_client_cidrs: tuple[str, ...] = ()
    # kind: where the tenants' own Docker networks are cut from, a /24 each (network.py).
    tenant_subnet: str = "172.24.0.0/16"
    # The kubelet's own default (KubeletConfiguration failCgroupV1, true since v1.35): false lets
    # every kubelet the platform configures start on a cgroup v1 host (tenant/cgroup_v1.py).
    fail_cgroup_v1: bool = True

    @property
    def is_kind(self) -> bool:
        return self.mode == MODE_KIND

    @property
    def pool_range(self) -> str | None:
        """The MetalLB range: configured, or the default of the kind network's layout; none for an
        existing cluster without one (its load balancer, or NodePort, gives the addresses)."""
        if self.metallb_address_range or not self.is_kind:
            return self.metallb_address_range
        return network.layout(self.docker_subnet).default_pool_range()

    @property
    def manages_pool(self) -> bool:
        """The platform installs MetalLB and gives it the address pool."""
        return self.install_metallb and self.pool_range is not None


@dataclass(frozen=True)
class PodShapeConfig:
    """A reference GPU workload: HAMi resource limits of one container."""

    gpumem: int = 20000
    gpucores: int = 30
    gpu: int = 1


@dataclass(frozen=True)
class ImagesConfig:
    """Where images come from: their own registries, or one mirror (kamaji_hami_platform/mirror.py)."""

    mirror: str | None = None


@dataclass(frozen=True)
class PlatformConfig:
    """The whole validated stack configuration."""

    management: ManagementConfig
    tenants: tuple[TenantConfig, ...]
    gpu_models: Mapping[str, GpuModelConfig]
    reference_pod: PodShapeConfig = field(default_factory=PodShapeConfig)
    # What a preview does when declared GPU workloads do not all fit: fail, or warn.
    gpu_capacity_enforcement: str = "mandatory"
    # The stack's secrets (existing mode): the management kubeconfig, SSH private keys by name.
    management_kubeconfig: SecretText | None = None
    ssh_private_keys: Mapping[str, SecretText] = field(default_factory=dict)
    images: ImagesConfig = field(default_factory=ImagesConfig)

# The 0.1.0 names of the validated shapes (each is a `*Config` now), kept for one release
# (CHANGELOG.md). HamiSettings has none: that name is the typed dictionary of settings now.
GpuModel = GpuModelConfig
GpuPool = GpuPoolConfig
GpuWorkload = GpuWorkloadConfig
SshEndpoint = SshEndpointConfig
WorkerHost = HostConfig
PodShape = PodShapeConfig
