"""The README stays true: pinned versions and config keys match the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from components import config, versions

pytestmark = pytest.mark.unit

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


@pytest.mark.parametrize("pin", [
    versions.KIND_NODE_IMAGE, versions.CERT_MANAGER_CHART.version, versions.METALLB_CHART.version,
    versions.KAMAJI_CHART.version, versions.KAMAJI_IMAGE_TAG, versions.HAMI_CHART.version,
    versions.KINDNET_IMAGE, versions.KUBECTL_IMAGE, versions.E2E_PROBE_IMAGE, versions.KIND_CLI_VERSION,
])
def test_every_pin_is_listed(pin):
    assert pin in README


@pytest.mark.parametrize("key", [k for k in config._TENANT_KEYS if k != "gpus"]
                         + ["gpus.model", "gpus.perWorker", "gpus.mock", "hami.gpuSchedulerPolicy",
                            "hami.nodeLockTimeout", "management.metallbAddressRange",
                            "management.kamajiEtcdReplicas", "referencePod"])
def test_every_config_key_is_documented(key):
    assert f"`{key}" in README
