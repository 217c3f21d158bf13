"""A read-back, once per kind cluster, that the management cluster enforces NetworkPolicies at all.

kindnetd's policy controller (kube-network-policies v0.8.0, kind 20ccfc88
images/kindnetd/cmd/kindnetd/main.go: QueueID 101, table `kindnet-network-policies`) judges a
packet only when netfilter hands it to queue 101 and the controller listens there. On a kernel
without the nftables queue expression (CONFIG_NFT_QUEUE) its table is refused whole
(pkg/networkpolicy/controller.go syncNFTablesRules) and, failing open, it enforces nothing while
every pod runs: the tenants' and the platform's NetworkPolicies would be claims only. So `up`
stops here, right after the cluster, naming the cause, unless within the wait both hold in the
node's network namespace: a netfilter rule queues to 101 (kindnetd's nftables rule, or an
iptables NFQUEUE rule to it: the live tier's stand-in CNI, toolchain/live/node-image/
kindnetd-standin.sh), and a process is bound to queue 101 (/proc/net/netfilter/nfnetlink_queue).
Rationale: docs/design/network-isolation.md "The platform's namespaces".
"""

from __future__ import annotations

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.docker_calls import bounded_docker
from kamaji_hami_platform.management.render import control_plane_container
from kamaji_hami_platform.shell_templates import Text
from kamaji_hami_platform.shell_templates import render as render_script

KINDNETD_QUEUE = 101
KINDNETD_TABLE = "kindnet-network-policies"
WAIT_SECONDS = 120  # kindnetd syncs once its informers have: seconds after its pod starts
_PACKAGE = "kamaji_hami_platform.management"


def policy_engine_check_script(management: ManagementConfig, queue: int = KINDNETD_QUEUE,
                               wait_seconds: int = WAIT_SECONDS) -> str:
    """Wait until the kind node hands packets to kindnetd's queue and kindnetd listens on it."""
    return render_script(
        _PACKAGE, "policy_engine_check.sh", node=control_plane_container(management),
        bounded_docker=bounded_docker(), queue=queue, table=Text(KINDNETD_TABLE),
        wait_seconds=wait_seconds)
