"""Reading a stack's config: through Pulumi (the program), or from a stack file (the planner, the
tools), validated as a whole by `parse_config`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from kamaji_hami_platform.config.cross_tenant import (
    check_address_blocks,
    check_api_clients,
    check_duplicate_names,
    check_generated_names,
    check_hosts,
    check_overlaps,
)
from kamaji_hami_platform.config.fields import CONFIG_KEYS, IMAGES
from kamaji_hami_platform.config.gpu import parse_gpu_capacity, parse_gpu_models, parse_reference_pod
from kamaji_hami_platform.config.management import parse_management
from kamaji_hami_platform.config.model import ImagesConfig, PlatformConfig, TenantConfig
from kamaji_hami_platform.config.modes import check_tenant_modes
from kamaji_hami_platform.config.reading import ConfigError, Problems, mapping, read_section
from kamaji_hami_platform.config.rules import MANAGEMENT_KUBECONFIG_KEY, PROJECT, SECRET_CONFIG_KEYS
from kamaji_hami_platform.config.secrets import parse_secrets, secret_values
from kamaji_hami_platform.config.tenant import parse_tenant


def parse_config(raw: Mapping[str, Any]) -> PlatformConfig:
    """Validate the raw stack config; raise one ConfigError listing every problem."""
    problems = Problems()
    if not isinstance(raw, Mapping):
        raise ConfigError([f"<root>: must be a mapping, got {type(raw).__name__}"])
    management = parse_management(raw.get("management"), problems)
    models = parse_gpu_models(raw.get("gpuModels"), problems)
    raw_tenants = raw.get("tenants")
    tenants: list[TenantConfig] = []
    if not isinstance(raw_tenants, list) or not raw_tenants:
        problems.add("tenants", "must be a non-empty list of tenants")
        raw_tenants = []
    for index, raw_tenant in enumerate(raw_tenants):
        tenant = parse_tenant(raw_tenant, index, models, problems)
        if tenant is not None:
            tenants.append(tenant)
    check_duplicate_names(raw_tenants, problems)
    check_overlaps(tenants, management, problems)
    if management.is_kind:
        check_address_blocks(tenants, management, problems)
    check_generated_names(management, raw_tenants, tenants, problems)
    check_tenant_modes(raw_tenants, tenants, management, problems)
    check_api_clients(tenants, management, problems)
    kubeconfig, ssh_keys = parse_secrets(raw, management, problems)
    check_hosts(raw_tenants, tenants, ssh_keys, problems)
    reference_pod = parse_reference_pod(raw.get("referencePod"), problems)
    enforcement = parse_gpu_capacity(raw.get("gpuCapacity"), problems)
    images = parse_images(raw.get("images"), problems)
    if problems.items:
        raise ConfigError(problems.items, problems.code_only)
    return PlatformConfig(management, tuple(tenants), models, reference_pod, enforcement, kubeconfig,
                          ssh_keys, images)


def parse_images(raw: Any, problems: Problems) -> ImagesConfig:
    values, invalid = read_section(mapping(raw, "images", problems), IMAGES, "images", problems)
    return ImagesConfig() if invalid else ImagesConfig(values["mirror"])


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
