"""kindnetd in the management cluster without kind v0.31.0's resource limits.

Tenant isolation rests on the management cluster's kindnetd, which an OOM-killed or throttled
agent stalls or opens, so the limits the node image applies are removed once per kind cluster,
as kind itself removed them right after v0.31.0.

Upstream: kind v0.31.0 pkg/build/nodeimage/const_cni.go (the limits); kind commits eedf7648,
52e59600 (their removal).
Rationale: docs/design/network-isolation.md.
"""

from __future__ import annotations

import json

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.docker_calls import bounded_docker
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
        bounded_docker=bounded_docker(),
        kubectl=Shell(f'docker exec "$node" {KIND_NODE_KUBECTL} -n kube-system'),
        daemonset=Text(KINDNET_DAEMONSET), container=Text(KINDNET_CONTAINER), patch=REMOVE_LIMITS,
        rollout_timeout=Text(ROLLOUT_TIMEOUT))
