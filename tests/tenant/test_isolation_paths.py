"""Tenant isolation against a tenant who is root on its own workers (issue 29), on the packet-path
model of tests/packet_paths.py, built from what the platform renders: the workers' addresses and
networks, the API addresses, the kind node's reverse-path filter (from the network's create
script) and the NetworkPolicies.

On the shared network of releases in 0.1.0 both bypasses connect (the model is not vacuous:
these are the review's findings); with each tenant on its own network neither does, nor anything
else tenant B can send, while A's own workers still connect.
"""

from __future__ import annotations

import ipaddress

import pytest

from kamaji_hami_platform import network
from kamaji_hami_platform.config import PlatformConfig, parse_config
from kamaji_hami_platform.tenant import control_plane, node_join, own_network
from kamaji_hami_platform.tenant.network_policy import network_policies
from tests.packet_paths import HOST, KIND_NODE, PLATFORM, Segment, Topology, attempt

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
    owner, api, strict = {}, {}, set()
    first_pool_address = network.parse_range(management.pool_range)[0]
    for index, tenant in enumerate(config.tenants):
        home = segments[PLATFORM]
        if tenant.own_network:
            own = own_network.tenant_network(tenant, management)
            name = own_network.network_name(tenant, management)
            home = segments[name] = Segment(name, own.subnet, {
                HOST: str(own.gateway),
                KIND_NODE: str(own.subnet.network_address + KIND_NODE_ADDRESS_OFFSET)})
            api[tenant.name] = own.api_address
            if "rp_filter=1" in own_network.create_script(tenant, management):
                strict.add(name)
        else:
            api[tenant.name] = str(first_pool_address + index)
        for worker_index in range(tenant.workers):
            worker = node_join.Worker(tenant, worker_index, management)
            assert worker.network == home.name
            home.members[worker.name] = worker.address
            owner[worker.name] = tenant.name
    policies = [p for t in config.tenants for p in network_policies(t, management)]
    ranges = {t.name: control_plane.tenant_control_plane(t, management)["spec"]["networkProfile"]
              ["loadBalancerSourceRanges"] for t in config.tenants}
    return Topology(segments, owner, {t.name: t.pod_cidr for t in config.tenants}, api, strict, policies,
                    ranges)


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
class TestOwnNetworks:
    def test_a_s_own_workers_connect(self, own, port):
        _, paths = own
        for worker in ("tenant-a-worker-0", "tenant-a-worker-1"):
            assert attempt(paths, worker, "tenant-a", port).connected
        assert attempt(paths, "tenant-b-worker-1", "tenant-b", port).connected

    def test_b_s_worker_is_dropped_by_the_source_ranges_and_by_the_policy(self, own, port):
        _, paths = own
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port)
        assert not verdict.connected and verdict.reason == "dropped by the Service's source ranges"
        paths.source_ranges.clear()
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port)
        assert not verdict.connected and verdict.reason == "dropped by the NetworkPolicy"

    def test_while_kindnetd_is_down_the_source_ranges_still_drop_b(self, own, port):
        """kindnetd's policy engine fails open; kube-proxy's source ranges do not depend on it."""
        _, paths = own
        paths.policy_engine_running = False
        assert attempt(paths, "tenant-a-worker-0", "tenant-a", port).connected
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via="tenant-b-worker-1")
        assert not verdict.connected and verdict.reason == "dropped by the Service's source ranges"

    def test_no_relay_through_a_s_worker_it_is_not_on_b_s_segment(self, own, port):
        _, paths = own
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via="tenant-a-worker-0")
        assert not verdict.connected and "is not on kamaji-hami-tenant-b" in verdict.reason

    def test_no_relay_through_this_host_docker_isolates_the_bridges(self, own, port):
        _, paths = own
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via=HOST)
        assert not verdict.connected and "DOCKER-ISOLATION" in verdict.reason

    def test_no_relay_through_b_s_other_worker_either(self, own, port):
        _, paths = own
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, via="tenant-b-worker-1")
        assert not verdict.connected and verdict.reason == "dropped by the Service's source ranges"

    @pytest.mark.parametrize("forged", ["unused worker address", "the host's address", "a worker's address"])
    def test_an_address_of_a_s_network_is_dropped_by_reverse_path(self, own, port, forged):
        config, paths = own
        a = paths.segments[own_network.network_name(config.tenants[0], config.management)]
        address = {"unused worker address": unused_address_of(config, 0),
                   "the host's address": a.members[HOST],
                   "a worker's address": a.members["tenant-a-worker-0"]}[forged]
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, forged=address)
        assert not verdict.connected and verdict.reason.startswith("reverse path"), verdict

    def test_without_the_reverse_path_filter_the_reply_still_never_reaches_b(self, own, port):
        """The second layer: a SYN that passed would be answered on A's network."""
        config, paths = own
        paths.strict_reverse_path.clear()
        verdict = attempt(paths, "tenant-b-worker-0", "tenant-a", port, forged=unused_address_of(config, 0))
        assert not verdict.connected and verdict.reason.startswith("the reply to"), verdict


def test_each_own_network_is_its_own_slash_24_and_the_policy_admits_only_that(own):
    _, paths = own
    subnets = [s.subnet for name, s in paths.segments.items() if name != PLATFORM]
    assert subnets == [ipaddress.IPv4Network("172.24.0.0/24"), ipaddress.IPv4Network("172.24.1.0/24")]
    ingress = [p for p in paths.policies if p["metadata"] == {"name": "allow-control-plane-ingress",
                                                              "namespace": "tenant-a"}]
    peers = ingress[0]["spec"]["ingress"][0]["from"]
    blocks = [peer["ipBlock"]["cidr"] for peer in peers if "ipBlock" in peer]
    assert blocks == ["172.24.0.0/24"]
