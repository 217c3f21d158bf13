"""The config's GPU sections: GPU models, a tenant's cards, HAMi settings, GPU quotas, declared
GPU workloads, the reference pod and what a preview does when workloads do not fit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kamaji_hami_platform.config.fields import (
    GPU_CAPACITY,
    GPU_MODEL,
    GPU_WORKLOAD,
    GPUS,
    HAMI,
    QUOTA_LIMITS,
    QUOTA_NAMESPACE,
    REFERENCE_POD,
)
from kamaji_hami_platform.config.model import (
    BUILTIN_GPU_MODELS,
    GpuModelConfig,
    GpuPoolConfig,
    GpuWorkloadConfig,
    HamiConfig,
    PodShapeConfig,
)
from kamaji_hami_platform.config.reading import Problems, integer, is_int, mapping, read_section
from kamaji_hami_platform.config.rules import (
    HAMI_QUOTA_PREFIX,
    MISLEADING_QUOTA_KEYS,
    QUOTA_KEYS,
    WEBHOOK_EXCLUDED_NAMESPACES,
)


def parse_gpu_models(raw: Any, problems: Problems) -> dict[str, GpuModelConfig]:
    models = dict(BUILTIN_GPU_MODELS)
    for name, spec in mapping(raw, "gpuModels", problems).items():
        path = f"gpuModels.{name}"
        if name in BUILTIN_GPU_MODELS:
            problems.add(path, "redefines a built-in GPU model")
            continue
        values, invalid = read_section(mapping(spec, path, problems), GPU_MODEL, path, problems)
        if not invalid:
            models[str(name)] = GpuModelConfig(str(name), values["memoryMiB"], values["cores"],
                                         values["splitCount"], values["product"])
    return models


def parse_hami(raw: Any, path: str, problems: Problems) -> HamiConfig:
    values, invalid = read_section(mapping(raw, path, problems), HAMI, path, problems)
    if invalid:
        return HamiConfig()
    return HamiConfig(values["gpuSchedulerPolicy"], values["nodeSchedulerPolicy"],
                        values["nodeLockTimeout"], values["schedulerReplicas"])


def parse_gpus(raw: Any, path: str, workers: int | None, models: Mapping[str, GpuModelConfig],
                problems: Problems) -> GpuPoolConfig | None:
    if raw is None:
        return None
    values, invalid = read_section(mapping(raw, path, problems), GPUS, path, problems)
    model_name = values["model"]
    model = models.get(model_name) if model_name is not None else None
    if model_name is not None and model is None:
        problems.add(f"{path}.model", f"unknown GPU model {model_name!r} "
                                      f"(defined: {', '.join(sorted(models))})", "gpu-model")
    if workers == 0:
        problems.add(path, "GPUs are requested but the tenant has 0 workers", "gpus-without-workers")
    if model is None or invalid:
        return None
    return GpuPoolConfig(model, values["perWorker"], values["mock"])


def _quota_problem(namespace: Any, key: Any, value: Any) -> str | None:
    if key in MISLEADING_QUOTA_KEYS:
        return (f"is enforced by nobody (Kubernetes counts extended resources only as requests): "
                f"use {MISLEADING_QUOTA_KEYS[key]}")
    if str(key).startswith(HAMI_QUOTA_PREFIX) and namespace in WEBHOOK_EXCLUDED_NAMESPACES:
        return (f"is enforced by nobody in {namespace}: HAMi's webhook skips that namespace, so its pods "
                f"never reach HAMi's quota checks (requests.nvidia.com/gpu still applies)")
    if key not in QUOTA_KEYS:
        return f"is not a GPU quota key HAMi or Kubernetes enforces (allowed: {', '.join(QUOTA_KEYS)})"
    if not is_int(value) or value < QUOTA_LIMITS.field(key).minimum:
        return f"must be a non-negative integer, got {value!r}"
    return None


def parse_quotas(raw: Any, path: str, problems: Problems) -> dict[str, dict[str, int]]:
    """namespace in the tenant cluster -> HAMi quota limits."""
    quotas: dict[str, dict[str, int]] = {}
    for namespace, limits in mapping(raw, path, problems).items():
        ns_path = f"{path}.{namespace}"
        if isinstance(namespace, str) and not QUOTA_NAMESPACE.passes(namespace):
            problems.add(ns_path, QUOTA_NAMESPACE.message.format(value=namespace))
        quota: dict[str, int] = {}
        for key, value in mapping(limits, ns_path, problems).items():
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


def _optional_integer(obj: Mapping[str, Any], key: str, path: str, problems: Problems) -> int | None:
    spec = GPU_WORKLOAD.field(key)
    if obj.get(key) is None:
        return None
    return integer(obj, key, path, problems, None, spec.minimum or 0, spec.maximum)


def _parse_workload(raw: Any, path: str, gpus: GpuPoolConfig | None,
                    problems: Problems) -> GpuWorkloadConfig | None:
    obj = mapping(raw, path, problems)
    values, invalid = read_section(obj, GPU_WORKLOAD, path, problems)
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
    workload = GpuWorkloadConfig(values["name"], values["replicas"], values["gpu"], gpumem, percentage,
                           values["gpucores"], card_type, values["namespace"])
    if workload.namespace in WEBHOOK_EXCLUDED_NAMESPACES:
        problems.add(f"{path}.namespace", f"HAMi's webhook skips {workload.namespace}: its pods would keep "
                                          "the default scheduler and never reach HAMi", "workload-model")
    for key, problem in _never_fits(workload, gpus):
        problems.add(f"{path}.{key}" if key else path, problem, "workload-model")
    return workload


def _never_fits(workload: GpuWorkloadConfig, gpus: GpuPoolConfig | None) -> list[tuple[str, str]]:
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
    if workload.gpucores is not None and workload.gpucores > model.cores:
        found.append(("gpucores", f"{workload.gpucores} %, but each {model.name} card has {model.cores}"))
    if workload.type is not None and not type_matches(workload.type, model.product):
        found.append(("type", f"{workload.type!r} names no part of {model.product!r}, the tenant's cards "
                              "(HAMi would refuse every card: CardTypeMismatch)"))
    return found


def type_matches(wanted: str, product: str) -> bool:
    """HAMi's use-gputype check (pkg/device/devices.go CheckType): a comma-separated list, each
    entry trimmed, matching when one is part of the card's type, case-insensitively."""
    return any(entry.strip().upper() in product.upper() for entry in wanted.split(",") if entry.strip())


def parse_workloads(raw: Any, path: str, gpus: GpuPoolConfig | None,
                     problems: Problems) -> tuple[GpuWorkloadConfig, ...]:
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


def parse_gpu_capacity(raw: Any, problems: Problems) -> str:
    values, invalid = read_section(mapping(raw, "gpuCapacity", problems), GPU_CAPACITY, "gpuCapacity",
                                    problems)
    return GPU_CAPACITY.field("enforcement").default if invalid else values["enforcement"]


def parse_reference_pod(raw: Any, problems: Problems) -> PodShapeConfig:
    values, invalid = read_section(mapping(raw, "referencePod", problems), REFERENCE_POD, "referencePod",
                                    problems)
    if invalid:
        return PodShapeConfig()
    return PodShapeConfig(values["gpumem"], values["gpucores"], values["gpu"])
