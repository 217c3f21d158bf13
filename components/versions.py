"""Every pinned version and image of the platform, in one table.

An air-gapped user mirrors exactly what `python -m components.versions` prints.
"""

from __future__ import annotations

from dataclasses import dataclass

KIND_NODE_IMAGE_REPOSITORY = "kindest/node"
KIND_NODE_VERSION = "v1.35.0"
KIND_NODE_IMAGE = f"{KIND_NODE_IMAGE_REPOSITORY}:{KIND_NODE_VERSION}"


@dataclass(frozen=True)
class HelmChart:
    """A Helm chart pinned to one version in one repository."""

    name: str
    version: str
    repository: str


CERT_MANAGER_CHART = HelmChart("cert-manager", "v1.18.3", "https://charts.jetstack.io")
METALLB_CHART = HelmChart("metallb", "0.15.3", "https://metallb.github.io/metallb")
# Clastix publishes the open-source chart only as 0.0.0+latest; the controller
# image tag below is what actually pins Kamaji (facts/kamaji.md §2.1).
KAMAJI_CHART = HelmChart("kamaji", "0.0.0+latest", "https://clastix.github.io/charts")
KAMAJI_IMAGE_TAG = "26.8.2-edge"
HAMI_CHART = HelmChart("hami", "2.10.0", "https://project-hami.github.io/HAMi/")

KINDNET_IMAGE = "docker.io/kindest/kindnetd:v20260528-9350166c"
KUBE_PROXY_IMAGE_REPOSITORY = "registry.k8s.io/kube-proxy"
KUBE_SCHEDULER_IMAGE_REGISTRY = "registry.k8s.io"
KUBE_SCHEDULER_IMAGE_REPOSITORY = "kube-scheduler"
# Small image with kubectl for the in-tenant GPU capacity agent (HamiNodePool).
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.35.0"

# Image of the live suite's probe and test pods (tests/e2e).
E2E_PROBE_IMAGE = "docker.io/library/busybox:1.36.1"
# kind CLI the e2e workflow installs (its releases ship kindest/node:v1.35.0).
KIND_CLI_VERSION = "v0.31.0"

# Tenant Kubernetes versions Kamaji 26.8.2-edge accepts: up to its KubeadmVersion
# v1.36 (facts/kamaji.md §1.3, §1.7); the platform supports v1.30 upwards.
TENANT_MIN_MINOR = 30
TENANT_MAX_MINOR = 36
KUBERNETES_MAJOR = 1


def kind_node_image(kubernetes_version: str) -> str:
    """The kindest/node image a worker of a tenant at this version runs."""
    return f"{KIND_NODE_IMAGE_REPOSITORY}:{kubernetes_version}"


def pinned_table() -> list[tuple[str, str]]:
    """(component, pinned version or image) rows, in a stable order, for README and `make images`."""
    return [
        ("kind node image (management and workers)", KIND_NODE_IMAGE),
        ("cert-manager chart", f"{CERT_MANAGER_CHART.name} {CERT_MANAGER_CHART.version}"),
        ("MetalLB chart", f"{METALLB_CHART.name} {METALLB_CHART.version}"),
        ("Kamaji chart", f"{KAMAJI_CHART.name} {KAMAJI_CHART.version}"),
        ("Kamaji controller image", f"clastix/kamaji:{KAMAJI_IMAGE_TAG}"),
        ("HAMi chart", f"{HAMI_CHART.name} {HAMI_CHART.version}"),
        ("kindnet image (tenant CNI)", KINDNET_IMAGE),
        ("kube-proxy image (tenant)", f"{KUBE_PROXY_IMAGE_REPOSITORY}:<tenant version>"),
        ("kube-scheduler image (HAMi)", f"{KUBE_SCHEDULER_IMAGE_REGISTRY}/"
         f"{KUBE_SCHEDULER_IMAGE_REPOSITORY}:<tenant version>"),
        ("kubectl image (GPU capacity agent)", KUBECTL_IMAGE),
        ("busybox image (live suite probes)", E2E_PROBE_IMAGE),
        ("kind CLI (e2e workflow)", KIND_CLI_VERSION),
    ]


if __name__ == "__main__":
    for component, pin in pinned_table():
        print(f"{component:45} {pin}")
