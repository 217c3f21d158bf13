"""Every docker call of the platform's scripts is bounded (kamaji_hami_platform/docker_calls.py):
a Docker daemon that never answers fails the script within the bound, saying so (issue 30.4),
for each script that calls docker from this host."""

from __future__ import annotations

import time

import pytest

from kamaji_hami_platform import docker_calls
from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.management import access, docker_host, docker_network, kindnet, render
from kamaji_hami_platform.tenant import node_join, own_network
from tests.harness import dev_stack_config
from tests.standins import FAKES, run_script, stand_in

pytestmark = pytest.mark.unit

BOUND = 1


def scripts() -> dict[str, tuple[str, str]]:
    platform = parse_config(dev_stack_config())
    management, tenant = platform.management, platform.tenants[0]
    worker = node_join.Worker(tenant, 0, management)
    preamble, kube, _ = access.management_access(management)
    return {
        "the platform network's create": ("sh", docker_network.create_script("kamaji-hami", "172.30.0.0/16",
                                                                             "kamaji")),
        "a tenant network's create": ("sh", own_network.create_script(tenant, management)),
        "a tenant network's delete": ("sh", own_network.delete_script(tenant, management)),
        "the host check": ("sh", docker_host.host_flags_script("kamaji-control-plane")),
        "the kind create": ("sh", render.kind_create_script(management)),
        "a worker's image": ("sh", node_join.image_pull_script(worker.image)),
        "a worker's create": ("bash", node_join.create_script(worker)),
        "a worker's delete": ("bash", node_join.delete_script(worker)),
        "a kubectl in the kind node": ("sh", f"set -eu\n{preamble}{kube} get nodes\n"),
        "kindnet's limits": ("sh", kindnet.remove_limits_script(management)),
    }


@pytest.mark.parametrize("name", list(scripts()))
def test_a_hung_docker_fails_the_script_within_the_bound_saying_so(name, tmp_path):
    shell, script = scripts()[name]
    # kind lists the cluster (its own docker calls are kind's), so the kind create reaches its own.
    stand_in(tmp_path / "bin", "kind", "#!/bin/sh\n[ \"$1 $2\" = \"get clusters\" ] && echo kamaji\nexit 0\n")
    start = time.monotonic()
    result = run_script(script, shell=shell, docker_state=tmp_path, tools=(tmp_path / "bin", FAKES),
                        env={docker_calls.DOCKER_TIMEOUT_ENV: str(BOUND), "FAKE_DOCKER_HANG": "1",
                             node_join.KUBECONFIG_ENV: "apiVersion: v1\n"})
    assert time.monotonic() - start < 20, "the script waited for the hung daemon"
    assert result.returncode != 0
    assert f"did not finish within {BOUND} s: is the Docker daemon hung?" in result.stderr, result.stderr
