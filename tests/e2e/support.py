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
from pathlib import Path
from typing import Any, TypeVar

from components import versions
from components.config import PlatformConfig, TenantConfig
from components.gpu import GpuRequest, Placement, plan_tenant

ROOT = Path(__file__).resolve().parents[2]
ALLOCATED_ANNOTATION = "hami.io/vgpu-devices-allocated"
FILTERING_FAILED = "FilteringFailed"
PROBE_IMAGE = versions.E2E_PROBE_IMAGE
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


def missing_prerequisite() -> str | None:
    """Why no live stack can be reached from here, or None."""
    if shutil.which("pulumi") is None:
        return "the Pulumi CLI is not installed (https://www.pulumi.com/docs/iac/download-install/)"
    if shutil.which("docker") is None:
        return "docker is not installed"
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
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


def metric_values(text: str, name_fragment: str, card: str) -> list[tuple[str, float]]:
    """(name, value) of Prometheus samples named like the fragment whose labels name the card."""
    found = []
    for line in text.splitlines():
        match = _METRIC.match(line.strip())
        if match and name_fragment in match["name"] and card in match["labels"]:
            found.append((match["name"], float(match["value"])))
    return found


def probe_results(log: str) -> dict[str, str]:
    """`own=open` lines of a probe pod's log -> {"own": "open"}."""
    return dict(line.strip().split("=", 1) for line in log.splitlines() if "=" in line)


def reason_code(reason: str) -> str:
    """`1/1 CardInsufficientCore` -> `CardInsufficientCore` (the text HAMi's events carry)."""
    return reason.split()[-1]


@dataclass(frozen=True)
class Expected:
    """What the fit model says a sequence of pods will do in one tenant."""

    placements: list[Placement]

    @property
    def placed(self) -> list[Placement]:
        return [p for p in self.placements if p.ok]

    @property
    def refused(self) -> list[Placement]:
        return [p for p in self.placements if not p.ok]


def expect(platform: PlatformConfig, tenant: TenantConfig, limits: dict[str, int], count: int) -> Expected:
    """The oracle: the fit model's plan for `count` pods with these limits."""
    request = GpuRequest.from_limits(limits)
    assert request is not None, f"{limits} is not a HAMi GPU request"
    return Expected(plan_tenant(tenant, platform.management.name, [request] * count))


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 2.0,
             evidence: Callable[[], str] | None = None) -> T:
    """Poll until probe returns a truthy value; fail naming what was awaited, with evidence."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            details = f"\n--- evidence ---\n{evidence()}" if evidence else ""
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


def probe_pod(name: str, targets: dict[str, str], port: int) -> dict[str, Any]:
    """Tries a TCP connection to each target address and prints `<label>=open|closed`."""
    pairs = " ".join(f"{label}={address}" for label, address in sorted(targets.items()))
    script = (f"for target in {pairs}; do "
              f"if nc -z -w 3 ${{target#*=}} {port}; then echo ${{target%%=*}}=open; "
              f"else echo ${{target%%=*}}=closed; fi; done")
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "isolation-probe"}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "probe", "image": PROBE_IMAGE,
                                     "command": ["sh", "-c", script]}]}}


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
        return "\n".join(f"{name:<28} {seconds:8.0f}s" for name, seconds in self.phases)
