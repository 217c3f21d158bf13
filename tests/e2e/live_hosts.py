"""Worker hosts on the live tier (tests/e2e/test_live_hosts.py): the stacks' configs and what a
host's state says, as pure functions the unit tests call (tests/e2e/unit/test_live_hosts.py).

Two stacks in mode existing, each on a kind cluster of its own on one Docker network of the tier's
engine, with worker hosts that are containers of the host image (toolchain/live/hosts/): stack
`<run>a` has tenants `team` (hosts node-1 and node-2) and `team-b` (host node-3); stack `<run>b`
has a tenant `team` too, with a host node-1 of its own: same tenant and host names, another
machine. Every host has its own address and host key, pinned in its stack.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from kamaji_hami_platform.config import PROJECT
from kamaji_hami_platform.tenant import host_join

# The tier's mirror and version (toolchain/live/stack/config.py).
MIRROR = "localhost:5001"
KUBERNETES = "v1.35.4"
DEFAULT_SUBNET = "172.31.0.0/24"
SUBNET_ENV = "LIVE_HOSTS_SUBNET"
# The name of the run's key in each stack's secret sshPrivateKeys.
KEY_NAME = "live-hosts"
GPUS = {"model": "A100-80GB", "perWorker": 1}
# As the dev stack's tenants: one control plane replica each (two platforms share 2 cores), HAMi
# filling a card before the next (the mission's three pods on one card).
# A tenant's ranges, per tenant name (the same in both stacks: they are the tenants' own).
RANGES = {"team": ("10.44.0.0/16", "10.45.0.0/16"), "team-b": ("10.46.0.0/16", "10.47.0.0/16")}


@dataclass(frozen=True)
class Host:
    """A worker host: its stack (a or b), tenant, node name, container name and address."""

    stack: str
    tenant: str
    name: str
    container: str
    address: str


@dataclass(frozen=True)
class Layout:
    """The run's network: its subnet, the engine's gateway on it (where the Pulumi host's
    connections come from), each stack's MetalLB range and the hosts."""

    run: str
    subnet: ipaddress.IPv4Network
    hosts: tuple[Host, ...]

    @property
    def gateway(self) -> str:
        return str(self.subnet.network_address + 1)

    def metallb_range(self, stack: str) -> str:
        """Ten addresses each, at the top of the subnet (Docker hands out from the bottom)."""
        first = self.subnet.broadcast_address - (40 if stack == "a" else 30)
        return f"{first}-{first + 9}"

    def stack_hosts(self, stack: str) -> tuple[Host, ...]:
        return tuple(host for host in self.hosts if host.stack == stack)

    def host(self, stack: str, name: str) -> Host:
        return next(host for host in self.hosts if host.stack == stack and host.name == name)


def layout(run: str, subnet: str = DEFAULT_SUBNET) -> Layout:
    """Stack a: team on node-1 and node-2, team-b on node-3; stack b: team on its own node-1."""
    network = ipaddress.IPv4Network(subnet)
    if network.num_addresses < 64:
        raise ValueError(f"{SUBNET_ENV}={subnet}: at least a /26 (hosts, kind nodes, two MetalLB ranges)")
    base = network.network_address
    hosts = (
        Host("a", "team", "node-1", f"{run}a-node-1", str(base + 11)),
        Host("a", "team", "node-2", f"{run}a-node-2", str(base + 12)),
        Host("a", "team-b", "node-3", f"{run}a-node-3", str(base + 13)),
        Host("b", "team", "node-1", f"{run}b-node-1", str(base + 21)),
    )
    return Layout(run, network, hosts)


def stack_name(run: str, stack: str) -> str:
    return f"{run}{stack}"


def kube_context(run: str, stack: str) -> str:
    """kind's context for a cluster (kind v0.31.0 pkg/cluster/internal/kubeconfig: kind-<name>)."""
    return f"kind-{stack_name(run, stack)}"


def host_entry(host: Host, host_key: str) -> dict[str, Any]:
    return {"name": host.name, "address": host.address, "privateKey": KEY_NAME, "hostKey": host_key}


def stack_config(plan: Layout, stack: str, kubeconfig: str, host_keys: dict[str, str],
                 hosts: tuple[Host, ...] | None = None) -> dict[str, Any]:
    """A stack file's `config` as a user of the production example writes it: an existing cluster
    (cert-manager and MetalLB installed by the platform), the tenant APIs behind MetalLB, admitted
    to the Pulumi host (the engine's gateway on the network) and each tenant's hosts, every host key
    pinned. `hosts` defaults to the stack's; `host_keys` maps a container to its public key."""
    chosen = plan.stack_hosts(stack) if hosts is None else hosts
    tenants = []
    for tenant in dict.fromkeys(host.tenant for host in plan.stack_hosts(stack)):
        pod_cidr, service_cidr = RANGES[tenant]
        tenants.append({
            "name": tenant, "kubernetesVersion": KUBERNETES, "controlPlaneReplicas": 1,
            "podCidr": pod_cidr, "serviceCidr": service_cidr, "hami": {"gpuSchedulerPolicy": "binpack"},
            "hosts": [host_entry(host, host_keys[host.container])
                      for host in chosen if host.tenant == tenant],
            "gpus": dict(GPUS),
        })
    return {
        f"{PROJECT}:management": {
            "mode": "existing", "name": stack_name(plan.run, stack),
            "kubeconfigFile": kubeconfig, "kubeconfigContext": kube_context(plan.run, stack),
            "certManager": {"install": True}, "metallb": {"install": True},
            "metallbAddressRange": plan.metallb_range(stack), "apiExposure": "LoadBalancer",
            "apiClientCidrs": [f"{plan.gateway}/32"], "failCgroupV1": False,
            "kamajiEtcdReplicas": 1,  # one kind node each
        },
        f"{PROJECT}:images": {"mirror": MIRROR},
        f"{PROJECT}:tenants": tenants,
    }


def keep_secrets(stored: dict[str, Any] | None, config: dict[str, Any]) -> dict[str, Any]:
    """The stack's new config with what only the CLI wrote kept (the secret sshPrivateKeys, set
    with `pulumi config set --secret`): a rewrite of the file must not drop it."""
    return {**{key: value for key, value in (stored or {}).items() if key not in config}, **config}


# --- a host's state, read over `docker exec` (never over the SSH the platform uses) -------------

STATE_SEPARATOR = "--khp--"
STATE_COMMAND = (
    f"head -n 1 {host_join.JOIN_MARKER} 2>/dev/null; echo {STATE_SEPARATOR}; "
    f"sha256sum {host_join.KUBELET_CONFIG} 2>/dev/null | cut -c1-16; echo {STATE_SEPARATOR}; "
    f"systemctl is-active kubelet; echo {STATE_SEPARATOR}; systemctl is-enabled kubelet; "
    f"echo {STATE_SEPARATOR}; test -e {host_join.KINDNET_CNI_CONFIG} && echo present; "
    f"echo {STATE_SEPARATOR}; ls -d /tmp/tmp.* 2>/dev/null; true")


@dataclass(frozen=True)
class HostState:
    """What a join leaves on a host and a reset takes away."""

    marker: str  # the first line of the join marker: whose node it is; empty when none
    kubelet_conf: str  # a hash of kubeadm's kubelet.conf; empty when none
    kubelet_active: str
    kubelet_enabled: str
    cni_config: bool
    tmp: tuple[str, ...]  # mktemp's folders in the host's /tmp: a session keeps none

    @property
    def joined(self) -> bool:
        return bool(self.kubelet_conf) and self.kubelet_active == "active"

    @property
    def reset(self) -> bool:
        """As a leave leaves it: nothing of the join, the kubelet stopped and disabled."""
        return (not self.marker and not self.kubelet_conf and self.kubelet_active != "active"
                and self.kubelet_enabled != "enabled" and not self.cni_config)


def parse_state(output: str) -> HostState:
    parts = [part.strip() for part in output.split(STATE_SEPARATOR)]
    if len(parts) != 6:
        raise ValueError(f"not a host state ({len(parts)} parts): {output!r}")
    marker, conf, active, enabled, cni, tmp = parts
    return HostState(marker, conf, active, enabled, cni == "present", tuple(tmp.split()))


def stack_marker(run: str, stack: str, tenant: str) -> str:
    """The first line of a host's join marker for a stack's tenant (host_join.Ownership.marker: the
    Pulumi project, the stack, the management cluster's name, which is the stack's here)."""
    name = stack_name(run, stack)
    return host_join.Ownership(PROJECT, name, name).marker(SimpleNamespace(name=tenant))  # type: ignore[arg-type]
