"""Pure renderings for HAMi in a tenant: Helm values, GPU node registration, capacity agent, quotas.

Every Helm key used here exists in HAMi chart 2.10.0's values.yaml.
"""

from __future__ import annotations

from typing import Any

from kamaji_hami_platform import config, names, versions
from kamaji_hami_platform.config import TenantConfig
from kamaji_hami_platform.gpu.devices import (
    GPU_NODE_LABEL,
    GPU_RESOURCE,
    NODE_REGISTER_ANNOTATION,
    GpuDevice,
    node_register_annotation,
)
from kamaji_hami_platform.mirror import mirrored, mirrored_registry

HAMI_NAMESPACE = "kube-system"
HAMI_SERVICE_TYPE = "ClusterIP"
HAMI_RELEASE = "hami"
SCHEDULER_NAME = "hami-scheduler"
# The chart's own default extender args; `scheduler.extender.extraArgs`
# replaces the list, so they are repeated next to the lock timeout.
DEFAULT_EXTENDER_ARGS = ("--debug", "-v=4")
CAPACITY_AGENT = names.CAPACITY_AGENT
CAPACITY_SCHEDULE = "* * * * *"
NODE_STATUS_RESOURCE = "nodes/status"
QUOTA_NAME = "hami-gpu-quota"
QUOTA_NAMESPACE_LABEL = "io.kamaji-hami-platform/gpu-quota"
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"
# On a host's node: the join the registration was applied after (a host joined again is a new
# Node: a new id updates the registration, which applies it again).
JOIN_ANNOTATION = "io.kamaji-hami-platform/join"
# Namespaces every cluster has; quotas in them do not create the namespace.
BUILTIN_NAMESPACES = ("default", "kube-public", "kube-system", "kube-node-lease")
# Namespaces HAMi's fail-closed webhook never sees (the chart renders them as a
# `kubernetes.io/metadata.name NotIn` namespaceSelector, HAMi 2.10.0
# charts/hami/templates/scheduler/webhook.yaml): the system namespaces, where
# HAMi itself, the CNI, kube-proxy, CoreDNS and the capacity agent run.
WEBHOOK_EXCLUDED_NAMESPACES = config.WEBHOOK_EXCLUDED_NAMESPACES  # the config refuses HAMi quotas there


def _mirror_hami_images(values: dict[str, Any], mirror: str | None) -> dict[str, Any]:
    """Every HAMi image from the mirror: each image of the chart is `registry/repository:tag`
    (HAMi v2.10.0 charts/hami/templates/_commons.tpl common.images.image; the registries in
    charts/hami/values.yaml). Per image, not global.imageRegistry, which would give the kube-scheduler
    image (registry.k8s.io) the docker.io images' registry."""
    if not mirror:
        return values
    registry = {"registry": mirrored_registry(versions.HAMI_IMAGE_REGISTRY, mirror)}
    scheduler, device_plugin = values["scheduler"], values["devicePlugin"]
    scheduler.setdefault("extender", {})["image"] = dict(registry)
    scheduler["patch"] = {"image": dict(registry), "imageNew": dict(registry)}
    device_plugin.update(image=dict(registry), monitor={"image": dict(registry)})
    values["mockDevicePlugin"] = {"image": dict(registry)}
    return values


def hami_values(tenant: TenantConfig, mirror: str | None = None) -> dict[str, Any]:
    """Values for the HAMi release of one tenant (its images from the mirror, if any)."""
    return _mirror_hami_images(_hami_values(tenant, mirror), mirror)


def _hami_values(tenant: TenantConfig, mirror: str | None) -> dict[str, Any]:
    mock = tenant.gpus is None or tenant.gpus.mock
    extender: dict[str, Any] = {}
    if mock:
        # Nothing releases HAMi's node lock after a bind without the real
        # device plugin; a short expiry keeps consecutive pods from stalling
        # 5 minutes each (HAMi v2.10.0 pkg/util/nodelock/nodelock.go; the flag
        # overrides HAMI_NODELOCK_EXPIRE: cmd/scheduler/main.go).
        extender["extraArgs"] = [*DEFAULT_EXTENDER_ARGS,
                                 f"--node-lock-timeout={tenant.hami.node_lock_timeout}"]
    return {
        "scheduler": {
            "kubeScheduler": {"image": {
                "registry": mirrored_registry(versions.KUBE_SCHEDULER_IMAGE_REGISTRY, mirror),
                "repository": versions.KUBE_SCHEDULER_IMAGE_REPOSITORY,
                "tag": tenant.kubernetes_version,
            }},
            "defaultSchedulerPolicy": {
                "gpuSchedulerPolicy": tenant.hami.gpu_scheduler_policy,
                "nodeSchedulerPolicy": tenant.hami.node_scheduler_policy,
            },
            # A broken API-server-to-webhook path (Konnectivity) must fail pod
            # creation loudly, not send GPU pods to default-scheduler. The price:
            # the webhook matches every pod (not only GPU pods) outside the
            # excluded namespaces, so while no scheduler pod serves, no pod can be
            # created there. System namespaces never depend on it, and a second
            # scheduler replica (leader-elected; the chart's Service follows the
            # leader label) takes over within the lease, a gap of seconds, not minutes.
            "admissionWebhook": {"failurePolicy": "Fail",
                                 "whitelistNamespaces": list(WEBHOOK_EXCLUDED_NAMESPACES)},
            "leaderElect": True,
            "replicas": tenant.hami.scheduler_replicas,
            **({"extender": extender} if extender else {}),
            # Real cards with NVIDIA as the runtime's default: a container that asks for no GPU
            # would see every card (a CUDA image sets NVIDIA_VISIBLE_DEVICES=all) unless HAMi's
            # webhook sets it to none (HAMi v2.10.0 pkg/device/nvidia/device.go MutateAdmission,
            # OverwriteEnv; the chart templates the value as a string, device-configmap.yaml).
            **({} if mock else {"overwriteEnv": "true"}),
            # No node port (the chart's default is NodePort 31998/31993): the extender's /filter and
            # /bind answer without authentication and act with HAMi's service account, and every
            # node port answers on every worker (HAMi v2.10.0 charts/hami/values.yaml,
            # templates/scheduler/service.yaml sets nodePort only for NodePort). kube-scheduler
            # reaches the extender on 127.0.0.1 (templates/scheduler/configmap.yaml), the API server
            # the webhook through the Service, which ClusterIP keeps.
            "service": {"type": HAMI_SERVICE_TYPE},
        },
        # The real device plugin needs NVML; mock cards are registered by the platform. Real cards
        # register with the model's split count (devicePlugin.deviceSplitCount, 10 by default: HAMi
        # v2.10.0 charts/hami/values.yaml, rendered into templates/scheduler/device-configmap.yaml),
        # so what the device plugin reports is what the planner counted.
        "devicePlugin": {"enabled": not mock, "service": {"type": HAMI_SERVICE_TYPE},
                         **({} if mock or tenant.gpus is None
                            else {"deviceSplitCount": tenant.gpus.model.split_count})},
    }


def gpu_node_metadata(node: str, devices: list[GpuDevice], mock: bool, joined: Any = None) -> dict[str, Any]:
    """What the platform adds to a GPU node: the label, and in mock mode the device list.

    `pulumi.com/patchForce` takes these fields back from whoever edited them by hand
    (server-side apply conflicts would otherwise block every later `up`, and Patch
    resources do not force; pulumi-kubernetes provider/pkg/await/await.go patchForce).
    It takes nothing else: HAMi writes only `hami.io/node-handshake` and
    `hami.io/mutex.lock` on a node, which the platform never sets.
    """
    annotations = {PATCH_FORCE_ANNOTATION: "true"}
    if mock:
        annotations[NODE_REGISTER_ANNOTATION] = node_register_annotation(devices)
    if joined is not None:
        annotations[JOIN_ANNOTATION] = joined
    return {"name": node, "labels": {GPU_NODE_LABEL[0]: GPU_NODE_LABEL[1]}, "annotations": annotations}


def capacity_patch(slots: int) -> str:
    """JSON patch for the node status: cards x split count of `nvidia.com/gpu`."""
    path = GPU_RESOURCE.replace("/", "~1")
    return ('[{"op":"add","path":"/status/capacity/' + path + f'","value":"{slots}"}},'
            '{"op":"add","path":"/status/allocatable/' + path + f'","value":"{slots}"}}]')


def capacity_agent_objects(nodes: dict[str, int], mirror: str | None = None,
                           kubectl_image: str = versions.KUBECTL_IMAGE) -> list[dict[str, Any]]:
    """RBAC and one CronJob per GPU node that (re)applies its `nvidia.com/gpu` capacity, with
    `kubectl_image` (the tenant's version: versions.kubectl_image).

    `nodes` maps node name -> slots. The capacity lives in the node status,
    which a kubelet re-registration can reset; the job puts it back every minute.
    """
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": CAPACITY_AGENT, "namespace": HAMI_NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": CAPACITY_AGENT},
         "rules": [capacity_agent_rule(sorted(nodes))]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": CAPACITY_AGENT},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": CAPACITY_AGENT},
         "subjects": [{"kind": "ServiceAccount", "name": CAPACITY_AGENT,
                       "namespace": HAMI_NAMESPACE}]},
    ]
    for node, slots in sorted(nodes.items()):
        objects.append(_capacity_cronjob(node, slots, mirrored(kubectl_image, mirror)))
    return objects


def capacity_agent_rule(nodes: list[str]) -> dict[str, Any]:
    """Exactly what `kubectl patch node N --subresource=status` needs, on exactly these nodes.

    kubectl first GETs the object it patches, at the subresource it was given
    (k8s.io/cli-runtime v0.35 pkg/resource/builder.go requireObject, visitor.go
    Info.Get with Subresource), then PATCHes it; RBAC authorizes both against
    `nodes/status`, a resource of its own: `get` on `nodes` grants neither.
    """
    return {"apiGroups": [""], "resources": [NODE_STATUS_RESOURCE], "verbs": ["get", "patch"],
            "resourceNames": nodes}


def _capacity_cronjob(node: str, slots: int, image: str) -> dict[str, Any]:
    container = {
        "name": "kubectl",
        "image": image,
        "command": ["/bin/kubectl", "patch", "node", node, "--subresource=status",
                    "--type=json", "-p", capacity_patch(slots)],
        # kubectl keeps a discovery cache under $HOME; give it a writable one.
        "env": [{"name": "HOME", "value": "/tmp"}],
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                            "runAsUser": 65532, "capabilities": {"drop": ["ALL"]}},
    }
    return {
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": names.capacity_cronjob_name(node), "namespace": HAMI_NAMESPACE},
        "spec": {
            "schedule": CAPACITY_SCHEDULE,
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": {
                "backoffLimit": 2,
                "ttlSecondsAfterFinished": 300,
                "template": {"spec": {
                    "serviceAccountName": CAPACITY_AGENT,
                    "restartPolicy": "Never",
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [container],
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                }},
            }},
        },
    }


def quota_namespaces(tenant: TenantConfig) -> list[str]:
    """Namespaces the platform makes sure exist for a quota (built-in ones always do)."""
    return [ns for ns in sorted(tenant.gpu_quotas) if ns not in BUILTIN_NAMESPACES]


def quota_namespace_metadata(namespace: str) -> dict[str, Any]:
    """The platform's mark on a namespace it quotas: the only field its NamespacePatch owns."""
    return {"name": namespace, "labels": {QUOTA_NAMESPACE_LABEL: QUOTA_NAME}}


def quota_objects(tenant: TenantConfig) -> list[dict[str, Any]]:
    """Per namespace of the tenant cluster: a GPU quota (the namespace itself is never owned)."""
    return [{
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": QUOTA_NAME, "namespace": namespace},
        "spec": {"hard": {key: str(value) for key, value in sorted(limits.items())}},
    } for namespace, limits in sorted(tenant.gpu_quotas.items())]
