"""Pure renderings for the management cluster: kind config, shell commands, Helm values.

Everything here is a function of validated config (or of what Docker reports), so
tests call it directly and two runs of the program produce identical inputs.
"""

from __future__ import annotations

import shlex
from typing import Any

import yaml

from kamaji_hami_platform import cgroup_v1, names, versions
from kamaji_hami_platform.config import MANAGEMENT_POD_CIDR, MANAGEMENT_SERVICE_CIDR, ManagementConfig
from kamaji_hami_platform.create_only_guards import CreateOnlySetting
from kamaji_hami_platform.docker_calls import bounded_docker
from kamaji_hami_platform.mirror import mirrored, mirrored_registry, mirrored_repository
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script

CERT_MANAGER_NAMESPACE = "cert-manager"
METALLB_NAMESPACE = "metallb-system"
KAMAJI_NAMESPACE = "kamaji-system"
# The Kamaji CRD's conversion webhook is hard-wired to this release name and
# namespace (clastix/kamaji 26.8.2-edge charts/kamaji/crds/kamaji.clastix.io_tenantcontrolplanes.yaml,
# `conversion.webhook.clientConfig.service`).
KAMAJI_RELEASE = "kamaji"
METALLB_POOL_NAME = "kind-pool"
METALLB_API_VERSION = "metallb.io/v1beta1"
KIND_NETWORK_ENV = "KIND_EXPERIMENTAL_DOCKER_NETWORK"
# Private folder (git-ignored) for the kubeconfig `kind create` writes.
KIND_KUBECONFIG_DIR = ".kind"
_PACKAGE = "kamaji_hami_platform.management"



def kind_cluster_config(management: ManagementConfig, mirror: str | None = None) -> str:
    """kind's cluster config: one node (its image from the mirror, if any), kind's default CNI,
    networks pinned explicitly; with `management.failCgroupV1: false`, the kubelet patch that
    lets the node start on cgroup v1."""
    config: dict[str, Any] = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "networking": {"podSubnet": MANAGEMENT_POD_CIDR, "serviceSubnet": MANAGEMENT_SERVICE_CIDR},
        "nodes": [{"role": "control-plane", "image": mirrored(management.node_image, mirror)}],
    }
    if patches := cgroup_v1.kind_config_patches(management):
        config["kubeadmConfigPatches"] = patches
    return yaml.safe_dump(config, sort_keys=True)


def kind_kubeconfig_path(management: ManagementConfig) -> str:
    """Where `kind create` writes the cluster's admin kubeconfig: a private file of the
    project, never the user's ~/.kube/config (kind's default, whose current context it
    would also switch). Relative to the project directory, where Pulumi runs commands.
    kind writes it with mode 0600 and `kind delete` only edits it (kind v0.31.0
    pkg/cluster/internal/kubeconfig), so the delete script removes it."""
    return f"{KIND_KUBECONFIG_DIR}/{management.name}.kubeconfig"


def _list_clusters_or_fail(action: str) -> Shell:
    """`kind get clusters` into $clusters; a Docker failure stops the script.

    Without this, `kind get clusters | grep` reads a Docker error as "no such
    cluster" (the pipeline's status is grep's): a delete would report "already
    gone" and leave the cluster running.
    """
    return Shell(render_script(_PACKAGE, "kind_clusters.sh", action=Text(action)))


def kind_create_script(management: ManagementConfig) -> str:
    """Create the kind cluster unless it exists (the config arrives on stdin), then fail unless its
    node is attached to the platform's network.

    kind takes the network from KIND_EXPERIMENTAL_DOCKER_NETWORK, a variable it calls
    unsupported ("Here be dragons", kind v0.31.0 pkg/cluster/internal/providers/docker/
    provider.go): a kind release that ignores it would put the node on `kind`, where workers
    and MetalLB addresses are not, and the failure would surface far from its cause."""
    return render_script(
        _PACKAGE, "kind_create.sh", bounded_docker=bounded_docker(),
        list_clusters=_list_clusters_or_fail("created"),
        cluster=Text(management.name), kubeconfig_dir=KIND_KUBECONFIG_DIR,
        kubeconfig=kind_kubeconfig_path(management), node=Text(control_plane_container(management)),
        network=Text(management.docker_network), network_env=Text(KIND_NETWORK_ENV),
        kind_version=Text(versions.KIND_CLI_VERSION))


def kind_delete_script(management: ManagementConfig) -> str:
    """Delete the kind cluster and its private kubeconfig; a cluster already gone is fine,
    a Docker that does not answer is an error (nothing is deleted then)."""
    return render_script(_PACKAGE, "kind_delete.sh", list_clusters=_list_clusters_or_fail("deleted"),
                         cluster=Text(management.name), kubeconfig=kind_kubeconfig_path(management))


def kind_kubeconfig_command(management: ManagementConfig) -> str:
    """`kind get kubeconfig` reads the admin kubeconfig from the node container itself
    (kind v0.31.0 pkg/cluster/internal/kubeconfig/kubeconfig.go), from no kubeconfig file."""
    return f"kind get kubeconfig --name {shlex.quote(management.name)}"


def control_plane_container(management: ManagementConfig) -> str:
    """The kind node's container: kind names a one-node cluster's node `<name>-control-plane`."""
    return names.kind_node_container(management.name)


def cert_manager_values(mirror: str | None = None) -> dict[str, Any]:
    """With a mirror, every cert-manager image from it: the chart builds each as
    `imageRegistry/imageNamespace/<name>` (cert-manager v1.21.2 deploy/charts/cert-manager/
    values.yaml `imageRegistry: quay.io`, "can include path prefixes"; templates/_helpers.tpl)."""
    values: dict[str, Any] = {"crds": {"enabled": True}}
    if mirror:
        values["imageRegistry"] = mirrored_registry(versions.CERT_MANAGER_IMAGE_REGISTRY, mirror)
    return values


def metallb_values(mirror: str | None = None) -> dict[str, Any]:
    """With a mirror, MetalLB's images from it (metallb v0.15.3 charts/metallb/values.yaml:
    controller.image.repository, speaker.image.repository, speaker.frr.image.repository)."""
    if not mirror:
        return {}
    return {
        "controller": {"image": {"repository": mirrored_repository(versions.METALLB_CONTROLLER_REPOSITORY,
                                                                   mirror)}},
        "speaker": {"image": {"repository": mirrored_repository(versions.METALLB_SPEAKER_REPOSITORY, mirror)},
                    "frr": {"image": {"repository": mirrored_repository(
                        versions.METALLB_FRR_IMAGE.rsplit(":", 1)[0], mirror)}}},
    }


def _kamaji_etcd_images(mirror: str | None) -> dict[str, Any]:
    """kamaji-etcd's images from the mirror (clastix/kamaji-etcd v0.15.0 charts/kamaji-etcd/
    values.yaml: image.repository, jobs.{cfssl,kubectl,etcd}.image)."""
    if not mirror:
        return {}
    return {
        "image": {"repository": mirrored_repository(versions.KAMAJI_ETCD_IMAGE.rsplit(":", 1)[0], mirror)},
        "jobs": {job: {"image": mirrored_repository(repository, mirror)}
                 for job, repository in versions.KAMAJI_ETCD_JOB_REPOSITORIES.items()},
    }


def kamaji_values(management: ManagementConfig, mirror: str | None = None) -> dict[str, Any]:
    """Kamaji pinned by image tag; `resources: null` as the kind guide installs it; with a mirror,
    its image and kamaji-etcd's from it (clastix/kamaji 26.8.2-edge charts/kamaji/values.yaml
    image.repository)."""
    image: dict[str, Any] = {"tag": versions.KAMAJI_IMAGE_TAG}
    if mirror:
        image["repository"] = mirrored_repository(versions.KAMAJI_IMAGE_REPOSITORY, mirror)
    return {
        "image": image,
        # null removes the chart's default limits, as the kind guide does (--set resources=null);
        # pulumi-kubernetes keeps nulls in Release values since 4.30 (helm_release_test.go
        # TestDecodeRelease_NullPreservedThroughWire), so a refresh does not diff on it.
        "resources": None,
        # Kamaji reports every TenantControlPlane create to Clastix, dry runs included
        # (26.8.2-edge internal/webhook/handlers/tcp_telemetry.go): the webhook wait's
        # dry-run probes would be counted as clusters.
        "telemetry": {"disabled": True},
        "kamaji-etcd": {"replicas": management.kamaji_etcd_replicas, **_kamaji_etcd_images(mirror)},
    }


def metallb_pool_spec(address_range: str) -> dict[str, Any]:
    return {"addresses": [address_range]}


def metallb_l2_advertisement_spec() -> dict[str, Any]:
    return {"ipAddressPools": [METALLB_POOL_NAME]}


# Settings a running management cluster cannot take. The kind cluster is protected, so a
# change that would replace it (and with it every control plane, every tenant's data) is
# refused by the engine; these guards name the setting (kamaji_hami_platform/create_only_guards.py).
MANAGEMENT_WAY_OUT = ("set the old value back, or rebuild the platform with the new one: make down, "
                      "then make up (every tenant starts empty)")
# Guarded before kind is touched (the kind command, Kamaji and the pool wait for them).
MANAGEMENT_CREATE_ONLY = (
    CreateOnlySetting("name", "management.name",
                      "it names the kind cluster that runs every tenant control plane"),
    CreateOnlySetting("nodeImage", "management.nodeImage",
                      "kind sets a node image only when it creates the cluster"),
    CreateOnlySetting("dockerNetwork", "management.dockerNetwork",
                      "kind attaches its node to the network only when it creates the cluster"),
    CreateOnlySetting("dockerSubnet", "management.dockerSubnet",
                      "the network, the kind node and every worker address live in it"),
    # kamaji-etcd forms its cluster once with --initial-cluster-state=new (clastix/kamaji-etcd chart).
    CreateOnlySetting("kamajiEtcdReplicas", "management.kamajiEtcdReplicas",
                      "kamaji-etcd forms its cluster once (3 to 1 loses quorum, 1 to 3 cannot join) "
                      "and every tenant datastore is in it"),
    # MetalLB 0.14+ reassigns addresses outside its pool; workers keep the API address they joined.
    CreateOnlySetting("metallbAddressRange", "management.metallbAddressRange",
                      "a new range moves every tenant API address while the workers keep the old one"),
)


# What kind creates the cluster with: a change of one replaces the cluster (its guard refuses it
# first); the others (kamaji-etcd, MetalLB) need a rebuild too, but not a new kind cluster.
KIND_CLUSTER_SETTINGS = ("name", "nodeImage", "dockerNetwork", "dockerSubnet")
# The kind cluster's resource: `<component>-kind`.
KIND_CLUSTER_RESOURCE = "kind"


# Mode existing: the settings of the cluster it does not create.
EXISTING_CREATE_ONLY = (
    CreateOnlySetting("mode", "management.mode",
                      "every tenant control plane and its data live in the management cluster; "
                      "another cluster starts without them"),
    # The provider's cluster identity is `existing/<name>`: another name replaces the provider and
    # with it everything the platform created on the cluster.
    CreateOnlySetting("name", "management.name",
                      "it is the management provider's cluster identity: another one replaces every "
                      "release and tenant on the cluster"),
    *(setting for setting in MANAGEMENT_CREATE_ONLY if setting.key in ("kamajiEtcdReplicas",
                                                                       "metallbAddressRange")),
    # The TCP's Service type and address are what every joined worker's kubelet reaches.
    CreateOnlySetting("apiExposure", "management.apiExposure",
                      "a tenant API moves to another address while its workers keep the one they joined"),
)


def management_create_only(management: ManagementConfig) -> tuple[CreateOnlySetting, ...]:
    """The create-only settings of the management cluster's mode. kind keeps its guards as they were
    (a new guard in a running stack would be a create, harmless, but the set stays stable)."""
    return MANAGEMENT_CREATE_ONLY if management.is_kind else EXISTING_CREATE_ONLY


def kind_cluster_settings(management: ManagementConfig) -> dict[str, str]:
    """The create-only settings kind creates its cluster with, as the cluster's replacement trigger."""
    values = management_create_only_values(management)
    return {key: values[key] for key in KIND_CLUSTER_SETTINGS}


def management_create_only_values(management: ManagementConfig) -> dict[str, str]:
    """Each create-only setting's value, as its guard's trigger."""
    if not management.is_kind:
        return {"mode": management.mode, "name": management.name,
                "kamajiEtcdReplicas": str(management.kamaji_etcd_replicas),
                "metallbAddressRange": management.pool_range or "", "apiExposure": management.api_exposure}
    return {"name": management.name, "nodeImage": management.node_image,
            "dockerNetwork": management.docker_network, "dockerSubnet": management.docker_subnet,
            "kamajiEtcdReplicas": str(management.kamaji_etcd_replicas),
            "metallbAddressRange": management.pool_range or ""}
