"""The config's tenant section: a tenant's networks, workers or worker hosts, and its GPU settings
(read by config/gpu.py)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kamaji_hami_platform.config.fields import BASTION, HOST, TENANT
from kamaji_hami_platform.config.gpu import parse_gpus, parse_hami, parse_quotas, parse_workloads
from kamaji_hami_platform.config.model import GpuModelConfig, HostConfig, SshEndpointConfig, TenantConfig
from kamaji_hami_platform.config.reading import Problems, mapping, read_section
from kamaji_hami_platform.config.rules import NODE_POD_CIDR_PREFIX


def parse_tenant(raw: Any, index: int, models: Mapping[str, GpuModelConfig],
                  problems: Problems) -> TenantConfig | None:
    path = f"tenants[{index}]"
    if not isinstance(raw, Mapping) or not raw:
        problems.add(path, "must be a non-empty mapping")
        return None
    values, invalid = read_section(raw, TENANT, path, problems, defaults={"addressBlock": index})
    hosts = _parse_hosts(raw.get("hosts"), f"{path}.hosts", problems)
    workers = values["workers"]
    if raw.get("hosts") is not None:
        if raw.get("workers") is not None:
            problems.add(f"{path}.workers", "give workers (containers on the kind network) or hosts "
                         "(machines over SSH), not both: with hosts, their number is the workers'",
                         "worker-kind")
        workers = len(hosts)
    gpus = parse_gpus(raw.get("gpus"), f"{path}.gpus", workers, models, problems)
    hami = parse_hami(raw.get("hami"), f"{path}.hami", problems)
    quotas = parse_quotas(raw.get("gpuQuotas"), f"{path}.gpuQuotas", problems)
    workloads = parse_workloads(raw.get("gpuWorkloads"), f"{path}.gpuWorkloads", gpus, problems)
    if "podCidr" not in invalid and workers is not None:
        check_node_ranges(ipaddress.ip_network(values["podCidr"]), workers, path, problems)
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
                        values["konnectivityNodePort"], values["workerNetwork"])


def _ssh_endpoint(values: Mapping[str, Any], path: str, problems: Problems) -> SshEndpointConfig:
    """An SSH hop, its host key pinned or, on purpose and visibly, not checked."""
    insecure = values["insecureSkipHostKeyCheck"]
    if values["hostKey"] is None and not insecure:
        problems.add(f"{path}.hostKey", f"is required: pin the key {values['address']} answers with "
                     f"(ssh-keyscan -t ed25519 -p {values['port']} {values['address']}, and check its "
                     "fingerprint against ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the machine), "
                     "or set insecureSkipHostKeyCheck: true to accept any key", "host-key")
    if values["hostKey"] is not None and insecure:
        problems.add(f"{path}.insecureSkipHostKeyCheck", "true with a hostKey: the key would not be "
                     "checked; give one or the other", "host-key")
    return SshEndpointConfig(values["address"], values["user"], values["port"], values["privateKey"],
                             values["hostKey"], insecure)


def _parse_host(raw: Any, path: str, problems: Problems) -> HostConfig | None:
    obj = mapping(raw, path, problems)
    values, invalid = read_section(obj, HOST, path, problems)
    bastion = None
    if obj.get("bastion") is not None:
        bastion_path = f"{path}.bastion"
        bastion_values, bastion_invalid = read_section(mapping(obj["bastion"], bastion_path, problems),
                                                        BASTION, bastion_path, problems)
        if bastion_invalid:
            return None
        bastion = _ssh_endpoint(bastion_values, bastion_path, problems)
    if invalid:
        return None
    return HostConfig(values["name"], _ssh_endpoint(values, path, problems), bastion)


def _parse_hosts(raw: Any, path: str, problems: Problems) -> tuple[HostConfig, ...]:
    """The worker hosts; any invalid host makes the tenant invalid (its caller compares lengths)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        problems.add(path, f"must be a non-empty list of hosts, got {raw!r}")
        return ()
    hosts = (_parse_host(item, f"{path}[{index}]", problems) for index, item in enumerate(raw))
    return tuple(host for host in hosts if host is not None)


def check_node_ranges(pod_net: ipaddress.IPv4Network, workers: int, path: str,
                       problems: Problems) -> None:
    """Every worker needs its own /24 of the pod CIDR (see NODE_POD_CIDR_PREFIX)."""
    ranges = 2 ** max(NODE_POD_CIDR_PREFIX - pod_net.prefixlen, 0)
    if workers > ranges:
        problems.add(f"{path}.workers", f"{workers} workers need {workers} node ranges of "
                                        f"/{NODE_POD_CIDR_PREFIX}, but podCidr {pod_net} holds "
                                        f"only {ranges}: use at most {ranges} workers (a running "
                                        "tenant keeps its podCidr; only a new tenant can take a "
                                        "larger one)", "node-ranges")
