"""Whether the stack's mirror holds every image and chart the stack pulls, before anything is
created: `make up` runs it first when `images.mirror` is set (`make preview` warns), so a missing
reference fails naming it instead of as an image pull that backs off inside a cluster.

`python -m kamaji_hami_platform.tools.mirror_check --stack <stack> [--mode up|preview]`

It asks the registry API (distribution's spec: `HEAD /v2/<name>/manifests/<tag or digest>`) for
each reference as the stack pulls it from the mirror (kamaji_hami_platform/mirror.py), by digest
where the reference pins one, so a mirror that rewrote a manifest fails here too. It reads
anonymously, taking a pull token where the registry offers one (the token protocol of
distribution's docs/spec/auth/token.md); a mirror that needs credentials for a pull cannot be
checked this way: KHP_SKIP_MIRROR_CHECK=1 skips the check, saying so. HTTPS first, with this
machine's trust (SSL_CERT_FILE as OpenSSL reads it, as the Pulumi engine's providers read it); a
registry that answers plain HTTP is asked over HTTP (as helm v3.18.6, in the Kubernetes provider,
falls back to it: pkg/registry/fallback.go), and a certificate this machine does not trust is an
error of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ConfigError, PlatformConfig, load_stack
from kamaji_hami_platform.mirror import CHARTS_PATH, mirrored, parse

SKIP_ENV = "KHP_SKIP_MIRROR_CHECK"
REQUEST_TIMEOUT_SECONDS = 20
# Every manifest type a reference may resolve to (OCI and Docker, single and multi-platform, and a
# Helm chart's OCI manifest).
MANIFEST_TYPES = ", ".join((
    "application/vnd.oci.image.index.v1+json", "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json"))
HELM_CHARTS = (versions.CERT_MANAGER_CHART, versions.METALLB_CHART, versions.HAMI_CHART)


@dataclass(frozen=True)
class Wanted:
    """One reference in the mirror: what to ask for, and what the user knows it as."""

    host: str
    name: str
    reference: str  # a tag or a digest
    source: str

    @property
    def pulled_as(self) -> str:
        separator = "@" if self.reference.startswith("sha256:") else ":"
        return f"{self.host}/{self.name}{separator}{self.reference}"


def stack_images(platform: PlatformConfig) -> list[str]:
    """Every image the stack pulls, by its upstream name: `make images`' list, with the management
    node's image the stack's own (kind mode) instead of the default, which nothing else pulls
    (workers run the node image of their tenant's version, another row)."""
    images = {image for where, image in versions.images([t.kubernetes_version for t in platform.tenants])
              if where != versions.KIND_MANAGEMENT_NODE_ROW}
    if platform.management.is_kind:
        images.add(platform.management.node_image)
    return sorted(images)


def wanted(platform: PlatformConfig) -> list[Wanted]:
    """Every image the stack pulls and every chart it installs from a Helm repository, in the mirror."""
    mirror = platform.images.mirror
    assert mirror, "the stack names no images.mirror"
    host, _, prefix = mirror.partition("/")
    found = []
    for image in stack_images(platform):
        pulled = parse(mirrored(image, mirror))
        name = pulled.repository.removeprefix(f"{host}/")
        found.append(Wanted(host, name, pulled.digest or pulled.tag or "latest", image))
    for chart in HELM_CHARTS:
        name = "/".join(part for part in (prefix, CHARTS_PATH, chart.name) if part)
        found.append(Wanted(host, name, chart.version.replace("+", "_"),
                            f"chart {chart.name} {chart.version} ({chart.repository})"))
    return found


Fetch = Callable[[urllib.request.Request], tuple[int, dict[str, str]]]


def http_fetch(request: urllib.request.Request) -> tuple[int, dict[str, str]]:
    """(status, headers) of a request; an HTTP error is a status, not an exception."""
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SECONDS) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


def _bearer_token(challenge: str, fetch_json: Callable[[str], dict]) -> str | None:
    """An anonymous pull token for a `Bearer realm=...,service=...,scope=...` challenge."""
    scheme, _, params = challenge.partition(" ")
    if scheme.lower() != "bearer":
        return None
    fields = dict(part.split("=", 1) for part in params.replace('"', "").split(",") if "=" in part)
    realm = fields.pop("realm", None)
    if not realm:
        return None
    answer = fetch_json(f"{realm}?{urllib.parse.urlencode(fields)}")
    return answer.get("token") or answer.get("access_token")


def _fetch_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT_SECONDS) as response:
        return json.loads(response.read())


class UntrustedMirror(Exception):
    """The mirror's TLS certificate is not one this machine trusts."""


def scheme_of(host: str, fetch: Fetch = http_fetch) -> str:
    """https, or http for a registry that answers plain HTTP (`GET /v2/`, the API's version check).
    A certificate this machine does not trust is an error of its own: asking over HTTP instead
    would hide it, and the Kubernetes provider, which pulls the charts with this machine's trust
    (helm falls back to HTTP only for a registry that answers TLS with plain HTTP), fails on it."""
    try:
        fetch(urllib.request.Request(f"https://{host}/v2/"))
        return "https"
    except (ssl.SSLError, urllib.error.URLError) as error:
        reason = getattr(error, "reason", error)
        if isinstance(reason, ssl.SSLCertVerificationError):
            raise UntrustedMirror(f"its TLS certificate is not trusted here ({reason.verify_message}): "
                                  "add its CA to this machine's trust (or SSL_CERT_FILE), which the "
                                  "Pulumi engine's providers use too") from error
        if isinstance(reason, ssl.SSLError):
            return "http"
        raise


def status_of(item: Wanted, scheme: str, fetch: Fetch = http_fetch,
              fetch_json: Callable[[str], dict] = _fetch_json) -> int:
    url = f"{scheme}://{item.host}/v2/{item.name}/manifests/{item.reference}"
    headers = {"Accept": MANIFEST_TYPES}
    status, answer = fetch(urllib.request.Request(url, headers=headers, method="HEAD"))
    challenge = {key.lower(): value for key, value in answer.items()}.get("www-authenticate", "")
    if status == 401 and (token := _bearer_token(challenge, fetch_json)):
        status, _ = fetch(urllib.request.Request(
            url, headers={**headers, "Authorization": f"Bearer {token}"}, method="HEAD"))
    return status


def problems(items: Iterable[Wanted], status: Callable[[Wanted], int]) -> list[str]:
    """What the mirror lacks or will not show, one line each."""
    found = []
    for item in items:
        code = status(item)
        if code in (401, 403):
            found.append(f"{item.pulled_as} ({item.source}): the mirror wants credentials to read it, "
                         f"and this check reads anonymously ({SKIP_ENV}=1 skips it)")
        elif code == 404:
            found.append(f"{item.pulled_as} ({item.source}): not in the mirror")
        elif code != 200:
            found.append(f"{item.pulled_as} ({item.source}): the mirror answered HTTP {code}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--mode", choices=("preview", "up"), default="up")
    parser.add_argument("--root", type=Path, default=None, help="the project folder (default: here)")
    args = parser.parse_args(argv)
    try:
        platform = load_stack(args.stack, args.root)
    except (ConfigError, ValueError, OSError):
        return 0  # the engine's own run says what is wrong with the config
    if not platform.images.mirror:
        return 0
    if os.environ.get(SKIP_ENV):
        print(f"note: {SKIP_ENV} is set: the mirror {platform.images.mirror} is not checked", file=sys.stderr)
        return 0
    items = wanted(platform)
    try:
        scheme = scheme_of(items[0].host)
        lacking = problems(items, lambda item: status_of(item, scheme))
    except UntrustedMirror as error:
        lacking = [f"the mirror {platform.images.mirror}: {error}"]
    except (OSError, urllib.error.URLError) as error:
        lacking = [f"the mirror {platform.images.mirror} does not answer: {error}"]
    if not lacking:
        print(f"mirror {platform.images.mirror}: all {len(items)} images and charts are there",
              file=sys.stderr)
        return 0
    prefix = "error" if args.mode == "up" else "warning"
    print(f"{prefix}: images.mirror {platform.images.mirror} lacks what the stack pulls (nothing has been "
          "created; make mirror copies them):\n  - " + "\n  - ".join(lacking), file=sys.stderr)
    return 1 if args.mode == "up" else 0


if __name__ == "__main__":
    sys.exit(main())
