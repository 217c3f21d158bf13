"""Helm releases the components install: the pinned chart or the user's, the platform's values
with the user's merged over them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pulumi_kubernetes as kubernetes

from kamaji_hami_platform.config.settings import ChartSettings
from kamaji_hami_platform.mirror import mirrored_chart
from kamaji_hami_platform.refusal import Refusal
from kamaji_hami_platform.versions import HelmChart


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any] | None) -> dict[str, Any]:
    """`override` over `base`: mappings merge key by key, anything else (lists included) replaces,
    as Helm merges a values file over a chart's defaults."""
    merged = copy.deepcopy(dict(base))
    for key, value in (override or {}).items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def chart_args(pinned: HelmChart | None, override: ChartSettings | None,
               mirror: str | None = None) -> dict[str, Any]:
    """The chart, version and repository of a Release: the pinned chart (with `images.mirror`, the
    same chart and version from the mirror as an OCI artifact, `oci://<mirror>/charts/<name>`:
    kamaji_hami_platform/mirror.py), or the override (a repository mirror, an `oci://` reference
    or a local folder, which take no repository)."""
    if override:
        if not override.get("chart"):
            raise Refusal(f"a chart override needs `chart` (got {dict(override)})")
        args: dict[str, Any] = {"chart": override["chart"]}
        if override.get("version"):
            args["version"] = override["version"]
        if override.get("repository"):
            args["repository_opts"] = kubernetes.helm.v3.RepositoryOptsArgs(repo=override["repository"])
        return args
    assert pinned is not None
    if mirror:
        return {"chart": mirrored_chart(pinned.name, mirror), "version": pinned.version}
    return {"chart": pinned.name, "version": pinned.version,
            "repository_opts": kubernetes.helm.v3.RepositoryOptsArgs(repo=pinned.repository)}
