"""HamiNodePool: HAMi in a tenant and the (mock) GPUs of its workers (docs/architecture.md)."""

# No `from __future__ import annotations` here: the component-provider analyzer (pulumi
# provider/experimental/analyzer.py) reads these annotations with inspect.get_annotations, unevaluated,
# and postponed ones would be bare strings it cannot follow.

from typing import Any, NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as kubernetes
from pulumi_command import local

from kamaji_hami_platform import guardrails, resource_inputs, versions
from kamaji_hami_platform.config import TenantConfig
from kamaji_hami_platform.config.settings import (
    ChartSettings,
    GpuModelSettings,
    ImageSettings,
    PodShapeSettings,
    TenantSettings,
    gpu_models,
    image_mirror,
    pod_shape,
    tenant_config,
)
from kamaji_hami_platform.gpu import render
from kamaji_hami_platform.gpu.capacity import reference_request, tenant_capacity_summary
from kamaji_hami_platform.gpu.devices import GpuDevice, tenant_devices
from kamaji_hami_platform.gpu.lock_release import lock_release_objects
from kamaji_hami_platform.gpu.workloads import plan_workloads
from kamaji_hami_platform.helm import chart_args, deep_merge
from kamaji_hami_platform.manifest_resources import create_objects
from kamaji_hami_platform.providers import check_provider_args, cluster_provider

TYPE_TOKEN = "kamaji-hami-platform:index:HamiNodePool"
HELM_TIMEOUT_SECONDS = 600


class HamiNodePoolArgs(TypedDict):
    """The inputs of a HamiNodePool."""

    tenant: TenantSettings
    """The tenant's settings (stack config `tenants[i]`): its GPUs and HAMi's settings."""
    cluster_name: str
    """The management cluster's name: the mock cards' ids derive from it."""
    tenant_provider: NotRequired[kubernetes.Provider]
    """A provider for the tenant cluster (`KamajiTenant.provider`, or your own). Or give
    `tenant_kubeconfig`."""
    tenant_kubeconfig: NotRequired[pulumi.Input[str]]
    """The tenant's admin kubeconfig (`KamajiTenant.kubeconfig`, secret): the pool then makes its
    own provider (`<name>-k8s`). The way in from another language."""
    workers: pulumi.Input[list[local.Command]]
    """The tenant's worker nodes, in order (`KamajiTenant.workers`): each node's registration waits
    for its worker and is replaced with it."""
    gpu_models: NotRequired[dict[str, GpuModelSettings]]
    """GPU models besides the built-in ones (stack config `gpuModels`)."""
    reference_pod: NotRequired[PodShapeSettings]
    """The pod shape whose count the `capacity` output gives (default 20000 MiB, 30 % cores)."""
    helm_values: NotRequired[dict[str, Any]]
    """Values deep-merged over the platform's for HAMi's chart."""
    chart: NotRequired[ChartSettings]
    """HAMi's chart from elsewhere (a mirror, an OCI registry, a local folder)."""
    images: NotRequired[ImageSettings]
    """Where images come from (stack config `images`): a mirror registry for every image."""


class HamiNodePool(pulumi.ComponentResource):
    """HAMi scheduler and webhook in one tenant, and its GPU workers registered.

    Pass `opts=ResourceOptions(depends_on=[tenant], deleted_with=tenant.control_plane)`: HAMi waits
    for the tenant's nodes, CNI and kube-proxy, and what it creates inside the tenant goes with the
    tenant's control plane (`deleted_with` is applied to those children), each node's GPU
    registration with its worker."""

    cards: dict[str, list[str]]
    """Per GPU node, the ids of the cards registered on it."""
    capacity: dict[str, Any]
    """The tenant's GPU capacity (cards, memoryMiB, cores, slots) and how many pods of the
    reference shape HAMi would place (referencePodsThatFit, from the planner): a number, or
    `{min, max}` when it depends on which of several tied nodes HAMi picks."""
    gpu_plan: dict[str, Any]
    """The tenant's declared gpu_workloads planned as HAMi would place them (fits, per workload
    placed/refused/headroom, per card what is left, the smallest fix); empty without workloads."""

    def __init__(self, name: str, args: HamiNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        where = f"HamiNodePool {name!r}"
        tenant = tenant_config(args["tenant"], where, gpu_models(args.get("gpu_models"), where))
        reference_pod = reference_request(pod_shape(args.get("reference_pod"), where))
        # The pack's guarantees the program can hold itself, before anything is registered.
        guardrails.plain_helm_values(args.get("helm_values"), where)
        mirror = image_mirror(args.get("images"), where)
        values = deep_merge(render.hami_values(tenant, mirror), args.get("helm_values"))
        guardrails.hami_webhook_fails_closed(values, where, render.WEBHOOK_EXCLUDED_NAMESPACES)
        guardrails.chart_pinned(args.get("chart"), f"{where}: chart")
        cluster_name = args["cluster_name"]
        workers = resource_inputs.resource_inputs_by_name(tenant.worker_names(), args["workers"],
                                                          resource_inputs.COMMAND, where, "workers")
        check_provider_args(args, "tenant", where)
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.tenant: TenantConfig = tenant
        # The engine gives the component's deleted_with (the tenant's control plane) to every child
        # too (source_eval.go inheritFromParent); said here as well for the SDK and the tests.
        on_tenant = pulumi.ResourceOptions(parent=self,
                                           provider=cluster_provider(args, "tenant", f"{name}-k8s", self),
                                           deleted_with=opts.deleted_with if opts else None)
        devices = tenant_devices(tenant, cluster_name)
        mock = tenant.gpus is not None and tenant.gpus.mock

        registrations = [
            self._register_node(name, node, node_devices, mock, workers[node], on_tenant,
                                _join_of(workers[node]) if tenant.on_hosts else None)
            for node, node_devices in devices.items()
        ]
        agent = []
        if mock and devices:
            agent = create_objects(
                f"{name}-gpu-capacity",
                render.capacity_agent_objects({n: sum(d.count for d in ds) for n, ds in devices.items()},
                                              mirror, versions.kubectl_image(tenant.kubernetes_version)),
                on_tenant)
            # What the device plugin does after a bind: release HAMi's node lock (gpu/lock_release.py).
            agent += create_objects(
                f"{name}-lock-release",
                lock_release_objects(sorted(devices), versions.LOCK_RELEASE_IMAGE, mirror),
                on_tenant)
        self.release = kubernetes.helm.v3.Release(
            f"{name}-hami",
            name=render.HAMI_RELEASE,
            **chart_args(versions.HAMI_CHART, args.get("chart"), mirror),
            namespace=render.HAMI_NAMESPACE,
            values=values,
            timeout=HELM_TIMEOUT_SECONDS,
            opts=pulumi.ResourceOptions.merge(on_tenant, pulumi.ResourceOptions(
                depends_on=[*registrations, *agent])),
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
        self.gpu_plan = plan_workloads(tenant, cluster_name).as_output() if tenant.gpu_workloads else {}
        self.register_outputs({"cards": self.cards, "capacity": self.capacity, "gpuPlan": self.gpu_plan})

    @staticmethod
    def _register_node(name: str, node: str, devices: list[GpuDevice], mock: bool,
                       worker: resource_inputs.ResourceInput, on_tenant: pulumi.ResourceOptions,
                       joined: pulumi.Output[str] | None) -> kubernetes.core.v1.NodePatch:
        # A Patch owns only the fields it sets: destroy removes exactly the
        # label and annotation, never the node. A replaced worker is a new Node
        # (the old one is deleted with its container): the registration is
        # replaced with it, so the new Node gets its GPUs too.
        # Named after the pool since 0.1.0; the alias keeps older stacks' `<node>-gpus`.
        # From another language, the worker is a stand-in carrying its URN (resource_inputs.py).
        # Deleted with the worker: a removed worker's registration is deleted before the worker
        # (dependents first), which would take the GPUs off a node whose drain has not run yet, and
        # keep them off when that drain fails. Skipped instead (pulumi step.go `isDeletedWith`),
        # the registration goes with the Node the worker's delete removes after its drain. A pool
        # removed without its workers still deletes it.
        return kubernetes.core.v1.NodePatch(
            f"{name}-{node}",
            metadata=render.gpu_node_metadata(node, devices, mock, joined),
            opts=pulumi.ResourceOptions.merge(on_tenant, pulumi.ResourceOptions(
                depends_on=[worker.resource, *worker.ordering], replace_with=[worker.resource],
                deleted_with=worker.resource, aliases=[pulumi.Alias(name=f"{node}-gpus")])),
        )


def _join_of(worker: resource_inputs.ResourceInput) -> pulumi.Output[str] | None:
    """A host's current join id, from its Ready wait's environment (tenant/component.py); None for
    a worker given as a stand-in (another language): its registration then follows only the
    wait's replacement."""
    environment = getattr(worker.resource, "environment", None)
    if not isinstance(environment, pulumi.Output):
        return None
    return pulumi.Output.unsecret(environment.apply(
        lambda env: (env or {}).get(resource_inputs.WORKER_JOIN_ID_ENV) or ""))
