"""Tenant isolation against a tenant who is root on its own workers (issues 29 and 40), on the
packet-path model of tests/packet_paths.py, built from what the platform renders: the workers'
addresses and networks, the doors (their container arguments and HAProxy configuration), which
networks the kind node is on (the network's create script), the control planes' addresses,
source ranges and NetworkPolicies.

On the shared network of 0.1.0 both bypasses connect (the model is not vacuous: these are the
review's findings); with each tenant on its own network behind its door neither does, nor
anything else tenant B can send, while A's own workers still connect. The door's own hops run on a
real engine in tests/live/test_door.py.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re

import pytest

from kamaji_hami_platform import network
from kamaji_hami_platform.config import PlatformConfig, parse_config
from kamaji_hami_platform.tenant import control_plane, door, node_join, own_network
from kamaji_hami_platform.tenant.network_policy import network_policies
from tests.packet_paths import HOST, KIND_NODE, PLATFORM, Door, Segment, Topology, attempt

pytestmark = pytest.mark.unit

PORTS = (6443, 8132)  # the API server and Konnectivity
WORKERS = 2
KIND_NODE_ADDRESS_OFFSET = 2  # Docker's first dynamic address after the gateway


def platform(dev_config: dict, worker_network: str) -> PlatformConfig:
    for tenant in dev_config["tenants"]:
        tenant.update(workerNetwork=worker_network, workers=WORKERS)
    return parse_config(dev_config)


def topology(config: PlatformConfig) -> Topology:
    management = config.management
    layout = network.layout(management.docker_subnet)
    segments = {PLATFORM: Segment(management.docker_network, layout.subnet, {
        HOST: str(layout.gateway), KIND_NODE: str(layout.subnet.network_address + KIND_NODE_ADDRESS_OFFSET)})}
    owner, api, planes, strict, doors = {}, {}, {}, set(), {}
    first_pool_address = network.parse_range(management.pool_range)[0]
    for index, tenant in enumerate(config.tenants):
        home = segments[PLATFORM]
        if tenant.own_network:
            own = own_network.tenant_network(tenant, management)
            name = own_network.network_name(tenant, management)
            home = segments[name] = Segment(name, own.subnet, {HOST: str(own.gateway)})
            created = own_network.create_script(tenant, management)
            if "docker network connect" in created:  # builds before the door attached the kind node
                home.members[KIND_NODE] = str(own.subnet.network_address + KIND_NODE_ADDRESS_OFFSET)
                if "rp_filter=1" in created:
                    strict.add(name)
            doors[tenant.name] = rendered_door(tenant, config, segments)
            api[tenant.name] = door.tenant_address(tenant, management)
            planes[tenant.name] = own_network.control_plane_address(tenant, management)
        else:
            api[tenant.name] = planes[tenant.name] = str(first_pool_address + index)
        for worker_index in range(tenant.workers):
            worker = node_join.Worker(tenant, worker_index, management)
            assert worker.network == home.name
            home.members[worker.name] = worker.address
            owner[worker.name] = tenant.name
    policies = [p for t in config.tenants for p in network_policies(t, management)]
    ranges = {t.name: control_plane.tenant_control_plane(t, management)["spec"]["networkProfile"]
              ["loadBalancerSourceRanges"] for t in config.tenants}
    return Topology(segments, owner, {t.name: t.pod_cidr for t in config.tenants}, api, strict, policies,
                    ranges, doors, planes)


def rendered_door(tenant, config: PlatformConfig, segments: dict[str, Segment]) -> Door:
    """The door as the platform renders it: its addresses from its container arguments and
    create script, what it listens on and admits from its HAProxy configuration, its sysctls."""
    management = config.management
    args = door.docker_create_args(tenant, management, None)
    name, tenant_segment = door.container_name(tenant, management), args[args.index("--network") + 1]
    segments[tenant_segment].members[name] = args[args.index("--ip") + 1]
    created = door.create_script(tenant, management, None)
    attach = re.search(r"docker network connect --ip (\S+) (\S+) ", created)
    assert attach is not None and attach.group(2) == management.docker_network
    segments[PLATFORM].members[name] = attach.group(1)
    config_text = door.haproxy_config(tenant, management)
    binds = re.findall(r"^    bind (\S+):(\d+)$", config_text, re.M)
    admits = set(re.findall(r"reject unless \{ src (\S+) \}", config_text))
    assert len({address for address, _ in binds}) == 1 and len(admits) == 1
    sysctls = {args[i + 1] for i, arg in enumerate(args) if arg == "--sysctl"}
    return Door(name, tenant_segment, (binds[0][0], tuple(int(port) for _, port in binds)),
                ipaddress.IPv4Network(admits.pop()), "net.ipv4.ip_forward=0" not in sysctls,
                {"net.ipv4.conf.all.rp_filter=1", "net.ipv4.conf.default.rp_filter=1"} <= sysctls)


def unused_address_of(config: PlatformConfig, tenant_index: int) -> str:
    """An address of the tenant's own range that no worker has (workers use at most 99)."""
    tenant = config.tenants[tenant_index]
    if tenant.own_network:
        return own_network.tenant_network(tenant, config.management).worker_address(50)
    return network.layout(config.management.docker_subnet).worker_address(tenant.address_block, 50)


@pytest.fixture
def shared(dev_config) -> tuple[PlatformConfig, Topology]:
    config = platform(dev_config, "shared")
    return config, topology(config)


@pytest.fixture
def own(dev_config) -> tuple[PlatformConfig, Topology]:
    config = platform(dev_config, "own")
    return config, topology(config)


@pytest.mark.parametrize("port", PORTS)
class TestTheSharedNetworkOfReleasesOf010:
    """What the review found: both bypasses reach tenant A's control plane from B's worker."""

    def test_a_relay_through_a_s_worker_connects_seen_as_that_worker(self, shared, port):
        _, paths = shared
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via="tenant-a-worker-0")
        assert verdict.connected and verdict.seen_as == paths.segments[PLATFORM].members["tenant-a-worker-0"]

    def test_an_unused_address_of_a_s_block_connects(self, shared, port):
        config, paths = shared
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, forged=unused_address_of(config, 0))
        assert verdict.connected, verdict


@pytest.mark.parametrize("port", PORTS)
class TestOwnNetworksBehindDoors:
    def test_a_s_own_workers_connect_seen_as_a_s_door(self, own, port):
        config, paths = own
        seen = door.platform_address(config.tenants[0], config.management)
        for worker in ("tenant-a-worker-0", "tenant-a-worker-1"):
            verdict = attempt(paths, worker, "tenant-a", port)
            assert verdict.connected and verdict.seen_as == seen, verdict
        assert attempt(paths, "tenant-b-worker-1", "tenant-b", port).connected

    def test_b_s_worker_cannot_reach_a_s_door_docker_isolates_the_bridges(self, own, port):
        _, paths = own
        for via in (None, HOST, "tenant-b-worker-1"):
            verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via=via)
            assert not verdict.connected and "DOCKER-ISOLATION" in verdict.reason, (via, verdict)

    def test_no_relay_through_a_s_worker_it_is_not_on_b_s_segment(self, own, port):
        _, paths = own
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via="tenant-a-worker-0")
        assert not verdict.connected and "is not on kamaji-hami-tenant-b" in verdict.reason

    @pytest.mark.parametrize("forged", ["unused worker address", "the host's address", "a worker's address"])
    def test_an_address_of_a_s_network_gets_b_no_further(self, own, port, forged):
        config, paths = own
        a = paths.segments[own_network.network_name(config.tenants[0], config.management)]
        address = {"unused worker address": unused_address_of(config, 0),
                   "the host's address": a.members[HOST],
                   "a worker's address": a.members["tenant-a-worker-0"]}[forged]
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, forged=address)
        assert not verdict.connected and "DOCKER-ISOLATION" in verdict.reason, verdict

    def test_b_s_door_does_not_forward_to_a_s_control_plane(self, own, port):
        """Root on B's worker routes A's control plane address, or the kind node's, through B's door."""
        config, paths = own
        b_door = door.tenant_address(config.tenants[1], config.management)
        b_via = paths.segments["kamaji-hami-tenant-b"].answering(b_door)
        for destination in (paths.control_plane_address["tenant-a"],
                            paths.segments[PLATFORM].members[KIND_NODE]):
            verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via=b_via,
                              destination=destination)
            assert not verdict.connected and verdict.reason == f"the door {b_via} does not forward", verdict

    def test_b_s_worker_cannot_reach_the_platform_network_at_all(self, own, port):
        """The management services (the kind node's API server, kubelet, MetalLB, the control
        planes' addresses) are on the platform's network, which no tenant segment reaches."""
        _, paths = own
        for destination in (paths.control_plane_address["tenant-a"],
                            paths.segments[PLATFORM].members[KIND_NODE]):
            verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, destination=destination)
            assert not verdict.connected and "DOCKER-ISOLATION" in verdict.reason, verdict

    def test_from_the_platform_side_the_door_closes_the_connection(self, port, dev_config):
        """A 0.1.0 tenant's worker (on the platform's network) routes A's API through A's door."""
        platform(dev_config, "own")
        dev_config["tenants"][1]["workerNetwork"] = "shared"
        mixed = parse_config(dev_config)
        paths = topology(mixed)
        a_door = door.container_name(mixed.tenants[0], mixed.management)
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via=a_door)
        assert not verdict.connected and verdict.reason.startswith("the door closes it"), verdict

    def test_a_root_on_a_s_worker_cannot_pass_its_door_as_another_source(self, own, port):
        """A forged platform address (B's door's) into A's door: its reverse-path filter drops it;
        without the filter, HAProxy's source condition closes it."""
        config, paths = own
        forged = door.platform_address(config.tenants[1], config.management)
        verdict = attempt(paths, "tenant-a-worker-0", "tenant-a", port, forged=forged)
        assert not verdict.connected and verdict.reason.startswith("reverse path"), verdict
        a_door = paths.doors["tenant-a"]
        paths.doors["tenant-a"] = dataclasses.replace(a_door, strict_reverse_path=False)
        verdict = attempt(paths, "tenant-a-worker-0", "tenant-a", port, forged=forged)
        assert not verdict.connected and verdict.reason.startswith("the door closes it"), verdict

    def test_while_kindnetd_is_down_the_source_ranges_admit_only_a_s_door(self, own, port):
        """kindnetd's policy engine fails open; kube-proxy's source ranges do not depend on it."""
        config, paths = own
        paths.policy_engine_running = False
        assert attempt(paths, "tenant-a-worker-0", "tenant-a", port).connected
        a_door = door.platform_address(config.tenants[0], config.management)
        assert paths.source_ranges["tenant-a"] == [f"{a_door}/32"]

    def test_the_model_is_not_vacuous_a_forwarding_door_hands_the_packet_on(self, own, port):
        """Without forwarding off, B's packet would reach A's control plane's address, where only
        the source ranges (and the policy) stand."""
        _, paths = own
        b_door = paths.doors["tenant-b"]
        paths.doors["tenant-b"] = dataclasses.replace(b_door, forwards=True)
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via=b_door.name,
                          destination=paths.control_plane_address["tenant-a"])
        assert verdict.reason == "dropped by the Service's source ranges", verdict


def test_no_platform_node_is_on_a_tenant_network(own):
    """On each tenant's network: this host (the gateway), the tenant's workers and its door."""
    config, paths = own
    for tenant in config.tenants:
        segment = paths.segments[own_network.network_name(tenant, config.management)]
        assert set(segment.members) == {HOST, door.container_name(tenant, config.management),
                                        *tenant.worker_names()}


def test_the_control_planes_admit_only_their_door(own):
    config, paths = own
    ingress = [p for p in paths.policies if p["metadata"] == {"name": "allow-control-plane-ingress",
                                                              "namespace": "tenant-a"}]
    peers = ingress[0]["spec"]["ingress"][0]["from"]
    blocks = [peer["ipBlock"]["cidr"] for peer in peers if "ipBlock" in peer]
    assert blocks == [f"{door.platform_address(config.tenants[0], config.management)}/32"]
