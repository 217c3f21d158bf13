"""The Kamaji chart the platform installs: from Kamaji's git tag, verified, with its kamaji-etcd.

The script downloads each source archive (GitHub's tarball of the tag), takes the chart's
folder out of it, computes its content digest (sha256 over the `sha256sum` lines of its files,
sorted by path: independent of how the archive was compressed) and refuses a chart whose digest
is not the pinned one, naming the digest it found and how to move the pin. The verified chart,
with kamaji-etcd in its `charts/` (what `helm dependency build` would put there, per Kamaji's
Chart.lock), is kept in `.charts/` of the project, under a name that carries its digest; the
Helm release installs that folder (pulumi-kubernetes loads a local chart path relative to the
project directory, where the engine starts providers).

    python -m kamaji_hami_platform.management.kamaji_chart
        # make kamaji-chart: fetch and verify, print the path
"""

from __future__ import annotations

import shlex
import subprocess
import sys

from kamaji_hami_platform import versions
from kamaji_hami_platform.versions import ChartSource

CACHE_DIR = ".charts"
VERIFIED_MARKER = ".verified"
FETCH_TIMEOUT_SECONDS = 600


def chart_dir(kamaji: ChartSource = versions.KAMAJI_CHART_SOURCE,
              etcd: ChartSource = versions.KAMAJI_ETCD_CHART_SOURCE) -> str:
    """Where the verified chart lives, relative to the project: named after the tag and both
    digests, so a change of either pin is a new folder (and a new chart path for the release)."""
    return f"{CACHE_DIR}/{kamaji.name}-{kamaji.tag}-{kamaji.digest[:12]}-{etcd.digest[:12]}"


def _digest_function() -> str:
    return """tree_digest() {
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}
"""


def _download_function() -> str:
    return """download() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 --connect-timeout 20 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -T 20 -t 3 -O "$2" "$1"
  else
    echo "neither curl nor wget is installed: the Kamaji chart cannot be fetched" >&2; return 1
  fi
}
"""


def _take(source: ChartSource, into: str) -> str:
    """Shell: download the tag's archive, keep the chart's folder in `into`, check its digest."""
    unpacked = f'"$tmp/unpacked-{source.name}"'
    # The whole archive, then the chart's folder moved out: GNU and BSD tar alike (no --wildcards).
    return f"""echo "fetching {source.name} from {source.repository}@{source.tag}" >&2
download {shlex.quote(source.archive_url)} "$tmp/{source.name}.tar.gz" || {{
  echo "cannot download {source.archive_url}; on a host without access, put the verified chart at" \\
    "$dir (make kamaji-chart on a host with access, then copy the folder)" >&2; exit 1; }}
mkdir -p {unpacked}
tar -xzf "$tmp/{source.name}.tar.gz" -C {unpacked}
set -- {unpacked}/*/{source.path}
if [ ! -d "$1" ]; then
  echo "the archive of {source.repository}@{source.tag} has no {source.path}: refused." >&2; exit 1
fi
mkdir -p "$(dirname {into})"
mv "$1" {into}
found=$(tree_digest {into})
if [ "$found" != {source.digest} ]; then
  echo "the {source.name} chart of {source.repository}@{source.tag} ({source.path}) has content digest" \\
    "$found, but the platform pins {source.digest} (kamaji_hami_platform/versions.py): refused." >&2
  echo "If you moved to another tag on purpose, review its chart and put that digest in" \\
    "versions.py; otherwise the tag's content changed and must not be installed." >&2
  exit 1
fi
"""


def fetch_script(kamaji: ChartSource = versions.KAMAJI_CHART_SOURCE,
                 etcd: ChartSource = versions.KAMAJI_ETCD_CHART_SOURCE) -> str:
    """Fetch, verify and assemble the chart (once: a verified folder is reused); print its path."""
    target = chart_dir(kamaji, etcd)
    return f"""set -eu
dir={shlex.quote(target)}
if [ -f "$dir/{VERIFIED_MARKER}" ]; then echo "$dir"; exit 0; fi
{_digest_function()}{_download_function()}tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{_take(kamaji, '"$tmp/chart"')}{_take(etcd, f'"$tmp/chart/charts/{etcd.name}"')}\
echo "{kamaji.digest} {etcd.digest}" > "$tmp/chart/{VERIFIED_MARKER}"
mkdir -p {CACHE_DIR}
rm -rf "$dir" && mv "$tmp/chart" "$dir"
echo "$dir"
"""


def main() -> int:
    """Fetch and verify the chart into the project's cache (a preview of a deployed stack on a
    machine that has not run `up` needs it: the release loads the chart in every preview)."""
    result = subprocess.run(["/bin/sh", "-c", fetch_script()], text=True, capture_output=True,
                            timeout=FETCH_TIMEOUT_SECONDS, check=False)
    sys.stderr.write(result.stderr)
    sys.stdout.write(result.stdout)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
