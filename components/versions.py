"""Every pinned version and image of the platform, in one table.

An air-gapped user mirrors exactly what `python -m components.versions` prints.
"""

from __future__ import annotations

from dataclasses import dataclass

KIND_NODE_IMAGE_REPOSITORY = "kindest/node"
KIND_NODE_VERSION = "v1.35.0"
# kind CLI release that builds the pinned node image (and that the e2e workflow
# installs); `make up` warns when the installed kind is another release.
KIND_CLI_VERSION = "v0.31.0"
# Node images by digest, as kind's release notes give them: a tag can be
# re-pushed, a digest cannot. kind v0.31.0 pkg/apis/config/defaults/image.go.
KIND_NODE_DIGESTS = {
    "v1.35.0": "sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f",
}


@dataclass(frozen=True)
class HelmChart:
    """A Helm chart pinned to one version in one repository."""

    name: str
    version: str
    repository: str


# cert-manager 1.21 supports Kubernetes 1.33-1.36 (cert-manager.io/docs/releases; 1.18 is
# end of life and stops at 1.33). v1.21.2: cert-manager/website#2261, cert-manager#9237.
CERT_MANAGER_CHART = HelmChart("cert-manager", "v1.21.2", "https://charts.jetstack.io")
METALLB_CHART = HelmChart("metallb", "0.15.3", "https://metallb.github.io/metallb")
# Clastix publishes the open-source chart only as 0.0.0+latest; the controller
# image tag below is what actually pins Kamaji (clastix/kamaji docs/content/reference/versioning.md).
KAMAJI_CHART = HelmChart("kamaji", "0.0.0+latest", "https://clastix.github.io/charts")
KAMAJI_IMAGE_TAG = "26.8.2-edge"
HAMI_CHART = HelmChart("hami", "2.10.0", "https://project-hami.github.io/HAMi/")

# What kindest/node:v1.35.0 preloads (kind v0.31.0 pkg/build/nodeimage/const_cni.go):
# no pull per worker, and the kindnet that kind itself tests with that node image.
KINDNET_IMAGE = "docker.io/kindest/kindnetd:v20251212-v0.29.0-alpha-105-g20ccfc88"
KUBE_PROXY_IMAGE_REPOSITORY = "registry.k8s.io/kube-proxy"
KUBE_SCHEDULER_IMAGE_REGISTRY = "registry.k8s.io"
KUBE_SCHEDULER_IMAGE_REPOSITORY = "kube-scheduler"
# Small image with kubectl for the in-tenant GPU capacity agent (HamiNodePool).
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.35.0"

# Image of the live suite's probe and test pods (tests/e2e).
E2E_PROBE_IMAGE = "docker.io/library/busybox:1.36.1"

# The oldest Pulumi CLI the program may run with: the engine must honour `replace_with`
# (added in 3.207) and `deleted_with`; the platform is tested with the SDK pin of requirements.txt.
PULUMI_CLI_MIN_VERSION = "3.272.0"

# Tenant Kubernetes versions Kamaji 26.8.2-edge accepts: up to its KubeadmVersion
# v1.36 (clastix/kamaji 26.8.2-edge internal/upgrade/kubeadm_version.go,
# internal/webhook/handlers/tcp_version.go); the platform supports v1.30 upwards.
TENANT_MIN_MINOR = 30
TENANT_MAX_MINOR = 36
KUBERNETES_MAJOR = 1


def kind_node_image(kubernetes_version: str) -> str:
    """The kindest/node image of this version, by digest where kind's release notes give one."""
    image = f"{KIND_NODE_IMAGE_REPOSITORY}:{kubernetes_version}"
    digest = KIND_NODE_DIGESTS.get(kubernetes_version)
    return f"{image}@{digest}" if digest else image


KIND_NODE_IMAGE = kind_node_image(KIND_NODE_VERSION)


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
    import sys

    # `python -m components.versions KIND_CLI_VERSION` prints one pin (for the Makefile).
    if len(sys.argv) > 1:
        print(globals()[sys.argv[1]])
    else:
        for component, pin in pinned_table():
            print(f"{component:45} {pin}")
