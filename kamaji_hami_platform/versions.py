"""Every pinned version and image of the platform, in one table.

An air-gapped user mirrors exactly what `python -m kamaji_hami_platform.versions` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
KAMAJI_IMAGE_TAG = "26.8.2-edge"


@dataclass(frozen=True)
class ChartSource:
    """A Helm chart taken from its project's source at a git tag, verified by a content digest
    (sha256 over the sorted `sha256sum` lines of its files:
    kamaji_hami_platform/management/kamaji_chart.py)."""

    name: str
    repository: str  # github.com/<owner>/<repo>
    tag: str
    path: str  # the chart's folder in the repository
    digest: str
    # A local copy of the tag's archive (GitHub's layout), for a machine without GitHub: the digest
    # is checked all the same (make kamaji-chart ARCHIVES=<folder>).
    local_archive: str | None = None

    @property
    def pin(self) -> str:
        return f"{self.repository}@{self.tag} {self.path} content sha256:{self.digest}"

    @property
    def archive_name(self) -> str:
        """What a local copy of the tag's archive is called: `<name>-<tag>.tar.gz`."""
        return f"{self.name}-{self.tag}.tar.gz"

    @property
    def archive_url(self) -> str:
        if self.local_archive:
            return Path(self.local_archive).resolve().as_uri()  # curl reads file:// as it downloads
        return f"https://github.com/{self.repository}/archive/refs/tags/{self.tag}.tar.gz"


# Clastix publishes the open-source Kamaji chart only as 0.0.0+latest, republished on every push
# to master, with kamaji-etcd as `>=0.15.0` (clastix/kamaji docs/content/reference/versioning.md,
# charts/kamaji/Chart.yaml): installed from the repository, its CRDs, RBAC, webhooks and flags
# are whatever master is that day. So the platform installs the chart of the Kamaji tag it runs,
# and the kamaji-etcd its Chart.lock pins (0.15.0, clastix/kamaji-etcd tag v0.15.0), each from
# its git tag and checked against these digests before use.
KAMAJI_CHART_SOURCE = ChartSource(
    "kamaji", "clastix/kamaji", KAMAJI_IMAGE_TAG, "charts/kamaji",
    "230b40f2696403902c26647aaba3580b43d986b8d6acb2ad1bf8b674d2b9778a")
KAMAJI_ETCD_CHART_SOURCE = ChartSource(
    "kamaji-etcd", "clastix/kamaji-etcd", "v0.15.0", "charts/kamaji-etcd",
    "40756e29e933cd4dd59f1d2443a50535d9cfa8faad340265162f2be558aeaab4")
HAMI_CHART = HelmChart("hami", "2.10.0", "https://project-hami.github.io/HAMi/")

# What kindest/node:v1.35.0 preloads (kind v0.31.0 pkg/build/nodeimage/const_cni.go):
# no pull per worker, and the kindnet that kind itself tests with that node image.
KINDNET_IMAGE = "docker.io/kindest/kindnetd:v20251212-v0.29.0-alpha-105-g20ccfc88"
KUBE_PROXY_IMAGE_REPOSITORY = "registry.k8s.io/kube-proxy"
KUBE_SCHEDULER_IMAGE_REGISTRY = "registry.k8s.io"
KUBE_SCHEDULER_IMAGE_REPOSITORY = "kube-scheduler"
# Small image with kubectl for the in-tenant GPU capacity agent (HamiNodePool): the tenant's own
# Kubernetes version, as kubectl's version skew policy wants it (within one minor of the API server)
# and so that a mirror holds one Kubernetes release per tenant version. KUBECTL_IMAGE is the default
# tenant's (v1.35.0).
KUBECTL_IMAGE_REPOSITORY = "registry.k8s.io/kubectl"
KUBECTL_IMAGE = f"{KUBECTL_IMAGE_REPOSITORY}:v1.35.0"


def kubectl_image(kubernetes_version: str) -> str:
    """The capacity agent's kubectl image for a tenant of this version."""
    return f"{KUBECTL_IMAGE_REPOSITORY}:{kubernetes_version}"

# Image of the live suite's probe and test pods (tests/e2e).
E2E_PROBE_IMAGE = "docker.io/library/busybox:1.36.1"
# Each kind tenant's door (tenant/door.py): HAProxy's official image, the 3.0 LTS line.
DOOR_IMAGE = "docker.io/library/haproxy:3.0.11"
# containerd's sandbox image, which every kindest/node built by kind v0.31.0 preloads (kind
# images/base/files/etc/containerd/config.toml `sandbox_image`; pkg/build/nodeimage/buildcontext.go
# puts it in the image in place of kubeadm's pause): the live suite's declared-workload pods run it,
# so they need no pull and nothing to mirror.
KIND_NODE_PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

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
        ("Kamaji chart (source)", KAMAJI_CHART_SOURCE.pin),
        ("kamaji-etcd chart (source)", KAMAJI_ETCD_CHART_SOURCE.pin),
        ("Kamaji controller image", f"clastix/kamaji:{KAMAJI_IMAGE_TAG}"),
        ("HAMi chart", f"{HAMI_CHART.name} {HAMI_CHART.version}"),
        ("kindnet image (tenant CNI)", KINDNET_IMAGE),
        ("kube-proxy image (tenant)", f"{KUBE_PROXY_IMAGE_REPOSITORY}:<tenant version>"),
        ("kube-scheduler image (HAMi)", f"{KUBE_SCHEDULER_IMAGE_REGISTRY}/"
         f"{KUBE_SCHEDULER_IMAGE_REPOSITORY}:<tenant version>"),
        ("kubectl image (GPU capacity agent)", f"{KUBECTL_IMAGE_REPOSITORY}:<tenant version>"),
        ("kubectl image with a shell (mock cards' node-lock release)", LOCK_RELEASE_IMAGE),
        ("busybox image (live suite probes)", E2E_PROBE_IMAGE),
        ("HAProxy image (each kind tenant's door)", DOOR_IMAGE),
        ("pause image (live suite workload pods, preloaded)", KIND_NODE_PAUSE_IMAGE),
        ("kind CLI (e2e workflow)", KIND_CLI_VERSION),
    ]


# Images the charts and Kamaji pull, read from their sources at the pinned versions.
# quay.io/jetstack/cert-manager-<name>:<chart version> (the ACME solver only for ACME issuers).
CERT_MANAGER_IMAGES = ("controller", "webhook", "cainjector", "startupapicheck")
CERT_MANAGER_IMAGE_REGISTRY = "quay.io"  # the chart's imageRegistry (imageNamespace: jetstack)
METALLB_CONTROLLER_REPOSITORY = "quay.io/metallb/controller"
METALLB_SPEAKER_REPOSITORY = "quay.io/metallb/speaker"
METALLB_FRR_IMAGE = "quay.io/frrouting/frr:10.4.1"  # chart 0.15.3 values: speaker.frr.enabled true
# Kamaji 26.8.2-edge's Chart.lock pins kamaji-etcd 0.15.0: etcd v<appVersion 3.5.17>, and with
# cert-manager its pre-install job runs clastix/kubectl:v<management major.minor> and etcd v3.5.6.
KAMAJI_ETCD_IMAGE = "quay.io/coreos/etcd:v3.5.17"
KAMAJI_ETCD_JOB_IMAGES = ("quay.io/coreos/etcd:v3.5.6",)
KAMAJI_ETCD_KUBECTL_REPOSITORY = "docker.io/clastix/kubectl"
# The kamaji-etcd chart's job images by job (values.yaml jobs.<job>.image; cfssl runs only without
# cert-manager, which the platform always has: listed so a mirror's values cover every job).
KAMAJI_ETCD_JOB_REPOSITORIES = {"cfssl": "docker.io/cfssl/cfssl", "kubectl": KAMAJI_ETCD_KUBECTL_REPOSITORY,
                                "etcd": "quay.io/coreos/etcd"}
KAMAJI_IMAGE_REPOSITORY = "docker.io/clastix/kamaji"
# HAMi 2.10.0: global.imageTag, and on Kubernetes >= 1.22 the certgen job's `imageNew`.
HAMI_IMAGE_REGISTRY = "docker.io"  # the chart's registry of every image but kube-scheduler's
HAMI_IMAGES = ("docker.io/projecthami/hami:v2.10.0", "docker.io/liangjw/kube-webhook-certgen:v1.1.1")
# Kamaji builds its addons with kubeadm v1.36.3 (its go.mod): CoreDNS v1.14.2
# (cmd/kubeadm/app/constants); Konnectivity images are v0.<tenant minor>.0
# (internal/builders/controlplane/konnectivity_server.go, internal/resources/konnectivity/agent.go).
COREDNS_REPOSITORY = "registry.k8s.io/coredns"  # kubeadm's DNS image repository; the image is coredns
COREDNS_IMAGE = f"{COREDNS_REPOSITORY}/coredns:v1.14.2"
KONNECTIVITY_IMAGES = ("registry.k8s.io/kas-network-proxy/proxy-server",
                       "registry.k8s.io/kas-network-proxy/proxy-agent")
CONTROL_PLANE_IMAGES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
CONTROL_PLANE_IMAGE_REGISTRY = "registry.k8s.io"  # the TCP's registrySettings.registry default


def _minor(version: str) -> int:
    return int(version.lstrip("v").split(".")[1])


MANAGEMENT_MINOR = KIND_NODE_VERSION.rsplit(".", 1)[0]
# Mock mode's node-lock release agent (gpu/lock_release.py) needs a shell next to kubectl, which
# registry.k8s.io/kubectl has not: the kubectl image the Kamaji release already pulls (the default
# management version's tag; the agent's calls, get, watch and annotate, are the same on every
# tenant version within kubectl's skew).
LOCK_RELEASE_IMAGE = f"{KAMAJI_ETCD_KUBECTL_REPOSITORY}:{MANAGEMENT_MINOR}"


def kamaji_chart_images(management_minor: str = MANAGEMENT_MINOR) -> set[tuple[str, str]]:
    """What the pinned Kamaji chart deploys with the platform's values, as read from it; `make images`
    checks this against the verified chart (kamaji_hami_platform/management/kamaji_chart_images.py)."""
    return {
        ("Kamaji chart", f"{KAMAJI_IMAGE_REPOSITORY}:{KAMAJI_IMAGE_TAG}"),
        ("kamaji-etcd chart", KAMAJI_ETCD_IMAGE),
        *{("kamaji-etcd chart (job)", image) for image in KAMAJI_ETCD_JOB_IMAGES},
        ("kamaji-etcd chart (job)", f"{KAMAJI_ETCD_KUBECTL_REPOSITORY}:{management_minor}"),
    }


# The row of the management kind node's default image: a stack's management.nodeImage replaces it.
KIND_MANAGEMENT_NODE_ROW = "kind node (management and workers)"


def images(tenant_versions: list[str]) -> list[tuple[str, str]]:
    """Every image the platform pulls for tenants of these versions: (where, image), sorted.

    The list an air-gapped mirror needs: the node image, the charts' images (cert-manager,
    MetalLB, Kamaji and kamaji-etcd, HAMi), what Kamaji runs per tenant (control plane pods,
    CoreDNS, Konnectivity) and what the platform deploys itself.
    """
    rows = {
        (KIND_MANAGEMENT_NODE_ROW, KIND_NODE_IMAGE),
        *{("cert-manager chart", f"quay.io/jetstack/cert-manager-{name}:{CERT_MANAGER_CHART.version}")
          for name in CERT_MANAGER_IMAGES},
        ("MetalLB chart", f"{METALLB_CONTROLLER_REPOSITORY}:v{METALLB_CHART.version}"),
        ("MetalLB chart", f"{METALLB_SPEAKER_REPOSITORY}:v{METALLB_CHART.version}"),
        ("MetalLB chart", METALLB_FRR_IMAGE),
        *kamaji_chart_images(),
        *{("HAMi chart", image) for image in HAMI_IMAGES},
        ("HAMi node-lock release (mock cards)", LOCK_RELEASE_IMAGE),
        ("tenant CoreDNS (Kamaji addon)", COREDNS_IMAGE),
        ("tenant CNI", KINDNET_IMAGE),
        ("live suite probes", E2E_PROBE_IMAGE),
        ("tenant door (kind)", DOOR_IMAGE),
    }
    for version in sorted(set(tenant_versions)):
        rows |= {("tenant control plane (Kamaji)", f"{CONTROL_PLANE_IMAGE_REGISTRY}/{name}:{version}")
                 for name in CONTROL_PLANE_IMAGES}
        rows |= {("tenant Konnectivity (Kamaji addon)", f"{image}:v0.{_minor(version)}.0")
                 for image in KONNECTIVITY_IMAGES}
        rows.add(("tenant kube-proxy", f"{KUBE_PROXY_IMAGE_REPOSITORY}:{version}"))
        rows.add(("GPU capacity agent", kubectl_image(version)))
        scheduler = f"{KUBE_SCHEDULER_IMAGE_REGISTRY}/{KUBE_SCHEDULER_IMAGE_REPOSITORY}:{version}"
        rows.add(("HAMi kube-scheduler", scheduler))
        rows.add(("tenant workers", kind_node_image(version)))
    return sorted(rows, key=lambda row: (row[1], row[0]))


if __name__ == "__main__":
    import sys

    # `python -m kamaji_hami_platform.versions KIND_CLI_VERSION` prints one pin (for the Makefile);
    # without an argument, the table. Every image a stack pulls: kamaji_hami_platform.tools.images.
    if len(sys.argv) > 1:
        print(globals()[sys.argv[1]])
    else:
        for component, pin in pinned_table():
            print(f"{component:45} {pin}")
