"""Fill a mirror with every image and chart the stack pulls (`make mirror`), so `images.mirror`
can point at it: `python -m kamaji_hami_platform.tools.mirror_copy --stack <stack> [--to <mirror>]
[--from <registry>]`.

Each image is copied with `crane copy` (go-containerregistry), which copies a manifest or a whole
multi-platform index unchanged, so a reference pinned by digest keeps its digest in the mirror
(kamaji_hami_platform/mirror.py). Each chart the platform installs from a Helm repository is pulled
with `helm pull` and pushed as an OCI artifact to `oci://<mirror>/charts` (helm records the push
time in the manifest, so a chart pushed twice has two manifest digests; the platform pins charts
by version). `--from` copies from another mirror laid out the same way (a connected registry to an
air-gapped one) instead of from the upstream registries, charts included, with `crane copy`. A
registry that answers plain HTTP is written with crane's `--insecure`
and helm's `--plain-http`. What fails is listed at the end; the rest is copied anyway, and a second
run copies it again (crane and helm overwrite a tag with the same content).

crane and helm come from PATH: `make live-tools` builds both from their Go modules
(toolchain/live/build.sh), or install them (https://github.com/google/go-containerregistry,
https://helm.sh). The Kamaji chart is not copied: it comes from Kamaji's tagged source
(`make kamaji-chart`, docs/operations/air-gapped.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ConfigError, ImagesConfig, load_stack
from kamaji_hami_platform.mirror import CHARTS_PATH, mirrored, parse
from kamaji_hami_platform.tools import mirror_check

COPY_TIMEOUT_SECONDS = 1800
TOOLS = {"crane": "https://github.com/google/go-containerregistry (or make live-tools)",
         "helm": "https://helm.sh/docs/intro/install/ (or make live-tools)"}


@dataclasses.dataclass(frozen=True)
class Copy:
    what: str
    command: list[str]


def _tag_only(reference: str) -> str:
    """crane copies to a tag; the digest comes along with the content."""
    image = parse(reference)
    return str(dataclasses.replace(image, digest=None)) if image.tag else str(image)


def copies(stack_images: list[str], to: str, source: str | None, to_http: bool, source_http: bool,
           folder: Path) -> list[Copy]:
    """The commands that fill `to`: one per image, two per chart."""
    insecure = ["--insecure"] if to_http or source_http else []
    found = []
    for image in stack_images:
        origin = mirrored(image, source)
        found.append(Copy(image, ["crane", "copy", *insecure, origin, _tag_only(mirrored(image, to))]))
    for chart in mirror_check.HELM_CHARTS:
        target = f"{to}/{CHARTS_PATH}/{chart.name}:{chart.version}"
        if source:
            # Already an OCI artifact: copied as the images are, manifest and all.
            origin = f"{source}/{CHARTS_PATH}/{chart.name}:{chart.version}"
            found.append(Copy(f"chart {chart.name} {chart.version}",
                              ["crane", "copy", *insecure, origin, target]))
            continue
        pull = ["helm", "pull", chart.name, "--repo", chart.repository, "--version", chart.version,
                "--destination", str(folder)]
        push = ["helm", "push", str(folder / f"{chart.name}-{chart.version}.tgz"), f"oci://{to}/{CHARTS_PATH}",
                *(["--plain-http"] if to_http else [])]
        found.append(Copy(f"chart {chart.name} {chart.version}", pull))
        found.append(Copy(f"chart {chart.name} {chart.version} (push)", push))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--to", help="the mirror to fill (default: the stack's images.mirror)")
    parser.add_argument("--from", dest="source",
                        help="copy from this mirror instead of the upstream registries")
    parser.add_argument("--root", type=Path, default=None, help="the project folder (default: here)")
    args = parser.parse_args(argv)
    try:
        platform = load_stack(args.stack, args.root)
    except (ConfigError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    to = args.to or platform.images.mirror
    if not to:
        print("error: no mirror to fill: give MIRROR=<registry> (or set images.mirror)", file=sys.stderr)
        return 2
    missing = [f"{tool}: {where}" for tool, where in TOOLS.items() if shutil.which(tool) is None]
    if missing:
        print("error: make mirror needs\n  - " + "\n  - ".join(missing), file=sys.stderr)
        return 1
    images = mirror_check.stack_images(dataclasses.replace(platform, images=ImagesConfig(to)))
    try:
        to_http = mirror_check.scheme_of(to.split("/")[0]) == "http"
        source_http = bool(args.source) and mirror_check.scheme_of(args.source.split("/")[0]) == "http"
    except OSError as error:  # urllib's URLError is one
        print(f"error: a registry does not answer ({to}{f', {args.source}' if args.source else ''}): {error}",
              file=sys.stderr)
        return 1
    failed = []
    with tempfile.TemporaryDirectory(prefix="khp-mirror-") as folder:
        steps = copies(images, to, args.source, to_http, source_http, Path(folder))
        for number, step in enumerate(steps, 1):
            print(f"[{number}/{len(steps)}] {step.what}: {' '.join(step.command[:2])} ...", file=sys.stderr)
            done = subprocess.run(step.command, capture_output=True, text=True, timeout=COPY_TIMEOUT_SECONDS,
                                  check=False)
            if done.returncode != 0:
                failed.append(f"{step.what}: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    if failed:
        print(f"error: {len(failed)} of {len(steps)} steps failed:\n  - " + "\n  - ".join(failed),
              file=sys.stderr)
        return 1
    print(f"mirror {to}: {len(images)} images and {len(mirror_check.HELM_CHARTS)} charts copied "
          f"(the Kamaji chart: make kamaji-chart; {versions.KAMAJI_CHART_SOURCE.pin})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
