"""Helpers of the lifecycle run (tests/e2e/test_lifecycle.py) that keep it from harming another stack.

- the stack's name: `e2e...` only, never one whose `Pulumi.<name>.yaml` exists (checked before
  anything is written), created with `pulumi stack init`, which refuses an existing stack;
- its Docker subnet: refused when it overlaps any stack file's subnet or MetalLB range, or any
  Docker network of this host, so no two stacks can announce the same addresses;
- every Pulumi operation as a CLI subprocess with a bound: on timeout the process group is
  stopped and the error names the phase and the bound;
- the cleanup order (destroy, remove the stack, delete its file, compare the host), each step
  tried even when another failed, except that a failed destroy keeps the stack and its file;
  every error is reported together with the run's own.

Pure parts are unit-tested in tests/test_e2e_lifecycle.py.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from kamaji_hami_platform import network
from kamaji_hami_platform.config import PROJECT, ManagementConfig
from kamaji_hami_platform.tenant import node_join
from kamaji_hami_platform.tools import private_tmp
from tests.e2e.support import NO_CHANGE_OPS, SUBPROCESS_TIMEOUT, HostSnapshot, leftovers, planned_changes

STACK_ENV = "E2E_LIFECYCLE_STACK"
SUBNET_ENV = "E2E_DOCKER_SUBNET"
STACK_PREFIX = "e2e"
DEFAULT_SUBNET = "172.29.0.0/16"  # beside the dev stack's 172.30.0.0/16
# Its tenants' own networks (management.tenantSubnet): beside the dev stack's 172.24.0.0/16.
TENANT_SUBNET_ENV = "E2E_TENANT_SUBNET"
DEFAULT_TENANT_SUBNET = "172.25.0.0/16"
# The stack's name is also its kind cluster's and Docker network's: a DNS label of at most 40
# characters, as management.name (kamaji_hami_platform/config/fields.py).
STACK_NAME_LIMIT = 40
_STACK_NAME = re.compile(rf"^{STACK_PREFIX}([-a-z0-9]*[a-z0-9])?$")
MANAGEMENT_KEY = f"{PROJECT}:management"

# Bounds of each Pulumi phase, in seconds: generous (a whole platform takes 20-40 minutes), but
# a hung engine or provider ends the run instead of holding the host forever.
UP_TIMEOUT = 45 * 60
PREVIEW_TIMEOUT = 10 * 60
DESTROY_TIMEOUT = 20 * 60
STACK_COMMAND_TIMEOUT = SUBPROCESS_TIMEOUT  # stack init / stack rm: no resources touched
# On timeout the CLI first gets SIGTERM, which it takes as a cancel and finishes by writing the
# state it has (pulumi v3.276.0 pkg/backend/cancellation_scope.go: SIGINT or SIGTERM cancels, a
# second one terminates); after this grace the whole process group is killed.
TERMINATE_GRACE = 60
# Makes `preview --json` stream engine events instead of one summary document
# (pulumi v3.276.0 pkg/backend/display/display.go): the run needs the summary.
STREAMING_JSON_PREVIEW_ENV = "PULUMI_ENABLE_STREAMING_JSON_PREVIEW"
# As `make down`: a Kubernetes API that does not answer fails each request after this many
# seconds instead of the client's dial timeouts (pulumi-kubernetes PULUMI_K8S_CLIENT_TIMEOUT).
K8S_CLIENT_TIMEOUT_ENV = "PULUMI_K8S_CLIENT_TIMEOUT"
K8S_CLIENT_TIMEOUT = "30"

# kind's own network. kind v0.31.0 pkg/cluster/internal/providers/docker/provider.go `Provision`
# ensures the network `kind` (network.go `fixedNetworkName`) unless KIND_EXPERIMENTAL_DOCKER_NETWORK
# names another one, and no kind code path removes a network it created (network.go
# `deleteNetworks` only drops duplicates of one name; kubernetes-sigs/kind#1919: "kind delete
# cluster didn't remove docker network"). The platform sets that variable, so a kind that honours
# it never creates `kind`; one that ignores it (or any other kind run on the host meanwhile) leaves
# `kind` behind for good, which is not this stack's leftover.
KIND_NETWORK = "kind"


class LifecycleRefused(RuntimeError):
    """The lifecycle run would touch something that is not its own: nothing was done."""


class PhaseFailed(RuntimeError):
    """A phase's command exited with an error."""


class PhaseTimeout(TimeoutError):
    """A phase's command outlived its bound and was stopped."""


# --- the stack's name and file --------------------------------------------------------------

def default_stack_name(now: float) -> str:
    return f"{STACK_PREFIX}{int(now) % 100000}"


def stack_file(root: Path, name: str) -> Path:
    return root / f"Pulumi.{name}.yaml"


def check_stack_name(name: str, root: Path) -> None:
    """Refuse a name that is not a throwaway `e2e...` one, or whose stack file exists (a stack
    somebody keeps: the run would overwrite its config and then delete the file)."""
    if not _STACK_NAME.match(name) or len(name) > STACK_NAME_LIMIT:
        raise LifecycleRefused(
            f"{STACK_ENV}={name!r} is refused: the lifecycle run destroys its stack and deletes its "
            f"stack file, so the name must start with {STACK_PREFIX!r} (lower-case letters, digits and "
            f"'-', at most {STACK_NAME_LIMIT} characters), e.g. {STACK_ENV}={STACK_PREFIX}-mine")
    path = stack_file(root, name)
    if path.exists():
        raise LifecycleRefused(
            f"{STACK_ENV}={name!r} is refused: {path.name} exists, so a stack of that name is someone's; "
            f"the lifecycle run only creates a stack of its own: choose an unused name or unset {STACK_ENV}")


def stack_exists_message(name: str) -> str:
    return (f"{STACK_ENV}={name!r}: `pulumi stack init {name}` failed (its message is above); a stack of "
            "that name may exist in the backend (PULUMI_BACKEND_URL), and the lifecycle run never adopts "
            f"a stack: choose an unused name or unset {STACK_ENV}")


def write_stack_config(path: Path, config: Mapping[str, Any]) -> None:
    """The run's config into the file `pulumi stack init` created, keeping what it wrote there (the
    passphrase provider's `encryptionsalt`)."""
    document = (yaml.safe_load(path.read_text()) if path.exists() else None) or {}
    document["config"] = dict(config)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


# --- addresses: no two stacks may announce the same ones --------------------------------------

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Claim:
    """Addresses something already uses: a stack file's subnet or MetalLB range, a Docker network."""

    owner: str
    network: Network


def lifecycle_subnet(environ: Mapping[str, str], env: str = SUBNET_ENV,
                     default: str = DEFAULT_SUBNET) -> ipaddress.IPv4Network:
    """E2E_DOCKER_SUBNET (or E2E_TENANT_SUBNET), or the default; a clear error for a value that is
    no IPv4 network."""
    value = environ.get(env, default)
    try:
        return ipaddress.IPv4Network(value)
    except ValueError as error:
        raise LifecycleRefused(f"{env}={value!r} is not an IPv4 network such as "
                               f"{default}: {error}") from None


def lifecycle_tenant_subnet(environ: Mapping[str, str]) -> ipaddress.IPv4Network:
    return lifecycle_subnet(environ, TENANT_SUBNET_ENV, DEFAULT_TENANT_SUBNET)


def _range_networks(value: str) -> list[ipaddress.IPv4Network]:
    return list(ipaddress.summarize_address_range(*network.parse_range(value)))


def config_claims(owner: str, config: Mapping[str, Any]) -> list[Claim]:
    """The addresses a stack's config announces or hands out: its Docker subnet and its tenants'
    networks' subnet (the program's defaults when the file omits them) and a MetalLB range it sets."""
    management = config.get(MANAGEMENT_KEY) or {}
    defaults = ManagementConfig()
    claims = [Claim(f"{owner} management.{key}", ipaddress.ip_network(management.get(key, default)))
              for key, default in (("dockerSubnet", defaults.docker_subnet),
                                   ("tenantSubnet", defaults.tenant_subnet))]
    pool = management.get("metallbAddressRange")
    if pool:
        claims += [Claim(f"{owner} management.metallbAddressRange", net) for net in _range_networks(pool)]
    return claims


def stack_file_claims(root: Path) -> list[Claim]:
    """The claims of every `Pulumi.*.yaml` of the project; one that cannot be read is refused,
    since its addresses are unknown."""
    claims = []
    for path in sorted(root.glob("Pulumi.*.yaml")):
        try:
            document = yaml.safe_load(path.read_text()) or {}
            claims += config_claims(path.name, document.get("config") or {})
        except (OSError, yaml.YAMLError, ValueError, TypeError, AttributeError) as error:
            raise LifecycleRefused(f"cannot read the addresses of {path.name} ({error}): the lifecycle "
                                   f"subnet cannot be checked against it") from None
    return claims


# One line per network: its name, then each IPAM subnet (the daemon's `docker network inspect`).
NETWORK_FORMAT = "{{.Name}}{{range .IPAM.Config}} {{.Subnet}}{{end}}"


def docker_network_claims(inspect_output: str) -> list[Claim]:
    """`docker network inspect --format NETWORK_FORMAT` lines -> one claim per subnet."""
    claims = []
    for line in filter(str.strip, inspect_output.splitlines()):
        name, *subnets = line.split()
        claims += [Claim(f"Docker network {name}", ipaddress.ip_network(s, strict=False)) for s in subnets]
    return claims


def host_network_claims() -> list[Claim]:
    """Every Docker network of this host with its subnets (bounded: a daemon that hangs fails)."""
    ids = subprocess.run(["docker", "network", "ls", "-q"], capture_output=True, text=True, check=True,
                         timeout=SUBPROCESS_TIMEOUT).stdout.split()
    if not ids:
        return []
    inspect = subprocess.run(["docker", "network", "inspect", "--format", NETWORK_FORMAT, *ids],
                             capture_output=True, text=True, check=True, timeout=SUBPROCESS_TIMEOUT)
    return docker_network_claims(inspect.stdout)


def overlapping(subnet: ipaddress.IPv4Network, claims: Iterable[Claim]) -> list[Claim]:
    """The claims sharing an address with `subnet` (IPv6 ones, such as kind's, never do)."""
    return [c for c in claims if c.network.version == subnet.version and subnet.overlaps(c.network)]


def check_subnet(subnet: ipaddress.IPv4Network, claims: Iterable[Claim], env: str = SUBNET_ENV) -> None:
    """Refuse a lifecycle subnet that overlaps anything claimed: two bridges with one subnet, or
    two MetalLBs announcing one address, break the stack that was there first."""
    found = overlapping(subnet, claims)
    if found:
        listed = "\n  - ".join(f"{c.owner}: {c.network}" for c in found)
        raise LifecycleRefused(f"the lifecycle stack's subnet {subnet} ({env}) overlaps:\n"
                               f"  - {listed}\nset {env} to a free IPv4 /16../24")


# --- what destroy must leave --------------------------------------------------------------------

def lifecycle_leftovers(before: HostSnapshot, after: HostSnapshot) -> list[str]:
    """support.leftovers without kind's `kind` network when it was not there before (kind never
    deletes it); the stack's own network, and everything else, still counts."""
    if KIND_NETWORK not in before.networks:
        after = replace(after, networks=after.networks - {KIND_NETWORK})
    return leftovers(before, after)


# --- Pulumi operations as bounded CLI subprocesses ---------------------------------------------

def pulumi_env(environ: Mapping[str, str], backend: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment with the Makefile's backend and passphrase, no draining (the
    whole platform goes) and the Kubernetes request bound of `make down`."""
    env = {**environ, **backend, node_join.SKIP_DRAIN_ENV: "1"}
    env.setdefault(K8S_CLIENT_TIMEOUT_ENV, K8S_CLIENT_TIMEOUT)
    env.pop(STREAMING_JSON_PREVIEW_ENV, None)
    return env


def _pulumi(*args: str, stack: str) -> list[str]:
    return ["pulumi", *args, "--stack", stack, "--non-interactive"]


def _private_pulumi(*args: str, stack: str) -> list[str]:
    """As `make` runs up, preview and destroy: in a TMPDIR of their own, where pulumi-kubernetes
    leaves each provider's kubeconfig (kamaji_hami_platform/tools/private_tmp.py)."""
    return [sys.executable, str(private_tmp.__file__), *_pulumi(*args, stack=stack)]


def init_command(stack: str) -> list[str]:
    # The DIY backend refuses an existing stack (pulumi v3.276.0 pkg/backend/diy/backend.go
    # CreateStack: StackAlreadyExistsError), so the run never adopts one.
    return ["pulumi", "stack", "init", stack, "--non-interactive"]


def up_command(stack: str) -> list[str]:
    return _private_pulumi("up", "--yes", stack=stack)


def preview_command(stack: str) -> list[str]:
    # One PreviewDigest document on stdout at the end (pulumi v3.276.0 pkg/display/json.go).
    return _private_pulumi("preview", "--json", stack=stack)


def refresh_check_command(stack: str) -> list[str]:
    """What `make drift` runs: a refresh that changes nothing and fails on any drift (pulumi
    v3.276.0 cmd/pulumi/operations/refresh.go: `--expect-no-changes` errors when the refresh has
    changes, `--preview-only` leaves the state as it is). Without `--run-program` (its default):
    each resource is read against the inputs the state holds."""
    return _private_pulumi("refresh", "--preview-only", "--expect-no-changes", "--diff", stack=stack)


def repair_command(stack: str) -> list[str]:
    """What `make up REFRESH=1` runs: refresh first, then put back what the program declares."""
    return _private_pulumi("up", "--yes", "--refresh", stack=stack)


def destroy_command(stack: str) -> list[str]:
    # --ignore-protect destroys the protected kind cluster, control planes and guards as `make down`
    # does (pulumi v3.276.0 pkg/cmd/pulumi/operations/destroy.go), so no separate unprotect step.
    return _private_pulumi("destroy", "--yes", "--ignore-protect", stack=stack)


def remove_command(stack: str) -> list[str]:
    # Without --force: `stack rm` refuses a stack that still has resources. The file is the
    # cleanup's next step, kept apart so that each is tried.
    return _pulumi("stack", "rm", "--yes", "--preserve-config", stack=stack)


def minutes(seconds: float) -> str:
    return f"{seconds:.0f}s ({seconds / 60:.0f} min)" if seconds >= 60 else f"{seconds:.0f}s"


def _exited(pid: int) -> bool:
    """Has the process exited? It stays unreaped, so its process group id cannot be reused."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def stop_group(process: subprocess.Popen[str], grace: float) -> None:
    """SIGTERM to the command (Pulumi cancels and saves its state), then after `grace` seconds
    SIGKILL to its whole process group: providers and scripts it started included."""
    if not _exited(process.pid):
        process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while not _exited(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):  # the group is gone already
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_bounded(phase: str, command: Sequence[str], timeout: float, *, env: Mapping[str, str], cwd: Path,
                capture: bool = False, grace: float = TERMINATE_GRACE) -> str:
    """Run one phase's command in its own process group, its output streamed (stdout returned
    instead when `capture`); a timeout or an interrupt stops the group."""
    print(f"[lifecycle] {phase}: {shlex.join(command)} (bound {minutes(timeout)})", flush=True)
    process = subprocess.Popen(list(command), cwd=cwd, env=dict(env), text=True, start_new_session=True,
                               stdout=subprocess.PIPE if capture else None)
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(process, grace)
        raise PhaseTimeout(f"{phase} did not finish within its bound of {minutes(timeout)}: "
                           f"`{shlex.join(command)}` was stopped") from None
    except BaseException:
        stop_group(process, grace)
        raise
    if process.returncode != 0:
        raise PhaseFailed(f"{phase} failed: `{shlex.join(command)}` exited with {process.returncode}"
                          " (its output is above)")
    return out or ""


def run_expecting_failure(phase: str, command: Sequence[str], timeout: float, *, env: Mapping[str, str],
                          cwd: Path) -> str:
    """A phase whose command must fail (a drift check that finds the drift): its output (stdout
    and stderr), printed too; an error when it succeeds."""
    print(f"[lifecycle] {phase}: {shlex.join(command)} (bound {minutes(timeout)}, must fail)", flush=True)
    try:
        result = subprocess.run(list(command), cwd=cwd, env=dict(env), text=True, timeout=timeout,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                check=False)
    except subprocess.TimeoutExpired:
        raise PhaseTimeout(f"{phase} did not finish within its bound of {minutes(timeout)}") from None
    print(result.stdout, flush=True)
    if result.returncode == 0:
        raise PhaseFailed(f"{phase}: `{shlex.join(command)}` succeeded, and it had to fail")
    return result.stdout


def drift_lines(output: str, names: Iterable[str]) -> dict[str, list[str]]:
    """Each resource name -> the step headers a `--diff` refresh display shows for it (none: not
    shown as changed). A changed step is a header `~ <type>: (update)` (or `- ...: (delete)` for
    an object gone), then its `[id=...]` and `[urn=...::<name>]` lines (pulumi v3.276.0
    pkg/backend/display/diff.go, as the engine tier reads it: tests/engine/test_refresh.py)."""
    shown: dict[str, list[str]] = {name: [] for name in names}
    header = None
    for line in output.splitlines():
        stripped = line.strip()
        if re.fullmatch(r"[~+-]{1,2} \S+: \((update|delete|replace|create)\)", stripped):
            header = stripped
        elif header and (urn := re.fullmatch(r"\[urn=(\S+)\]", stripped)):
            name = urn.group(1).rsplit("::", 1)[-1]
            if name in shown:
                shown[name].append(header)
            header = None
    return shown


def preview_changes(output: str) -> tuple[dict[str, int], list[str]]:
    """`pulumi preview --json` -> (the changes it plans, `op urn` of each changing step)."""
    try:
        digest = json.loads(output)
    except json.JSONDecodeError as error:
        raise PhaseFailed(f"`pulumi preview --json` printed no JSON document ({error}): "
                          f"{output[:500]!r}") from None
    # changeSummary is omitted when empty (pkg/display/json.go `omitempty`).
    changes = planned_changes(digest.get("changeSummary") or {})
    steps = [f"{s.get('op')} {s.get('urn')}" for s in digest.get("steps") or []
             if s.get("op") not in NO_CHANGE_OPS]
    return changes, steps


# --- cleanup ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cleanup:
    """What the run leaves to undo, in order."""

    stack: str
    destroy: Callable[[], object]
    remove_stack: Callable[[], object]
    delete_stack_file: Callable[[], object]
    check_leftovers: Callable[[], object]


def by_hand(stack: str) -> str:
    return (f"destroy failed: stack {stack} and Pulumi.{stack}.yaml are kept (removing them would lose the "
            f"state of live resources); finish by hand: make down STACK={stack}, then "
            f"pulumi stack rm --yes {stack}")


def _attempt(step: str, action: Callable[[], object], errors: list[BaseException]) -> bool:
    try:
        action()
    except Exception as error:  # every step's error is reported at the end
        error.add_note(f"(lifecycle cleanup step: {step})")
        errors.append(error)
        print(f"[lifecycle] cleanup step {step} failed: {type(error).__name__}: {error}", flush=True)
        return False
    return True


def clean_up(cleanup: Cleanup) -> list[BaseException]:
    """Destroy, then (only if the destroy succeeded) remove the stack, delete its file and compare
    the host, each tried even if another failed; every error, in order."""
    errors: list[BaseException] = []
    if not _attempt("destroy", cleanup.destroy, errors):
        message = by_hand(cleanup.stack)
        errors[-1].add_note(message)
        print(f"[lifecycle] {message}", flush=True)
        return errors
    _attempt("remove stack", cleanup.remove_stack, errors)
    _attempt("delete stack file", cleanup.delete_stack_file, errors)
    _attempt("leftovers", cleanup.check_leftovers, errors)
    return errors


def raise_all(original: BaseException | None, errors: list[BaseException]) -> None:
    """Nothing when all went well; the run's own error alone when the cleanup succeeded; else one
    group with the run's error first and every cleanup error, none hiding another."""
    if not errors:
        if original is not None:
            raise original
        return
    everything = ([original] if original is not None else []) + errors
    summary = "; ".join(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}" for e in everything)
    what = "the lifecycle run and its cleanup failed" if original else "the lifecycle cleanup failed"
    raise BaseExceptionGroup(f"{what}: {summary}", everything)
