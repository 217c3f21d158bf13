"""The settings the components take: the stack configuration's sections as typed dictionaries.

Each TypedDict has the keys of its stack-config section in Python's spelling (`docker_subnet`
for `dockerSubnet`); Pulumi's component-provider schema spells them back in camelCase, so a
TypeScript or YAML program writes exactly what a stack file holds. Every value is checked by the
same validator as the stack file (`kamaji_hami_platform.config`): a bad value is a `ConfigError`
naming the component and the key, raised before the component creates anything.
"""

# No `from __future__ import annotations` here: the component-provider analyzer (pulumi
# provider/experimental/analyzer.py) reads these annotations with inspect.get_annotations, unevaluated,
# and postponed ones would be bare strings it cannot follow.

import dataclasses
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from kamaji_hami_platform import config as cfg
from kamaji_hami_platform.config.gpu import parse_gpu_models, parse_reference_pod
from kamaji_hami_platform.config.loader import parse_images
from kamaji_hami_platform.config.management import parse_management
from kamaji_hami_platform.config.reading import Problems
from kamaji_hami_platform.config.tenant import parse_tenant


class GpuModelSettings(TypedDict):
    """A GPU model as HAMi sees it (stack config `gpuModels.<name>`)."""

    memory_miB: int  # spelled so that it camel-cases to the stack file's `memoryMiB`
    """Memory of one card, MiB (`memoryMiB` in a stack file and in other languages)."""
    cores: int
    """Compute of one card (100 = the whole card)."""
    split_count: int
    """Task slots per card: how many pods may share it."""
    product: str
    """The product string HAMi registers (e.g. `NVIDIA A100-SXM4-80GB`)."""


class GpuPoolSettings(TypedDict):
    """The cards every worker of a tenant carries (stack config `tenants[i].gpus`)."""

    model: str
    """A GPU model name: built in (`A100-80GB`) or one of `gpu_models`."""
    per_worker: NotRequired[int]
    """Cards per worker, 1..12 (default 1)."""
    mock: NotRequired[bool]
    """Mock cards registered by the platform (default true)."""


class HamiSettings(TypedDict, total=False):
    """HAMi's scheduler settings of a tenant (stack config `tenants[i].hami`)."""

    gpu_scheduler_policy: str
    """Card policy: `binpack` or `spread` (HAMi's default, spread)."""
    node_scheduler_policy: str
    """Node policy: `binpack` (HAMi's default) or `spread`."""
    node_lock_timeout: str
    """How long HAMi's node lock lives: `5s` .. `5m` (default 5s)."""
    scheduler_replicas: int
    """HAMi scheduler pods, 1..3 (default 2)."""


class GpuWorkloadSettings(TypedDict):
    """A GPU workload the tenant declares (stack config `tenants[i].gpuWorkloads[j]`)."""

    name: str
    """The workload's name, unique in the tenant."""
    replicas: NotRequired[int]
    """Pods of this shape (default 1)."""
    gpu: NotRequired[int]
    """Cards per pod (default 1)."""
    gpumem: NotRequired[int]
    """MiB per card; this or gpumem_percentage."""
    gpumem_percentage: NotRequired[int]
    """Percent of each card's memory; this or gpumem."""
    gpucores: NotRequired[int]
    """Percent of each card's compute (default 0)."""
    type: NotRequired[str]
    """Card type the pods ask for (part of the model's product)."""
    namespace: NotRequired[str]
    """Namespace of the tenant cluster (default `default`)."""


class BastionSettings(TypedDict):
    """A jump host (stack config `tenants[i].hosts[j].bastion`)."""

    address: str
    """Host name or IPv4 address."""
    private_key: str
    """Name of its private key in the secret `ssh_private_keys` (stack config `sshPrivateKeys`)."""
    user: NotRequired[str]
    """SSH user (default root)."""
    port: NotRequired[int]
    """SSH port (default 22)."""
    host_key: NotRequired[str]
    """Its public host key (`ssh-ed25519 AAAA...`), pinned: required unless
    `insecure_skip_host_key_check`."""
    insecure_skip_host_key_check: NotRequired[bool]
    """True: accept any host key (a warning in every preview; refused in stacks marked production)."""


class HostSettings(TypedDict):
    """A machine that joins the tenant as a worker over SSH (stack config `tenants[i].hosts[j]`)."""

    name: str
    """Its Kubernetes node name."""
    address: str
    """Its IPv4 address (SSH goes there; the tenant's control plane admits it)."""
    private_key: str
    """Name of its private key in the secret `ssh_private_keys` (stack config `sshPrivateKeys`)."""
    user: NotRequired[str]
    """SSH user: root, or one with password-less sudo (default root)."""
    port: NotRequired[int]
    """SSH port (default 22)."""
    host_key: NotRequired[str]
    """Its public host key (`ssh-ed25519 AAAA...`), pinned: required unless
    `insecure_skip_host_key_check`."""
    insecure_skip_host_key_check: NotRequired[bool]
    """True: accept any host key (a warning in every preview; refused in stacks marked production)."""
    bastion: NotRequired[BastionSettings]
    """A jump host to reach it through."""


class TenantSettings(TypedDict):
    """One tenant cluster (stack config `tenants[i]`)."""

    name: str
    """The tenant's name: its management namespace, control plane and worker names derive from it."""
    kubernetes_version: str
    """The tenant's Kubernetes version, e.g. `v1.35.0`."""
    pod_cidr: str
    """The tenant's pod network (a /24 per worker)."""
    service_cidr: str
    """The tenant's service network."""
    control_plane_replicas: NotRequired[int]
    """Control plane pods, 1..5 (default 1)."""
    workers: NotRequired[int]
    """Worker nodes (default 1)."""
    address_block: NotRequired[int]
    """Which /24 of `tenant_subnet` (own network), or block of the shared Docker network's worker
    addresses, is the tenant's (in a stack file its position by default; for a component 0 by
    default, and each tenant of one management cluster needs its own: a KamajiTenant refuses a
    block another of the program holds)."""
    worker_network: NotRequired[str]
    """kind: `own` (default: a Docker network of the tenant's own) or `shared` (the platform's
    network, for a tenant created by 0.1.0)."""
    gpus: NotRequired[GpuPoolSettings]
    """The cards of each worker; none without it."""
    hami: NotRequired[HamiSettings]
    """HAMi's settings in the tenant."""
    gpu_quotas: NotRequired[dict[str, dict[str, int]]]
    """Namespace (in the tenant) -> HAMi / Kubernetes GPU quota limits."""
    gpu_workloads: NotRequired[list[GpuWorkloadSettings]]
    """GPU workloads the tenant's teams will run (planned in every preview)."""
    hosts: NotRequired[list[HostSettings]]
    """Worker hosts joined over SSH (management mode existing), instead of `workers`."""
    api_node_port: NotRequired[int]
    """The API server's node port (management `api_exposure` NodePort)."""
    konnectivity_node_port: NotRequired[int]
    """Konnectivity's node port (management `api_exposure` NodePort)."""


class AddonSettings(TypedDict, total=False):
    """A management add-on (stack config `management.certManager`, `management.metallb`)."""

    install: bool
    """Install it (default true; false only in mode existing, when the cluster already has it)."""


class ManagementSettings(TypedDict, total=False):
    """The management cluster (stack config `management`); every key has a default."""

    mode: str
    """`kind` (a kind cluster on this machine, the default) or `existing` (a cluster you have)."""
    kubeconfig_context: str
    """Mode existing: the context of `kubeconfig_file` to reach it through (else the
    ManagementCluster's `kubeconfig` input)."""
    kubeconfig_file: str
    """Mode existing: the kubeconfig file of `kubeconfig_context` (default $KUBECONFIG, ~/.kube/config)."""
    cert_manager: AddonSettings
    """cert-manager (Kamaji needs it)."""
    metallb: AddonSettings
    """MetalLB (the tenant API addresses)."""
    api_exposure: str
    """How tenant APIs are exposed: `LoadBalancer` (default) or `NodePort` (mode existing)."""
    node_port_address: str
    """Mode existing, NodePort: the management node address workers reach tenant APIs on."""
    api_client_cidrs: list[str]
    """Mode existing: where Pulumi's host and operators reach tenant APIs from."""

    name: str
    """The kind cluster's name (default `kamaji`)."""
    node_image: str
    """The kindest/node image, with its digest."""
    docker_network: str
    """The platform's Docker network (default `kamaji-hami`)."""
    docker_subnet: str
    """Its IPv4 subnet (default 172.30.0.0/16)."""
    tenant_subnet: str
    """Where the tenants' own Docker networks are cut from, a /24 each (default 172.24.0.0/16)."""
    metallb_address_range: str
    """The tenant API addresses MetalLB hands out (default: in the subnet's last quarter)."""
    kamaji_etcd_replicas: int
    """kamaji-etcd members, 1..5 (default 3)."""
    fail_cgroup_v1: bool
    """False: the platform's kubelets start on cgroup v1 hosts (default true, the kubelet's own)."""


class ImageSettings(TypedDict, total=False):
    """Where images come from (stack config `images`)."""

    mirror: str
    """A registry holding every image, as host[:port][/path]: each reference is pulled as
    `<mirror>/<its registry>/<its path>` (kamaji_hami_platform/mirror.py). Default: none, each
    image from its own registry."""


class PodShapeSettings(TypedDict, total=False):
    """A reference GPU pod (stack config `referencePod`)."""

    gpumem: int
    """MiB per card (default 20000)."""
    gpucores: int
    """Percent of a card's compute (default 30)."""
    gpu: int
    """Cards (default 1)."""


class ChartSettings(TypedDict, total=False):
    """Where a Helm chart comes from, instead of the pinned one: a mirror, an OCI registry or a
    local folder (`chart` alone: a path or `oci://...`)."""

    chart: str
    """Chart name in `repository`, an `oci://` reference, or a local chart folder."""
    version: str
    """Chart version (not for a local folder)."""
    repository: str
    """Chart repository URL (a mirror of the pinned one)."""


def _camel(name: str) -> str:
    """The stack file's spelling, by the rule of Pulumi's schema names (pulumi
    provider/experimental/util.py `camel_case`: each later word's first letter raised, the rest
    kept), so `memory_miB` is `memoryMiB` in both."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# Keys whose values are user data (names of namespaces, resources, models), not settings.
_VERBATIM = frozenset({"gpu_quotas"})


def _number(value: Any) -> Any:
    """A whole float as the integer it stands for. Pulumi's wire has one number type: an integer
    another language passes arrives as a float (pulumi sdk/python/lib/pulumi/runtime/rpc.py
    `deserialize_properties`), and the component provider hands it on as one (provider/experimental/
    component.py `map_input_properties` converts, then assigns the float again). A stack file's
    2.0 stays refused: only settings given to a component are read this way."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: _number(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_number(item) for item in value]
    return value


def to_config(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings in the stack file's spelling (`docker_subnet` -> `dockerSubnet`), recursively,
    whole floats read as integers."""
    return {_camel(key): (_number(dict(value)) if key in _VERBATIM else _to_config_value(value))
            for key, value in settings.items()}


def _to_config_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return to_config(value)
    if isinstance(value, list | tuple):
        return [_to_config_value(item) for item in value]
    return _number(value)


def _raise(problems: Problems, where: str, section: str, key: str) -> None:
    """Every problem at once, each named `<where>: <key>.<setting>` (camelCase, as in a stack file)."""
    if problems.items:
        raise cfg.ConfigError([f"{where}: {key}{item[len(section):]}" if item.startswith(section)
                               else f"{where}: {item}" for item in problems.items])


def gpu_models(settings: Mapping[str, GpuModelSettings] | None, where: str) -> dict[str, cfg.GpuModelConfig]:
    """The built-in GPU models and these, validated."""
    problems = Problems()
    raw = {name: to_config(model) for name, model in (settings or {}).items()}
    models = parse_gpu_models(raw, problems)
    _raise(problems, where, "gpuModels", "gpu_models")
    return models


def management_config(settings: Mapping[str, Any] | None, where: str) -> cfg.ManagementConfig:
    """Validated management settings; a ConfigError naming `where` and the key otherwise."""
    problems = Problems()
    parsed = parse_management(to_config(settings or {}), problems)
    _raise(problems, where, "management", "management")
    return parsed


def tenant_config(settings: Mapping[str, Any], where: str,
                  models: Mapping[str, cfg.GpuModelConfig] | None = None) -> cfg.TenantConfig:
    """Validated tenant settings; a ConfigError naming `where` and the key otherwise."""
    problems = Problems()
    parsed = parse_tenant(to_config(settings), 0, models or cfg.BUILTIN_GPU_MODELS, problems)
    _raise(problems, where, "tenants[0]", "tenant")
    assert parsed is not None
    return parsed


def image_mirror(settings: Mapping[str, Any] | None, where: str) -> str | None:
    """The validated mirror of `images` settings (None: each image from its own registry); a
    ConfigError naming `where` and the key otherwise."""
    problems = Problems()
    parsed = parse_images(to_config(settings or {}), problems)
    _raise(problems, where, "images", "images")
    return parsed.mirror


def image_settings(images: cfg.ImagesConfig) -> ImageSettings:
    return _settings_of(images)


def pod_shape(settings: Mapping[str, Any] | None, where: str) -> cfg.PodShapeConfig:
    problems = Problems()
    parsed = parse_reference_pod(to_config(settings or {}), problems)
    _raise(problems, where, "referencePod", "reference_pod")
    return parsed


def _settings_of(value: Any) -> Any:
    if isinstance(value, cfg.GpuModelConfig):
        return value.name
    if dataclasses.is_dataclass(value):
        return {field.name: _settings_of(getattr(value, field.name)) for field in dataclasses.fields(value)
                if getattr(value, field.name) not in (None, ())}
    if isinstance(value, Mapping):
        return {key: _settings_of(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_settings_of(item) for item in value]
    return value


def management_settings(management: cfg.ManagementConfig) -> ManagementSettings:
    """A validated management config as the settings a ManagementCluster takes."""
    settings = _settings_of(management)
    settings["cert_manager"] = {"install": settings.pop("install_cert_manager")}
    settings["metallb"] = {"install": settings.pop("install_metallb")}
    if not management.is_kind:  # their defaults stay in the config; mode existing refuses them given
        for key in ("node_image", "docker_network", "docker_subnet", "tenant_subnet"):
            settings.pop(key)
    return settings


def _endpoint_settings(endpoint: cfg.SshEndpointConfig) -> dict[str, Any]:
    return dict(_settings_of(endpoint))


def _host_settings(host: cfg.HostConfig) -> HostSettings:
    settings: dict[str, Any] = {"name": host.name, **_endpoint_settings(host.ssh)}
    if host.bastion is not None:
        settings["bastion"] = _endpoint_settings(host.bastion)
    return settings  # type: ignore[return-value]


def tenant_settings(tenant: cfg.TenantConfig) -> TenantSettings:
    """A validated tenant config as the settings KamajiTenant and HamiNodePool take."""
    settings = _settings_of(tenant)
    if tenant.hosts:
        settings["hosts"] = [_host_settings(host) for host in tenant.hosts]
        del settings["workers"]  # their number, given by the hosts
        del settings["address_block"]  # Docker addresses: a host has its own
        del settings["worker_network"]
    return settings


# Settings keys whose config field is spelled otherwise (GpuModelConfig.memory_mib).
_SETTINGS_KEYS = {"memory_mib": "memory_miB"}


def gpu_model_settings(models: Mapping[str, cfg.GpuModelConfig]) -> dict[str, GpuModelSettings]:
    """The stack's own GPU models (not the built-in ones) as settings."""
    return {name: {_SETTINGS_KEYS.get(field.name, field.name): getattr(model, field.name)
                   for field in dataclasses.fields(model) if field.name != "name"}
            for name, model in models.items() if name not in cfg.BUILTIN_GPU_MODELS}


def pod_shape_settings(shape: cfg.PodShapeConfig) -> PodShapeSettings:
    return _settings_of(shape)


__all__ = [
    "AddonSettings",
    "BastionSettings",
    "ChartSettings",
    "GpuModelSettings",
    "GpuPoolSettings",
    "GpuWorkloadSettings",
    "HamiSettings",
    "HostSettings",
    "ImageSettings",
    "ManagementSettings",
    "PodShapeSettings",
    "TenantSettings",
]

# The 0.1.0 names of HamiSettings and ChartSettings (every `*Settings` is a typed dictionary of
# settings now); kept for programs written against 0.1.0, removed in a later release (CHANGELOG.md).
HamiSettingsArgs = HamiSettings
ChartSource = ChartSettings
