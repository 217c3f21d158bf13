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

# Where the management cluster comes from: a kind cluster the platform creates on this machine, or
# a cluster that exists (its kubeconfig in the stack's secrets, or a context of a kubeconfig file).
MODE_KIND, MODE_EXISTING = "kind", "existing"
MODES = (MODE_KIND, MODE_EXISTING)
# How a tenant's API server (and Konnectivity) is exposed: Kamaji's Service types
# (clastix/kamaji 26.8.2-edge api/v1alpha1 ServiceType).
LOAD_BALANCER, NODE_PORT = "LoadBalancer", "NodePort"
API_EXPOSURES = (LOAD_BALANCER, NODE_PORT)
# kube-apiserver's default --service-node-port-range.
NODE_PORT_MIN, NODE_PORT_MAX = 30000, 32767
# The stack's secret keys: set with `pulumi config set --secret`, never read as plain text.
MANAGEMENT_KUBECONFIG_KEY = "managementKubeconfig"
SSH_KEYS_KEY = "sshPrivateKeys"
SECRET_CONFIG_KEYS = (MANAGEMENT_KUBECONFIG_KEY, SSH_KEYS_KEY)
# The Pulumi stack file's form of an encrypted value (what the planner reads, never decrypts).
SECURE_KEY = "secure"
# Keys of `management` only a kind cluster has.
KIND_ONLY_MANAGEMENT_KEYS = ("nodeImage", "dockerNetwork", "dockerSubnet")
# Keys of `management` only an existing cluster has.
EXISTING_ONLY_MANAGEMENT_KEYS = ("kubeconfigContext", "kubeconfigFile", "nodePortAddress", "apiClientCidrs")

# Text rules, each one regex for both readers: the validator (re.fullmatch) and the JSON Schema
# (`^(?:...)$`, ECMA-262). Hence no anchors and ASCII classes only: Python's `\d` takes any
# Unicode digit and its `$` a trailing newline, ECMA's neither.
DNS_1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
DOCKER_NETWORK_NAME = "[a-zA-Z0-9][a-zA-Z0-9_.-]*"
IMAGE_WITH_TAG = "[a-z0-9./:_-]+:[A-Za-z0-9_.-]+(@sha256:[a-f0-9]{64})?"
# An image tag: no leading zeros (kindest/node:v1.035.0 does not exist).
_NUMBER = "(0|[1-9][0-9]*)"
K8S_VERSION_FORMAT = f"v{_NUMBER}\\.{_NUMBER}\\.{_NUMBER}"
K8S_VERSION_SUPPORTED = (f"v{versions.KUBERNETES_MAJOR}\\.("
                         + "|".join(str(minor) for minor in range(versions.TENANT_MIN_MINOR,
                                                                  versions.TENANT_MAX_MINOR + 1))
                         + f")\\.{_NUMBER}")
# 1s..300s or 1m..5m (HAMi's node-lock expiry).
DURATION_1S_TO_5M = "0*([1-9][0-9]?|[12][0-9][0-9]|300)s|0*[1-5]m"
NVIDIA_PRODUCT = "[\\s\\S]*[Nn][Vv][Ii][Dd][Ii][Aa][\\s\\S]*"
# What `_check_address_range` parses first: two parts joined by exactly one '-'.
ADDRESS_RANGE_SHAPE = "[^-]*-[^-]*"
_DURATION = re.compile("([0-9]+)(s|m)")
_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_QUAD = f"{_OCTET}(\\.{_OCTET}){{3}}"


def cidr_pattern(min_prefix: int, max_prefix: int) -> str:
    """What `ipaddress.ip_network` reads as an IPv4 network with a prefix in the bounds (an integer
    prefix, leading zeros allowed), or with a written-out mask (its length is checked in code)."""
    lengths = "|".join(str(length) for length in range(min_prefix, max_prefix + 1))
    return f"{_QUAD}/(0*({lengths})|{_QUAD})"


class ConfigError(ValueError):
    """The stack configuration is invalid; `problems` lists every finding."""

    def __init__(self, problems: list[str], code_only: list[str] | None = None) -> None:
        self.problems = list(problems)
        # The problems found by CODE_ONLY_RULES, which the JSON Schema cannot see.
        self.code_only = list(code_only or ())
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
    match = _DURATION.fullmatch(text)
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1) if match else 0


@dataclass(frozen=True)
class GpuPool:
    """The GPUs each worker of a tenant carries."""

    model: GpuModel
    per_worker: int
    mock: bool = True


@dataclass(frozen=True)
class GpuWorkload:
    """A GPU workload a tenant declares: `replicas` pods, each asking `gpu` cards with either
    `gpumem` MiB or `gpumem_percentage` % of each card's memory, and `gpucores` % of its compute."""

    name: str
    replicas: int
    gpu: int = 1
    gpumem: int | None = None
    gpumem_percentage: int | None = None
    gpucores: int = 0
    type: str | None = None
    namespace: str = "default"

    def limits(self) -> dict[str, int]:
        """The container limits its pods carry (HAMi's resource names)."""
        limits = {"nvidia.com/gpu": self.gpu, "nvidia.com/gpucores": self.gpucores}
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
class SshEndpoint:
    """How to reach a host over SSH: address, user, port, and the name of its private key in the
    stack's secret `sshPrivateKeys`."""

    address: str
    user: str = "root"
    port: int = 22
    private_key: str = "default"
    host_key: str | None = None


@dataclass(frozen=True)
class WorkerHost:
    """A machine that joins a tenant as a worker node, reached over SSH (through a bastion or not)."""

    name: str
    ssh: SshEndpoint
    bastion: SshEndpoint | None = None

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
    gpus: GpuPool | None
    hami: HamiSettings = field(default_factory=HamiSettings)
    gpu_quotas: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # Which /25 of the Docker network's worker addresses is this tenant's (docker_network.py).
    address_block: int = 0
    gpu_workloads: tuple[GpuWorkload, ...] = ()
    # Worker hosts joined over SSH (management mode existing); `workers` is then their number.
    hosts: tuple[WorkerHost, ...] = ()
    # The Service's node ports when the management cluster exposes tenant APIs as NodePort.
    api_node_port: int | None = None
    konnectivity_node_port: int | None = None

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

    @property
    def is_kind(self) -> bool:
        return self.mode == MODE_KIND

    @property
    def pool_range(self) -> str | None:
        """The MetalLB range: configured, or the default of the kind network's layout; none for an
        existing cluster without one (its load balancer, or NodePort, gives the addresses)."""
        if self.metallb_address_range or not self.is_kind:
            return self.metallb_address_range
        return docker_network.layout(self.docker_subnet).default_pool_range()

    @property
    def manages_pool(self) -> bool:
        """The platform installs MetalLB and gives it the address pool."""
        return self.install_metallb and self.pool_range is not None


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
    # What a preview does when declared GPU workloads do not all fit: fail, or warn.
    gpu_capacity_enforcement: str = "mandatory"
    # The stack's secrets (existing mode): the management kubeconfig, SSH private keys by name.
    management_kubeconfig: SecretText | None = None
    ssh_private_keys: Mapping[str, SecretText] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    """A rule on a string's text: a regex (see DNS_1035) and an optional length limit, with the
    message (`{value!r}` for the value) the validator reports when the value breaks either."""

    pattern: str
    message: str
    max_length: int | None = None

    def passes(self, value: str) -> bool:
        return (self.max_length is None or len(value) <= self.max_length) and bool(
            re.fullmatch(self.pattern, value))


@dataclass(frozen=True)
class Field:
    """One config key: what both the validator and the JSON Schema generator read.

    `type` is a JSON Schema type. The validator checks string, integer and boolean keys itself
    (`_read_section`); an object or array key is a section (`ref`, a `$defs` name) or map that its
    own parse function reads. `in_code`: the key's checks need another key, so its parse function
    does them (the schema still gets `checks`).
    """

    key: str
    type: str
    description: str
    default: Any = None
    required: bool = False
    nullable: bool = False
    minimum: int | None = None
    maximum: int | None = None
    enum: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()
    reserved: tuple[str, ...] = ()
    reserved_message: str = ""
    cidr_prefix: tuple[int, int] | None = None
    ref: str | None = None
    in_code: bool = False


@dataclass(frozen=True)
class Section:
    """A mapping of the config with a fixed set of keys (unknown keys are refused)."""

    name: str
    description: str
    fields: tuple[Field, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(f.key for f in self.fields)

    def field(self, key: str) -> Field:
        return next(f for f in self.fields if f.key == key)


def _dns_check(max_length: int) -> Check:
    return Check(DNS_1035, f"{{value!r}} is not a DNS-1035 label of at most {max_length} characters "
                           "(lowercase letters, digits and '-', starting with a letter)", max_length)


def _integer_field(key: str, description: str, default: int | None, minimum: int, maximum: int | None,
                   required: bool = False) -> Field:
    return Field(key, "integer", description, default=default, minimum=minimum, maximum=maximum,
                 required=required)


_MANAGEMENT_DEFAULTS = ManagementConfig()
_HAMI_DEFAULTS = HamiSettings()
_POD_DEFAULTS = PodShape()
INT32_MAX = 2**31 - 1
# The generated names (`<name>-worker-<n>`, `<name>-admin-kubeconfig`, kind's containers) must stay
# valid names: 40 characters leave room for the longest suffix (names.py checks each).
MAX_NAME_LENGTH = 40

ADDON = Section("addon", "A management-cluster add-on: installed by the platform, or already there.", (
    Field("install", "boolean", "install it (false, existing mode only: the cluster already has it, or a "
          "cloud load balancer stands in for MetalLB)", default=True),
))
IPV4_ADDRESS = Check(_QUAD, "{value!r} must be an IPv4 address")
HOST_NAME = Check("[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", "{value!r} must be a host name or IPv4 address")
# What `ssh-keyscan` prints after the host name, and what pulumi-command's `hostKey` takes. Not
# ssh-rsa: pulumi-command then offers only the key's type as host key algorithm, SHA-1 `ssh-rsa`
# (v1.2.1 provider/pkg/provider/remote/connection.go SSHConfig: `hostKeyAlgorithms =
# []string{publicKey.Type()}`), which OpenSSH 8.8 and later refuse: use the ed25519 or ECDSA key.
SSH_HOST_KEY = Check("(ssh-ed25519|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+={0,3}",
                     "{value!r} must be an ed25519 or ECDSA public host key like 'ssh-ed25519 AAAA...' "
                     "(ssh-keyscan -t ed25519 <host> prints it; pulumi-command cannot use an ssh-rsa "
                     "host key with OpenSSH 8.8+)")
KEY_NAME = Check("[A-Za-z0-9][A-Za-z0-9_.-]*", "{value!r} must name an entry of sshPrivateKeys")


def _ssh_fields(address: Field) -> tuple[Field, ...]:
    return (
        address,
        Field("user", "string", "SSH user: root, or a user with password-less sudo", default="root",
              checks=(Check("[a-z_][a-z0-9_-]*[$]?", "{value!r} is not a user name"),)),
        _integer_field("port", "SSH port", 22, 1, 65535),
        Field("privateKey", "string", "name of its private key in the secret sshPrivateKeys",
              required=True, checks=(KEY_NAME,)),
        Field("hostKey", "string", "its public SSH host key, checked on connect (else any key is "
              "accepted)", nullable=True, checks=(SSH_HOST_KEY,)),
    )


BASTION = Section("bastion", "A jump host the worker host is reached through.", _ssh_fields(
    Field("address", "string", "host name or IPv4 address", required=True, checks=(HOST_NAME,))))
HOST = Section("host", "A machine that joins the tenant as a worker node over SSH (management mode "
               "existing).", (
    Field("name", "string", "its Kubernetes node name (DNS-1123 label), unique in the stack", required=True,
          checks=(Check("[a-z0-9]([-a-z0-9]*[a-z0-9])?", "{value!r} is not a DNS-1123 label of at most 63 "
                        "characters", 63),)),
    *_ssh_fields(Field("address", "string", "its IPv4 address: SSH goes there, and the tenant's control "
                       "plane admits it", required=True, checks=(IPV4_ADDRESS,))),
    Field("bastion", "object", "a jump host to reach it through", nullable=True, ref=BASTION.name),
))

MANAGEMENT = Section("management", "The management cluster (kind on this machine, or an existing one) and, "
                     "for kind, the platform's Docker network.", (
    Field("name", "string", "kind cluster name (DNS-1035 label)", default=_MANAGEMENT_DEFAULTS.name,
          checks=(_dns_check(MAX_NAME_LENGTH),)),
    Field("nodeImage", "string", "image of the management node (tag required, digest optional)",
          default=_MANAGEMENT_DEFAULTS.node_image,
          checks=(Check(IMAGE_WITH_TAG, "{value!r} must be an image with an explicit tag"),)),
    Field("dockerNetwork", "string", "the platform's own Docker network, created before kind and removed "
          "by make down", default=_MANAGEMENT_DEFAULTS.docker_network,
          checks=(Check(DOCKER_NETWORK_NAME, "{value!r} is not a Docker network name"),)),
    Field("dockerSubnet", "string", "IPv4 subnet of that network, /16 to /24 (workers' fixed addresses, "
          "MetalLB)", default=_MANAGEMENT_DEFAULTS.docker_subnet,
          cidr_prefix=(docker_network.MIN_PREFIX, docker_network.MAX_PREFIX)),
    Field("metallbAddressRange", "string", "first-last IPv4 range for MetalLB, inside the last quarter of "
          "dockerSubnet (default: that quarter's top 51 addresses)", nullable=True, in_code=True,
          checks=(Check(ADDRESS_RANGE_SHAPE, "{value!r} must look like 172.30.255.200-172.30.255.250"),)),
    _integer_field("kamajiEtcdReplicas", "kamaji-etcd replicas (1 is enough on a laptop)",
                   _MANAGEMENT_DEFAULTS.kamaji_etcd_replicas, 1, 5),
    Field("mode", "string", "kind: a kind cluster on this machine; existing: a cluster you have",
          default=MODE_KIND, enum=MODES),
    Field("kubeconfigContext", "string", "existing: the context of kubeconfigFile to use (else the secret "
          "managementKubeconfig)", nullable=True),
    Field("kubeconfigFile", "string", "existing: the kubeconfig file of kubeconfigContext (default: "
          "$KUBECONFIG, else ~/.kube/config)", nullable=True),
    Field("certManager", "object", "cert-manager (Kamaji needs it)", nullable=True, ref=ADDON.name),
    Field("metallb", "object", "MetalLB (the tenant API addresses)", nullable=True, ref=ADDON.name),
    Field("apiExposure", "string", "how tenant API servers are exposed: LoadBalancer or NodePort (existing "
          "mode; each tenant then gives apiNodePort and konnectivityNodePort)", default=LOAD_BALANCER,
          enum=API_EXPOSURES),
    Field("nodePortAddress", "string", "existing, NodePort: the management node address workers reach "
          "tenant APIs on", nullable=True, checks=(IPV4_ADDRESS,)),
    Field("apiClientCidrs", "array", "existing: the IPv4 CIDRs Pulumi's host and operators reach tenant "
          "APIs from, as the control plane pods see them (kube-proxy masquerades external traffic to "
          "the management nodes' addresses: include their network)",
          nullable=True, cidr_prefix=(0, 32), in_code=True),
))

GPU_MODEL = Section("gpuModel", "An extra GPU model as HAMi registers it.", (
    _integer_field("memoryMiB", "memory of one card in MiB", None, 1, INT32_MAX, required=True),
    _integer_field("cores", "compute of one card in percent", None, 1, 100, required=True),
    _integer_field("splitCount", "how many pods may share one card", None, 1, 1024, required=True),
    Field("product", "string", "the card's product string; must contain NVIDIA", required=True,
          checks=(Check(NVIDIA_PRODUCT, "{value!r} must contain 'NVIDIA': HAMi only registers NVIDIA "
                                        "devices whose type says so"),)),
))

HAMI = Section("hami", "HAMi scheduler settings of one tenant.", (
    Field("gpuSchedulerPolicy", "string", "how HAMi picks a card: binpack or spread",
          default=_HAMI_DEFAULTS.gpu_scheduler_policy, enum=GPU_POLICIES),
    Field("nodeSchedulerPolicy", "string", "how HAMi picks a node: binpack or spread",
          default=_HAMI_DEFAULTS.node_scheduler_policy, enum=NODE_POLICIES),
    Field("nodeLockTimeout", "string", "HAMi node-lock expiry, 1s..5m",
          default=_HAMI_DEFAULTS.node_lock_timeout,
          checks=(Check(DURATION_1S_TO_5M, "{value!r} must be a duration like '5s' or '1m', "
                                           "between 1s and 5m"),)),
    _integer_field("schedulerReplicas", "HAMi scheduler pods (leader-elected)",
                   _HAMI_DEFAULTS.scheduler_replicas, 1, 3),
))

GPUS = Section("gpus", "The GPUs each worker of a tenant carries.", (
    Field("model", "string", "GPU model: built-in A100-80GB or one of gpuModels", required=True),
    _integer_field("perWorker", "cards per worker (HAMi sorts up to 12 cards stably)", 1, 1,
                   MAX_CARDS_PER_NODE),
    Field("mock", "boolean", "register mock cards (no hardware)", default=True),
))

QUOTA_LIMITS = Section("gpuQuota", "GPU quota of one namespace of the tenant cluster.", tuple(
    _integer_field(key, description, None, 0, None) for key, description in (
        ("limits.nvidia.com/gpumem", "GPU memory in MiB (HAMi enforces it)"),
        ("limits.nvidia.com/gpucores", "GPU cores in percent (HAMi enforces it)"),
        ("requests.nvidia.com/gpu", "cards (Kubernetes counts the extended resource)"))))
assert QUOTA_LIMITS.keys == QUOTA_KEYS
# The namespaces of a tenant's gpuQuotas.
QUOTA_NAMESPACE = _dns_check(63)

MAX_REPLICAS = 1000
GPU_WORKLOAD = Section("gpuWorkload", "A GPU workload the tenant declares: every preview plans it on the "
                       "tenant's cards as HAMi would, in declared order, replicas in turn.", (
    Field("name", "string", "the workload's name (DNS-1123 label), unique in the tenant", required=True,
          checks=(_dns_check(63),)),
    _integer_field("replicas", "pods of this shape", 1, 1, MAX_REPLICAS),
    _integer_field("gpu", "cards per pod (nvidia.com/gpu)", 1, 1, MAX_CARDS_PER_NODE),
    Field("gpumem", "integer", "GPU memory per card in MiB (nvidia.com/gpumem); this or "
          "gpumemPercentage", minimum=1, maximum=INT32_MAX, in_code=True),
    Field("gpumemPercentage", "integer", "percent of each card's memory (nvidia.com/gpumem-percentage); "
          "this or gpumem", minimum=1, maximum=100, in_code=True),
    _integer_field("gpucores", "percent of each card's compute (nvidia.com/gpucores)", 0, 0, 100),
    Field("type", "string", "card type the pods ask for (nvidia.com/use-gputype): part of the model's "
          "product string", in_code=True),
    Field("namespace", "string", "namespace of the tenant cluster the pods run in", default="default",
          checks=(_dns_check(63),)),
))
ENFORCEMENTS = ("mandatory", "warning")
GPU_CAPACITY = Section("gpuCapacity", "What a preview does when declared GPU workloads do not fit.", (
    Field("enforcement", "string", "mandatory: the preview fails; warning: it warns and goes on",
          default="mandatory", enum=ENFORCEMENTS),
))

TENANT = Section("tenant", "One tenant: its control plane, networks, workers and GPUs.", (
    Field("name", "string", "DNS-1035 label: the namespace and TenantControlPlane name", required=True,
          checks=(_dns_check(MAX_NAME_LENGTH),), reserved=RESERVED_NAMESPACES,
          reserved_message="{value!r} is a namespace the management cluster uses"),
    Field("kubernetesVersion", "string", f"v1.X.Y with X in {versions.TENANT_MIN_MINOR}.."
          f"{versions.TENANT_MAX_MINOR} (Kamaji {versions.KAMAJI_IMAGE_TAG}); workers run "
          "kindest/node:<this>",
          required=True, checks=(
              Check(K8S_VERSION_FORMAT, "{value!r} must look like v1.35.0 (the kindest/node and "
                                        "registry.k8s.io/kube-scheduler tag format)"),
              Check(K8S_VERSION_SUPPORTED, f"{{value!r}} is outside v1.{versions.TENANT_MIN_MINOR}-"
                                           f"v1.{versions.TENANT_MAX_MINOR}, the range Kamaji "
                                           f"{versions.KAMAJI_IMAGE_TAG} accepts"))),
    _integer_field("controlPlaneReplicas", "API server pods", 1, 1, 5),
    Field("podCidr", "string", "IPv4 pod CIDR, /8 to /22: one /24 per worker", required=True,
          cidr_prefix=(8, 22)),
    Field("serviceCidr", "string", "IPv4 service CIDR, /12 to /28", required=True, cidr_prefix=(12, 28)),
    _integer_field("workers", "worker nodes, at most one per /24 of podCidr", 1, 0, names.MAX_WORKERS),
    Field("gpus", "object", "the GPUs of each worker (none when absent)", nullable=True, ref=GPUS.name),
    Field("hami", "object", "HAMi scheduler settings", nullable=True, ref=HAMI.name),
    Field("gpuQuotas", "object", "namespace of the tenant cluster -> its GPU quota", nullable=True,
          ref="gpuQuotas"),
    Field("addressBlock", "integer", "which block of 128 worker addresses of the Docker network is this "
          "tenant's (default: its position in tenants); create-only", minimum=0),
    Field("gpuWorkloads", "array", "GPU workloads the tenant's teams will run: each preview says whether "
          "they fit", nullable=True, ref=GPU_WORKLOAD.name),
    Field("hosts", "array", "worker hosts joined over SSH (management mode existing), instead of workers",
          nullable=True, ref=HOST.name),
    Field("apiNodePort", "integer", "the API server's node port (management apiExposure NodePort)",
          nullable=True, minimum=NODE_PORT_MIN, maximum=NODE_PORT_MAX),
    Field("konnectivityNodePort", "integer", "Konnectivity's node port (management apiExposure NodePort)",
          nullable=True, minimum=NODE_PORT_MIN, maximum=NODE_PORT_MAX),
))

REFERENCE_POD = Section("referencePod", "A reference GPU workload for the capacity outputs.", (
    _integer_field("gpumem", "GPU memory per pod in MiB", _POD_DEFAULTS.gpumem, 1, INT32_MAX),
    _integer_field("gpucores", "GPU cores per pod in percent", _POD_DEFAULTS.gpucores, 0, 100),
    _integer_field("gpu", "cards per pod", _POD_DEFAULTS.gpu, 1, MAX_CARDS_PER_NODE),
))

# The stack config's own keys (each `kamaji-hami-platform:<key>` in Pulumi.<stack>.yaml). Other keys of
# the project namespace are not read, so not refused either.
ROOT = Section("config", "The platform's keys of a stack's config.", (
    Field("management", "object", "the kind management cluster", nullable=True, ref=MANAGEMENT.name),
    Field("tenants", "array", "the tenants, at least one", required=True, ref=TENANT.name),
    Field("gpuModels", "object", "extra GPU models by name (A100-80GB is built in)", nullable=True,
          ref="gpuModels"),
    Field("referencePod", "object", "workload shape for the capacity outputs", nullable=True,
          ref=REFERENCE_POD.name),
    Field("gpuCapacity", "object", "what a preview does when declared GPU workloads do not fit",
          nullable=True, ref=GPU_CAPACITY.name),
    Field(MANAGEMENT_KUBECONFIG_KEY, "string", "secret: the existing management cluster's kubeconfig "
          "(pulumi config set --secret managementKubeconfig < file)", nullable=True, ref="secret"),
    Field(SSH_KEYS_KEY, "object", "secret: SSH private keys by name, for worker hosts and bastions "
          "(pulumi config set --secret --path 'sshPrivateKeys.<name>' < key)", nullable=True,
          ref=SSH_KEYS_KEY),
))
SECTIONS = (MANAGEMENT, GPU_MODEL, HAMI, GPUS, QUOTA_LIMITS, GPU_WORKLOAD, TENANT, REFERENCE_POD,
            GPU_CAPACITY, ADDON, BASTION, HOST)
_TENANT_KEYS = TENANT.keys
CONFIG_KEYS = ROOT.keys

# Rules the JSON Schema cannot express: they compare keys, or read a value as more than text.
# The validator tags each problem they find (ConfigError.code_only); the schema lists them.
CODE_ONLY_RULES: Mapping[str, str] = {
    "overlap": "CIDRs must not overlap each other or kind's own pod and service CIDRs "
               f"({MANAGEMENT_POD_CIDR}, {MANAGEMENT_SERVICE_CIDR}); the dockerSubnet neither",
    "address-block": "each tenant's addressBlock is its own and inside management.dockerSubnet",
    "duplicate-name": "tenant names are unique",
    "generated-names": "every name generated from management.name and tenant names (containers, "
                       "Secrets, Services) stays valid",
    "node-ranges": "workers fit the pod CIDR: one /24 each",
    "gpus-without-workers": "a tenant with gpus has at least one worker",
    "gpu-model": "gpus.model is built in or defined in gpuModels",
    "address-range": "management.metallbAddressRange is two IPv4 addresses, in order, inside the last "
                     "quarter of management.dockerSubnet",
    "cidr-value": "a CIDR has no host bits set, and a written-out mask (a.b.c.d/255.255.0.0) is a valid "
                  "mask within the prefix bounds",
    "workload-memory": "a GPU workload gives exactly one of gpumem and gpumemPercentage",
    "workload-model": "a GPU workload fits a card of the tenant's model (memory, cards per worker, type) "
                      "and its tenant has GPUs; workload names are unique in a tenant",
    "integral-float": "integers are written without a fraction (2, not 2.0: JSON Schema cannot tell "
                      "them apart)",
    "mode": "what management.mode kind or existing needs (its kubeconfig, apiClientCidrs, "
            "metallbAddressRange, nodePortAddress, node ports) and the keys of the other mode it refuses "
            "(container workers or hosts, real GPUs, Docker settings)",
    "worker-kind": "a tenant gives workers or hosts, not both",
    "hosts": "a worker host's name and address are unique in the stack, and its private keys are in "
             "sshPrivateKeys",
    "secret": "managementKubeconfig and sshPrivateKeys are Pulumi secrets: a kubeconfig with a current "
              "context, unencrypted private keys",
}


class _Problems:
    """Collects problems so that all of them are reported at once."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.code_only: list[str] = []

    def add(self, path: str, message: str, rule: str | None = None) -> None:
        """`rule`: the CODE_ONLY_RULES key of a rule the JSON Schema cannot express."""
        problem = f"{path}: {message}"
        self.items.append(problem)
        if rule is not None:
            self.code_only.append(problem)


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
        integral = isinstance(value, float) and value.is_integer()
        problems.add(f"{path}.{key}", f"must be an integer, got {value!r}",
                     "integral-float" if integral else None)
        return None
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        qualifier = "positive, " if minimum == 1 else ""
        problems.add(f"{path}.{key}", f"must be {qualifier}{bound}, got {value}")
        return None
    return value


def _boolean(obj: Mapping[str, Any], key: str, path: str, problems: _Problems, default: bool) -> bool | None:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        problems.add(f"{path}.{key}", f"must be true or false, got {value!r}")
        return None
    return value


def _ipv4_network(value: str | None, path: str, problems: _Problems,
                  min_prefix: int, max_prefix: int) -> ipaddress.IPv4Network | None:
    if value is None:
        return None
    # Text the schema's pattern accepts and ipaddress refuses: host bits or a written-out mask.
    rule = "cidr-value" if re.fullmatch(cidr_pattern(min_prefix, max_prefix), value) else None
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as error:
        problems.add(path, f"{value!r} is not a valid CIDR ({error})", rule)
        return None
    if not isinstance(network, ipaddress.IPv4Network):
        problems.add(path, f"{value!r} must be an IPv4 CIDR")
        return None
    if not min_prefix <= network.prefixlen <= max_prefix:
        problems.add(path, f"{value!r} must have a prefix between /{min_prefix} and /{max_prefix}", rule)
        return None
    return network


def _text_ok(spec: Field, value: str, path: str, problems: _Problems) -> bool:
    """The string rules of a key: enum, checks (the first broken one reports), reserved words, CIDR."""
    if spec.enum and value not in spec.enum:
        problems.add(path, f"{value!r} must be one of {', '.join(spec.enum)}")
        return False
    broken = next((check for check in spec.checks if not check.passes(value)), None)
    if broken is not None:
        problems.add(path, broken.message.format(value=value))
    reserved = value in spec.reserved
    if reserved:
        problems.add(path, spec.reserved_message.format(value=value))
    if spec.cidr_prefix is not None:
        return _ipv4_network(value, path, problems, *spec.cidr_prefix) is not None
    return broken is None and not reserved


def _read_value(obj: Mapping[str, Any], spec: Field, path: str, problems: _Problems,
                default: Any) -> tuple[Any, bool]:
    """(value, valid) of one string, integer or boolean key."""
    if spec.type == "integer":
        number = _integer(obj, spec.key, path, problems, default, spec.minimum or 0, spec.maximum)
        return number, number is not None
    if spec.type == "boolean":
        flag = _boolean(obj, spec.key, path, problems, default)
        return flag, flag is not None
    text = _string(obj, spec.key, path, problems, default)
    return text, text is not None and _text_ok(spec, text, f"{path}.{spec.key}", problems)


def _read_section(obj: Mapping[str, Any], section: Section, path: str, problems: _Problems,
                  defaults: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], set[str]]:
    """Unknown keys, then every string, integer and boolean key of `section` by its Field: the
    values (a default where absent) and the keys whose value is invalid."""
    _unknown_keys(obj, section.keys, path, problems)
    values: dict[str, Any] = {}
    invalid: set[str] = set()
    for spec in section.fields:
        if spec.type in ("object", "array") or spec.in_code:
            continue
        default = (defaults or {}).get(spec.key, spec.default)
        if obj.get(spec.key) is None and default is None and not spec.required:
            values[spec.key] = None  # optional, without a default: absent
            continue
        values[spec.key], valid = _read_value(obj, spec, path, problems, default)
        if not valid:
            invalid.add(spec.key)
    return values, invalid


def _parse_gpu_models(raw: Any, problems: _Problems) -> dict[str, GpuModel]:
    models = dict(BUILTIN_GPU_MODELS)
    for name, spec in _mapping(raw, "gpuModels", problems).items():
        path = f"gpuModels.{name}"
        if name in BUILTIN_GPU_MODELS:
            problems.add(path, "redefines a built-in GPU model")
            continue
        values, invalid = _read_section(_mapping(spec, path, problems), GPU_MODEL, path, problems)
        if not invalid:
            models[str(name)] = GpuModel(str(name), values["memoryMiB"], values["cores"],
                                         values["splitCount"], values["product"])
    return models


def _parse_hami(raw: Any, path: str, problems: _Problems) -> HamiSettings:
    values, invalid = _read_section(_mapping(raw, path, problems), HAMI, path, problems)
    if invalid:
        return HamiSettings()
    return HamiSettings(values["gpuSchedulerPolicy"], values["nodeSchedulerPolicy"],
                        values["nodeLockTimeout"], values["schedulerReplicas"])


def _parse_gpus(raw: Any, path: str, workers: int | None, models: Mapping[str, GpuModel],
                problems: _Problems) -> GpuPool | None:
    if raw is None:
        return None
    values, invalid = _read_section(_mapping(raw, path, problems), GPUS, path, problems)
    model_name = values["model"]
    model = models.get(model_name) if model_name is not None else None
    if model_name is not None and model is None:
        problems.add(f"{path}.model", f"unknown GPU model {model_name!r} "
                                      f"(defined: {', '.join(sorted(models))})", "gpu-model")
    if workers == 0:
        problems.add(path, "GPUs are requested but the tenant has 0 workers", "gpus-without-workers")
    if model is None or invalid:
        return None
    return GpuPool(model, values["perWorker"], values["mock"])


def _quota_problem(namespace: Any, key: Any, value: Any) -> str | None:
    if key in MISLEADING_QUOTA_KEYS:
        return (f"is enforced by nobody (Kubernetes counts extended resources only as requests): "
                f"use {MISLEADING_QUOTA_KEYS[key]}")
    if str(key).startswith(HAMI_QUOTA_PREFIX) and namespace in WEBHOOK_EXCLUDED_NAMESPACES:
        return (f"is enforced by nobody in {namespace}: HAMi's webhook skips that namespace, so its pods "
                f"never reach HAMi's quota checks (requests.nvidia.com/gpu still applies)")
    if key not in QUOTA_KEYS:
        return f"is not a GPU quota key HAMi or Kubernetes enforces (allowed: {', '.join(QUOTA_KEYS)})"
    if not _is_int(value) or value < QUOTA_LIMITS.field(key).minimum:
        return f"must be a non-negative integer, got {value!r}"
    return None


def _parse_quotas(raw: Any, path: str, problems: _Problems) -> dict[str, dict[str, int]]:
    """namespace in the tenant cluster -> HAMi quota limits."""
    quotas: dict[str, dict[str, int]] = {}
    for namespace, limits in _mapping(raw, path, problems).items():
        ns_path = f"{path}.{namespace}"
        if isinstance(namespace, str) and not QUOTA_NAMESPACE.passes(namespace):
            problems.add(ns_path, QUOTA_NAMESPACE.message.format(value=namespace))
        quota: dict[str, int] = {}
        for key, value in _mapping(limits, ns_path, problems).items():
            problem = _quota_problem(namespace, key, value)
            if problem is None:
                quota[key] = value
            else:
                integral = isinstance(value, float) and value.is_integer()
                problems.add(f"{ns_path}.{key}", problem, "integral-float" if integral else None)
        if not quota and isinstance(limits, Mapping) and not limits:
            problems.add(ns_path, "must set at least one quota key")
        quotas[str(namespace)] = quota
    return quotas


def _parse_tenant(raw: Any, index: int, models: Mapping[str, GpuModel],
                  problems: _Problems) -> TenantConfig | None:
    path = f"tenants[{index}]"
    if not isinstance(raw, Mapping) or not raw:
        problems.add(path, "must be a non-empty mapping")
        return None
    values, invalid = _read_section(raw, TENANT, path, problems, defaults={"addressBlock": index})
    hosts = _parse_hosts(raw.get("hosts"), f"{path}.hosts", problems)
    workers = values["workers"]
    if raw.get("hosts") is not None:
        if raw.get("workers") is not None:
            problems.add(f"{path}.workers", "give workers (containers on the kind network) or hosts "
                         "(machines over SSH), not both: with hosts, their number is the workers'",
                         "worker-kind")
        workers = len(hosts)
    gpus = _parse_gpus(raw.get("gpus"), f"{path}.gpus", workers, models, problems)
    hami = _parse_hami(raw.get("hami"), f"{path}.hami", problems)
    quotas = _parse_quotas(raw.get("gpuQuotas"), f"{path}.gpuQuotas", problems)
    workloads = _parse_workloads(raw.get("gpuWorkloads"), f"{path}.gpuWorkloads", gpus, problems)
    if "podCidr" not in invalid and workers is not None:
        _check_node_ranges(ipaddress.ip_network(values["podCidr"]), workers, path, problems)
    # A name or version that breaks a text rule still builds the tenant, so that the names
    # generated from it are checked too; a missing value or a bad CIDR or number does not.
    missing = {key for key in invalid if values[key] is None}
    if missing or invalid & {"podCidr", "serviceCidr"}:
        return None
    if raw.get("gpus") is not None and gpus is None:
        return None
    given_hosts = raw.get("hosts")
    if given_hosts is not None and (not isinstance(given_hosts, list) or len(hosts) != len(given_hosts)):
        return None
    return TenantConfig(values["name"], values["kubernetesVersion"], values["controlPlaneReplicas"],
                        values["podCidr"], values["serviceCidr"], workers, gpus, hami, quotas,
                        values["addressBlock"], workloads, hosts, values["apiNodePort"],
                        values["konnectivityNodePort"])


def _ssh_endpoint(values: Mapping[str, Any]) -> SshEndpoint:
    return SshEndpoint(values["address"], values["user"], values["port"], values["privateKey"],
                       values["hostKey"])


def _parse_host(raw: Any, path: str, problems: _Problems) -> WorkerHost | None:
    obj = _mapping(raw, path, problems)
    values, invalid = _read_section(obj, HOST, path, problems)
    bastion = None
    if obj.get("bastion") is not None:
        bastion_path = f"{path}.bastion"
        bastion_values, bastion_invalid = _read_section(_mapping(obj["bastion"], bastion_path, problems),
                                                        BASTION, bastion_path, problems)
        if bastion_invalid:
            return None
        bastion = _ssh_endpoint(bastion_values)
    if invalid:
        return None
    return WorkerHost(values["name"], _ssh_endpoint(values), bastion)


def _parse_hosts(raw: Any, path: str, problems: _Problems) -> tuple[WorkerHost, ...]:
    """The worker hosts; any invalid host makes the tenant invalid (its caller compares lengths)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        problems.add(path, f"must be a non-empty list of hosts, got {raw!r}")
        return ()
    hosts = (_parse_host(item, f"{path}[{index}]", problems) for index, item in enumerate(raw))
    return tuple(host for host in hosts if host is not None)


def _check_node_ranges(pod_net: ipaddress.IPv4Network, workers: int, path: str,
                       problems: _Problems) -> None:
    """Every worker needs its own /24 of the pod CIDR (see NODE_POD_CIDR_PREFIX)."""
    ranges = 2 ** max(NODE_POD_CIDR_PREFIX - pod_net.prefixlen, 0)
    if workers > ranges:
        problems.add(f"{path}.workers", f"{workers} workers need {workers} node ranges of "
                                        f"/{NODE_POD_CIDR_PREFIX}, but podCidr {pod_net} holds "
                                        f"only {ranges}: use at most {ranges} workers (a running "
                                        "tenant keeps its podCidr; only a new tenant can take a "
                                        "larger one)", "node-ranges")


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
                               "tenants' worker addresses; use a larger subnet", "address-block")
        elif tenant.address_block in owner:
            problems.add(path, f"{tenant.address_block} is also {owner[tenant.address_block]}'s: "
                               "each tenant needs its own", "address-block")
        else:
            owner[tenant.address_block] = f"tenants[{index}] ({tenant.name})"


def _check_overlaps(tenants: list[TenantConfig], management: ManagementConfig,
                    problems: _Problems) -> None:
    claimed: list[tuple[str, ipaddress.IPv4Network | ipaddress.IPv6Network]] = []
    if management.is_kind:  # an existing cluster's own networks are its admin's to keep apart
        claimed += [
            ("the management cluster's pod CIDR", ipaddress.ip_network(MANAGEMENT_POD_CIDR)),
            ("the management cluster's service CIDR", ipaddress.ip_network(MANAGEMENT_SERVICE_CIDR)),
        ]
        docker_subnet = ipaddress.ip_network(management.docker_subnet)
        for owner, other in claimed:
            if docker_subnet.overlaps(other):
                problems.add("management.dockerSubnet", f"{docker_subnet} overlaps {owner} ({other})",
                             "overlap")
        claimed.append(("management.dockerSubnet", docker_subnet))
    for index, tenant in enumerate(tenants):
        for key, cidr in (("podCidr", tenant.pod_cidr), ("serviceCidr", tenant.service_cidr)):
            network = ipaddress.ip_network(cidr)
            for owner, other in claimed:
                if network.overlaps(other):
                    problems.add(f"tenants[{index}].{key}", f"{cidr} overlaps {owner} ({other})", "overlap")
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
        problems.add(path, problem, "generated-names")


def _check_duplicate_names(raw_tenants: list[Any], problems: _Problems) -> None:
    seen: dict[str, int] = {}
    for index, raw_tenant in enumerate(raw_tenants):
        name = raw_tenant.get("name") if isinstance(raw_tenant, Mapping) else None
        if isinstance(name, str) and name in seen:
            problems.add(f"tenants[{index}].name",
                         f"duplicate tenant name {name!r} (also tenants[{seen[name]}])", "duplicate-name")
        elif isinstance(name, str):
            seen[name] = index


def _addon_install(obj: Mapping[str, Any], key: str, problems: _Problems) -> bool:
    path = f"management.{key}"
    values, invalid = _read_section(_mapping(obj.get(key), path, problems), ADDON, path, problems)
    return True if invalid else values["install"]


def _cidr_list(raw: Any, path: str, problems: _Problems) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(item, str) for item in raw):
        problems.add(path, f"must be a non-empty list of IPv4 CIDRs, got {raw!r}")
        return ()
    return tuple(item for index, item in enumerate(raw)
                 if _ipv4_network(item, f"{path}[{index}]", problems, 0, 32) is not None)


def _parse_management(raw: Any, problems: _Problems) -> ManagementConfig:
    obj = _mapping(raw, "management", problems)
    values, invalid = _read_section(obj, MANAGEMENT, "management", problems)
    address_range = obj.get("metallbAddressRange")
    mode = values["mode"] if "mode" not in invalid else MODE_KIND
    if address_range is not None and "dockerSubnet" not in invalid:
        layout = docker_network.layout(values["dockerSubnet"]) if mode == MODE_KIND else None
        _check_address_range(address_range, layout, problems)
    install_cert_manager = _addon_install(obj, "certManager", problems)
    install_metallb = _addon_install(obj, "metallb", problems)
    client_cidrs = _cidr_list(obj.get("apiClientCidrs"), "management.apiClientCidrs", problems)
    # As for a tenant: a name that breaks its text rule still counts for the generated names.
    if "dockerSubnet" in invalid or any(values[key] is None for key in invalid if key != "mode"):
        return ManagementConfig(mode=mode)
    management = ManagementConfig(
        values["name"], values["nodeImage"], values["dockerNetwork"], values["dockerSubnet"], address_range,
        values["kamajiEtcdReplicas"], mode, values["kubeconfigContext"], values["kubeconfigFile"],
        install_cert_manager, install_metallb, values["apiExposure"], values["nodePortAddress"], client_cidrs)
    _check_management_mode(obj, management, problems)
    return management


def _check_management_mode(obj: Mapping[str, Any], management: ManagementConfig, problems: _Problems) -> None:
    """What each mode needs, and the keys of the other mode it cannot use."""
    if management.is_kind:
        for key in EXISTING_ONLY_MANAGEMENT_KEYS:
            if obj.get(key) is not None:
                problems.add(f"management.{key}", "is for mode existing: a kind cluster's address and "
                                                  "kubeconfig are the platform's own", "mode")
        for key, installed in (("certManager", management.install_cert_manager),
                               ("metallb", management.install_metallb)):
            if not installed:
                problems.add(f"management.{key}.install", "must be true in mode kind: the kind cluster the "
                                                          "platform creates has none", "mode")
        if management.api_exposure != LOAD_BALANCER:
            problems.add("management.apiExposure", "must be LoadBalancer in mode kind (MetalLB on the "
                                                   "platform's Docker network); NodePort needs mode existing",
                         "mode")
        return
    for key in KIND_ONLY_MANAGEMENT_KEYS:
        if key in obj:
            problems.add(f"management.{key}", "is for mode kind: mode existing creates no kind cluster "
                         "and no Docker network", "mode")
    if not management.api_client_cidrs:
        problems.add("management.apiClientCidrs", "is required in mode existing: the tenant API servers "
                     "admit only their own worker hosts and these addresses, and Pulumi's host must be "
                     "one of them", "mode")
    load_balancer = management.api_exposure == LOAD_BALANCER
    if load_balancer and management.install_metallb and management.metallb_address_range is None:
        problems.add("management.metallbAddressRange", "is required when the platform installs MetalLB on an "
                                                       "existing cluster: the addresses of the cluster's "
                                                       "network MetalLB may hand out", "mode")
    if management.metallb_address_range is not None and not (load_balancer and management.install_metallb):
        problems.add("management.metallbAddressRange", "is only for MetalLB the platform installs (metallb."
                                                       "install true, apiExposure LoadBalancer)", "mode")
    if not load_balancer and management.node_port_address is None:
        problems.add("management.nodePortAddress", "is required with apiExposure NodePort: the management "
                                                   "node address workers reach tenant APIs on", "mode")
    if load_balancer and management.node_port_address is not None:
        problems.add("management.nodePortAddress", "is only for apiExposure NodePort", "mode")
    if management.kubeconfig_file is not None and management.kubeconfig_context is None:
        problems.add("management.kubeconfigFile", "needs kubeconfigContext: the context of the file to use",
                     "mode")


def _check_address_range(value: Any, layout: docker_network.NetworkLayout | None,
                         problems: _Problems) -> None:
    """`layout`: the kind network the range must lie in (None: an existing cluster's own network)."""
    path = "management.metallbAddressRange"
    shape = MANAGEMENT.field("metallbAddressRange").checks[0]
    if not isinstance(value, str) or not shape.passes(value):
        problems.add(path, shape.message.format(value=value))
        return
    try:
        first, last = docker_network.parse_range(value)
    except ValueError:
        problems.add(path, f"{value!r} must be two IPv4 addresses joined by '-'", "address-range")
        return
    if first > last:
        problems.add(path, f"{value!r} starts after it ends", "address-range")
    elif layout is not None and not (first in layout.pool_quarter and last in layout.pool_quarter):
        problems.add(path, f"{value!r} must lie in {layout.pool_quarter}, the last quarter of "
                           f"management.dockerSubnet: the quarters before it are Docker's own "
                           "addresses (the kind node) and the workers' fixed addresses", "address-range")


def _optional_integer(obj: Mapping[str, Any], key: str, path: str, problems: _Problems) -> int | None:
    spec = GPU_WORKLOAD.field(key)
    if obj.get(key) is None:
        return None
    return _integer(obj, key, path, problems, None, spec.minimum or 0, spec.maximum)


def _parse_workload(raw: Any, path: str, gpus: GpuPool | None, problems: _Problems) -> GpuWorkload | None:
    obj = _mapping(raw, path, problems)
    values, invalid = _read_section(obj, GPU_WORKLOAD, path, problems)
    gpumem = _optional_integer(obj, "gpumem", path, problems)
    percentage = _optional_integer(obj, "gpumemPercentage", path, problems)
    card_type = obj.get("type")
    if card_type is not None and (not isinstance(card_type, str) or not card_type):
        problems.add(f"{path}.type", f"must be a non-empty string, got {card_type!r}")
        invalid.add("type")
    if (obj.get("gpumem") is None) == (obj.get("gpumemPercentage") is None):
        problems.add(path, "give exactly one of gpumem (MiB) and gpumemPercentage", "workload-memory")
        invalid.add("gpumem")
    if invalid or (obj.get("gpumem") is not None and gpumem is None) or \
            (obj.get("gpumemPercentage") is not None and percentage is None):
        return None
    workload = GpuWorkload(values["name"], values["replicas"], values["gpu"], gpumem, percentage,
                           values["gpucores"], card_type, values["namespace"])
    if workload.namespace in WEBHOOK_EXCLUDED_NAMESPACES:
        problems.add(f"{path}.namespace", f"HAMi's webhook skips {workload.namespace}: its pods would keep "
                                          "the default scheduler and never reach HAMi", "workload-model")
    for key, problem in _never_fits(workload, gpus):
        problems.add(f"{path}.{key}" if key else path, problem, "workload-model")
    return workload


def _never_fits(workload: GpuWorkload, gpus: GpuPool | None) -> list[tuple[str, str]]:
    """Why no card of the tenant could ever hold one pod of the workload (key, problem)."""
    if gpus is None:
        return [("", "the tenant has no gpus: no pod of this workload could ever be placed")]
    model = gpus.model
    found = []
    if workload.gpu > gpus.per_worker:
        found.append(("gpu", f"{workload.gpu} cards per pod, but each worker has {gpus.per_worker} "
                             f"{model.name} (HAMi places a pod's cards on one node)"))
    if workload.gpumem is not None and workload.gpumem > model.memory_mib:
        found.append(("gpumem", f"{workload.gpumem} MiB, but each {model.name} card has "
                                f"{model.memory_mib} MiB"))
    if workload.gpucores > model.cores:
        found.append(("gpucores", f"{workload.gpucores} %, but each {model.name} card has {model.cores}"))
    if workload.type is not None and not type_matches(workload.type, model.product):
        found.append(("type", f"{workload.type!r} names no part of {model.product!r}, the tenant's cards "
                              "(HAMi would refuse every card: CardTypeMismatch)"))
    return found


def type_matches(wanted: str, product: str) -> bool:
    """HAMi's use-gputype check (pkg/device/devices.go CheckType): a comma-separated list, each
    entry trimmed, matching when one is part of the card's type, case-insensitively."""
    return any(entry.strip().upper() in product.upper() for entry in wanted.split(",") if entry.strip())


def _parse_workloads(raw: Any, path: str, gpus: GpuPool | None,
                     problems: _Problems) -> tuple[GpuWorkload, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        problems.add(path, f"must be a non-empty list of workloads, got {raw!r}")
        return ()
    workloads = []
    seen: dict[str, int] = {}
    for index, item in enumerate(raw):
        workload = _parse_workload(item, f"{path}[{index}]", gpus, problems)
        if workload is None:
            continue
        if workload.name in seen:
            problems.add(f"{path}[{index}].name", f"duplicate workload name {workload.name!r} (also "
                                                  f"{path}[{seen[workload.name]}])", "workload-model")
        seen.setdefault(workload.name, index)
        workloads.append(workload)
    return tuple(workloads)


def _parse_gpu_capacity(raw: Any, problems: _Problems) -> str:
    values, invalid = _read_section(_mapping(raw, "gpuCapacity", problems), GPU_CAPACITY, "gpuCapacity",
                                    problems)
    return GPU_CAPACITY.field("enforcement").default if invalid else values["enforcement"]


def _parse_reference_pod(raw: Any, problems: _Problems) -> PodShape:
    values, invalid = _read_section(_mapping(raw, "referencePod", problems), REFERENCE_POD, "referencePod",
                                    problems)
    if invalid:
        return PodShape()
    return PodShape(values["gpumem"], values["gpucores"], values["gpu"])


def _check_tenant_mode(raw: Mapping[str, Any], tenant: TenantConfig, path: str,
                       management: ManagementConfig, problems: _Problems) -> None:
    """A tenant's workers, GPUs and ports against the management cluster's mode."""
    real_gpus = tenant.gpus is not None and not tenant.gpus.mock
    if management.is_kind:
        if tenant.on_hosts:
            problems.add(f"{path}.hosts", "need management.mode existing: a kind cluster's tenant APIs are "
                                          "on this machine's Docker network, out of other machines' reach",
                         "mode")
        if real_gpus:
            problems.add(f"{path}.gpus.mock", "false needs worker hosts with NVIDIA GPUs (management.mode "
                                              "existing): kind containers have none", "mode")
    else:
        if tenant.workers and not tenant.on_hosts and "workers" in raw:
            problems.add(f"{path}.workers", "container workers need the kind management cluster's Docker "
                                            "network: give hosts instead (machines reached over SSH)", "mode")
        elif tenant.workers and not tenant.on_hosts:
            problems.add(path, "give hosts (machines reached over SSH), or workers: 0: in mode existing a "
                               "tenant has no container workers (workers defaults to 1)", "mode")
        if "addressBlock" in raw:
            problems.add(f"{path}.addressBlock", "is for mode kind (worker addresses on the platform's "
                         "Docker network); a host's address is its own", "mode")
    node_port = management.api_exposure == NODE_PORT and not management.is_kind
    for key, port in (("apiNodePort", tenant.api_node_port),
                      ("konnectivityNodePort", tenant.konnectivity_node_port)):
        if node_port and port is None:
            problems.add(f"{path}.{key}", "is required with management.apiExposure NodePort (Kamaji "
                         "makes the Service's port its node port)", "mode")
        if not node_port and port is not None:
            problems.add(f"{path}.{key}", "is only for management.apiExposure NodePort", "mode")


def _check_tenant_modes(raw_tenants: list[Any], tenants: list[TenantConfig], management: ManagementConfig,
                        problems: _Problems) -> None:
    parsed = {tenant.name: tenant for tenant in tenants}
    ports: dict[int, str] = {}
    for index, raw in enumerate(raw_tenants):
        name = raw.get("name") if isinstance(raw, Mapping) else None
        tenant = parsed.get(name) if isinstance(name, str) else None
        if tenant is None:
            continue
        path = f"tenants[{index}]"
        _check_tenant_mode(raw, tenant, path, management, problems)
        for key, port in (("apiNodePort", tenant.api_node_port),
                          ("konnectivityNodePort", tenant.konnectivity_node_port)):
            if port is None:
                continue
            if port in ports:
                problems.add(f"{path}.{key}", f"{port} is also {ports[port]}: each node port is taken once "
                             "in the management cluster", "mode")
            ports.setdefault(port, f"{path}.{key}")


def _check_hosts(raw_tenants: list[Any], tenants: list[TenantConfig], keys: Mapping[str, SecretText],
                 problems: _Problems) -> None:
    """One node per machine and per name in the stack, and every private key a host names given."""
    index = {raw["name"]: i for i, raw in reversed(list(enumerate(raw_tenants)))
             if isinstance(raw, Mapping) and isinstance(raw.get("name"), str)}
    seen: dict[tuple[str, str], str] = {}
    for tenant in tenants:
        for number, host in enumerate(tenant.hosts):
            path = f"tenants[{index[tenant.name]}].hosts[{number}]"
            for what, value in (("name", host.name), ("address", host.address)):
                owner = seen.setdefault((what, value), path)
                if owner != path:
                    problems.add(f"{path}.{what}", f"{value!r} is also {owner}'s: a machine joins one "
                                 "tenant, as one node", "hosts")
            for where, endpoint in (("", host.ssh), (".bastion", host.bastion)):
                if endpoint is not None and endpoint.private_key not in keys:
                    problems.add(f"{path}{where}.privateKey",
                                 f"{endpoint.private_key!r} is not in the secret {SSH_KEYS_KEY} "
                                 f"(given: {', '.join(sorted(keys)) or 'none'})", "hosts")


def _secret_text(value: Any, path: str, problems: _Problems) -> SecretText | None:
    """A secret as the program reads it (SecretText, decrypted by Pulumi and known to be secret) or as
    a stack file holds it (`{secure: <ciphertext>}`); plain text is refused, without echoing it."""
    if isinstance(value, SecretText):
        return value
    if isinstance(value, Mapping) and set(value) == {SECURE_KEY} and isinstance(value[SECURE_KEY], str):
        return SecretText(None)
    problems.add(path, "must be a secret: set it with pulumi config set --secret (its value is not shown "
                       "here)", "secret")
    return None


def _parse_secrets(raw: Mapping[str, Any], management: ManagementConfig,
                   problems: _Problems) -> tuple[SecretText | None, dict[str, SecretText]]:
    from kamaji_hami_platform import secrets_check

    kubeconfig = None
    given = raw.get(MANAGEMENT_KUBECONFIG_KEY) not in (None, "")  # refused when plain, but given
    if given:
        kubeconfig = _secret_text(raw[MANAGEMENT_KUBECONFIG_KEY], MANAGEMENT_KUBECONFIG_KEY, problems)
        if kubeconfig is not None and kubeconfig.value is not None:
            for problem in secrets_check.kubeconfig_problems(kubeconfig.value):
                problems.add(MANAGEMENT_KUBECONFIG_KEY, problem, "secret")
    keys: dict[str, SecretText] = {}
    for name, value in _mapping(raw.get(SSH_KEYS_KEY), SSH_KEYS_KEY, problems).items():
        path = f"{SSH_KEYS_KEY}.{name}"
        key = _secret_text(value, path, problems)
        if key is None:
            continue
        if key.value is not None:
            for problem in secrets_check.private_key_problems(key.value):
                problems.add(path, problem, "secret")
        keys[str(name)] = key
    if management.is_kind and given:
        problems.add(MANAGEMENT_KUBECONFIG_KEY, "is for management.mode existing (kind's kubeconfig is the "
                                                "platform's own)", "mode")
    if not management.is_kind and given == (management.kubeconfig_context is not None):
        problems.add("management", "mode existing needs the cluster's kubeconfig: the secret "
                                   f"{MANAGEMENT_KUBECONFIG_KEY}, or kubeconfigContext (of kubeconfigFile), "
                                   "exactly one of them", "mode")
    return kubeconfig, keys


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
    _check_duplicate_names(raw_tenants, problems)
    _check_overlaps(tenants, management, problems)
    if management.is_kind:
        _check_address_blocks(tenants, management, problems)
    _check_generated_names(management, raw_tenants, tenants, problems)
    _check_tenant_modes(raw_tenants, tenants, management, problems)
    kubeconfig, ssh_keys = _parse_secrets(raw, management, problems)
    _check_hosts(raw_tenants, tenants, ssh_keys, problems)
    reference_pod = _parse_reference_pod(raw.get("referencePod"), problems)
    enforcement = _parse_gpu_capacity(raw.get("gpuCapacity"), problems)
    if problems.items:
        raise ConfigError(problems.items, problems.code_only)
    return PlatformConfig(management, tuple(tenants), models, reference_pod, enforcement, kubeconfig,
                          ssh_keys)


def secret_values(value: Any) -> Any:
    """A secret config value as SecretText (a mapping's values each), for parse_config: the one
    form it takes as secret besides a stack file's ciphertext."""
    if isinstance(value, Mapping):
        return {key: SecretText(item) if isinstance(item, str) else item for key, item in value.items()}
    return SecretText(value) if isinstance(value, str) else value


def load_config() -> PlatformConfig:
    """Read the stack config through Pulumi and validate it."""
    import pulumi
    from pulumi.runtime.config import is_config_secret

    config = pulumi.Config(PROJECT)
    raw: dict[str, Any] = {}
    problems: list[str] = []
    for key in CONFIG_KEYS:
        try:
            value = config.get(key) if key == MANAGEMENT_KUBECONFIG_KEY else config.get_object(key)
        except Exception as error:  # Pulumi raises its own JSON errors here (never with the value).
            problems.append(f"{key}: is not valid structured config ({type(error).__name__})")
            continue
        if value is not None:
            raw[key] = value
    for key in SECRET_CONFIG_KEYS:
        if raw.get(key) and is_config_secret(f"{PROJECT}:{key}"):
            raw[key] = secret_values(raw[key])
    if problems:
        raise ConfigError(problems)
    return parse_config(raw)


def read_stack_file(path: Path) -> dict[str, Any]:
    """The platform's raw keys of a stack file (`Pulumi.<stack>.yaml`), not validated: for callers
    that change them before parse_config (the planner's what-if flags)."""
    if not path.is_file():
        raise ValueError(f"no stack config {path.name} in {path.parent}")
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ValueError(f"{path.name}: not valid YAML: {error}") from None
    if not isinstance(document, Mapping) or not isinstance(document.get("config") or {}, Mapping):
        raise ValueError(f"{path.name}: not a stack file (no `config:` mapping)")
    prefix = f"{PROJECT}:"
    return {key[len(prefix):]: value for key, value in (document.get("config") or {}).items()
            if key.startswith(prefix)}


def load_stack_file(path: Path) -> PlatformConfig:
    """The platform config of a stack file (`Pulumi.<stack>.yaml`), validated; without Pulumi."""
    return parse_config(read_stack_file(path))


def load_stack(stack: str, root: Path | None = None) -> PlatformConfig:
    """`Pulumi.<stack>.yaml` of `root` (default: the current directory, the Pulumi project's)."""
    return load_stack_file((root or Path.cwd()) / f"Pulumi.{stack}.yaml")
