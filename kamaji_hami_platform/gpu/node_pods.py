"""How many GPU pods a tenant's worker takes: the kubelet's pod limit less the platform's own pods.

kube-scheduler's NodeResourcesFit refuses a node whose pods are at its allocatable pod count
(`Too many pods`, kubernetes v1.35.4 pkg/scheduler/framework/plugins/noderesources/fit.go) before
HAMi's extender is asked. The platform's kubelets keep the default of 110 (`maxPods`, kubernetes
v1.35.4 pkg/kubelet/apis/config/v1beta1/defaults.go; tenant/control_plane.py patches no maxPods).

The platform's own pods:
- on every worker, the DaemonSets: kindnet and kube-proxy (tenant/addons.py), Kamaji's konnectivity
  agent (tenant/control_plane.py `agent.mode: DaemonSet`), and with real cards HAMi's device
  plugin (charts/hami templates/device-plugin/daemonsetnvidia.yaml);
- somewhere, the Deployments' pods, which kube-scheduler placed before any GPU pod and may have put
  on any workers (its spreading is a preference): CoreDNS (kubeadm's two replicas,
  cmd/kubeadm/app/phases/addons/dns/dns.go `coreDNSReplicas`), HAMi's scheduler
  (`hami.schedulerReplicas`) and, with mock cards, the node-lock release (one replica). The
  planner follows every way they may sit (`floating`).

Not counted: the mock capacity agent's Job pods, which run for seconds each minute (a pod refused
for them is retried when they end; kube-scheduler ignores finished pods, scheduler.go
`status.phase!=Succeeded`), and pods the tenant's own teams run besides the declared workloads.
"""

from __future__ import annotations

from kamaji_hami_platform.config import TenantConfig
from kamaji_hami_platform.gpu.lock_release import LOCK_RELEASE_AGENT, LOCK_RELEASE_REPLICAS

KUBELET_MAX_PODS = 110
EVERY_WORKER_DAEMONSETS = ("kindnet", "kube-proxy", "konnectivity-agent")
HAMI_DEVICE_PLUGIN = "hami-device-plugin"
COREDNS_REPLICAS = 2


def daemonset_pods_per_worker(tenant: TenantConfig) -> dict[str, int]:
    """The platform's DaemonSet pods on each worker, by DaemonSet."""
    pods = {name: 1 for name in EVERY_WORKER_DAEMONSETS}
    if tenant.gpus is not None and not tenant.gpus.mock:
        pods[HAMI_DEVICE_PLUGIN] = 1
    return pods


def floating_pods(tenant: TenantConfig) -> dict[str, int]:
    """The platform's Deployment pods, which may sit on any of the tenant's workers (with mock cards,
    the node-lock release too: gpu/lock_release.py)."""
    pods = {"coredns": COREDNS_REPLICAS, "hami-scheduler": tenant.hami.scheduler_replicas}
    if tenant.gpus is not None and tenant.gpus.mock:
        pods[LOCK_RELEASE_AGENT] = LOCK_RELEASE_REPLICAS
    return pods


def gpu_pod_room(tenant: TenantConfig) -> int:
    """Pods one worker takes besides its DaemonSets' before kube-scheduler says `Too many pods`
    (the floating pods and the GPU pods share it)."""
    return KUBELET_MAX_PODS - sum(daemonset_pods_per_worker(tenant).values())


__all__ = ["KUBELET_MAX_PODS", "daemonset_pods_per_worker", "floating_pods", "gpu_pod_room"]
