"""The Kamaji chart fetch (kamaji_hami_platform/management/kamaji_chart.py), run for real with curl
on file:// archives
built here in GitHub's tarball layout: verified, assembled with kamaji-etcd, reused, refused."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from kamaji_hami_platform.management import kamaji_chart
from kamaji_hami_platform.versions import KAMAJI_IMAGE_TAG, ChartSource
from tests.standins import run_script

pytestmark = pytest.mark.unit

KAMAJI_FILES = {"Chart.yaml": "name: kamaji\nversion: 0.0.0+latest\n", "templates/a.yaml": "kind: A\n",
                "crds/tcp.yaml": "kind: CustomResourceDefinition\n"}
ETCD_FILES = {"Chart.yaml": "name: kamaji-etcd\nversion: 0.15.0\n", "values.yaml": "replicas: 3\n"}


def tree_digest(files: dict[str, str]) -> str:
    """The digest as the script computes it: sha256 of sorted `sha256sum` lines of ./<path>."""
    lines = "".join(f"{hashlib.sha256(body.encode()).hexdigest()}  ./{path}\n"
                    for path, body in sorted(files.items(), key=lambda item: f"./{item[0]}".encode()))
    return hashlib.sha256(lines.encode()).hexdigest()


def archive(path: Path, top: str, chart_path: str, files: dict[str, str]) -> Path:
    """A tarball as GitHub serves a tag: <repo>-<tag>/... with other folders beside the chart."""
    with tarfile.open(path, "w:gz") as tar:
        for name, body in {**{f"{chart_path}/{p}": b for p, b in files.items()}, "README.md": "x",
                           "charts/kamaji-crds/Chart.yaml": "name: kamaji-crds\n"}.items():
            data = body.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


class FileSource(ChartSource):
    """A ChartSource served from a local archive."""

    url: str = ""

    @property
    def archive_url(self) -> str:
        return self.url


def sources(tmp_path: Path, kamaji_files=KAMAJI_FILES, etcd_digest: str | None = None,
            etcd_files=ETCD_FILES):
    kamaji = FileSource("kamaji", "clastix/kamaji", "26.8.2-edge", "charts/kamaji", tree_digest(KAMAJI_FILES))
    object.__setattr__(kamaji, "url", archive(tmp_path / "k.tar.gz", "kamaji-26.8.2-edge", "charts/kamaji",
                                              kamaji_files).as_uri())
    etcd = FileSource("kamaji-etcd", "clastix/kamaji-etcd", "v0.15.0", "charts/kamaji-etcd",
                      etcd_digest or tree_digest(etcd_files))
    object.__setattr__(etcd, "url", archive(tmp_path / "e.tar.gz", "kamaji-etcd-0.15.0", "charts/kamaji-etcd",
                                            etcd_files).as_uri())
    return kamaji, etcd


def fetch(tmp_path: Path, kamaji: ChartSource, etcd: ChartSource) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "project"
    work.mkdir(exist_ok=True)
    return run_script(kamaji_chart.fetch_script(kamaji, etcd), shell="sh", tools=(), cwd=work)


def test_the_verified_chart_is_assembled_with_its_kamaji_etcd(tmp_path):
    kamaji, etcd = sources(tmp_path)
    result = fetch(tmp_path, kamaji, etcd)
    assert result.returncode == 0, result.stderr
    chart = tmp_path / "project" / result.stdout.strip()
    assert result.stdout.strip() == kamaji_chart.chart_dir(kamaji, etcd)
    assert (chart / "Chart.yaml").read_text() == KAMAJI_FILES["Chart.yaml"]
    assert (chart / "charts" / "kamaji-etcd" / "values.yaml").read_text() == "replicas: 3\n"
    assert not (chart / "charts" / "kamaji-crds").exists(), "only the chart's own folder"


def test_a_verified_chart_is_reused_without_downloading(tmp_path):
    kamaji, etcd = sources(tmp_path)
    assert fetch(tmp_path, kamaji, etcd).returncode == 0
    (tmp_path / "k.tar.gz").unlink()
    again = fetch(tmp_path, kamaji, etcd)
    assert again.returncode == 0 and again.stdout.strip() == kamaji_chart.chart_dir(kamaji, etcd)


def test_a_chart_whose_content_changed_is_refused_naming_both_digests(tmp_path):
    kamaji, etcd = sources(tmp_path, kamaji_files={**KAMAJI_FILES, "templates/a.yaml": "kind: Changed\n"})
    result = fetch(tmp_path, kamaji, etcd)
    assert result.returncode == 1
    changed = tree_digest({**KAMAJI_FILES, "templates/a.yaml": "kind: Changed\n"})
    assert f"content digest {changed}" in result.stderr and f"pins {kamaji.digest}" in result.stderr
    assert "kamaji_hami_platform/versions.py" in result.stderr
    assert not (tmp_path / "project" / kamaji_chart.chart_dir(kamaji, etcd)).exists(), "nothing half-built"


def test_kamaji_etcd_is_verified_too(tmp_path):
    kamaji, etcd = sources(tmp_path, etcd_digest="0" * 64)
    result = fetch(tmp_path, kamaji, etcd)
    assert result.returncode == 1 and "kamaji-etcd chart" in result.stderr


def test_an_unreachable_archive_says_how_to_bring_the_chart(tmp_path):
    kamaji, etcd = sources(tmp_path)
    object.__setattr__(kamaji, "url", (tmp_path / "missing.tar.gz").as_uri())
    result = fetch(tmp_path, kamaji, etcd)
    assert result.returncode == 1
    assert "cannot download" in result.stderr and "make kamaji-chart" in result.stderr


def test_a_new_kamaji_etcd_pin_is_a_new_folder_not_the_verified_old_one(tmp_path):
    """Only the kamaji-etcd pin moves: the reused folder would still hold the old kamaji-etcd."""
    kamaji, etcd = sources(tmp_path)
    old = fetch(tmp_path, kamaji, etcd).stdout.strip()
    newer = {**ETCD_FILES, "values.yaml": "replicas: 5\n"}
    kamaji, etcd = sources(tmp_path, etcd_files=newer)
    result = fetch(tmp_path, kamaji, etcd)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() != old
    chart = tmp_path / "project" / result.stdout.strip()
    assert (chart / "charts" / "kamaji-etcd" / "values.yaml").read_text() == "replicas: 5\n"


def test_an_archive_without_the_chart_is_refused(tmp_path):
    kamaji, etcd = sources(tmp_path)
    object.__setattr__(kamaji, "path", "charts/not-there")
    result = fetch(tmp_path, kamaji, etcd)
    assert result.returncode == 1 and "has no charts/not-there" in result.stderr


def test_a_local_copy_of_the_tags_archive_is_taken_by_name_and_verified(tmp_path):
    """`make kamaji-chart ARCHIVES=<folder>` (a machine without GitHub): each chart comes from
    `<name>-<tag>.tar.gz` there (curl reads the file:// URL as it downloads; the fetch script is
    unchanged, so no running stack's chart command is updated), and is verified as a download is."""
    folder = tmp_path / "archives"
    folder.mkdir()
    archive(folder / "kamaji-26.8.2-edge.tar.gz", "kamaji", "charts/kamaji", KAMAJI_FILES)
    archive(folder / "kamaji-etcd-v0.15.0.tar.gz", "kamaji-etcd", "charts/kamaji-etcd", ETCD_FILES)
    kamaji = ChartSource("kamaji", "clastix/kamaji", "26.8.2-edge", "charts/kamaji",
                         tree_digest(KAMAJI_FILES))
    etcd = ChartSource("kamaji-etcd", "clastix/kamaji-etcd", "v0.15.0", "charts/kamaji-etcd",
                       tree_digest(ETCD_FILES))
    local = [replace(source, local_archive=str(folder / source.archive_name)) for source in (kamaji, etcd)]
    assert [source.archive_url for source in local] == [
        (folder / "kamaji-26.8.2-edge.tar.gz").as_uri(), (folder / "kamaji-etcd-v0.15.0.tar.gz").as_uri()]
    assert kamaji_chart.chart_dir(*local) == kamaji_chart.chart_dir(kamaji, etcd), "the same verified folder"
    assert fetch(tmp_path, *local).returncode == 0


def test_the_pinned_digests_judge_local_archives_too(tmp_path, monkeypatch, capsys):
    """Archives whose charts are not the pinned ones are refused, naming the digests, and nothing
    is downloaded or kept."""
    folder = tmp_path / "archives"
    folder.mkdir()
    sources = kamaji_chart.local_sources(str(folder))
    assert [Path(source.archive_url.removeprefix("file://")).name for source in sources] == [
        f"kamaji-{KAMAJI_IMAGE_TAG}.tar.gz", "kamaji-etcd-v0.15.0.tar.gz"]
    archive(folder / sources[0].archive_name, "kamaji", "charts/kamaji", KAMAJI_FILES)
    archive(folder / sources[1].archive_name, "kamaji-etcd", "charts/kamaji-etcd", ETCD_FILES)
    monkeypatch.chdir(tmp_path)
    assert kamaji_chart.main(["--archives", str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"content digest {tree_digest(KAMAJI_FILES)}" in err and f"pins {sources[0].digest}" in err
    assert "https://" not in err
    kept = tmp_path / kamaji_chart.CACHE_DIR
    assert not kept.exists() or not any(kept.iterdir())


def test_a_missing_local_archive_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert kamaji_chart.main(["--archives", str(tmp_path / "none")]) == 1
    missing = (tmp_path / "none" / f"kamaji-{KAMAJI_IMAGE_TAG}.tar.gz").as_uri()
    assert f"cannot download {missing}" in capsys.readouterr().err
