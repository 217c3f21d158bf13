"""A tenant's door: the one container on both the tenant's own Docker network and the platform's.

In kind mode no platform node is on a tenant network. The kind node would otherwise relay between
tenant networks (kindnetd masquerades whatever it forwards: kind v0.31.0 images/kindnetd/cmd/
kindnetd/masq.go), answer on them with every management service, and may take a tenant network's
address as its own after a restart (kind's entrypoint picks the first `getent ahostsv4` answer).
Instead each tenant's workers reach their control plane through a door of their own:

- HAProxy in TCP mode (the official image, versions.DOOR_IMAGE), listening on the tenant's API
  address (its network's .250) only, on the API and Konnectivity ports only, forwarding each to
  the same port of the tenant's control plane address on the platform's network (a MetalLB
  address in the tenant's block there: network.NetworkLayout.control_plane_address);
- it refuses a connection whose source is not on the tenant's network (`tcp-request connection
  reject`): the door's tenant address is local to it, so the kernel would deliver a packet for it
  that arrived on its platform side too;
- no IP forwarding and a strict reverse-path filter in its network namespace (`--sysctl`, read
  back after the start): it never routes between its two networks, and nothing on the platform's
  network can send from a tenant address through it;
- no capabilities, no new privileges, a fixed address on each network (its platform address is the
  only one the control plane's source ranges and NetworkPolicy admit: tenant/api_clients.py).

The control plane advertises the door's address (Kamaji `networkProfile.advertiseAddress`), so
kubeadm's join, the kubelets, Konnectivity and the tenant's `kubernetes` Service all use it.
Rationale: docs/design/network-isolation.md.
"""

from __future__ import annotations

import hashlib
import shlex

from kamaji_hami_platform import network, versions
from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.docker_calls import bounded_docker
from kamaji_hami_platform.mirror import mirrored
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.tenant import own_network
from kamaji_hami_platform.tenant.control_plane import api_port, konnectivity_port
from kamaji_hami_platform.tenant.node_join import PLATFORM_LABEL, TENANT_LABEL, container_lookup

_PACKAGE = "kamaji_hami_platform.tenant"
ROLE_LABEL = "io.kamaji-hami-platform/role"
ROLE = "door"
# Where the official image reads its configuration (docker-library/haproxy Dockerfile: CMD
# ["haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]).
CONFIG_DIR = "/usr/local/etc/haproxy"
CONFIG_FILE = "haproxy.cfg"
# The door's network namespace: it never forwards, and filters by reverse path on every interface.
# The kernel takes the larger of `all` and the interface's value, and an interface copies `default`
# when it is made, after these are set (moby v28.5.2 daemon/start.go: the task, then its networks):
# so both, or a host default of 2 (Ubuntu's, systemd's) would leave the door loose. IPv6 is already
# off on its interfaces (Docker disables it on a container's interface to an IPv4-only network);
# the create reads that back rather than set it, which would fail on a host booted without IPv6.
# TCP keepalives after 5 idle minutes find a dead peer long before HAProxy's idle timeout.
SYSCTLS = {
    "net.ipv4.ip_forward": "0",
    "net.ipv4.conf.all.rp_filter": "1",
    "net.ipv4.conf.default.rp_filter": "1",
    "net.ipv4.tcp_keepalive_time": "300",
}
# Idle connections are the rule here: watches, and Konnectivity's tunnels, whose own keepalive is an
# hour (apiserver-network-proxy's agent KeepaliveTime): a day idle, dead peers found by keepalives.
TIMEOUTS = {"connect": "5s", "client": "24h", "server": "24h", "client-fin": "30s", "server-fin": "30s"}
# A busy connection costs HAProxy some 33 kB (its configuration manual, `maxconn`): 2000 of them fit
# the memory limit. Two threads, whatever the host's CPUs (HAProxy starts one per CPU, up to 64,
# and the pids limit counts threads).
MAX_CONNECTIONS = 2000
THREADS = 2
MEMORY = "256m"
PIDS = 64


def container_name(tenant: TenantConfig, management: ManagementConfig) -> str:
    """`<kind cluster>-<tenant>-door`: another stack's door on this host has another cluster name."""
    return f"{management.name}-{tenant.name}-door"


def image(mirror: str | None) -> str:
    return mirrored(versions.DOOR_IMAGE, mirror)


def tenant_address(tenant: TenantConfig, management: ManagementConfig) -> str:
    """The door on the tenant's network: the tenant API's address."""
    return own_network.tenant_network(tenant, management).api_address


def platform_address(tenant: TenantConfig, management: ManagementConfig) -> str:
    """The door on the platform's network: the only client its control plane admits from outside
    the management cluster."""
    return network.layout(management.docker_subnet).door_address(tenant.address_block)


def ports(tenant: TenantConfig) -> dict[str, int]:
    """What the door forwards, by name: the API and Konnectivity, nothing else."""
    return {"api": api_port(tenant), "konnectivity": konnectivity_port(tenant)}


def haproxy_config(tenant: TenantConfig, management: ManagementConfig) -> str:
    """The door's whole HAProxy configuration (pure): one TCP frontend per port on the tenant
    address, admitting sources of the tenant's network only, each to the control plane's port."""
    listen = tenant_address(tenant, management)
    target = own_network.control_plane_address(tenant, management)
    subnet = own_network.tenant_network(tenant, management).subnet
    lines = [
        f"# The door of tenant {tenant.name} (kamaji-hami-platform: tenant/door.py).",
        "global",
        "    log stdout format raw local0",
        f"    maxconn {MAX_CONNECTIONS}",
        f"    nbthread {THREADS}",
        "defaults",
        "    mode tcp",
        "    log global",
        "    option tcplog",
        "    option dontlognull",
        "    option clitcpka",
        "    option srvtcpka",
        *(f"    timeout {name} {value}" for name, value in TIMEOUTS.items()),
    ]
    for name, port in ports(tenant).items():
        lines += [
            f"frontend {name}",
            f"    bind {listen}:{port}",
            f"    tcp-request connection reject unless {{ src {subnet} }}",
            f"    default_backend {name}",
            f"backend {name}",
            f"    server control-plane {target}:{port}",
        ]
    return "\n".join(lines) + "\n"


def docker_create_args(tenant: TenantConfig, management: ManagementConfig, mirror: str | None) -> list[str]:
    """The container on the tenant's network at the API address; the platform network is attached
    after (`docker create` takes one network with a fixed address)."""
    sysctls = [arg for key, value in SYSCTLS.items() for arg in ("--sysctl", f"{key}={value}")]
    return [
        # No --hostname: the name may be longer than a host name may be (63).
        "--name", container_name(tenant, management),
        "--network", own_network.network_name(tenant, management), "--ip", tenant_address(tenant, management),
        *sysctls,
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--memory", MEMORY, "--pids-limit", str(PIDS), "--restart", "unless-stopped",
        "--label", f"{PLATFORM_LABEL}={management.name}", "--label", f"{TENANT_LABEL}={tenant.name}",
        "--label", f"{ROLE_LABEL}={ROLE}",
        image(mirror),
    ]


def spec_hash(tenant: TenantConfig, management: ManagementConfig, mirror: str | None) -> str:
    """Changes exactly when the door would be made differently: a trigger of its command."""
    spec = [*docker_create_args(tenant, management, mirror), management.docker_network,
            platform_address(tenant, management), haproxy_config(tenant, management)]
    return hashlib.sha256("\0".join(spec).encode()).hexdigest()[:16]


def create_script(tenant: TenantConfig, management: ManagementConfig, mirror: str | None) -> str:
    """Create and start the door (a stopped one of this stack is started; one that is not this
    stack's is refused), then read back what it must be: running, on both networks at its
    addresses, not forwarding, filtering by reverse path, no IPv6. Safe to run twice."""
    name = container_name(tenant, management)
    create_args = " ".join(shlex.quote(arg) for arg in docker_create_args(tenant, management, mirror))
    return render_script(
        _PACKAGE, "door_create.sh", bounded_docker=bounded_docker(), name=name,
        create_args=Shell(create_args),
        lookup=container_lookup(management.name, "door"), tenant=Text(tenant.name),
        platform_network=management.docker_network,
        platform_address=platform_address(tenant, management),
        tenant_network=own_network.network_name(tenant, management),
        tenant_address=tenant_address(tenant, management),
        config=haproxy_config(tenant, management), config_dir=CONFIG_DIR, config_file=CONFIG_FILE,
        image=Text(image(mirror)))


def delete_script(tenant: TenantConfig, management: ManagementConfig) -> str:
    """Remove the door; one already gone is fine; one that is not this stack's is left alone."""
    return render_script(_PACKAGE, "door_delete.sh", bounded_docker=bounded_docker(),
                         name=container_name(tenant, management),
                         lookup=container_lookup(management.name, "door"))
