"""The Kamaji chart the platform installs: from Kamaji's git tag, verified, with its kamaji-etcd.

Kamaji's Helm repository has only a `0.0.0+latest` republished from master, so the chart is taken
from the tag's archive, refused unless its content digest is the pinned one, and kept under
`.charts/` of the project, where the Helm release finds it by a project-relative path.

    python -m kamaji_hami_platform.management.kamaji_chart
        # make kamaji-chart: fetch and verify, print the path
    python -m kamaji_hami_platform.management.kamaji_chart --archives <folder>
        # make kamaji-chart ARCHIVES=<folder>: the tags' archives copied there (no GitHub), verified

Rationale: docs/design/management-cluster.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from kamaji_hami_platform import versions
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.versions import ChartSource

CACHE_DIR = ".charts"
VERIFIED_MARKER = ".verified"
FETCH_TIMEOUT_SECONDS = 600
_PACKAGE = "kamaji_hami_platform.management"


def chart_dir(kamaji: ChartSource = versions.KAMAJI_CHART_SOURCE,
              etcd: ChartSource = versions.KAMAJI_ETCD_CHART_SOURCE) -> str:
    """Where the verified chart lives, relative to the project: named after the tag and both
    digests, so a change of either pin is a new folder (and a new chart path for the release)."""
    return f"{CACHE_DIR}/{kamaji.name}-{kamaji.tag}-{kamaji.digest[:12]}-{etcd.digest[:12]}"


def _take(source: ChartSource, into: str) -> Shell:
    """Shell: download the tag's archive, keep the chart's folder at "$tmp/<into>", check its digest.
    The whole archive is unpacked, then the chart's folder moved out: GNU and BSD tar alike (no
    --wildcards)."""
    return Shell(render_script(
        _PACKAGE, "kamaji_chart_take.sh", name=Text(source.name),
        source=Text(f"{source.repository}@{source.tag}"), archive_url=source.archive_url,
        archive_url_text=Text(source.archive_url), path=Text(source.path), into=Text(into),
        digest=Text(source.digest)))


def fetch_script(kamaji: ChartSource = versions.KAMAJI_CHART_SOURCE,
                 etcd: ChartSource = versions.KAMAJI_ETCD_CHART_SOURCE) -> str:
    """Fetch, verify and assemble the chart (once: a verified folder is reused); print its path."""
    return render_script(
        _PACKAGE, "kamaji_chart_fetch.sh", dir=chart_dir(kamaji, etcd),
        verified_marker=Text(VERIFIED_MARKER),
        take_kamaji=_take(kamaji, "chart"), take_etcd=_take(etcd, f"chart/charts/{etcd.name}"),
        kamaji_digest=Text(kamaji.digest), etcd_digest=Text(etcd.digest), cache_dir=CACHE_DIR)


def local_sources(folder: str) -> tuple[ChartSource, ChartSource]:
    """The pinned sources, each taken from `<folder>/<name>-<tag>.tar.gz` (the tag's archive as
    GitHub serves it, brought to a machine without GitHub): verified by the same digests."""
    return tuple(replace(source, local_archive=str(Path(folder) / source.archive_name))
                 for source in (versions.KAMAJI_CHART_SOURCE, versions.KAMAJI_ETCD_CHART_SOURCE))


def main(argv: list[str] | None = None) -> int:
    """Fetch and verify the chart into the project's cache (a preview of a deployed stack on a
    machine that has not run `up` needs it: the release loads the chart in every preview)."""
    parser = argparse.ArgumentParser(description="Fetch and verify the pinned Kamaji chart into .charts/")
    parser.add_argument("--archives", metavar="FOLDER",
                        help="take the tags' archives from FOLDER (<name>-<tag>.tar.gz) instead of GitHub")
    args = parser.parse_args(argv)
    script = fetch_script(*local_sources(args.archives)) if args.archives else fetch_script()
    result = subprocess.run(["/bin/sh", "-c", script], text=True, capture_output=True,
                            timeout=FETCH_TIMEOUT_SECONDS, check=False)
    sys.stderr.write(result.stderr)
    sys.stdout.write(result.stdout)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
