#!/usr/bin/env bash
# The Helm charts the platform installs from Helm repositories, packaged from their sources at the
# pinned tags (helm v3.21.4 of toolchain/live/build.sh), for the mirror's charts/ path
# (kamaji_hami_platform/mirror.py: oci://<mirror>/charts/<name>):
#   cert-manager v1.21.2  deploy/charts/cert-manager of the served module; its Chart.yaml has no
#                         version (cert-manager's make sets it): packaged with --version and
#                         --app-version v1.21.2, as its make/ does;
#   metallb 0.15.3        charts/metallb of go.universe.tf/metallb v0.15.3, with the crds and
#                         frr-k8s charts its charts/ folder carries (Chart.lock);
#   hami 2.10.0           charts/hami of HAMI_SRC (left out, and said, when it is not set).
# The Kamaji chart is not among them: the platform installs it from its verified source folder
# (make kamaji-chart), never from a repository.
# Usage: charts.sh <bin folder>. The last line printed is a folder of <name>-<version>.tgz.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
bin=${1:?usage: charts.sh <bin folder>}
cert_manager=$(module_dir images/cert-manager-chart github.com/cert-manager/cert-manager)/deploy/charts/cert-manager
metallb=$(module_dir images/metallb-chart go.universe.tf/metallb)/charts/metallb
hami=""
if [ -n "${HAMI_SRC:-}" ]; then hami=$(source_dir HAMI_SRC "HAMi")/charts/hami
else say "HAMI_SRC is not set: the HAMi chart is left out"; fi
cert_manager_version=$(required_version images/cert-manager-chart github.com/cert-manager/cert-manager)
key=$({ cat "$0" "$images_here/lib.sh"; basename "$(program_dir "$bin" helm)"
  for dir in "$cert_manager" "$metallb" ${hami:+"$hami"}; do source_key "$dir"; done; } | key_of)
out=$images_cache/charts-$key
if [ -d "$out" ]; then say "charts cached ($out)"; echo "$out"; exit 0; fi
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
helm_() { "$bin/helm" "$@" >/dev/null; }
helm_ package "$cert_manager" --version "$cert_manager_version" --app-version "$cert_manager_version" -d "$out.tmp"
helm_ package "$metallb" -d "$out.tmp"
[ -z "$hami" ] || helm_ package "$hami" -d "$out.tmp"
mv "$out.tmp" "$out"
say "charts packaged: $(cd "$out" && echo *.tgz)"
echo "$out"
