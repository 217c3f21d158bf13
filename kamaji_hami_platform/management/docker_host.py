"""What a worker container needs from the Docker host it runs on, detected as kind detects it.

A worker is started with the extra `docker run` flags kind gives its own node on such a host
(`/dev/mapper`, `--userns=host`, `/dev/fuse`, proxy and snapshotter variables by name), and IPv4
forwarding where a new container's network namespace would not have it (kubeadm join's preflight
needs it; kind skips that preflight for its own node), read once per kind cluster, so workers
behave as kind's node does.

Upstream: kind v0.31.0 pkg/cluster/internal/providers/docker/provision.go `commonArgs`, util.go;
providers/common/proxy.go `getProxyEnvs`.
Rationale: docs/design/worker-containers.md.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from kamaji_hami_platform.docker_calls import bounded_docker
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
SNAPSHOTTER_VARIABLE = "KIND_EXPERIMENTAL_CONTAINERD_SNAPSHOTTER"
# Read by the worker's create script: the flags the host needs (this module's command's output).
HOST_FLAGS_ENV = "KHP_HOST_FLAGS"
_PACKAGE = "kamaji_hami_platform.management"


def host_flags_script(node: str) -> str:
    """Print the extra `docker run` flags this Docker host needs, on one line (maybe empty); `node`
    is the kind node's container, whose image probes what a new container's network gets."""
    return render_script(_PACKAGE, "docker_host_flags.sh", bounded_docker=bounded_docker(), node=Text(node))


def proxy_settings(environment: Mapping[str, str]) -> dict[str, str]:
    """The proxy variables kind would pass, upper case winning over lower case."""
    settings = {}
    for name in PROXY_VARIABLES:
        value = environment.get(name) or environment.get(name.lower())
        if value:
            settings[name] = value
    return settings


def environment_digest(environment: Mapping[str, str]) -> str:
    """Changes when what a new worker would get from the environment of `up` changes (proxies,
    containerd snapshotter); empty when it gets nothing; reveals none of the values."""
    settings = proxy_settings(environment)
    if environment.get(SNAPSHOTTER_VARIABLE):
        settings[SNAPSHOTTER_VARIABLE] = environment[SNAPSHOTTER_VARIABLE]
    if not settings:
        return ""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def proxy_script(no_proxy_extra: list[str]) -> Shell:
    """Shell that sets $proxy_flags: `-e NAME` (both cases, as kind) for each proxy variable
    set, when any is, NO_PROXY then extended with the worker's own networks; plus the
    snapshotter variable, always, as kind passes it."""
    return Shell(render_script(_PACKAGE, "docker_proxy_flags.sh",
                               snapshotter_variable=Text(SNAPSHOTTER_VARIABLE),
                               no_proxy_extra=Text(",".join(no_proxy_extra))))
