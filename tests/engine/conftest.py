"""The engine tier's fixtures: the engine (built once, cached by version outside the repository;
one home, backend and project copy per run), the proxy that answers what its Kubernetes provider
reaches (Helm repositories, tenant API addresses) and nothing else, and the sim tier's API servers
(tests/engine/engine.py, proxy.py, recorded_deployment.py)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kamaji_hami_platform.providers import ENABLE_PATCH_FORCE, PATCH_FORCE_ENV
from tests import tiers
from tests.engine.engine import ROOT, Engine, engine_for_tier
from tests.engine.proxy import Chart, TierProxy, pinned_charts, tier_proxy
from tests.sim.cluster import metallb_crds, toolchain_or_skip

UPSTREAM_DATA = ROOT / "toolchain" / "upstream-data.sh"
TCP_CRD = "kamaji/crd-tenantcontrolplanes.yaml"
# The two-tenants example installs HAMi from a mirror of its own (examples/two-tenants/__main__.py).
EXAMPLE_MIRROR = Chart("hami", "2.10.0", "https://charts.example.internal/hami")


@pytest.fixture(scope="session")
def proxy() -> Iterator[TierProxy]:
    with tempfile.TemporaryDirectory(prefix="khp-charts-") as folder, \
            tier_proxy(Path(folder), [*pinned_charts(), EXAMPLE_MIRROR]) as served:
        yield served


@pytest.fixture(scope="session")
def engine(proxy: TierProxy) -> Iterator[Engine]:
    # The program asks its providers to force (providers.py ENABLE_PATCH_FORCE); the tier's older
    # provider reads that only from its environment.
    patch_force = {PATCH_FORCE_ENV: str(ENABLE_PATCH_FORCE).lower()}
    with engine_for_tier(provider_env={**proxy.env(), **patch_force}) as built:
        yield built
    assert proxy.refused == [], f"the tier tried to reach what it does not serve: {proxy.refused}"


@pytest.fixture(autouse=True)
def backend_of_its_own(request: pytest.FixtureRequest) -> None:
    """Every test that uses the session's engine starts on a backend without stacks."""
    if "engine" in request.fixturenames:
        request.getfixturevalue("engine").new_backend()


@pytest.fixture(scope="session")
def sim_bin() -> Path:
    """kube-apiserver, etcd and kubectl of the sim tier (toolchain/build.sh)."""
    return toolchain_or_skip()


@pytest.fixture(scope="session")
def management_crds() -> list[dict[str, Any]]:
    """The CRDs of the objects the platform creates on a management cluster: Kamaji's
    TenantControlPlane (its chart's CRD at the pinned tag: toolchain/upstream-data.sh) and
    MetalLB's pools and announcements (its Go module)."""
    result = subprocess.run(["bash", str(UPSTREAM_DATA)], capture_output=True, text=True, timeout=60,
                            check=False)
    if result.returncode != 0:
        tiers.unavailable("engine", result.stderr.strip())
    folder = Path(result.stdout.strip().splitlines()[-1])
    return [yaml.safe_load((folder / TCP_CRD).read_text()), *metallb_crds("engine")]
