"""Every image from a mirror registry (`images.mirror`): the one rule that rewrites a reference.

A reference `<registry>/<path>[:<tag>][@<digest>]` is pulled from the mirror as
`<mirror>/<registry>/<path>[:<tag>][@<digest>]`: the source registry stays in the path, so
`registry.k8s.io/pause` and `docker.io/library/pause` never collide, and a chart that takes an
image as registry and repository gets `<mirror>/<registry>` as its registry. A registry's port
cannot be part of a path (distribution/reference regexp.go: no `:` in a path component), so
`registry.example:5000` becomes the component `registry.example_5000`. Docker Hub's short
names are spelled out first, as Docker resolves them (`busybox` is `docker.io/library/busybox`;
github.com/distribution/reference normalize.go). Tag and digest are kept: a mirror filled by
copying manifests unchanged (`make mirror`, `crane copy`, `skopeo copy --all` keep the bytes)
serves the same digest, and `make up` checks each reference against the mirror before anything is
created (kamaji_hami_platform/tools/mirror_check.py), naming what it lacks. A mirror that rewrites
manifests (another media type, a single platform picked) serves other digests: pin-by-digest
references then fail that check, and the fix is to copy with the manifests kept.

The charts the platform takes from Helm repositories (cert-manager, MetalLB, HAMi) come from the
mirror too, as OCI artifacts at `oci://<mirror>/charts/<name>` and their pinned versions. Kamaji's
chart is the verified folder `make kamaji-chart` writes from Kamaji's tagged source, as without a
mirror (copied from a machine with access: docs/operations/air-gapped.md).

Without a mirror every function here returns its input: a stack without `images.mirror` renders
exactly what it did.
"""

from __future__ import annotations

from dataclasses import dataclass

DOCKER_HUB = "docker.io"
# Where a mirror holds the platform's Helm charts, as OCI artifacts (helm push <chart>.tgz oci://<mirror>/charts).
CHARTS_PATH = "charts"
DOCKER_HUB_LIBRARY = "library"
CONFIG_PATH = "images.mirror"


@dataclass(frozen=True)
class ImageReference:
    """An image reference split as registries read it."""

    registry: str
    path: str
    tag: str | None
    digest: str | None

    @property
    def repository(self) -> str:
        """`<registry>/<path>`, without tag and digest."""
        return f"{self.registry}/{self.path}"

    def __str__(self) -> str:
        return (f"{self.repository}{f':{self.tag}' if self.tag else ''}"
                f"{f'@{self.digest}' if self.digest else ''}")


def parse(reference: str) -> ImageReference:
    """Split a reference; the first component is a registry only if it has a dot or a port, or
    is `localhost` (distribution/reference normalize.go splitDockerDomain)."""
    rest, _, digest = reference.partition("@")
    name, tag = rest, None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = rest.rsplit(":", 1)
    first, slash, remainder = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, remainder
    else:
        registry, path = DOCKER_HUB, name
    if registry == DOCKER_HUB and "/" not in path:
        path = f"{DOCKER_HUB_LIBRARY}/{path}"
    return ImageReference(registry, path, tag, digest or None)


def _in_mirror(mirror: str, registry: str) -> str:
    return f"{mirror}/{registry.replace(':', '_')}"


def mirrored(reference: str, mirror: str | None) -> str:
    """The reference to pull: from the mirror when there is one, else unchanged."""
    if not mirror:
        return reference
    image = parse(reference)
    return str(ImageReference(_in_mirror(mirror, image.registry), image.path, image.tag, image.digest))


def mirrored_registry(registry: str, mirror: str | None) -> str:
    """What to give a chart or a TenantControlPlane that takes the registry apart from the
    repository: the same rule as `mirrored`."""
    return _in_mirror(mirror, registry) if mirror else registry


def mirrored_repository(repository: str, mirror: str | None) -> str:
    """A repository without tag (`quay.io/metallb/controller`), for charts that take one."""
    if not mirror:
        return repository
    image = parse(repository)
    return f"{_in_mirror(mirror, image.registry)}/{image.path}"


def mirrored_chart(name: str, mirror: str) -> str:
    """A pinned chart's OCI reference in the mirror (its version is the Release's `version`)."""
    return f"oci://{mirror}/{CHARTS_PATH}/{name}"
