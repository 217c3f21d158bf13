#!/usr/bin/env bash
# The Kamaji chart for the live stack, with no GitHub: the tags' archives made from the sources
# the live images are built from (KAMAJI_SRC, `git archive 26.8.2-edge` of clastix/kamaji;
# KAMAJI_ETCD_SRC, `git archive v0.15.0` of clastix/kamaji-etcd), laid out as GitHub serves them,
# then `make kamaji-chart ARCHIVES=` verifies each chart against the digest the platform pins, as
# it would a download. A verified chart already in .charts/ is kept.
# Usage: kamaji-chart.sh (in the project folder)
set -euo pipefail
verified=$(python3 -c 'from kamaji_hami_platform.management import kamaji_chart as k; print(f"{k.chart_dir()}/{k.VERIFIED_MARKER}")')
if [ -f "$verified" ]; then echo "${verified%/*}"; exit 0; fi
: "${KAMAJI_SRC:?set KAMAJI_SRC to an export of clastix/kamaji 26.8.2-edge (docs/development/live-images.md)}"
: "${KAMAJI_ETCD_SRC:?set KAMAJI_ETCD_SRC to an export of clastix/kamaji-etcd v0.15.0 (git archive v0.15.0)}"
archives=$(mktemp -d)
trap 'rm -rf "$archives"' EXIT
# Named as the platform looks for them (versions.ChartSource.archive_name, asked, not restated),
# each with one top folder as GitHub's tarball has.
archive_name() {
  python3 -c 'import sys; from kamaji_hami_platform import versions as v; print(getattr(v, sys.argv[1]).archive_name)' "$1"
}
tar -czf "$archives/$(archive_name KAMAJI_CHART_SOURCE)" -C "$KAMAJI_SRC" --transform 's,^\.,kamaji,' .
tar -czf "$archives/$(archive_name KAMAJI_ETCD_CHART_SOURCE)" -C "$KAMAJI_ETCD_SRC" --transform 's,^\.,kamaji-etcd,' .
make --no-print-directory kamaji-chart ARCHIVES="$archives"
