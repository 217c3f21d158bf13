"""The README stays true: pinned versions and config keys match the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from kamaji_hami_platform import config, versions

pytestmark = pytest.mark.unit

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


@pytest.mark.parametrize("pin", [
    versions.KIND_NODE_IMAGE, versions.CERT_MANAGER_CHART.version, versions.METALLB_CHART.version,
    versions.KAMAJI_CHART_SOURCE.digest, versions.KAMAJI_ETCD_CHART_SOURCE.digest, versions.KAMAJI_IMAGE_TAG,
    versions.HAMI_CHART.version,
    versions.KINDNET_IMAGE, versions.KUBECTL_IMAGE, versions.E2E_PROBE_IMAGE, versions.KIND_CLI_VERSION,
    versions.KIND_NODE_PAUSE_IMAGE,
])
def test_every_pin_is_listed(pin):
    assert pin in README


@pytest.mark.parametrize("key", [k for k in config.TENANT.keys if k != "gpus"]
                         + ["gpus.model", "gpus.perWorker", "gpus.mock", "hami.gpuSchedulerPolicy",
                            "hami.nodeLockTimeout", "management.metallbAddressRange",
                            "management.kamajiEtcdReplicas", "referencePod"])
def test_every_config_key_is_documented(key):
    assert f"`{key}" in README


def test_images_cover_charts_kamaji_addons_and_every_tenant_version():
    """`make images` is a mirror list: every chart's images, Kamaji's per-tenant images for
    each tenant version, and the platform's own, each pinned by tag or digest."""
    listed = [image for _, image in versions.images(["v1.35.0", "v1.36.1"])]
    for expected in ("quay.io/jetstack/cert-manager-webhook:" + versions.CERT_MANAGER_CHART.version,
                     f"quay.io/metallb/speaker:v{versions.METALLB_CHART.version}",
                     f"docker.io/clastix/kamaji:{versions.KAMAJI_IMAGE_TAG}",
                     "docker.io/projecthami/hami:v2.10.0",
                     "registry.k8s.io/kas-network-proxy/proxy-agent:v0.36.0",
                     "registry.k8s.io/kube-apiserver:v1.36.1", "kindest/node:v1.36.1",
                     versions.KIND_NODE_IMAGE, versions.KINDNET_IMAGE, versions.COREDNS_IMAGE):
        assert expected in listed, expected
    for image in listed:
        name = image.split("@")[0].rsplit("/", 1)[-1]
        assert ":" in name and not name.endswith(":latest"), image


def test_the_sim_toolchain_pins_are_listed():
    """The Go modules the sim tier builds are pinned in their go.mod files; the README names them."""
    import re
    from pathlib import Path

    for go_mod in sorted(Path(__file__).resolve().parents[2].glob("toolchain/sim/*/go.mod")):
        for module, version in re.findall(r"^require ([\w./-]+) (v[\w.-]+)$", go_mod.read_text(), re.M):
            assert f"`{module}` `{version}`" in README, (go_mod, module)
