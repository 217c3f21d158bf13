"""Probes of NetworkPolicy verdicts in a live kind cluster, from images the node image carries.

A probe pod has a `client` container (kindnetd's image: bash and sleep) and, for each port it
serves, a CoreDNS container listening there (`-dns.port`; CoreDNS without a Corefile answers on any
TCP connect). A connect is bash's `/dev/tcp` given 3 s: "open", "timeout" when nothing answered (a
drop, what a policy does), or bash's error (a refusal or reset: no server, which no verdict can be).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OPEN, TIMEOUT = "open", "timeout"
CONNECT = ('(exec 3<>"/dev/tcp/$0/$1" && echo open) 2>&1 & probe=$!; for _ in 1 2 3 4 5 6; do '
           'sleep 0.5; kill -0 "$probe" 2>/dev/null || { wait "$probe"; exit; }; done; '
           'kill "$probe" 2>/dev/null; echo timeout')
SLEEPER = ["bash", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"]

Kubectl = Callable[..., Any]  # (*args, check=..., timeout=...) -> CompletedProcess


@dataclass(frozen=True, eq=False)
class ProbePod:
    namespace: str
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    serves: tuple[int, ...] = ()

    def manifest(self, client_image: str, server_image: str) -> dict[str, Any]:
        containers = [{"name": "client", "image": client_image, "imagePullPolicy": "Never",
                       "command": SLEEPER}]
        containers += [{"name": f"serve-{port}", "image": server_image, "imagePullPolicy": "Never",
                        "args": ["-dns.port", str(port)]} for port in self.serves]
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": self.name, "namespace": self.namespace, "labels": self.labels},
                "spec": {"containers": containers, "terminationGracePeriodSeconds": 0}}


def apply(kubectl: Kubectl, objects: list[dict[str, Any]], folder: Path, name: str) -> None:
    manifest = folder / f"{name}.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    kubectl("apply", "-f", str(manifest))


def connect(kubectl: Kubectl, pod: ProbePod, address: str, port: int) -> str:
    result = kubectl("exec", "-n", pod.namespace, pod.name, "-c", "client", "--", "bash", "-c", CONNECT,
                     address, str(port), check=False, timeout=60)
    return (result.stdout.strip().splitlines() or [result.stderr.strip()])[-1]


def await_verdict(kubectl: Kubectl, pod: ProbePod, address: str, port: int, want: str) -> None:
    """Policies are programmed asynchronously: the verdict must settle to `want` within 60 s."""
    seen = []
    for _ in range(20):
        seen.append(connect(kubectl, pod, address, port))
        if seen[-1] == want:
            return
        time.sleep(1)
    raise AssertionError(f"{pod.namespace}/{pod.name} -> {address}:{port}: wanted {want}, saw {seen}")
