"""Each chart's values with `images.mirror`, key by key as the pinned chart reads them (cited in
kamaji_hami_platform/management/render.py, gpu/render.py, tenant/control_plane.py), and the images
they make, rebuilt as each chart's template joins them."""

from __future__ import annotations

import pytest

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ManagementConfig, parse_config
from kamaji_hami_platform.gpu.render import hami_values
from kamaji_hami_platform.management import render
from kamaji_hami_platform.mirror import mirrored
from kamaji_hami_platform.tenant.control_plane import tenant_control_plane

pytestmark = pytest.mark.unit
MIRROR = "mirror.example:5000"


def test_cert_manager_builds_every_image_from_the_mirror():
    """cert-manager v1.21.2 _helpers.tpl: imageRegistry/imageNamespace/image.name:tag."""
    values = render.cert_manager_values(MIRROR)
    tag = versions.CERT_MANAGER_CHART.version
    for name in versions.CERT_MANAGER_IMAGES:
        built = f"{values['imageRegistry']}/jetstack/cert-manager-{name}:{tag}"
        assert built == mirrored(f"quay.io/jetstack/cert-manager-{name}:{tag}", MIRROR)
    assert render.cert_manager_values() == {"crds": {"enabled": True}}


def test_metallb_and_kamaji_repositories():
    metallb = render.metallb_values(MIRROR)
    assert f"{metallb['controller']['image']['repository']}:v{versions.METALLB_CHART.version}" == \
        mirrored(f"quay.io/metallb/controller:v{versions.METALLB_CHART.version}", MIRROR)
    frr = metallb["speaker"]["frr"]["image"]["repository"]
    assert f"{frr}:10.4.1" == mirrored(versions.METALLB_FRR_IMAGE, MIRROR)
    assert render.metallb_values() == {}
    kamaji = render.kamaji_values(ManagementConfig(), MIRROR)
    assert f"{kamaji['image']['repository']}:{kamaji['image']['tag']}" == \
        mirrored(f"clastix/kamaji:{versions.KAMAJI_IMAGE_TAG}", MIRROR)
    etcd = kamaji["kamaji-etcd"]
    assert f"{etcd['image']['repository']}:v3.5.17" == mirrored(versions.KAMAJI_ETCD_IMAGE, MIRROR)
    assert etcd["jobs"]["kubectl"]["image"] == f"{MIRROR}/docker.io/clastix/kubectl"
    assert etcd["replicas"] == 3
    assert "repository" not in render.kamaji_values(ManagementConfig())["image"]


def test_hami_builds_every_image_from_the_mirror(dev_config):
    """HAMi v2.10.0 _commons.tpl common.images.image: registry/repository:tag, per image."""
    tenant = parse_config(dev_config).tenants[0]
    values = hami_values(tenant, MIRROR)
    scheduler = values["scheduler"]["kubeScheduler"]["image"]
    assert f"{scheduler['registry']}/{scheduler['repository']}:{scheduler['tag']}" == \
        mirrored(f"registry.k8s.io/kube-scheduler:{tenant.kubernetes_version}", MIRROR)
    hub = f"{MIRROR}/docker.io"
    for image in (values["scheduler"]["extender"]["image"], values["scheduler"]["patch"]["imageNew"],
                  values["devicePlugin"]["image"], values["devicePlugin"]["monitor"]["image"]):
        assert image == {"registry": hub}
    assert values["scheduler"]["extender"]["extraArgs"], "the mock cards' extender flags are kept"
    assert hami_values(tenant)["scheduler"]["kubeScheduler"]["image"]["registry"] == "registry.k8s.io"


def test_the_control_plane_images_from_the_mirror(dev_config):
    """Kamaji: <registry>/<component>:<version>, <image>:<version> for Konnectivity, and kubeadm's
    <imageRepository>/coredns:<tag> for CoreDNS."""
    tenant = parse_config(dev_config).tenants[0]
    spec = tenant_control_plane(tenant, None, MIRROR)["spec"]
    registry = spec["controlPlane"]["deployment"]["registrySettings"]["registry"]
    assert f"{registry}/kube-apiserver:{tenant.kubernetes_version}" == \
        mirrored(f"registry.k8s.io/kube-apiserver:{tenant.kubernetes_version}", MIRROR)
    assert f"{spec['addons']['coreDNS']['imageRepository']}/coredns:v1.14.2" == \
        mirrored(versions.COREDNS_IMAGE, MIRROR)
    konnectivity = spec["addons"]["konnectivity"]
    assert konnectivity["server"]["image"] == f"{MIRROR}/registry.k8s.io/kas-network-proxy/proxy-server"
    assert konnectivity["agent"] == {"mode": "DaemonSet", "hostNetwork": True,
                                     "image": f"{MIRROR}/registry.k8s.io/kas-network-proxy/proxy-agent"}
    assert tenant_control_plane(tenant)["spec"]["addons"]["coreDNS"] == {}
