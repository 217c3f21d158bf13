"""HamiNodePool: HAMi in a tenant and the (mock) GPUs of its workers (design §4)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as kubernetes

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import TenantConfig
from kamaji_hami_platform.gpu import GpuRequest, render, tenant_capacity_summary
from kamaji_hami_platform.gpu.devices import GpuDevice, tenant_devices
from kamaji_hami_platform.kubernetes_objects import create_objects
from kamaji_hami_platform.tenant.component import KamajiTenant

TYPE_TOKEN = "kamaji-hami-platform:index:HamiNodePool"
HELM_TIMEOUT_SECONDS = 600


class HamiNodePool(pulumi.ComponentResource):
    """HAMi scheduler and webhook in one tenant, and its GPU workers registered."""

    cards: dict[str, list[str]]
    """Per GPU node, the ids of the cards registered on it."""
    capacity: dict[str, Any]
    """The tenant's GPU capacity (cards, memoryMiB, cores, slots) and how many pods of the
    reference shape HAMi would place (referencePodsThatFit, from the planner): a number, or
    `{min, max}` when it depends on which of several tied nodes HAMi picks."""

    def __init__(self, name: str, tenant: TenantConfig, cluster_name: str, cluster: KamajiTenant,
                 reference_pod: GpuRequest, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE_TOKEN, name, None, opts)
        on_tenant = pulumi.ResourceOptions.merge(cluster.on_tenant, pulumi.ResourceOptions(parent=self))
        nodes_ready = [*cluster.workers, *cluster.cni, *cluster.kube_proxy]
        devices = tenant_devices(tenant, cluster_name)
        mock = tenant.gpus is not None and tenant.gpus.mock

        registrations = [
            self._register_node(node, node_devices, mock, cluster, on_tenant)
            for node, node_devices in devices.items()
        ]
        agent = []
        if mock and devices:
            agent = create_objects(
                f"{name}-gpu-capacity",
                render.capacity_agent_objects({n: sum(d.count for d in ds) for n, ds in devices.items()}),
                pulumi.ResourceOptions.merge(on_tenant, pulumi.ResourceOptions(depends_on=nodes_ready)))
        self.release = kubernetes.helm.v3.Release(
            f"{name}-hami",
            name=render.HAMI_RELEASE,
            chart=versions.HAMI_CHART.name,
            version=versions.HAMI_CHART.version,
            repository_opts=kubernetes.helm.v3.RepositoryOptsArgs(repo=versions.HAMI_CHART.repository),
            namespace=render.HAMI_NAMESPACE,
            values=render.hami_values(tenant),
            timeout=HELM_TIMEOUT_SECONDS,
            opts=pulumi.ResourceOptions.merge(on_tenant, pulumi.ResourceOptions(
                depends_on=[*nodes_ready, *registrations, *agent])),
        )
        # The platform never owns a namespace it quotas: a NamespacePatch creates it when absent
        # (server-side apply) and, when the quota goes, removes only the platform's label.
        quota_namespaces = [
            kubernetes.core.v1.NamespacePatch(
                f"{name}-quota-namespace-{namespace}",
                metadata=render.quota_namespace_metadata(namespace),
                opts=pulumi.ResourceOptions.merge(on_tenant,
                                                  pulumi.ResourceOptions(depends_on=[self.release])))
            for namespace in render.quota_namespaces(tenant)]
        self.quotas = create_objects(
            f"{name}-quota", render.quota_objects(tenant),
            pulumi.ResourceOptions.merge(on_tenant, pulumi.ResourceOptions(
                depends_on=[self.release, *quota_namespaces])))

        self.cards = {node: [d.id for d in node_devices] for node, node_devices in devices.items()}
        self.capacity = tenant_capacity_summary(tenant, cluster_name, reference_pod)
        self.register_outputs({"cards": self.cards, "capacity": self.capacity})

    @staticmethod
    def _register_node(node: str, devices: list[GpuDevice], mock: bool, cluster: KamajiTenant,
                       on_tenant: pulumi.ResourceOptions) -> kubernetes.core.v1.NodePatch:
        worker = cluster.workers[cluster.node_names.index(node)]
        # A Patch owns only the fields it sets: destroy removes exactly the
        # label and annotation, never the node. A replaced worker is a new Node
        # (the old one is deleted with its container): the registration is
        # replaced with it, so the new Node gets its GPUs too.
        return kubernetes.core.v1.NodePatch(
            f"{node}-gpus",
            metadata=render.gpu_node_metadata(node, devices, mock),
            opts=pulumi.ResourceOptions.merge(on_tenant, pulumi.ResourceOptions(
                depends_on=[worker], replace_with=[worker])),
        )
