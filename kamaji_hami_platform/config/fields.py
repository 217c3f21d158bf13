"""The config's key tables: one `Field` per key, one `Section` per mapping. The validator reads
them (config/reading.py `read_section`), the JSON Schema and the configuration reference are
generated from them (config/json_schema.py, config/reference.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kamaji_hami_platform import names, network, versions
from kamaji_hami_platform.config.model import HamiConfig, ManagementConfig, PodShapeConfig
from kamaji_hami_platform.config.rules import (
    _QUAD,
    ADDRESS_RANGE_SHAPE,
    API_EXPOSURES,
    DNS_1035,
    DOCKER_NETWORK_NAME,
    DURATION_1S_TO_5M,
    ENFORCEMENTS,
    GPU_POLICIES,
    IMAGE_WITH_TAG,
    INT32_MAX,
    K8S_VERSION_FORMAT,
    K8S_VERSION_SUPPORTED,
    LOAD_BALANCER,
    MANAGEMENT_KUBECONFIG_KEY,
    MANAGEMENT_POD_CIDR,
    MANAGEMENT_SERVICE_CIDR,
    MAX_CARDS_PER_NODE,
    MAX_NAME_LENGTH,
    MAX_REPLICAS,
    MODE_KIND,
    MODES,
    NODE_POLICIES,
    NODE_PORT_MAX,
    NODE_PORT_MIN,
    NVIDIA_PRODUCT,
    QUOTA_KEYS,
    REGISTRY_MIRROR,
    RESERVED_NAMESPACES,
    SSH_KEYS_KEY,
    WORKER_NETWORK_OWN,
    WORKER_NETWORKS,
    Check,
)


@dataclass(frozen=True)
class Field:
    """One config key: what both the validator and the JSON Schema generator read.

    `type` is a JSON Schema type. The validator checks string, integer and boolean keys itself
    (`read_section`); an object or array key is a section (`ref`, a `$defs` name) or map that its
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
_HAMI_DEFAULTS = HamiConfig()
_POD_DEFAULTS = PodShapeConfig()

ADDON = Section("addon", "A management-cluster add-on: installed by the platform, or already there.", (
    Field("install", "boolean", "install it; false (existing mode only): the cluster already has it, or "
          "its own load balancer (or NodePort) gives tenant API addresses instead of MetalLB",
          default=True),
))
IPV4_ADDRESS = Check(_QUAD, "{value!r} must be an IPv4 address")
HOST_NAME = Check("[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", "{value!r} must be a host name or IPv4 address")
# What `ssh-keyscan` prints after the host name: the known_hosts key the platform's OpenSSH client
# pins (an ssh-rsa key is verified with rsa-sha2-256/512 signatures, as OpenSSH 8.8+ requires).
SSH_HOST_KEY = Check("(ssh-ed25519|ecdsa-sha2-nistp(256|384|521)|ssh-rsa) [A-Za-z0-9+/]+={0,3}",
                     "{value!r} must be a public host key like 'ssh-ed25519 AAAA...' (ssh-keyscan -t "
                     "ed25519 <host> prints it)")
KEY_NAME = Check("[A-Za-z0-9][A-Za-z0-9_.-]*", "{value!r} must name an entry of sshPrivateKeys")


def _ssh_fields(address: Field) -> tuple[Field, ...]:
    return (
        address,
        Field("user", "string", "SSH user: root, or a user with password-less sudo", default="root",
              checks=(Check("[a-z_][a-z0-9_-]*", "{value!r} is not a user name"),)),
        _integer_field("port", "SSH port", 22, 1, 65535),
        Field("privateKey", "string", "name of its private key in the secret sshPrivateKeys (an "
              "unencrypted key)",
              required=True, checks=(KEY_NAME,)),
        Field("hostKey", "string", "its public SSH host key (ssh-ed25519, ecdsa-sha2-nistp256/384/521 or "
              "ssh-rsa), pinned: a host that answers with another key is never sent anything. "
              "Required, unless insecureSkipHostKeyCheck is true (ssh-keyscan -t ed25519 -p <port> "
              "<address> prints it; compare its fingerprint with ssh-keygen -lf on the host's own "
              "/etc/ssh/ssh_host_ed25519_key.pub)", nullable=True, checks=(SSH_HOST_KEY,)),
        Field("insecureSkipHostKeyCheck", "boolean", "true: accept any host key (whoever answers at the "
              "address gets the join); warned about in every preview, refused by the policy pack in "
              "stacks marked production. Only without hostKey", default=False),
    )


BASTION = Section("bastion", "A jump host the worker host is reached through.", _ssh_fields(
    Field("address", "string", "host name or IPv4 address", required=True, checks=(HOST_NAME,))))
HOST = Section("host", "A machine that joins the tenant as a worker node over SSH (management mode "
               "existing).", (
    Field("name", "string", "its Kubernetes node name (DNS-1123 label), unique in the stack", required=True,
          checks=(Check("[a-z0-9]([-a-z0-9]*[a-z0-9])?", "{value!r} is not a DNS-1123 label of at most 63 "
                        "characters", 63),)),
    *_ssh_fields(Field("address", "string", "its IPv4 address, unique in the stack: SSH goes there, and "
                       "the tenant's control plane admits it", required=True, checks=(IPV4_ADDRESS,))),
    Field("bastion", "object", "a jump host to reach it through", nullable=True, ref=BASTION.name),
))

MANAGEMENT = Section("management", "The management cluster (kind on this machine, or an existing one) and, "
                     "for kind, the platform's Docker network.", (
    Field("name", "string", "kind: the kind cluster's name; existing: the cluster's identity in the stack "
          "(its provider is existing/<name>); create-only", default=_MANAGEMENT_DEFAULTS.name,
          checks=(_dns_check(MAX_NAME_LENGTH),)),
    Field("nodeImage", "string", "kind: image of the management node (tag required, digest optional); "
          "create-only",
          default=_MANAGEMENT_DEFAULTS.node_image,
          checks=(Check(IMAGE_WITH_TAG, "{value!r} must be an image with an explicit tag"),)),
    Field("dockerNetwork", "string", "kind: the platform's own Docker network, created before kind (which "
          "uses it) and removed by make down; a network of that name the platform did not create is "
          "refused; create-only", default=_MANAGEMENT_DEFAULTS.docker_network,
          checks=(Check(DOCKER_NETWORK_NAME, "{value!r} is not a Docker network name"),)),
    Field("dockerSubnet", "string", "kind: IPv4 subnet of that network, /16 to /24, in quarters: Docker's "
          "dynamic addresses, workers' fixed addresses (two quarters), MetalLB; must not overlap any tenant "
          "or management CIDR or another Docker network of the host; create-only",
          default=_MANAGEMENT_DEFAULTS.docker_subnet,
          cidr_prefix=(network.MIN_PREFIX, network.MAX_PREFIX)),
    Field("tenantSubnet", "string", "kind: IPv4 subnet the tenants' own Docker networks are cut from, "
          "/16 to /24, a /24 each (tenants[i].addressBlock picks which): the gateway in its first 16 "
          "addresses, worker i at .16+i, the tenant's door (its API address) at .250; must not overlap "
          "dockerSubnet, "
          "any tenant or management CIDR or another Docker network of the host",
          default=_MANAGEMENT_DEFAULTS.tenant_subnet,
          cidr_prefix=(network.MIN_PREFIX, network.MAX_TENANT_SUBNET_PREFIX)),
    Field("metallbAddressRange", "string", "first-last IPv4 range for MetalLB; kind: inside the last "
          "quarter of dockerSubnet (default: that quarter's top 51 addresses); existing: any ordered range "
          "of the cluster's network, required when the platform installs MetalLB with LoadBalancer, refused "
          "otherwise; create-only", nullable=True, in_code=True,
          checks=(Check(ADDRESS_RANGE_SHAPE, "{value!r} must look like 172.30.255.200-172.30.255.250"),)),
    _integer_field("kamajiEtcdReplicas", "kamaji-etcd replicas (1 is enough on a laptop); kamaji-etcd "
                   "forms its cluster once: create-only",
                   _MANAGEMENT_DEFAULTS.kamaji_etcd_replicas, 1, 5),
    Field("mode", "string", "kind: a kind cluster on this machine; existing: a cluster you have (put "
          "Kamaji on it, tenants' workers are hosts joined over SSH); create-only on an existing cluster",
          default=MODE_KIND, enum=MODES),
    Field("kubeconfigContext", "string", "existing: the context of kubeconfigFile to reach the cluster "
          "through, instead of the secret managementKubeconfig; only that context, its cluster and user are "
          "kept (as a secret), relative file paths in them made absolute against the file's folder",
          nullable=True),
    Field("kubeconfigFile", "string", "existing: the kubeconfig file of kubeconfigContext (default: "
          "$KUBECONFIG's first file, else ~/.kube/config)", nullable=True),
    Field("certManager", "object", "cert-manager (Kamaji needs it; with install false, a check before "
          "Kamaji fails naming it when its CRDs are missing)", nullable=True, ref=ADDON.name),
    Field("metallb", "object", "MetalLB (the tenant API addresses)", nullable=True, ref=ADDON.name),
    Field("apiExposure", "string", "how tenant API servers are exposed: LoadBalancer or, existing mode "
          "only, NodePort (each tenant then gives apiNodePort and konnectivityNodePort); create-only on an "
          "existing cluster", default=LOAD_BALANCER,
          enum=API_EXPOSURES),
    Field("nodePortAddress", "string", "existing with NodePort, required there: the management node IPv4 "
          "address workers and Pulumi reach node ports on", nullable=True, checks=(IPV4_ADDRESS,)),
    Field("apiClientCidrs", "array", "existing, required there: the IPv4 CIDRs Pulumi's host and operators "
          "reach tenant "
          "APIs from, as the control plane pods see them (kube-proxy masquerades external traffic to "
          "the management nodes' addresses: include their network)",
          nullable=True, cidr_prefix=(0, 32), in_code=True),
    Field("failCgroupV1", "boolean", "false: every kubelet the platform configures (the kind node, worker "
          "containers, worker hosts) starts on a cgroup v1 host, which Kubernetes 1.35 refuses by default "
          "(KubeletConfiguration failCgroupV1, KEP-5573), and worker hosts' joins skip kubeadm's "
          "SystemVerification; the kind node takes it when created", default=True),
))

GPU_MODEL = Section("gpuModel", "An extra GPU model as HAMi registers it.", (
    _integer_field("memoryMiB", "memory of one card in MiB", None, 1, INT32_MAX, required=True),
    _integer_field("cores", "compute of one card in percent", None, 1, 100, required=True),
    _integer_field("splitCount", "how many pods may share one card (its task slots)", None, 1, 1024,
                   required=True),
    Field("product", "string", "the card's product string; must contain NVIDIA", required=True,
          checks=(Check(NVIDIA_PRODUCT, "{value!r} must contain 'NVIDIA': HAMi only registers NVIDIA "
                                        "devices whose type says so"),)),
))

HAMI = Section("hami", "HAMi scheduler settings of one tenant.", (
    Field("gpuSchedulerPolicy", "string", "how HAMi picks a card: binpack (fill a card before the next; "
          "the dev stack's choice) or spread",
          default=_HAMI_DEFAULTS.gpu_scheduler_policy, enum=GPU_POLICIES),
    Field("nodeSchedulerPolicy", "string", "how HAMi picks a node: binpack or spread",
          default=_HAMI_DEFAULTS.node_scheduler_policy, enum=NODE_POLICIES),
    Field("nodeLockTimeout", "string", "HAMi node-lock expiry, 1s..5m, set with mock cards: the "
          "backstop of the platform's lock release (no device plugin releases the lock after a bind); "
          "real cards keep HAMi's 5-minute default",
          default=_HAMI_DEFAULTS.node_lock_timeout,
          checks=(Check(DURATION_1S_TO_5M, "{value!r} must be a duration like '5s' or '1m', "
                                           "between 1s and 5m"),)),
    _integer_field("schedulerReplicas", "HAMi scheduler pods (leader-elected: with the webhook failing "
                   "closed, a second one takes over within the lease)",
                   _HAMI_DEFAULTS.scheduler_replicas, 1, 3),
))

GPUS = Section("gpus", "The GPUs each worker of a tenant carries.", (
    Field("model", "string", "GPU model: built-in A100-80GB or one of gpuModels", required=True),
    _integer_field("perWorker", "cards per worker (HAMi sorts up to 12 cards stably, so the planner knows "
                   "which card it takes)", 1, 1,
                   MAX_CARDS_PER_NODE),
    Field("mock", "boolean", "register mock cards (no hardware); false (worker hosts only): real NVIDIA "
          "cards, registered by HAMi's device plugin", default=True),
))

QUOTA_LIMITS = Section("gpuQuota", "GPU quota of one namespace of the tenant cluster.", tuple(
    _integer_field(key, description, None, 0, None) for key, description in (
        ("limits.nvidia.com/gpumem", "GPU memory in MiB (HAMi enforces it)"),
        ("limits.nvidia.com/gpucores", "GPU cores in percent (HAMi enforces it)"),
        ("requests.nvidia.com/gpu", "cards (Kubernetes counts the extended resource)"))))
assert QUOTA_LIMITS.keys == QUOTA_KEYS
# The namespaces of a tenant's gpuQuotas.
QUOTA_NAMESPACE = _dns_check(63)

GPU_WORKLOAD = Section("gpuWorkload", "A GPU workload the tenant declares: every preview plans it on the "
                       "tenant's cards as HAMi would, its replicas created together with every other "
                       "workload's and placed in every order HAMi may take.", (
    Field("name", "string", "the workload's name (DNS-1035 label), unique in the tenant", required=True,
          checks=(_dns_check(63),)),
    _integer_field("replicas", "pods of this shape", 1, 1, MAX_REPLICAS),
    _integer_field("gpu", "cards per pod (nvidia.com/gpu)", 1, 1, MAX_CARDS_PER_NODE),
    Field("gpumem", "integer", "GPU memory per card in MiB (nvidia.com/gpumem); this or "
          "gpumemPercentage", minimum=1, maximum=INT32_MAX, in_code=True),
    Field("gpumemPercentage", "integer", "percent of each card's memory (nvidia.com/gpumem-percentage); "
          "this or gpumem", minimum=1, maximum=100, in_code=True),
    _integer_field("gpucores", "percent of each card's compute (nvidia.com/gpucores); left out, the pod "
                   "carries no gpucores limit and HAMi's webhook decides: 100 (the card's compute alone) "
                   "with gpumemPercentage: 100, else 0", None, 0, 100),
    Field("type", "string", "card type the pods ask for (nvidia.com/use-gputype): part of the model's "
          "product string", in_code=True),
    Field("namespace", "string", "namespace of the tenant cluster the pods run in", default="default",
          checks=(_dns_check(63),)),
))

GPU_CAPACITY = Section("gpuCapacity", "What a preview does when declared GPU workloads do not fit.", (
    Field("enforcement", "string", "mandatory: the preview fails; warning: it warns and goes on",
          default="mandatory", enum=ENFORCEMENTS),
))

IMAGES = Section("images", "Where the platform's images come from.", (
    Field("mirror", "string", "a registry that holds every image the stack pulls (make images lists them; "
          "make mirror copies them), as host[:port][/path]: each reference is pulled as "
          "<mirror>/<its registry>/<its path> with its tag and digest (docker.io/clastix/kamaji:x as "
          "<mirror>/docker.io/clastix/kamaji:x); make up checks that the mirror has every one before "
          "anything is created", nullable=True,
          checks=(Check(REGISTRY_MIRROR, "{value!r} must be a registry as host[:port][/path], without "
                                         "a scheme (registry.example:5000)"),)),
))

TENANT = Section("tenant", "One tenant: its control plane, networks, workers and GPUs.", (
    Field("name", "string", "DNS-1035 label: also the tenant's namespace and TenantControlPlane name, "
          "never a namespace the management cluster uses; every name generated from it (containers, "
          "Secrets, Services, CronJobs) is checked too", required=True,
          checks=(_dns_check(MAX_NAME_LENGTH),), reserved=RESERVED_NAMESPACES,
          reserved_message="{value!r} is a namespace the management cluster uses"),
    Field("kubernetesVersion", "string", f"v1.X.Y with X in {versions.TENANT_MIN_MINOR}.."
          f"{versions.TENANT_MAX_MINOR} (Kamaji {versions.KAMAJI_IMAGE_TAG}); workers run "
          "kindest/node:<this>; change it one minor at a time (Kamaji refuses skips and downgrades)",
          required=True, checks=(
              Check(K8S_VERSION_FORMAT, "{value!r} must look like v1.35.0 (the kindest/node and "
                                        "registry.k8s.io/kube-scheduler tag format)"),
              Check(K8S_VERSION_SUPPORTED, f"{{value!r}} is outside v1.{versions.TENANT_MIN_MINOR}-"
                                           f"v1.{versions.TENANT_MAX_MINOR}, the range Kamaji "
                                           f"{versions.KAMAJI_IMAGE_TAG} accepts"))),
    _integer_field("controlPlaneReplicas", "API server pods", 1, 1, 5),
    Field("podCidr", "string", "IPv4 pod CIDR, /8 to /22: one /24 per worker, so plan it for the workers "
          "the tenant will have; create-only", required=True,
          cidr_prefix=(8, 22)),
    Field("serviceCidr", "string", "IPv4 service CIDR, /12 to /28 (cluster DNS at its 10th address); "
          "create-only", required=True, cidr_prefix=(12, 28)),
    _integer_field("workers", "worker containers (mode kind), at most one per /24 of podCidr (a /22 holds "
                   "4); with hosts leave it out (their number is the workers'); in mode existing a tenant "
                   "without hosts sets 0", 1, 0, names.MAX_WORKERS),
    Field("gpus", "object", "the GPUs of each worker (none when absent)", nullable=True, ref=GPUS.name),
    Field("hami", "object", "HAMi scheduler settings", nullable=True, ref=HAMI.name),
    Field("gpuQuotas", "object", "namespace of the tenant cluster -> its GPU quota", nullable=True,
          ref="gpuQuotas"),
    Field("addressBlock", "integer", "kind: which /24 of management.tenantSubnet is this tenant's own "
          "network (workerNetwork own; the block of that number of the platform's Docker network holds its "
          "door and its control plane's address), or which block of 128 worker addresses of the shared "
          "Docker network (workerNetwork shared); what its control plane admits (default: its position in "
          "tenants); "
          "create-only: pin it before removing or inserting a tenant ahead of this one", minimum=0),
    Field("workerNetwork", "string", "kind: own (a Docker network of the tenant's own, shared with no "
          "other tenant: the isolation that holds against a tenant who is root on its workers) or shared "
          "(the platform's network, where every tenant lived in 0.1.0: keep it for a tenant created "
          "then); create-only", default=WORKER_NETWORK_OWN, enum=WORKER_NETWORKS),
    Field("gpuWorkloads", "array", "GPU workloads the tenant's teams will run: each preview says whether "
          "they fit", nullable=True, ref=GPU_WORKLOAD.name),
    Field("hosts", "array", "worker hosts joined over SSH (management mode existing), instead of workers",
          nullable=True, ref=HOST.name),
    Field("apiNodePort", "integer", "the API server's node port (management apiExposure NodePort, "
          "required there), unique across the stack's tenants; the cluster's other node ports are not "
          "checked",
          nullable=True, minimum=NODE_PORT_MIN, maximum=NODE_PORT_MAX),
    Field("konnectivityNodePort", "integer", "Konnectivity's node port (management apiExposure NodePort, "
          "required there), unique across the stack's tenants",
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
    Field("management", "object", "the management cluster: kind on this machine, or an existing one",
          nullable=True, ref=MANAGEMENT.name),
    Field("tenants", "array", "the tenants, at least one", required=True, ref=TENANT.name),
    Field("gpuModels", "object", "extra GPU models by name (A100-80GB is built in)", nullable=True,
          ref="gpuModels"),
    Field("referencePod", "object", "workload shape for the capacity outputs (each tenant's "
          "gpuCapacity.referencePodsThatFit)", nullable=True,
          ref=REFERENCE_POD.name),
    Field("gpuCapacity", "object", "what a preview does when declared GPU workloads do not fit",
          nullable=True, ref=GPU_CAPACITY.name),
    Field("images", "object", "where images come from: a mirror registry for air-gapped installs",
          nullable=True, ref=IMAGES.name),
    Field(MANAGEMENT_KUBECONFIG_KEY, "string", "secret, mode existing: the management cluster's "
          "kubeconfig (pulumi config set --secret managementKubeconfig < file); a plain value is refused",
          nullable=True, ref="secret"),
    Field(SSH_KEYS_KEY, "object", "secret: unencrypted SSH private keys by name, for worker hosts and "
          "bastions "
          "(pulumi config set --secret --path 'sshPrivateKeys.<name>' < key)", nullable=True,
          ref=SSH_KEYS_KEY),
))
SECTIONS = (MANAGEMENT, GPU_MODEL, HAMI, GPUS, QUOTA_LIMITS, GPU_WORKLOAD, TENANT, REFERENCE_POD,
            GPU_CAPACITY, IMAGES, ADDON, BASTION, HOST)
CONFIG_KEYS = ROOT.keys

# Rules the JSON Schema cannot express: they compare keys, or read a value as more than text.
# The validator tags each problem they find (ConfigError.code_only); the schema lists them.
CODE_ONLY_RULES: Mapping[str, str] = {
    "overlap": "CIDRs must not overlap each other or kind's own pod and service CIDRs "
               f"({MANAGEMENT_POD_CIDR}, {MANAGEMENT_SERVICE_CIDR}); dockerSubnet and tenantSubnet neither",
    "address-block": "each tenant's addressBlock is its own and inside management.tenantSubnet (own "
                     "network) or management.dockerSubnet (shared)",
    "api-clients": "existing with LoadBalancer: no management.apiClientCidrs entry holds a tenant's host, "
                   "and each tenant's hosts and apiClientCidrs make at most 16 source ranges",
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
    "host-key": "every worker host and bastion pins its hostKey, unless insecureSkipHostKeyCheck is true "
                "(and then gives none)",
    "secret": "managementKubeconfig and sshPrivateKeys are Pulumi secrets: a kubeconfig with a current "
              "context, unencrypted private keys",
}
