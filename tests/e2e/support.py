"""Helpers for the live acceptance suite: stack access, expected outcomes, waiting, evidence.

Pure parts (annotation and metrics parsing, the oracle) are unit-tested in
tests/test_e2e_support.py; the rest talks to a live stack.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import PlatformConfig, TenantConfig, read_stack_file
from kamaji_hami_platform.gpu import GpuRequest, Placement, Plan, plan_tenant, possible_outcomes
from kamaji_hami_platform.gpu.devices import tenant_devices
from kamaji_hami_platform.gpu.placement import Outcome
from kamaji_hami_platform.mirror import mirrored

ROOT = Path(__file__).resolve().parents[2]
ALLOCATED_ANNOTATION = "hami.io/vgpu-devices-allocated"
VGPU_NODE_ANNOTATION = "hami.io/vgpu-node"
# HAMi v2.10.0 pkg/util/nodelock/nodelock.go: `<RFC3339 time>,<namespace>,<pod>` on the node.
NODE_LOCK_ANNOTATION = "hami.io/mutex.lock"
FILTERING_FAILED = "FilteringFailed"


def _stack_mirror() -> str | None:
    """The deployed stack's `images.mirror` (E2E_STACK's file, as conftest.py reads the stack)."""
    try:
        images = read_stack_file(ROOT / f"Pulumi.{os.environ.get('E2E_STACK', 'dev')}.yaml").get("images")
    except (ValueError, OSError):
        return None
    return images.get("mirror") if isinstance(images, dict) else None


# The suite's own pods pull as the stack's do: from its mirror when it names one (an air-gapped
# stack reaches no other registry; the first live run's probes failed on ErrImagePull without it).
PROBE_IMAGE = mirrored(versions.E2E_PROBE_IMAGE, _stack_mirror())
# Every Kubernetes API call of the suite gives up after this many seconds, every
# subprocess after SUBPROCESS_TIMEOUT: a hung API server fails a case, it never hangs it.
REQUEST_TIMEOUT = 30
SUBPROCESS_TIMEOUT = 120
# The engine's step kinds that change nothing (pulumi/pulumi pkg/resource/deploy/step.go):
# a `Secret.get` is a `read` on every preview; `discard`/`discard-replaced` drop read resources.
NO_CHANGE_OPS = frozenset({"same", "read", "read-replacement", "discard", "discard-replaced"})
T = TypeVar("T")


def backend_env() -> dict[str, str]:
    """The same backend and passphrase defaults as the Makefile."""
    env = {
        "PULUMI_BACKEND_URL": os.environ.get("PULUMI_BACKEND_URL", f"file://{ROOT}/.pulumi-state"),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
    }
    if "PULUMI_CONFIG_PASSPHRASE_FILE" not in os.environ:
        env["PULUMI_CONFIG_PASSPHRASE"] = os.environ.get("PULUMI_CONFIG_PASSPHRASE", "")
    return env


def missing_prerequisite(kind: bool = True) -> str | None:
    """Why no live stack can be reached from here, or None. A stack on an existing management
    cluster (`kind=False`) needs only the Pulumi CLI here: its clusters are reached over the network."""
    if shutil.which("pulumi") is None:
        return "the Pulumi CLI is not installed (https://www.pulumi.com/docs/iac/download-install/)"
    if not kind:
        return None
    if shutil.which("docker") is None:
        return "docker is not installed"
    if subprocess.run(["docker", "info"], capture_output=True, check=False,
                      timeout=SUBPROCESS_TIMEOUT).returncode != 0:
        return "the Docker daemon is not reachable"
    if shutil.which("kind") is None:
        return "kind is not installed"
    return None


@dataclass(frozen=True)
class Allocation:
    """One card of a container's HAMi allocation."""

    card: str
    vendor: str
    memory_mib: int
    cores: int


def parse_allocation(value: str) -> list[list[Allocation]]:
    """`hami.io/vgpu-devices-allocated`: per container (`;`), per card (`:`), `uuid,type,mem,cores`."""
    containers = []
    for container in value.split(";"):
        cards = []
        for entry in filter(None, container.split(":")):
            card, vendor, memory, cores = entry.split(",")[:4]
            cards.append(Allocation(card, vendor, int(memory), int(cores)))
        if cards:
            containers.append(cards)
    return containers


_METRIC = re.compile(r'^(?P<name>[a-zA-Z_:][\w:]*)\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)$')
_LABEL = re.compile(r'(?P<key>[a-zA-Z_]\w*)="(?P<value>(?:[^"\\]|\\.)*)"')
# HAMi v2.10.0 cmd/scheduler/metrics.go: per card, memory in bytes (MiB x 2^20) and
# cores as the raw percentage (0-100, despite the `_ratio` name), labelled device_uuid.
CARD_MEMORY_METRIC = "hami_gpu_memory_allocated_bytes"
CARD_CORES_METRIC = "hami_gpu_core_allocated_ratio"
CARD_LABEL = "device_uuid"
MIB = 2**20


def metric_value(text: str, name: str, card: str) -> float | None:
    """The sample of metric `name` whose `device_uuid` label is exactly `card`, if any."""
    for line in text.splitlines():
        match = _METRIC.match(line.strip())
        if match and match["name"] == name:
            labels = {m["key"]: m["value"] for m in _LABEL.finditer(match["labels"])}
            if labels.get(CARD_LABEL) == card:
                return float(match["value"])
    return None


def card_totals(text: str, card: str) -> tuple[float | None, float | None]:
    """(MiB, cores %) HAMi's scheduler reports as allocated on one card."""
    memory = metric_value(text, CARD_MEMORY_METRIC, card)
    return (None if memory is None else memory / MIB), metric_value(text, CARD_CORES_METRIC, card)


def probe_results(log: str) -> dict[str, str]:
    """`own=open` / `other=closed:timeout` lines of a probe pod's log -> {"own": "open", ...}."""
    return dict(line.strip().split("=", 1) for line in log.splitlines() if "=" in line)


@dataclass(frozen=True)
class NodeLock:
    """HAMi's node lock: who took it, and when."""

    time: str
    namespace: str
    pod: str


def parse_node_lock(value: str | None) -> NodeLock | None:
    """`hami.io/mutex.lock` -> its holder; None without a lock (or one in an unknown format)."""
    parts = (value or "").split(",")
    return NodeLock(*parts) if len(parts) == 3 and all(parts) else None



def lock_age_seconds(lock: NodeLock, now: datetime | None = None) -> float:
    """How old a node lock is (its time is RFC 3339, written by the scheduler)."""
    taken = datetime.fromisoformat(lock.time.replace("Z", "+00:00"))
    return ((now or datetime.now(UTC)) - taken).total_seconds()


def planned_changes(change_summary: dict[str, int]) -> dict[str, int]:
    """The operations of a preview that would change something (reads are not changes)."""
    return {str(op): count for op, count in change_summary.items()
            if count and str(getattr(op, "value", op)) not in NO_CHANGE_OPS}


@dataclass(frozen=True)
class HostSnapshot:
    """What exists on the Docker host: the things a platform creates outside Kubernetes."""

    containers: frozenset[str]
    volumes: frozenset[str]
    networks: frozenset[str]
    kind_clusters: frozenset[str]


def leftovers(before: HostSnapshot, after: HostSnapshot) -> list[str]:
    """Everything that exists after but not before, by kind, sorted."""
    found = []
    for kind in ("containers", "volumes", "networks", "kind_clusters"):
        found += [f"{kind[:-1].replace('_', ' ')} {name}"
                  for name in sorted(getattr(after, kind) - getattr(before, kind))]
    return found


def host_snapshot() -> HostSnapshot:
    """Containers, volumes, networks and kind clusters on this Docker host right now."""
    def lines(*command: str) -> frozenset[str]:
        result = subprocess.run(command, capture_output=True, text=True, check=True,
                                timeout=SUBPROCESS_TIMEOUT)
        return frozenset(result.stdout.split())

    return HostSnapshot(
        containers=lines("docker", "ps", "-a", "--format", "{{.Names}}"),
        volumes=lines("docker", "volume", "ls", "-q"),
        networks=lines("docker", "network", "ls", "--format", "{{.Name}}"),
        kind_clusters=lines("kind", "get", "clusters"),
    )


def error_text(error: BaseException) -> str:
    """An exception's message without the blank lines Automation API errors start with."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def reason_code(reason: str) -> str:
    """`1/1 CardInsufficientCore` -> `CardInsufficientCore` (the text HAMi's events carry)."""
    return reason.split()[-1]


@dataclass(frozen=True)
class Expected:
    """What the planner says a sequence of identical pods will do in one tenant: the plan, and
    every (node, cards) multiset HAMi may record (more than one where HAMi's node choice ties)."""

    plan: Plan
    outcomes: frozenset[Outcome]

    @property
    def placed(self) -> list[Placement]:
        """The pods placed whatever HAMi's tie-breaking."""
        return [p for p in self.plan.placements if p.ok]

    @property
    def refused(self) -> list[Placement]:
        """The pods refused whatever HAMi's tie-breaking."""
        return [p for p in self.plan.placements if not p.ok and not p.maybe_refused]


def recorded_cards(annotations: list[dict[str, str]]) -> list[tuple[str, tuple[str, ...]]]:
    """(node, cards) HAMi recorded on each pod (`hami.io/vgpu-node`, first container's cards), sorted."""
    recorded = []
    for pod in annotations:
        containers = parse_allocation(pod.get(ALLOCATED_ANNOTATION, ""))
        cards = tuple(a.card for a in containers[0]) if containers else ()
        recorded.append((pod.get(VGPU_NODE_ANNOTATION, ""), cards))
    return sorted(recorded)


def explains(expected: Expected, recorded: list[tuple[str, tuple[str, ...]]]) -> bool:
    """Whether HAMi's recorded placements are one of the outcomes the plan allows."""
    return tuple(sorted(recorded)) in expected.outcomes


def expect(platform: PlatformConfig, tenant: TenantConfig, limits: dict[str, int], count: int) -> Expected:
    """The oracle: the planner's plan for `count` pods with these limits, on the tenant's cards
    with its HAMi policies, and every outcome HAMi's node ties allow."""
    request = GpuRequest.from_limits(limits)
    assert request is not None, f"{limits} is not a HAMi GPU request"
    pods = [request] * count
    nodes = tenant_devices(tenant, platform.management.name)
    outcomes = possible_outcomes(nodes, pods, policy=tenant.hami.gpu_scheduler_policy,
                                 node_policy=tenant.hami.node_scheduler_policy)
    return Expected(plan_tenant(tenant, platform.management.name, pods), frozenset(outcomes))


def is_transient(error: BaseException) -> bool:
    """An error a wait outlives: the API answered with an error (a 5xx while a leader moves, a
    429) or did not answer (a dropped connection, a timeout)."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    return isinstance(error, ApiException | HTTPError | OSError)


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 2.0,
             evidence: Callable[[], str] | None = None) -> T:
    """Poll until probe returns a truthy value; fail naming what was awaited, with evidence.

    An API error inside the wait means "not yet" (one 503 must not fail a case); the last one
    goes into the failure's evidence."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = probe()
        except Exception as error:
            if not is_transient(error):
                raise
            last_error, value = error, None
        if value:
            return value
        if time.monotonic() > deadline:
            details = f"\n--- last API error ---\n{error_text(last_error)}" if last_error else ""
            details += f"\n--- evidence ---\n{evidence()}" if evidence else ""
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{details}")
        time.sleep(interval)


def gpu_pod(name: str, limits: dict[str, int], scheduler_name: str | None = None) -> dict[str, Any]:
    """A sleeping pod with HAMi limits and no schedulerName (the webhook must set it)."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": PROBE_IMAGE, "command": ["sleep", "3600"],
                        "resources": {"limits": {k: str(v) for k, v in limits.items()}}}],
    }
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


# Over the ~3 s in which Linux gives up resolving a neighbour nobody holds (3 probes, 1 s apart),
# so that such a connect says `No route to host` every time rather than racing the timeout.
PROBE_CONNECT_TIMEOUT = 5
TIMED_OUT = 124  # coreutils timeout's exit code


# What busybox's nc says (its `nc` and `nc_bloaty` applets alike: the errno's text) when a connect is
# answered with a reset, or gets no answer within -w.
PROBE_VERDICTS = (("refused", "closed:refused"), ("timed out", "closed:timeout"),
                  ("No route to host", "closed:unreachable"), ("unreachable", "closed:unreachable"))


def probe_pod(name: str, targets: dict[str, str], port: int) -> dict[str, Any]:
    """Tries a TCP connection to each target address and prints `<label>=open`,
    `<label>=closed:refused` (a reset), `<label>=closed:timeout` (dropped: what a NetworkPolicy
    does under kube-network-policies), `<label>=closed:unreachable`, or `<label>=error:<nc's words>`
    for anything else, which no case counts as closed. Each verdict comes from nc's own message, not
    from how long it took: Debian's busybox nc (the live tier's busybox image) has no `-z`, and the
    first live run read its usage error as a refusal. busybox's other nc (`nc_bloaty`, upstream's
    default, NC_110_COMPAT) says why only when verbose (a timeout at -v, a refusal at -vv), and the
    small one has no -v: the script asks nc's usage which one it is."""
    pairs = " ".join(f"{label}={address}" for label, address in sorted(targets.items()))
    wait = PROBE_CONNECT_TIMEOUT
    cases = " ".join(f'*"{text}"*) verdict={verdict};;' for text, verdict in PROBE_VERDICTS)
    # nc copies stdin (empty) to the socket and exits once the server closes; `timeout` bounds a
    # server that keeps a connected socket open (still "open": only a connect can fail).
    script = ("verbose=; nc --help 2>&1 | grep -q '^[[:space:]]*-v' && verbose=-vv; "
              f"for target in {pairs}; do "
              f"said=$(timeout {wait + 5} nc $verbose -w {wait} ${{target#*=}} {port} </dev/null 2>&1); "
              "status=$?; "
              f"if [ $status -eq 0 ] || {{ [ $status -ge 124 ] && [ -z \"$said\" ]; }}; then verdict=open; "
              f"else case \"$said\" in {cases} *) verdict=\"error:$(echo $said | tr ' =' '__')\";; esac; fi; "
              f"echo ${{target%%=*}}=$verdict; done")
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "isolation-probe"}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "probe", "image": PROBE_IMAGE,
                                     "command": ["sh", "-c", script]}]}}


HOST_PROBE_TIMEOUT = PROBE_CONNECT_TIMEOUT + 30  # docker exec itself, on a loaded host


def _connect(address: str, port: int) -> list[str]:
    """A bounded TCP connect with bash's /dev/tcp and coreutils' timeout (both in kindest/node)."""
    return ["timeout", str(PROBE_CONNECT_TIMEOUT), "bash", "-c", f"exec 3<>/dev/tcp/{address}/{port}"]


# A Docker CLI that could not run the probe at all (125: docker's own error, 126/127: the command
# in the container could not be run): never a verdict.
DOCKER_FAILED = (125, 126, 127)
DOCKER_ERRORS = ("No such container", "Cannot connect to the Docker daemon", "Unable to find image",
                 "docker: Error", "error during connect")


def connect_verdict(returncode: int, said: str) -> str:
    """bash's own reason for a failed /dev/tcp connect, read from its `connect: <reason>` line
    (`Connection refused`, `No route to host`, `Network is unreachable`); `closed:timeout` only when
    `timeout` stopped a connect that said nothing. Anything else: `error:<what it said>`."""
    if returncode == 0:
        return "open"
    if returncode == TIMED_OUT and not said:
        return "closed:timeout"
    reasons = [line for line in said.splitlines() if "connect:" in line]
    for text, verdict in PROBE_VERDICTS:
        if any(text in line for line in reasons):
            return verdict
    return f"error:{said or f'exit {returncode}'}"


def _verdict(result: subprocess.CompletedProcess[str], where: str) -> str:
    said = result.stderr.strip()
    if result.returncode in DOCKER_FAILED or any(text in said for text in DOCKER_ERRORS):
        raise RuntimeError(f"cannot probe from {where}: {said or f'exit {result.returncode}'}")
    return connect_verdict(result.returncode, said)


def host_network_probe(container: str, address: str, port: int) -> str:
    """A TCP connection from a worker container's own network (its node, as a tenant's
    privileged pod would use it): `open`, `closed:refused` (answered at once) or
    `closed:timeout` (dropped)."""
    result = subprocess.run(["docker", "exec", container, *_connect(address, port)], capture_output=True,
                            text=True, timeout=HOST_PROBE_TIMEOUT, check=False)
    return _verdict(result, container)


# Run inside a worker container as root (what a tenant's privileged host-network pod can do): send
# to $1:$2 through a neighbour ($3 relay, $4 its address: `onlink`, so the route is taken even
# where the neighbour is not on the segment, and the packets go nowhere) or from an address it adds
# to its interface ($3 forged, $4 the address). Whatever it changed is undone on exit. Exit 0: open,
# 124: timed out (dropped), 3: could not set up, else refused.
ROOT_PROBE = r"""
set -u
api=$1 port=$2 mode=$3 via=$4 wait=$5
# "default via <gateway> dev <interface> ...": the third and fifth words.
# shellcheck disable=SC2046 # split on purpose
set -- $(ip -o -4 route show default)
gateway=$3 dev=$5
undo() {
  ip route del "$api/32" 2>/dev/null
  if [ "$mode" = forged ]; then ip addr del "$via/32" dev "$dev" 2>/dev/null; fi
  return 0
}
trap undo EXIT
case "$mode" in
  relay) ip route replace "$api/32" via "$via" dev "$dev" onlink || exit 3 ;;
  # The hop the kernel takes anyway (the gateway, or none for an address of the segment), from
  # the forged source: the packet really leaves, and the host's forwarding judges it.
  forged) if ip -o -4 route get "$api" | grep -q " via "; then hop="via $gateway"; else hop=; fi
          ip addr add "$via/32" dev "$dev" || exit 3
          # shellcheck disable=SC2086 # $hop: no words, or two
          ip route replace "$api/32" $hop dev "$dev" src "$via" || exit 3 ;;
  *) exit 3 ;;
esac
timeout "$wait" bash -c "exec 3<>/dev/tcp/$api/$port"
"""
ROOT_PROBE_SETUP_FAILED = 3


def root_probe(container: str, address: str, port: int, mode: str, via: str) -> str:
    """A TCP connection from a worker as its root would try it: `relay` through `via` (a
    neighbour, or an address that is none on the worker's segment: `closed:unreachable`, nobody
    answers for it) or `forged` from the address `via` added to the worker's interface, sent the
    way the kernel routes it. A verdict as `connect_verdict` gives it."""
    command = ["docker", "exec", container, "bash", "-c", ROOT_PROBE, "root-probe", address, str(port), mode,
               via, str(PROBE_CONNECT_TIMEOUT)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=HOST_PROBE_TIMEOUT, check=False)
    if result.returncode == ROOT_PROBE_SETUP_FAILED:
        raise RuntimeError(f"cannot set up the {mode} probe via {via} in {container}: "
                           f"{result.stderr.strip()}")
    return _verdict(result, container)


def stray_container_probe(network: str, image: str, address: str, port: int) -> str:
    """The same connection from a throwaway container on the platform's Docker network that is
    no worker (Docker gives it an address of the dynamic quarter): what anything else a host
    user starts there sees. `image` is one the host has (a worker's kindest/node)."""
    command = ["docker", "run", "--rm", "--network", network, "--entrypoint", "timeout", image,
               *_connect(address, port)[1:]]
    result = subprocess.run(command, capture_output=True, text=True, timeout=HOST_PROBE_TIMEOUT, check=False)
    return _verdict(result, f"a container on {network}")


# Run in a container: $1 TCP connects to $2:$3, all started at once, each given $4 seconds; one line
# per connect: `0 ` (connected) or its exit status and bash's words, from which connect_verdict
# reads the reason. Each connect's SYN and its retries arrive within those seconds: a burst of a few
# hundred connections, not a packet flood.
FLOOD_PROBE = r"""
count=$1 address=$2 port=$3 wait=$4 i=0
while [ "$i" -lt "$count" ]; do
  (said=$(timeout "$wait" bash -c "exec 3<>/dev/tcp/$address/$port" 2>&1); status=$?
   # One write per connect, so that lines from the others cannot cut it: bash's words on one line.
   printf '%s %s\n' "$status" "${said//$'\n'/ }") &
  i=$((i + 1))
done
wait
"""
FLOOD_WAIT = 5


def _burst_verdicts(result: subprocess.CompletedProcess[str], where: str, count: int) -> dict[str, int]:
    """How many connects of the burst ended with each verdict; every connect must have reported."""
    if result.returncode in DOCKER_FAILED or any(text in result.stderr for text in DOCKER_ERRORS):
        raise RuntimeError(f"cannot send a burst from {where}: {result.stderr.strip()}")
    verdicts: dict[str, int] = {}
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    for line in lines:
        status, _, said = line.strip().partition(" ")
        verdict = connect_verdict(int(status), said.strip())
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
    if len(lines) != count:
        raise RuntimeError(f"a burst of {count} from {where} reported {len(lines)} connects: {verdicts}")
    return verdicts


def burst_from_container(container: str, address: str, port: int, count: int) -> dict[str, int]:
    """`count` simultaneous connects from a container (a worker, as its root): verdict -> how many."""
    command = ["docker", "exec", container, "bash", "-c", FLOOD_PROBE, "burst", str(count), address,
               str(port), str(FLOOD_WAIT)]
    return _burst_verdicts(subprocess.run(command, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
                                          check=False), container, count)


def burst_from_network(network: str, image: str, address: str, port: int, count: int) -> dict[str, int]:
    """The same burst from a throwaway container on `network` (Docker gives it a dynamic address)."""
    command = ["docker", "run", "--rm", "--network", network, "--entrypoint", "bash", image, "-c",
               FLOOD_PROBE, "burst", str(count), address, str(port), str(FLOOD_WAIT)]
    return _burst_verdicts(subprocess.run(command, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
                                          check=False), f"a container on {network}", count)


def local_probe(address: str, port: int) -> str:
    """The same connect from this host itself (the gateway of every tenant network): the positive
    control of a worker's services over the network, not from the worker."""
    import socket

    try:
        with socket.create_connection((address, port), timeout=PROBE_CONNECT_TIMEOUT):
            return "open"
    except TimeoutError:
        return "closed:timeout"
    except ConnectionRefusedError:
        return "closed:refused"
    except OSError as error:
        return "closed:unreachable" if error.errno in (113, 101) else f"error:{error}"


def container_networks(container: str) -> list[str]:
    """The Docker networks a container is attached to, sorted."""
    result = subprocess.run(["docker", "container", "inspect", "--format",
                             "{{range $name, $_ := .NetworkSettings.Networks}}{{$name}} {{end}}", container],
                            capture_output=True, text=True, timeout=HOST_PROBE_TIMEOUT, check=True)
    return sorted(result.stdout.split())


def kind_node_address(container: str, network: str) -> str:
    """The kind node's address on a network (the platform's, or a tenant's own)."""
    result = subprocess.run(["docker", "container", "inspect", "--format",
                             f'{{{{ (index .NetworkSettings.Networks "{network}").IPAddress }}}}', container],
                            capture_output=True, text=True, timeout=HOST_PROBE_TIMEOUT, check=True)
    return result.stdout.strip()


class Timer:
    """Wall time per phase, printed as the lifecycle goes."""

    def __init__(self) -> None:
        self.phases: list[tuple[str, float]] = []

    def phase(self, name: str, action: Callable[[], T]) -> T:
        start = time.monotonic()
        try:
            return action()
        finally:
            elapsed = time.monotonic() - start
            self.phases.append((name, elapsed))
            print(f"[lifecycle] {name}: {elapsed:.0f}s", flush=True)

    def report(self) -> str:
        width = max((len(name) for name, _ in self.phases), default=0)
        return "\n".join(f"{name:<{width}} {seconds:8.0f}s" for name, seconds in self.phases)


# The live suite's own namespaces carry this label: it deletes only namespaces that have it, and
# refuses to take over one of the same name that does not (someone else's, with their objects).
SUITE_LABEL = "io.kamaji-hami-platform/e2e-suite"
NOT_FOUND = 404


class NotTheSuites(RuntimeError):
    """A namespace of the suite's name exists without the suite's label."""


def _namespace_labels(api: Any, name: str) -> dict[str, str] | None:
    """Its labels, or None when it does not exist."""
    from kubernetes.client.exceptions import ApiException

    try:
        namespace = api.read_namespace(name, _request_timeout=REQUEST_TIMEOUT)
    except ApiException as error:
        if error.status == NOT_FOUND:
            return None
        raise
    return dict(namespace.metadata.labels or {})


def release_namespace(api: Any, name: str) -> bool:
    """Delete the namespace if it is the suite's (labelled); True when a delete was asked."""
    from kubernetes.client.exceptions import ApiException

    labels = _namespace_labels(api, name)
    if labels is None or SUITE_LABEL not in labels:
        return False
    try:
        api.delete_namespace(name, _request_timeout=REQUEST_TIMEOUT)
    except ApiException as error:
        if error.status != NOT_FOUND:
            raise
    return True


def claim_namespace(api: Any, name: str, wait_gone: Callable[[], None]) -> None:
    """A fresh namespace of the suite: an earlier run's is deleted (awaited with `wait_gone`) and
    created again; one the suite did not create stops the run, naming it."""
    labels = _namespace_labels(api, name)
    if labels is not None and SUITE_LABEL not in labels:
        raise NotTheSuites(f"namespace {name} exists and was not created by the live suite (no {SUITE_LABEL} "
                           "label): it is left alone; remove it yourself if it is a leftover, or run the "
                           "suite against another stack")
    if labels is not None:
        release_namespace(api, name)
        wait_gone()
    api.create_namespace({"metadata": {"name": name, "labels": {SUITE_LABEL: "true"}}},
                         _request_timeout=REQUEST_TIMEOUT)

