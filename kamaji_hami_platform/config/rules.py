"""The config's constants and text rules: what the validator and the JSON Schema both read.

Each text rule is one regex for both readers: the validator (re.fullmatch) and the JSON Schema
(`^(?:...)$`, ECMA-262), hence no anchors and ASCII classes only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kamaji_hami_platform import versions

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
# Where a kind tenant's worker containers live: a Docker network of the tenant's own (no other
# tenant's container shares its segment), or the platform's network all tenants shared in 0.1.0.
WORKER_NETWORK_OWN, WORKER_NETWORK_SHARED = "own", "shared"
WORKER_NETWORKS = (WORKER_NETWORK_OWN, WORKER_NETWORK_SHARED)
# Kamaji 26.8.2-edge caps networkProfile.loadBalancerSourceRanges at 16 entries
# (api/v1alpha1/tenantcontrolplane_types.go `MaxItems=16`).
MAX_LOAD_BALANCER_SOURCE_RANGES = 16
# kube-apiserver's default --service-node-port-range.
NODE_PORT_MIN, NODE_PORT_MAX = 30000, 32767
# The stack's secret keys: set with `pulumi config set --secret`, never read as plain text.
MANAGEMENT_KUBECONFIG_KEY = "managementKubeconfig"
SSH_KEYS_KEY = "sshPrivateKeys"
SECRET_CONFIG_KEYS = (MANAGEMENT_KUBECONFIG_KEY, SSH_KEYS_KEY)
# The Pulumi stack file's form of an encrypted value (what the planner reads, never decrypts).
SECURE_KEY = "secure"
# Keys of `management` only a kind cluster has.
KIND_ONLY_MANAGEMENT_KEYS = ("nodeImage", "dockerNetwork", "dockerSubnet", "tenantSubnet")
# Keys of `management` only an existing cluster has.
EXISTING_ONLY_MANAGEMENT_KEYS = ("kubeconfigContext", "kubeconfigFile", "nodePortAddress", "apiClientCidrs")

INT32_MAX = 2**31 - 1
# The generated names (`<name>-worker-<n>`, `<name>-admin-kubeconfig`, kind's containers) must stay
# valid names: 40 characters leave room for the longest suffix (names.py checks each).
MAX_NAME_LENGTH = 40

MAX_REPLICAS = 1000

ENFORCEMENTS = ("mandatory", "warning")

# Text rules, each one regex for both readers: the validator (re.fullmatch) and the JSON Schema
# (`^(?:...)$`, ECMA-262). Hence no anchors and ASCII classes only: Python's `\d` takes any
# Unicode digit and its `$` a trailing newline, ECMA's neither.
DNS_1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
DOCKER_NETWORK_NAME = "[a-zA-Z0-9][a-zA-Z0-9_.-]*"
# A registry as image references name one (a host with a dot, `localhost`, or any host with a
# port: distribution/reference normalize.go splitDockerDomain), then an optional path of
# lower-case components: where `images.mirror` puts every image.
_LABEL = "[a-z0-9]([a-z0-9-]*[a-z0-9])?"
REGISTRY_MIRROR = (f"((localhost|{_LABEL}(\\.{_LABEL})+)(:[0-9]{{1,5}})?|{_LABEL}:[0-9]{{1,5}})"
                   "(/[a-z0-9]+([._-][a-z0-9]+)*)*")
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

_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_QUAD = f"{_OCTET}(\\.{_OCTET}){{3}}"


def cidr_pattern(min_prefix: int, max_prefix: int) -> str:
    """What `ipaddress.ip_network` reads as an IPv4 network with a prefix in the bounds (an integer
    prefix, leading zeros allowed), or with a written-out mask (its length is checked in code)."""
    lengths = "|".join(str(length) for length in range(min_prefix, max_prefix + 1))
    return f"{_QUAD}/(0*({lengths})|{_QUAD})"


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
