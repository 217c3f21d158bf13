"""Every script the platform renders, one case each: what `make test` lints with shellcheck and
holds to golden files (tests/fixtures/scripts/).

The cases render the dev stack (kind), the production example (an existing cluster with worker
hosts, real and mock GPUs) and variants of it that reach the other templates: pinned host keys
and a bastion's, cert-manager installed, NodePort, a StorageClass named for kamaji-etcd. Scripts
that run inside another one (a container's join, a host's reset over SSH) are cases of their own:
the outer script holds them quoted, where shellcheck does not look.

    python -m tests.project.shell_cases    # write the golden files after a deliberate change
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterator

from kamaji_hami_platform import create_only_guards
from kamaji_hami_platform.config import (
    HostConfig,
    ManagementConfig,
    PlatformConfig,
    TenantConfig,
    parse_config,
    secret_values,
)
from kamaji_hami_platform.gpu import lock_release
from kamaji_hami_platform.management import (
    access,
    docker_host,
    docker_network,
    existing,
    kamaji_chart,
    kamaji_webhook,
    kindnet,
    metallb_webhook,
    policy_engine,
    render,
)
from kamaji_hami_platform.tenant import (
    admin_access,
    admin_credential,
    control_plane,
    door,
    host_join,
    host_leave,
    node_join,
    own_network,
)
from tests.harness import ROOT, dev_stack_config, production_config

GOLDEN = ROOT / "tests" / "fixtures" / "scripts"
SH, BASH = "sh", "bash"

# shellcheck findings the scripts have on purpose, each with why. A case names the codes it may
# show; a code a case names but no longer shows fails the test too (the exception is stale).
ACCEPTED = {
    "SC2034": "a retry loop's counter (`for attempt in $(seq 1 N)`) only counts",
    "SC2086": "words split on purpose: `$(echo $networks)` joins Docker's list into one line, "
              "`$mtu_option` is one option or none, `set -- $join` reads kubeadm's join command "
              "under `set -f`",
    "SC2116": "`$(echo $networks)` is that join of Docker's list into one line",
    "SC2016": "the bastion's ProxyCommand is single-quoted on purpose: ssh runs it with /bin/sh, "
              "which expands $KHP_SSH_DIR there",
}


@dataclasses.dataclass(frozen=True)
class Case:
    """One rendered script: its name (its golden file's path under GOLDEN), the shell that runs it,
    the shellcheck codes it may show (ACCEPTED), how to render it, and whether it has a golden file."""

    path: str
    shell: str
    render: Callable[[], str]
    accepted: frozenset[str] = frozenset()
    golden: bool = True


def dev_platform(worker_network: str | None = None) -> PlatformConfig:
    config = dev_stack_config()
    for tenant in config["tenants"] if worker_network else ():
        tenant["workerNetwork"] = worker_network
    return parse_config(config)


def production_platform(change: Callable[[dict], None] | None = None) -> PlatformConfig:
    """The production example as the program reads it (its secrets decrypted), changed by `change`."""
    config, _ = production_config()
    config = copy.deepcopy(config)
    for key in ("managementKubeconfig", "sshPrivateKeys"):
        config[key] = secret_values(config[key])
    if change is not None:
        change(config)
    return parse_config(config)


def _node_port(config: dict) -> None:
    management = config["management"]
    management.update(apiExposure="NodePort", nodePortAddress="10.20.0.5", certManager={"install": True})
    del management["metallbAddressRange"]
    for index, tenant in enumerate(config["tenants"]):
        tenant.update(apiNodePort=30100 + index, konnectivityNodePort=30200 + index)


def _management_cases(prefix: str, management: ManagementConfig) -> Iterator[Case]:
    if management.is_kind:
        yield Case(f"{prefix}/kind-create.sh", SH, lambda: render.kind_create_script(management),
                   frozenset({"SC2086", "SC2116"}))
        yield Case(f"{prefix}/kind-delete.sh", SH, lambda: render.kind_delete_script(management))
        yield Case(f"{prefix}/kind-kubeconfig.sh", SH, lambda: render.kind_kubeconfig_command(management))
        yield Case(f"{prefix}/docker-network-create.sh", SH, lambda: docker_network.create_script(
            management.docker_network, management.docker_subnet, management.name))
        yield Case(f"{prefix}/docker-network-delete.sh", SH, lambda: docker_network.delete_script(
            management.docker_network, management.name))
        yield Case(f"{prefix}/docker-host-flags.sh", SH,
                   lambda: docker_host.host_flags_script(render.control_plane_container(management)))
        yield Case(f"{prefix}/kindnet-limits.sh", SH, lambda: kindnet.remove_limits_script(management))
        yield Case(f"{prefix}/policy-engine-check.sh", SH,
                   lambda: policy_engine.policy_engine_check_script(management))
    else:
        yield Case(f"{prefix}/cluster-check.sh", SH, lambda: existing.cluster_check_script(
            management, access.MANAGEMENT_KUBECONFIG_ENV))
        yield Case(f"{prefix}/kamaji-datastores-delete.sh", SH,
                   lambda: kamaji_webhook.kamaji_datastores_delete_script(management))
        yield Case(f"{prefix}/kamaji-datastores-note.sh", SH, lambda: kamaji_webhook.DATASTORES_NOTE)
    yield Case(f"{prefix}/kamaji-chart-fetch.sh", SH, kamaji_chart.fetch_script)
    yield Case(f"{prefix}/kamaji-webhook-wait.sh", SH,
               lambda: kamaji_webhook.kamaji_webhook_wait_script(management), frozenset({"SC2034"}))
    if management.install_metallb:
        yield Case(f"{prefix}/metallb-webhook-wait.sh", SH,
                   lambda: metallb_webhook.metallb_webhook_wait_script(management), frozenset({"SC2034"}))
    for setting in render.management_create_only(management):
        yield Case(f"{prefix}/create-only-{setting.key}.sh", SH,
                   lambda s=setting: create_only_guards.guard_script(s, render.MANAGEMENT_WAY_OUT))


def _tenant_cases(prefix: str, tenant: TenantConfig, management: ManagementConfig) -> Iterator[Case]:
    where = f"{prefix}/{tenant.name}"
    yield Case(f"{where}/admin-access.sh", SH,
               lambda: admin_access.tenant_admin_access_script(tenant, management))
    if management.is_kind:
        yield Case(f"{where}/tenant-admin-credential.sh", SH,
                   lambda: admin_credential.issue_script(tenant, management))
    if tenant.gpus is not None and tenant.gpus.mock:  # the node-lock release's program (a Deployment's)
        yield Case(f"{where}/gpu-lock-release.sh", SH, lock_release.agent_script)
    way_out = control_plane.create_only_way_out(tenant)
    for setting in control_plane.create_only_settings(tenant):
        yield Case(f"{where}/create-only-{setting.key}.sh", SH,
                   lambda s=setting: create_only_guards.guard_script(s, way_out))
    if management.is_kind and tenant.own_network:
        yield Case(f"{where}/network-create.sh", SH, lambda: own_network.create_script(tenant, management))
        yield Case(f"{where}/network-delete.sh", SH, lambda: own_network.delete_script(tenant, management))
        yield Case(f"{where}/door-create.sh", SH, lambda: door.create_script(tenant, management, None))
        yield Case(f"{where}/door-delete.sh", SH, lambda: door.delete_script(tenant, management))
    for host in tenant.hosts:
        yield from _host_cases(where, tenant, host)
    for index in range(0 if tenant.on_hosts else tenant.workers):
        worker = node_join.Worker(tenant, index, management)
        if index == 0:
            yield Case(f"{where}/worker-image.sh", SH, lambda w=worker: node_join.image_pull_script(w.image))
        yield Case(f"{where}/{worker.name}-create.bash", BASH, lambda w=worker: node_join.create_script(w),
                   frozenset({"SC2034"}))
        yield Case(f"{where}/{worker.name}-delete.bash", BASH, lambda w=worker: node_join.delete_script(w))
        yield Case(f"{where}/{worker.name}-leave-delete.bash", BASH,
                   lambda w=worker: node_join.drain_script(w))
        if index == 0:
            yield Case(f"{where}/worker-leave-create.bash", BASH, lambda: node_join.LEAVE_CREATE)


# Whose nodes the production example's hosts are (the program takes the project and stack from
# the engine).
OWNER = host_join.Ownership("kamaji-hami-platform", "prod", "prod")


def _host_cases(where: str, tenant: TenantConfig, host: HostConfig) -> Iterator[Case]:
    node = f"{where}/{host.name}"
    bastion = frozenset({"SC2016"}) if host.bastion is not None else frozenset()
    yield Case(f"{node}-worker.bash", BASH, lambda: host_join.worker_script(tenant, host))
    yield Case(f"{node}-join.bash", BASH, lambda: host_join.join_script(
        tenant, host, OWNER, control_plane.konnectivity_port(tenant)), bastion)
    yield Case(f"{node}-join-remote.sh", SH, lambda: host_join.remote_join_script(tenant, host, OWNER))
    # management.failCgroupV1: false (no cgroup v2 check; SystemVerification skipped).
    yield Case(f"{node}-join-remote-cgroup-v1.sh", SH,
               lambda: host_join.remote_join_script(tenant, host, OWNER, cgroup_v1_allowed=True))
    yield Case(f"{node}-leave.bash", BASH, lambda: host_leave.leave_script(tenant, host, OWNER), bastion)
    yield Case(f"{node}-ready.bash", BASH, lambda: host_join.ready_script(tenant, host))


def _unchecked_hosts(config: dict) -> None:
    """Host keys not checked, on purpose (insecureSkipHostKeyCheck), on other ports."""
    host = config["tenants"][0]["hosts"][0]
    del host["hostKey"], host["bastion"]["hostKey"]
    host.update(insecureSkipHostKeyCheck=True, port=2222)
    host["bastion"].update(insecureSkipHostKeyCheck=True, port=2200)
    config["tenants"][0]["hosts"] = [host]


# Scripts the cases lint that have no golden file of their own: one like them has (another host of
# the tenant, the second dev tenant, a variant's unchanged scripts). The stacks' recorded resources
# (tests/fixtures/stack-resources/) hold every stored script byte for byte anyway.
SIBLINGS = (
    "dev/tenant-b/", "production/kamaji-chart-fetch.sh",
    "production/sandbox/admin-access.sh", "production/sandbox/create-only-",
    "production/ml-prod/gpu-node-2-", "production/ml-prod/gpu-node-3-",
    "unchecked-host-keys/gpu-node-1-join-remote", "unchecked-host-keys/gpu-node-1-ready",
    "unchecked-host-keys/gpu-node-1-worker",
    "node-port/kamaji-", "node-port/create-only-",
    "shared-network/tenant-a/admin-access", "shared-network/tenant-a/create-only-",
    "shared-network/tenant-a/tenant-admin-credential",
    "shared-network/tenant-a/worker-image", "shared-network/tenant-a/tenant-a-worker-0-delete",
    "shared-network/tenant-a/tenant-a-worker-0-leave-delete", "shared-network/tenant-a/worker-leave-create",
)


def cases() -> list[Case]:
    return [dataclasses.replace(case, golden=False) if case.path.startswith(SIBLINGS) else case
            for case in _all_cases()]


def _all_cases() -> list[Case]:
    found: list[Case] = []
    dev = dev_platform()
    found += _management_cases("dev", dev.management)
    for tenant in dev.tenants:
        found += _tenant_cases("dev", tenant, dev.management)
    found.append(Case("dev/inside-a-worker/join.bash", BASH,
                      lambda: node_join._inner_join_script("tenant-a-worker-0"), frozenset({"SC2034"})))
    found.append(Case("dev/inside-a-worker/leave.bash", BASH,
                      lambda: node_join._inner_delete_script("tenant-a-worker-0", "/tmp/tenant-admin.conf")))
    # Tenants created by 0.1.0, on the shared network: their scripts are what they were.
    shared = dev_platform("shared")
    found += _tenant_cases("shared-network", shared.tenants[0], shared.management)
    production = production_platform()
    found += _management_cases("production", production.management)
    for tenant in production.tenants:
        found += _tenant_cases("production", tenant, production.management)
    found.append(Case("production/on-a-host/reset.sh", SH,
                      lambda: host_leave.host_reset_script(production.tenants[0], OWNER)))
    # A Kamaji release whose values name kamaji-etcd's StorageClass (a component's helm_values).
    found.append(Case("production/cluster-check-etcd-storage-class.sh", SH,
                      lambda: existing.cluster_check_script(production.management,
                                                            access.MANAGEMENT_KUBECONFIG_ENV, "fast-ssd")))
    unchecked = production_platform(_unchecked_hosts)
    found += _host_cases("unchecked-host-keys", unchecked.tenants[0], unchecked.tenants[0].hosts[0])
    node_port = production_platform(_node_port)
    found += _management_cases("node-port", node_port.management)
    return found


def write_golden_files() -> None:
    for case in (case for case in cases() if case.golden):
        path = GOLDEN / case.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(case.render())


if __name__ == "__main__":
    write_golden_files()
    print(f"wrote {sum(case.golden for case in cases())} golden scripts to {GOLDEN.relative_to(ROOT)}")
