"""Mock mode's node-lock release: what HAMi's device plugin does after a bind, without cards.

HAMi's scheduler takes a node's lock in `Bind` (annotation `hami.io/mutex.lock` on the Node,
`<RFC3339 time>,<namespace>,<pod>`) and never releases it after a successful bind (HAMi v2.10.0
pkg/scheduler/scheduler.go Bind: only its `fail` closure calls releaseAllDevices). On real cards
the device plugin releases it once the kubelet's Allocate ran (pkg/device-plugin/nvidiadevice/
nvinternal/plugin/util.go PodAllocationSuccess -> nodelock.ReleaseNodeLock). In mock mode there is
no device plugin, so every lock stood until `--node-lock-timeout` expired, and a second pod bound
to the same node within it failed its bind (`LockNode` does not wait: pkg/util/nodelock/
nodelock.go, "has been locked within"), was retried by kube-scheduler after a back-off, and was
placed again by a new Filter.

This agent watches the GPU nodes and, when a lock's pod is bound (its `spec.nodeName` is set: the
bind succeeded) or gone, removes the lock at the Node's resourceVersion it read (a lock taken
since is never removed). It does not write the pod's `hami.io/bind-phase` (`success` from the
device plugin): nothing reads it in mock mode (the device plugin's GetPendingPod, pkg/util/util.go;
the scheduler's getPodUsage, which nothing calls, scheduler.go), and writing it would need
`patch` on every pod of the tenant. The lock timeout stays as the backstop.
"""

from __future__ import annotations

from typing import Any

from kamaji_hami_platform import shell_templates
from kamaji_hami_platform.gpu.devices import GPU_NODE_LABEL
from kamaji_hami_platform.mirror import mirrored

_PACKAGE = "kamaji_hami_platform.gpu"

LOCK_RELEASE_AGENT = "hami-mock-lock-release"
NAMESPACE = "kube-system"
CALL_SECONDS = 10  # each kubectl call of a follow
LOCK_RELEASE_REPLICAS = 1  # two would race harmlessly (the resourceVersion decides); one is enough
# How long the agent follows one lock's pod (the bind follows the lock within HAMi's Bind,
# milliseconds apart; a pod that never binds leaves its lock to the timeout).
FOLLOW_SECONDS = 10
AGENT_USER = 65532

# The agent's whole program: gpu/scripts/lock_release.sh (busybox sh and kubectl, the image's).
# One line per Node event from a watch of the GPU nodes: name, resourceVersion, lock. Each lock
# that names a pod is followed on its own (in the background, once per lock: a pod that never binds
# holds up no other node's release): its pod is read until it is bound or gone (or FOLLOW_SECONDS
# pass), then the lock goes, at that resourceVersion. A read that fails is retried; only an empty
# answer under --ignore-not-found is "gone". Each call is bounded by `timeout`, not kubectl's
# --request-timeout: any such override makes kubectl skip its in-cluster configuration and try
# localhost:8080 (seen live, kubectl v1.35).
def agent_script() -> str:
    return shell_templates.render(_PACKAGE, "lock_release.sh")


def lock_release_rules(nodes: list[str]) -> list[dict[str, Any]]:
    """Read nodes and pods; annotate exactly the GPU nodes (kubectl annotate GETs, then PATCHes)."""
    return [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"], "resourceNames": nodes},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
    ]


def lock_release_objects(nodes: list[str], image: str, mirror: str | None = None) -> list[dict[str, Any]]:
    """The agent's ServiceAccount, RBAC and Deployment."""
    labels = {"app.kubernetes.io/name": LOCK_RELEASE_AGENT}
    container = {
        "name": "agent",
        "image": mirrored(image, mirror),
        "command": ["sh", "-c", agent_script()],
        "env": [{"name": "GPU_NODE_LABEL", "value": "=".join(GPU_NODE_LABEL)},
                {"name": "FOLLOW_SECONDS", "value": str(FOLLOW_SECONDS)},
                {"name": "CALL_SECONDS", "value": str(CALL_SECONDS)},
                # kubectl keeps a discovery cache under $HOME; give it a writable one.
                {"name": "HOME", "value": "/tmp"}],
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        # kubectl takes about 53 MB at its peak; the watch and a few followers may run at once.
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True, "runAsUser": AGENT_USER,
                            "runAsGroup": AGENT_USER, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": LOCK_RELEASE_AGENT, "namespace": NAMESPACE}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": LOCK_RELEASE_AGENT}, "rules": lock_release_rules(sorted(nodes))},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": LOCK_RELEASE_AGENT},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": LOCK_RELEASE_AGENT},
         "subjects": [{"kind": "ServiceAccount", "name": LOCK_RELEASE_AGENT, "namespace": NAMESPACE}]},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": LOCK_RELEASE_AGENT, "namespace": NAMESPACE, "labels": labels},
         "spec": {"replicas": LOCK_RELEASE_REPLICAS, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"serviceAccountName": LOCK_RELEASE_AGENT,
                                        # sh as PID 1 ignores SIGTERM; the agent keeps no state.
                                        "terminationGracePeriodSeconds": 1,
                                        # Any NoSchedule taint, but not NoExecute: from a node that
                                        # is down, the pod is evicted and runs elsewhere.
                                        "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                                        "containers": [container],
                                        "volumes": [{"name": "tmp", "emptyDir": {}}]}}}},
    ]
