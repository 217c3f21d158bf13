"""The config's management section: the management cluster, its add-ons, and for kind the
platform's Docker network and MetalLB range."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kamaji_hami_platform import network
from kamaji_hami_platform.config.fields import ADDON, MANAGEMENT
from kamaji_hami_platform.config.model import ManagementConfig
from kamaji_hami_platform.config.modes import check_management_mode
from kamaji_hami_platform.config.reading import Problems, ipv4_network, mapping, read_section
from kamaji_hami_platform.config.rules import MODE_KIND


def _addon_install(obj: Mapping[str, Any], key: str, problems: Problems) -> bool:
    path = f"management.{key}"
    values, invalid = read_section(mapping(obj.get(key), path, problems), ADDON, path, problems)
    return True if invalid else values["install"]


def _cidr_list(raw: Any, path: str, problems: Problems) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw or not all(isinstance(item, str) for item in raw):
        problems.add(path, f"must be a non-empty list of IPv4 CIDRs, got {raw!r}")
        return ()
    return tuple(item for index, item in enumerate(raw)
                 if ipv4_network(item, f"{path}[{index}]", problems, 0, 32) is not None)


def parse_management(raw: Any, problems: Problems) -> ManagementConfig:
    obj = mapping(raw, "management", problems)
    values, invalid = read_section(obj, MANAGEMENT, "management", problems)
    address_range = obj.get("metallbAddressRange")
    mode = values["mode"] if "mode" not in invalid else MODE_KIND
    if address_range is not None and "dockerSubnet" not in invalid:
        layout = network.layout(values["dockerSubnet"]) if mode == MODE_KIND else None
        _check_address_range(address_range, layout, problems)
    install_cert_manager = _addon_install(obj, "certManager", problems)
    install_metallb = _addon_install(obj, "metallb", problems)
    client_cidrs = _cidr_list(obj.get("apiClientCidrs"), "management.apiClientCidrs", problems)
    # As for a tenant: a name that breaks its text rule still counts for the generated names.
    subnets_invalid = bool(invalid & {"dockerSubnet", "tenantSubnet"})
    if subnets_invalid or any(values[key] is None for key in invalid if key != "mode"):
        return ManagementConfig(mode=mode)
    management = ManagementConfig(
        values["name"], values["nodeImage"], values["dockerNetwork"], values["dockerSubnet"], address_range,
        values["kamajiEtcdReplicas"], mode, values["kubeconfigContext"], values["kubeconfigFile"],
        install_cert_manager, install_metallb, values["apiExposure"], values["nodePortAddress"], client_cidrs,
        values["tenantSubnet"], values["failCgroupV1"])
    check_management_mode(obj, management, problems)
    return management


def _check_address_range(value: Any, layout: network.NetworkLayout | None,
                         problems: Problems) -> None:
    """`layout`: the kind network the range must lie in (None: an existing cluster's own network)."""
    path = "management.metallbAddressRange"
    shape = MANAGEMENT.field("metallbAddressRange").checks[0]
    if not isinstance(value, str) or not shape.passes(value):
        problems.add(path, shape.message.format(value=value))
        return
    try:
        first, last = network.parse_range(value)
    except ValueError:
        problems.add(path, f"{value!r} must be two IPv4 addresses joined by '-'", "address-range")
        return
    if first > last:
        problems.add(path, f"{value!r} starts after it ends", "address-range")
    elif layout is not None and not (first in layout.pool_quarter and last in layout.pool_quarter):
        problems.add(path, f"{value!r} must lie in {layout.pool_quarter}, the last quarter of "
                           f"management.dockerSubnet: the quarters before it are Docker's own "
                           "addresses (the kind node) and the workers' fixed addresses", "address-range")
