"""Worker hosts joined over real SSH by a real kubeadm, on the live tier (`make live-hosts`).

The production example's mode: two stacks in mode existing, each on a kind cluster of its own in the
tier's engine, with the platform installing cert-manager, MetalLB and Kamaji there and joining
worker hosts over SSH. The hosts are containers of the host image (toolchain/live/hosts/: the node
image with Debian's sshd, systemd running containerd, kubeadm and kubelet v1.35.4 installed,
nothing joined), each with a host key of its own that its stack pins. The layout:
tests/e2e/live_hosts.py. In order, each phase timed:

1. stack b up: its tenant `team` joins its host node-1;
2. stack a up: its tenant `team` joins node-1 and node-2 (the same tenant and host names as b's,
   other machines), `team-b` node-3; every node Ready, mock cards registered, b's host unchanged;
3. the acceptance cases on stack a (TC-01..TC-08 and its declared workloads, none skipped);
4. a names b's host (an operator's slip: a host entry at b's host's address and key): its `up`
   fails saying the host is a node of something else, and b's host and node are unchanged; taking
   the entry out again runs its leave, which leaves b's host alone;
5. a drops node-2: drained, deleted from the tenant, `kubeadm reset` over SSH: nothing of the join
   left on the host, the kubelet stopped and disabled;
6. a destroyed: its hosts reset, b's host unchanged; b destroyed: its host reset;
7. nothing left in the engine: no host, kind cluster or network of the run, no stack.

Runs only with E2E_LIVE_HOSTS=1, in the live stack's environment (the Makefile sets it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kamaji_hami_platform.tenant import node_join
from tests.e2e import lifecycle_support as life
from tests.e2e import live_hosts
from tests.e2e.conftest import REQUIRE_STACK, connect
from tests.e2e.live_hosts import Host, HostState, Layout
from tests.e2e.support import ROOT, Timer, backend_env

pytestmark = pytest.mark.e2e

RUN_ENV = "E2E_LIVE_HOSTS"
HOSTS_SCRIPT = ROOT / "toolchain" / "live" / "hosts" / "hosts.sh"
CLUSTER_SCRIPT = ROOT / "toolchain" / "live" / "node-image" / "cluster.sh"
# Set by `make live-hosts`: the tier's programs, engine and node image.
LIVE_BIN_ENV, LIVE_ENGINE_ENV, NODE_IMAGE_ENV = "KHP_LIVE_BIN", "KHP_LIVE_ENGINE", "KHP_LIVE_NODE_IMAGE"
HOST_IMAGE_ENV = "KHP_LIVE_HOST_IMAGE"
# kind puts its nodes on this network when it exists (kind v0.31.0 pkg/cluster/internal/providers/
# docker/network.go: KIND_EXPERIMENTAL_DOCKER_NETWORK, else "kind").
KIND_NETWORK_ENV = "KIND_EXPERIMENTAL_DOCKER_NETWORK"
SCRIPT_TIMEOUT = 10 * 60
CASES_TIMEOUT = 40 * 60
ACCEPTANCE = ("tests/e2e/test_acceptance.py", "tests/e2e/test_declared_workloads.py",
              "tests/e2e/test_isolation.py")
# The hosts' kubelets keep Kubernetes' hard eviction thresholds (kubernetes v1.35.4
# pkg/kubelet/eviction/defaults_linux.go: imagefs.available<15%), as a real host's do, and their
# disk is the engine's: below that share free, every pod is refused with DiskPressure (seen here at
# 10%). The run needs a margin above it for the images the hosts pull.
KUBELET_IMAGEFS_AVAILABLE = 0.15
DISK_MARGIN = 0.03
# The typo host of step 4: an entry of stack a at b's host's address.
SLIP = "node-4"
# The mission's three pods per tenant, declared so the cases judge them pod by pod.
WORKLOADS = [{"name": "inference", "replicas": 3, "gpumem": 20000, "gpucores": 30}]


class Tier:
    """The tier's engine, as the scripts take it, and the run's files."""

    def __init__(self, work: Path) -> None:
        self.bin = os.environ[LIVE_BIN_ENV]
        self.engine = os.environ[LIVE_ENGINE_ENV]
        self.node_image = os.environ[NODE_IMAGE_ENV]
        self.host_image = os.environ[HOST_IMAGE_ENV]
        self.work = work

    def script(self, script: Path, *args: str, env: dict[str, str] | None = None) -> str:
        result = subprocess.run(["bash", str(script), self.bin, self.engine, *args], capture_output=True,
                                text=True, timeout=SCRIPT_TIMEOUT, env={**os.environ, **(env or {})})
        sys.stderr.write(result.stderr)
        if result.returncode != 0:
            raise life.PhaseFailed(f"{script.name} {args[0]} failed ({result.returncode}): "
                                   f"{result.stderr[-2000:]}")
        return result.stdout

    def kubeconfig(self, stack: str) -> Path:
        return self.work / f"{stack}.kubeconfig"

    def state(self, host: Host) -> HostState:
        return live_hosts.parse_state(self.script(HOSTS_SCRIPT, "exec", host.container, "sh", "-c",
                                                  live_hosts.STATE_COMMAND))


def ssh_keys(work: Path, plan: Layout) -> tuple[Path, dict[str, str]]:
    """The run's client key (every host takes it for root) and a host key per host: the private
    halves stay in the run's 0700 folder; returns the client key and each host's public key."""
    def keygen(path: Path, comment: str) -> str:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                       check=True, timeout=30)
        return " ".join(path.with_suffix(".pub").read_text().split()[:2])

    client = work / "client"
    keygen(client, "live-hosts-client")
    return client, {host.container: keygen(work / host.container, host.container) for host in plan.hosts}


def nodes(stack: str, tenant: str) -> dict[str, dict[str, Any]]:
    """The tenant's nodes, as its admin sees them: name -> Ready, kubelet version, annotations."""
    from kubernetes import client

    api = client.CoreV1Api(connect(stack).tenants[tenant])
    found = {}
    for node in api.list_node(_request_timeout=30).items:
        ready = next((c.status for c in node.status.conditions or [] if c.type == "Ready"), "Unknown")
        found[node.metadata.name] = {"ready": ready, "kubelet": node.status.node_info.kubelet_version,
                                     "annotations": dict(node.metadata.annotations or {})}
    return found


def assert_joined(tier: Tier, plan: Layout, stack: str, hosts: tuple[Host, ...] | None = None) -> None:
    """Each host a node of its tenant, Ready, on the tier's kubelet, its mock card registered
    (the stack's gpuCards), marked as this stack's, with nothing left in its /tmp."""
    name = live_hosts.stack_name(plan.run, stack)
    cards = connect(name).outputs["tenants"]
    for host in hosts or plan.stack_hosts(stack):
        node = nodes(name, host.tenant).get(host.name)
        assert node is not None, f"{host.name} is no node of {name}'s tenant {host.tenant}"
        assert node["ready"] == "True" and node["kubelet"] == live_hosts.KUBERNETES, node
        assert len(cards[host.tenant]["gpuCards"].get(host.name, [])) == live_hosts.GPUS["perWorker"], cards
        state = tier.state(host)
        assert state.joined and state.marker == live_hosts.stack_marker(plan.run, stack, host.tenant), state
        assert state.tmp == (), f"{host.container} keeps files of the session in /tmp: {state.tmp}"


def write_config(tier: Tier, plan: Layout, stack: str, keys: dict[str, str],
                 hosts: tuple[Host, ...] | None = None) -> None:
    config = live_hosts.stack_config(plan, stack, str(tier.kubeconfig(stack)), keys, hosts)
    if stack == "a":
        for tenant in config[f"{live_hosts.PROJECT}:tenants"]:
            tenant["gpuWorkloads"] = WORKLOADS
    path = life.stack_file(ROOT, live_hosts.stack_name(plan.run, stack))
    stored = (yaml.safe_load(path.read_text()) or {}).get("config") if path.exists() else None
    life.write_stack_config(path, live_hosts.keep_secrets(stored, config))


def set_client_key(name: str, client: Path, env: dict[str, str]) -> None:
    """The key into the stack's secret config from stdin, as the production example says: never on
    a command line, never in plain text."""
    with client.open() as key:
        subprocess.run(["pulumi", "config", "set", "--secret", "--path",
                        f"sshPrivateKeys.{live_hosts.KEY_NAME}", "--stack", name, "--non-interactive"],
                       stdin=key, check=True, cwd=ROOT, env=env, timeout=life.STACK_COMMAND_TIMEOUT)


def test_worker_hosts_join_and_leave_over_real_ssh(tmp_path: Path) -> None:
    if os.environ.get(RUN_ENV) != "1":
        pytest.skip("joins worker hosts on two live platforms: run `make live-hosts`")
    check_disk(Path(os.environ[LIVE_ENGINE_ENV]))
    run = f"hosts{int(time.time()) % 1_000_000}"
    plan = live_hosts.layout(run, os.environ.get(live_hosts.SUBNET_ENV, live_hosts.DEFAULT_SUBNET))
    work = tmp_path / "keys"
    work.mkdir(mode=0o700)
    tier = Tier(work)
    # Hosts leave as users' do, drained; the destroys skip the drain, as the lifecycle's do (the
    # whole platform goes).
    destroy_env = life.pulumi_env(os.environ, backend_env())
    env = {key: value for key, value in destroy_env.items() if key != node_join.SKIP_DRAIN_ENV}
    timer = Timer()
    names = {stack: live_hosts.stack_name(run, stack) for stack in ("a", "b")}
    created: list[str] = []

    def run_phase(phase: str, command: list[str], timeout: float,
                  phase_env: dict[str, str] | None = None) -> str:
        return timer.phase(phase, lambda: life.run_bounded(phase, command, timeout, env=phase_env or env,
                                                           cwd=ROOT))

    def step(phase: str, action: Callable[[], object]) -> object:
        print(f"[live-hosts] {phase}", flush=True)
        return timer.phase(phase, action)

    original: BaseException | None = None
    try:
        step("network and two kind clusters", lambda: make_clusters(tier, plan))
        client, keys = ssh_keys(work, plan)
        step("four hosts (sshd, containerd)", lambda: make_hosts(tier, plan, client, keys))
        for stack in ("b", "a"):
            run_phase(f"stack {stack}: init", life.init_command(names[stack]), life.STACK_COMMAND_TIMEOUT)
            created.append(stack)
            write_config(tier, plan, stack, keys)
            set_client_key(names[stack], client, env)
        b_host = plan.host("b", "node-1")
        run_phase("stack b: up (node-1 joins)", life.up_command(names["b"]), life.UP_TIMEOUT)
        step("stack b: joined", lambda: assert_joined(tier, plan, "b"))
        b_before = tier.state(b_host)
        run_phase("stack a: up (node-1, node-2, node-3 join)", life.up_command(names["a"]), life.UP_TIMEOUT)
        step("stack a: joined; b untouched", lambda: (assert_joined(tier, plan, "a"),
                                                     untouched(tier, plan, b_host, b_before)))
        run_phase("stack a: acceptance cases",
                  [sys.executable, "-m", "pytest", "-m", "e2e", "-rs", *ACCEPTANCE], CASES_TIMEOUT,
                  phase_env={**os.environ, "E2E_STACK": names["a"], REQUIRE_STACK: "1"})
        step("stack a names b's host", lambda: slip(tier, plan, keys, env, b_host, b_before))
        run_phase("stack a: the slip taken out (its leave)", life.up_command(names["a"]), life.UP_TIMEOUT)
        untouched(tier, plan, b_host, b_before)
        step("stack a: node-2 leaves", lambda: leave(tier, plan, keys, env))
    except BaseException as error:  # reported with the cleanup's errors below
        original = error

    errors = clean_up(tier, plan, names, created, destroy_env, timer, b_host=plan.host("b", "node-1"),
                      checks=original is None)
    print("[live-hosts] wall time per phase\n" + timer.report(), flush=True)
    life.raise_all(original, errors)


def check_disk(engine: Path) -> None:
    """Refuse to start when the hosts' kubelets would see disk pressure on the engine's disk."""
    usage = shutil.disk_usage(engine)
    free = usage.free / usage.total
    wanted = KUBELET_IMAGEFS_AVAILABLE + DISK_MARGIN
    if free < wanted:
        short = (wanted * usage.total - usage.free) / 2**30
        pytest.fail(f"the disk of {engine} has {free:.0%} free ({usage.free // 2**30} GiB of "
                    f"{usage.total // 2**30}): the hosts' kubelets refuse every pod below "
                    f"{KUBELET_IMAGEFS_AVAILABLE:.0%} (DiskPressure); free {short:.0f} GiB more "
                    "(go clean -cache frees Go's build cache)", pytrace=False)


def make_clusters(tier: Tier, plan: Layout) -> None:
    tier.script(HOSTS_SCRIPT, "network", plan.run, str(plan.subnet), plan.gateway)
    for stack in ("a", "b"):
        tier.script(CLUSTER_SCRIPT, "create", live_hosts.stack_name(plan.run, stack), tier.node_image,
                    str(tier.kubeconfig(stack)), env={KIND_NETWORK_ENV: plan.run})


def make_hosts(tier: Tier, plan: Layout, client: Path, keys: dict[str, str]) -> None:
    for host in plan.hosts:
        tier.script(HOSTS_SCRIPT, "create", plan.run, plan.run, host.container, host.address,
                    str(tier.work / host.container), str(client.with_suffix(".pub")), tier.host_image)
        state = tier.state(host)
        assert not state.kubelet_conf and not state.marker, f"{host.container} is not a fresh host: {state}"


def untouched(tier: Tier, plan: Layout, host: Host, before: HostState) -> None:
    """b's host as b's join left it, still a Ready node of b's tenant."""
    assert tier.state(host) == before, f"stack b's {host.name} changed: {before} -> {tier.state(host)}"
    node = nodes(live_hosts.stack_name(plan.run, "b"), host.tenant)[host.name]
    assert node["ready"] == "True", node


def slip(tier: Tier, plan: Layout, keys: dict[str, str], env: dict[str, str], b_host: Host,
         b_before: HostState) -> None:
    """Stack a lists b's host (its address and key) as a node of its own: the join refuses it."""
    wrong = Host("a", "team", SLIP, b_host.container, b_host.address)
    write_config(tier, plan, "a", keys, (*plan.stack_hosts("a"), wrong))
    name = live_hosts.stack_name(plan.run, "a")
    output = life.run_expecting_failure("stack a: up with b's host", life.up_command(name), life.UP_TIMEOUT,
                                        env=env, cwd=ROOT)
    assert f"host {SLIP} is a node of something else" in output, output[-3000:]
    untouched(tier, plan, b_host, b_before)
    assert SLIP not in nodes(name, "team")
    write_config(tier, plan, "a", keys)


def leave(tier: Tier, plan: Layout, keys: dict[str, str], env: dict[str, str]) -> None:
    """node-2 out of stack a's config: drained, deleted from its tenant, reset over SSH."""
    gone = plan.host("a", "node-2")
    kept = tuple(host for host in plan.stack_hosts("a") if host != gone)
    write_config(tier, plan, "a", keys, kept)
    name = live_hosts.stack_name(plan.run, "a")
    life.run_bounded("stack a: up without node-2", life.up_command(name), life.UP_TIMEOUT, env=env, cwd=ROOT)
    assert gone.name not in nodes(name, gone.tenant)
    state = tier.state(gone)
    assert state.reset and state.tmp == (), state
    assert_joined(tier, plan, "a", kept)


def clean_up(tier: Tier, plan: Layout, names: dict[str, str], created: list[str], env: dict[str, str],
             timer: Timer, b_host: Host, checks: bool) -> list[BaseException]:
    """Destroy a, then b (checking, after a clean run, that a's destroy reset a's hosts and left b's
    alone, and b's reset b's), then the stacks, their files, the clusters, the hosts, the network;
    each step tried whatever failed before it. Nothing of the run may be left in the engine."""
    errors: list[BaseException] = []

    def attempt(phase: str, action: Callable[[], object]) -> None:
        try:
            timer.phase(phase, action)
        except BaseException as error:  # every step is tried, every error reported
            errors.append(error)

    b_before: HostState | None = None
    if checks:
        try:
            b_before = tier.state(b_host)
        except BaseException as error:  # the destroys below still run
            errors.append(error)
    for stack in ("a", "b"):
        if stack not in created:
            continue
        name = names[stack]
        attempt(f"stack {stack}: destroy", lambda name=name: life.run_bounded(
            f"stack {name}: destroy", life.destroy_command(name), life.DESTROY_TIMEOUT, env=env, cwd=ROOT))
        if checks and not errors:
            attempt(f"stack {stack}: hosts reset",
                    lambda stack=stack: hosts_reset(tier, plan, stack, b_before))
        attempt(f"stack {stack}: rm", lambda name=name: life.run_bounded(
            f"stack {name}: rm", life.remove_command(name), life.STACK_COMMAND_TIMEOUT, env=env, cwd=ROOT))
        life.stack_file(ROOT, name).unlink(missing_ok=True)
    # The hosts before the clusters: the last cluster's delete removes the /lib/modules it made,
    # which the hosts bind as kind's nodes do.
    attempt("hosts: delete", lambda: tier.script(HOSTS_SCRIPT, "delete", plan.run))
    for stack in ("a", "b"):
        attempt(f"kind cluster {stack}: delete", lambda stack=stack: tier.script(
            CLUSTER_SCRIPT, "delete", names[stack], str(tier.kubeconfig(stack))))
    attempt("network: delete", lambda: tier.script(HOSTS_SCRIPT, "delete", plan.run, plan.run))
    attempt("nothing left", lambda: nothing_left(tier, plan, names))
    return errors


def hosts_reset(tier: Tier, plan: Layout, stack: str, b_before: HostState | None) -> None:
    for host in plan.stack_hosts(stack):
        state = tier.state(host)
        assert state.reset, f"{stack}'s destroy left {host.container} joined: {state}"
    if stack == "a" and b_before is not None:
        b_host = plan.host("b", "node-1")
        assert tier.state(b_host) == b_before, "stack a's destroy changed stack b's host"


def nothing_left(tier: Tier, plan: Layout, names: dict[str, str]) -> None:
    left = tier.script(HOSTS_SCRIPT, "left", plan.run).split()
    docker = [str(ROOT / "toolchain" / "live" / "scripts" / "engine-run.sh"), tier.bin, tier.engine]
    clusters = subprocess.run(["bash", *docker, "kind", "get", "clusters"], capture_output=True, text=True,
                              check=True, timeout=60).stdout.split()
    networks = subprocess.run(["bash", *docker, "docker", "network", "ls", "--format", "{{.Name}}"],
                              capture_output=True, text=True, check=True, timeout=60).stdout.split()
    stacks = json.loads(subprocess.run(["pulumi", "stack", "ls", "--json"], capture_output=True, text=True,
                                       check=True, cwd=ROOT, timeout=60, env={**os.environ, **backend_env()})
                        .stdout or "[]")
    leftovers = (left + [c for c in clusters if c in names.values()] + [n for n in networks if n == plan.run]
                 + [s["name"] for s in stacks if s["name"] in names.values()])
    assert leftovers == [], f"the run left: {leftovers}"
