"""The images `make images` lists for Kamaji and kamaji-etcd, read from the verified chart
(kamaji_hami_platform/management/kamaji_chart_images.py) on charts written here in the layout of the
pinned tags
(clastix/kamaji 26.8.2-edge charts/kamaji, clastix/kamaji-etcd v0.15.0 charts/kamaji-etcd)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management import kamaji_chart
from kamaji_hami_platform.management.kamaji_chart_images import chart_images, check_against_chart, qualified
from kamaji_hami_platform.management.render import kamaji_values

pytestmark = pytest.mark.unit

ETCD_VERSION = versions.KAMAJI_ETCD_IMAGE.rsplit(":v", 1)[1]
ETCD_JOB_TAG = versions.KAMAJI_ETCD_JOB_IMAGES[0].rsplit(":", 1)[1]


def write_chart(root: Path, *, etcd_app_version: str = ETCD_VERSION, self_signed: bool = False,
                deploy_etcd: bool = True) -> Path:
    """A Kamaji chart with kamaji-etcd in charts/, shaped as the pinned tags are: Kamaji's image
    tag empty (appVersion `latest`), etcd's tag empty (v<appVersion>), jobs' kubectl tag empty."""
    etcd = root / "charts" / "kamaji-etcd"
    etcd.mkdir(parents=True)
    (root / "Chart.yaml").write_text(yaml.safe_dump({"name": "kamaji", "version": "0.0.0+latest",
                                                     "appVersion": "latest"}))
    (root / "values.yaml").write_text(yaml.safe_dump({
        "image": {"repository": "clastix/kamaji", "tag": None},
        "kamaji-etcd": {"deploy": deploy_etcd, "selfSignedCertificates": {"enabled": self_signed},
                        "certManager": {"enabled": not self_signed}}}))
    (etcd / "Chart.yaml").write_text(yaml.safe_dump({"name": "kamaji-etcd", "version": "0.15.0",
                                                     "appVersion": etcd_app_version}))
    (etcd / "values.yaml").write_text(yaml.safe_dump({
        "image": {"repository": "quay.io/coreos/etcd", "tag": ""},
        "jobs": {"cfssl": {"image": "cfssl/cfssl", "tag": ""},
                 "kubectl": {"image": "clastix/kubectl", "tag": ""},
                 "etcd": {"image": "quay.io/coreos/etcd", "tag": ETCD_JOB_TAG}},
        "selfSignedCertificates": {"enabled": True}}))
    return root


def platform_values() -> dict:
    return kamaji_values(ManagementConfig())


def test_images_follow_the_templates_defaults_and_the_platform_values(tmp_path):
    rows = chart_images(write_chart(tmp_path), "v1.35", platform_values())
    assert set(rows) == versions.kamaji_chart_images("v1.35")
    assert ("Kamaji chart", f"docker.io/clastix/kamaji:{versions.KAMAJI_IMAGE_TAG}") in rows  # not :latest


def test_the_cfssl_job_appears_only_with_self_signed_certificates(tmp_path):
    rows = chart_images(write_chart(tmp_path, self_signed=True), "v1.35", platform_values())
    assert ("kamaji-etcd chart (job)", "docker.io/cfssl/cfssl:latest") in rows


def test_no_etcd_images_when_kamaji_etcd_is_not_deployed(tmp_path):
    rows = chart_images(write_chart(tmp_path, deploy_etcd=False), "v1.35", platform_values())
    assert [where for where, _ in rows] == ["Kamaji chart"]


def test_names_are_qualified_as_the_runtime_resolves_them():
    assert qualified("clastix/kamaji:1") == "docker.io/clastix/kamaji:1"
    assert qualified("busybox:1") == "docker.io/library/busybox:1"
    assert qualified("quay.io/coreos/etcd:v3") == "quay.io/coreos/etcd:v3"
    assert qualified("localhost:5000/x:1") == "localhost:5000/x:1"


def fetched(project: Path, **chart) -> Path:
    folder = write_chart(project / kamaji_chart.chart_dir(), **chart)
    (folder / kamaji_chart.VERIFIED_MARKER).write_text("ok\n")
    return project


def test_make_images_accepts_versions_py_when_it_matches_the_chart(tmp_path):
    assert check_against_chart(ManagementConfig(), fetched(tmp_path))


def test_make_images_fails_naming_the_image_when_the_chart_deploys_another(tmp_path, capsys):
    assert not check_against_chart(ManagementConfig(), fetched(tmp_path, etcd_app_version="3.6.1"))
    err = capsys.readouterr().err
    assert "the chart deploys quay.io/coreos/etcd:v3.6.1" in err
    assert f"versions.py lists {versions.KAMAJI_ETCD_IMAGE}" in err


def test_without_the_fetched_chart_the_listing_says_where_its_rows_come_from(tmp_path, capsys):
    assert check_against_chart(ManagementConfig(), tmp_path)
    assert "make kamaji-chart" in capsys.readouterr().err
