"""The images the verified Kamaji chart deploys, read from the chart itself.

`make images` is a mirror list, so for Kamaji and kamaji-etcd it renders the image references as
the exact pinned charts' templates do with the platform's values (merged as Helm merges a
subchart's), instead of trusting a list someone once read.

Upstream: clastix/kamaji 26.8.2-edge charts/kamaji/templates/controller.yaml,
kubeconfiggenerator-deployment.yaml; clastix/kamaji-etcd v0.15.0 charts/kamaji-etcd/templates/
_helpers.tpl `etcd.fullyQualifiedDockerImage`, etcd_job_preinstall_1.yaml, _2.yaml,
etcd_job_postdelete.yaml.
Rationale: docs/design/management-cluster.md.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import yaml

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management import kamaji_chart
from kamaji_hami_platform.management.render import kamaji_values

KAMAJI = "Kamaji chart"
KAMAJI_ETCD = "kamaji-etcd chart"
KAMAJI_ETCD_JOB = "kamaji-etcd chart (job)"
ETCD_SUBCHART = "kamaji-etcd"
DEFAULT_REGISTRY = "docker.io"


def _merge(base: dict[str, Any], override: dict[str, Any] | None) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


def qualified(image: str) -> str:
    """`clastix/kamaji:x` as the container runtime resolves it: `docker.io/clastix/kamaji:x`."""
    first = image.split("/", 1)[0]
    if "/" in image and ("." in first or ":" in first or first == "localhost"):
        return image
    return f"{DEFAULT_REGISTRY}/{image}" if "/" in image else f"{DEFAULT_REGISTRY}/library/{image}"


def chart_images(chart: Path, management_minor: str,
                 release_values: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, image) rows for the Kamaji chart at `chart` (kamaji-etcd in its charts/),
    installed with `release_values` on a management cluster of `management_minor` (`v1.35`)."""
    kamaji_meta = _load(chart / "Chart.yaml")
    kamaji = _merge(_load(chart / "values.yaml"), release_values)
    etcd_chart = chart / "charts" / ETCD_SUBCHART
    etcd_meta = _load(etcd_chart / "Chart.yaml")
    etcd = _merge(_load(etcd_chart / "values.yaml"), kamaji.get(ETCD_SUBCHART))

    image = kamaji["image"]
    rows = {(KAMAJI, f"{image['repository']}:{image.get('tag') or kamaji_meta['appVersion']}")}
    if kamaji.get(ETCD_SUBCHART, {}).get("deploy", True):
        rows.add((KAMAJI_ETCD, f"{etcd['image']['repository']}:"
                               f"{etcd['image'].get('tag') or 'v' + str(etcd_meta['appVersion'])}"))
        rows |= _etcd_job_images(etcd, management_minor)
    return sorted((where, qualified(ref)) for where, ref in rows)


def _etcd_job_images(etcd: dict[str, Any], management_minor: str) -> set[tuple[str, str]]:
    jobs = etcd["jobs"]
    kubectl = f"{jobs['kubectl']['image']}:{jobs['kubectl'].get('tag') or management_minor}"
    etcd_job = f"{jobs['etcd']['image']}:{jobs['etcd'].get('tag') or 'latest'}"
    rows = {(KAMAJI_ETCD_JOB, kubectl), (KAMAJI_ETCD_JOB, etcd_job)}
    if etcd.get("selfSignedCertificates", {}).get("enabled"):
        rows.add((KAMAJI_ETCD_JOB, f"{jobs['cfssl']['image']}:{jobs['cfssl'].get('tag') or 'latest'}"))
    return rows


def check_against_chart(management: ManagementConfig, project: Path = Path(".")) -> bool:
    """True when versions.py's Kamaji rows are what the verified chart deploys (or when the chart
    is not fetched here, said on stderr); False, naming the difference, when they drifted."""
    chart = project / kamaji_chart.chart_dir()
    if not (chart / kamaji_chart.VERIFIED_MARKER).is_file():
        print(f"note: {chart} is not fetched; the Kamaji rows are kamaji_hami_platform/versions.py's reading"
              " of the chart (make kamaji-chart, then make images, reads them from it)", file=sys.stderr)
        return True
    found = set(chart_images(chart, versions.MANAGEMENT_MINOR, kamaji_values(management)))
    pinned = versions.kamaji_chart_images()
    if found == pinned:
        return True
    print(f"kamaji_hami_platform/versions.py lists Kamaji chart images that are not what {chart} deploys:",
          file=sys.stderr)
    for where, image in sorted(found - pinned):
        print(f"  the chart deploys {image} ({where}), versions.py does not list it", file=sys.stderr)
    for where, image in sorted(pinned - found):
        print(f"  versions.py lists {image} ({where}), the chart does not deploy it", file=sys.stderr)
    return False
