"""kindnetd in the management cluster without kind v0.31.0's resource limits.

Tenant isolation is enforced by the management cluster's kindnetd: its network policy
(kube-network-policies) passes the first packet of every new connection to a control plane
through user space (NFQUEUE) and fails open when the agent is down (kind v0.31.0
images/kindnetd/cmd/kindnetd/main.go). The node image applies kindnet with `limits: cpu 100m,
memory 50Mi` (kind v0.31.0 pkg/build/nodeimage/const_cni.go); kind removed both right after
(kind commits eedf7648 "Removed 50MB limits", 52e59600 "Remove CPU limit for node image
kindnet") because an OOM-killed or throttled kindnetd stalls or opens the data plane. The
platform removes them from the running DaemonSet once per kind cluster, as the tenants' own
kindnet is rendered without them (kamaji_hami_platform/tenant/addons.py).
"""

from __future__ import annotations

import json

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management.access import KIND_NODE_KUBECTL
from kamaji_hami_platform.management.render import control_plane_container
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script

KINDNET_DAEMONSET = "kindnet"
KINDNET_CONTAINER = "kindnet-cni"  # the DaemonSet's only container (const_cni.go)
ROLLOUT_TIMEOUT = "180s"
_PACKAGE = "kamaji_hami_platform.management"
REMOVE_LIMITS = json.dumps([{"op": "remove", "path": "/spec/template/spec/containers/0/resources/limits"}])


def remove_limits_script(management: ManagementConfig) -> str:
    """Remove kindnet's limits (when it still has them) and wait for the rolled pods."""
    return render_script(
        _PACKAGE, "kindnet_limits.sh", node=control_plane_container(management),
        kubectl=Shell(f'docker exec "$node" {KIND_NODE_KUBECTL} -n kube-system'),
        daemonset=Text(KINDNET_DAEMONSET), container=Text(KINDNET_CONTAINER), patch=REMOVE_LIMITS,
        rollout_timeout=Text(ROLLOUT_TIMEOUT))
