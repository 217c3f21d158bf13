"""Worker nodes: kindest/node containers joined to a tenant with `kubeadm join`.

The scripts are pure functions of config. Secrets never appear in them: the
tenant admin kubeconfig arrives in the environment variable `TENANT_KUBECONFIG`
(a Pulumi secret), is streamed into the container over stdin (never a host
file), used there to mint a bootstrap token that expires in minutes, and
removed when the script ends. Anything printed on failure passes through a
filter that redacts bootstrap tokens and CA hashes.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass

from kamaji_hami_platform import network, versions
from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.management import docker_host

KUBECONFIG_ENV = "TENANT_KUBECONFIG"
# `KHP_SKIP_DRAIN=1` in the environment of `pulumi destroy`/`up`: remove workers without
# draining them first (`make down` sets it: the whole tenant goes, nothing is left to move to).
SKIP_DRAIN_ENV = "KHP_SKIP_DRAIN"
BOOTSTRAP_TOKEN_TTL = "10m"
# A joined node must be Ready before the next worker is replaced (attempts, seconds apart).
NODE_READY_WAIT = (120, 2)
DRAIN_TIMEOUT = "120s"
# kubectl sets no request timeout of its own: a tenant API whose address no longer answers (its
# control plane went with a lost kind cluster) would hold each worker's delete for the length of
# the kernel's connect retries, once per discovery attempt. Each request is bounded, and each
# call as a whole (coreutils `timeout`, in the node image).
API_REQUEST_TIMEOUT = "30s"
API_CALL_TIMEOUT_SECONDS = 90
# Exit codes of the node removal inside the container.
REMOVED, DRAIN_FAILED, API_UNREACHABLE = 0, 2, 3
# Kamaji's own e2e joins kindest/node containers with these (clastix/kamaji 26.8.2-edge
# e2e/worker_kubeadm_join_test.go), plus Swap: the platform never turns the host's swap off.
IGNORED_PREFLIGHT_ERRORS = "SystemVerification,FileExisting,Swap"
CONTAINER_KUBECONFIG = "/etc/kubernetes/tenant-admin.conf"
# What `kubeadm join` leaves on a node: its kubelet credentials and the cluster CA.
JOINED_KUBELET_CONFIG = "/etc/kubernetes/kubelet.conf"
NODE_CA_CERT = "/etc/kubernetes/pki/ca.crt"
PLATFORM_LABEL = "io.kamaji-hami-platform/cluster"
TENANT_LABEL = "io.kamaji-hami-platform/tenant"
# `docker container inspect --format` of the owning cluster's label and whether it runs.
_STATE_FORMAT = shlex.quote(f'{{{{ index .Config.Labels "{PLATFORM_LABEL}" }}}}|{{{{ .State.Running }}}}')
# Bootstrap tokens look like abcdef.0123456789abcdef; discovery hashes like sha256:<64 hex>.
REDACT_SED = (r"sed -E 's/[a-z0-9]{6}\.[a-z0-9]{16}/<redacted-token>/g; "
              r"s/sha256:[a-f0-9]{64}/sha256:<redacted>/g'")


@dataclass(frozen=True)
class Worker:
    """One worker node of a tenant: container name = hostname = node name."""

    tenant: TenantConfig
    index: int
    management: ManagementConfig

    @property
    def name(self) -> str:
        return self.tenant.worker_names()[self.index]

    @property
    def image(self) -> str:
        return versions.kind_node_image(self.tenant.kubernetes_version)

    @property
    def address(self) -> str:
        """Its fixed address on the platform's Docker network: what its control plane admits."""
        return network.layout(self.management.docker_subnet).worker_address(
            self.tenant.address_block, self.index)


def docker_run_args(worker: Worker) -> list[str]:
    """The container specification: the flags kind starts every node with (kind v0.31.0
    provision.go `commonArgs`, `runArgsForNode`), its fixed address, our labels, the image.
    What kind adds only on some hosts comes at create time (management/docker_host.py)."""
    return [
        "-d", "--name", worker.name, "--hostname", worker.name,
        "--network", worker.management.docker_network, "--ip", worker.address,
        "--privileged", "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
        "--tty", "--init=false", "--cgroupns=private",
        "--tmpfs", "/tmp", "--tmpfs", "/run", "--volume", "/var", "--volume", "/lib/modules:/lib/modules:ro",
        "--label", f"{PLATFORM_LABEL}={worker.management.name}",
        "--label", f"{TENANT_LABEL}={worker.tenant.name}",
        "--restart", "on-failure:1", worker.image,
    ]


def container_spec_hash(worker: Worker, environment: str = "") -> str:
    """Changes exactly when the container would be started differently (its flags, what it
    would get from the environment of `up`: `docker_host.environment_digest`): a worker
    trigger, so a changed specification replaces running workers (create alone is a no-op for
    a joined one). The host's own flags are a trigger of their own (the host check's output)."""
    spec = [*docker_run_args(worker), *([environment] if environment else [])]
    return hashlib.sha256("\0".join(spec).encode()).hexdigest()[:16]


def image_pull_script(image: str) -> str:
    """Make the image available before any worker is replaced: a pull that fails (a version
    without an image) fails before an old worker is deleted. A present image is not pulled
    again (an air-gapped host that mirrored it keeps working)."""
    quoted = shlex.quote(image)
    return (f"set -eu\n"
            f"if docker image inspect {quoted} >/dev/null 2>&1; then echo 'image {image} present'\n"
            f"else docker pull {quoted}; fi\n")


def _node_ready_wait(node: str, kc: str) -> str:
    """Wait until the joined node is Ready (CNI up, kubelet posting), so a rolling replacement
    never takes the next node away while this one cannot run pods; a node that does not get
    Ready is deleted from the tenant again (its container is removed by the caller)."""
    attempts, interval = NODE_READY_WAIT
    ready = "{.status.conditions[?(@.type==\"Ready\")].status}"
    conditions = "{range .status.conditions[*]}{.type}={.status} {.reason}; {end}"
    return f"""ready=""
for attempt in $(seq 1 {attempts}); do
  ready=$(kubectl --kubeconfig {kc} get node {node} -o jsonpath='{ready}' 2>/dev/null || true)
  [ "$ready" = "True" ] && break
  sleep {interval}
done
if [ "$ready" != "True" ]; then
  conditions=$(kubectl --kubeconfig {kc} get node {node} -o jsonpath='{conditions}' 2>&1 || true)
  kubectl --kubeconfig {kc} delete node {node} --ignore-not-found >/dev/null 2>&1 || true
  echo "node {node} joined but was not Ready within {attempts * interval}s: $conditions"; exit 1
fi
echo "node {node} is Ready"
"""


# What a join reads, from the four steps Kamaji starts at once for a tenant (clastix/kamaji
# 26.8.2-edge controllers/soot/manager.go, internal/resources/kubeadm_phases.go): the kubeadm
# and kubelet configuration uploads (kubeadm phases/uploadconfig, Kamaji internal/kubeadm/
# uploadconfig.go: each a ConfigMap, then its RoleBinding) and the bootstrap-token phase
# (internal/kubeadm/bootstraptoken.go: its ClusterRoleBindings, then cluster-info and its
# RoleBinding last). The fourth, the admin binding, is what `<tenant>-admin-access` waits for.
KAMAJI_JOIN_SETUP = {
    "kube-system": ("configmap/kubeadm-config", "rolebinding/kubeadm:nodes-kubeadm-config",
                    "configmap/kubelet-config", "rolebinding/kubeadm:kubelet-config"),
    "kube-public": ("configmap/cluster-info", "rolebinding/kubeadm:bootstrap-signer-clusterinfo"),
    "": ("clusterrolebinding/kubeadm:get-nodes", "clusterrolebinding/kubeadm:kubelet-bootstrap",
         "clusterrolebinding/kubeadm:node-autoapprove-bootstrap",
         "clusterrolebinding/kubeadm:node-autoapprove-certificate-rotation"),
}
KAMAJI_SETUP_WAIT = (60, 2)


def _kamaji_setup_wait(kc: str) -> str:
    """Wait until everything a join reads exists, or fail naming what is missing."""
    attempts, interval = KAMAJI_SETUP_WAIT
    gets = " && ".join(
        f"kubectl --kubeconfig {kc}{f' -n {namespace}' if namespace else ''} get {' '.join(objects)} -o name"
        for namespace, objects in KAMAJI_JOIN_SETUP.items())
    # Success is the exit status: kubectl writes warnings to stderr on success too.
    return f"""setup_ready="" setup_missing=""
for attempt in $(seq 1 {attempts}); do
  if setup_missing=$( {{ {gets}; }} 2>&1 >/dev/null); then setup_ready=1; break; fi
  sleep {interval}
done
if [ -z "$setup_ready" ]; then
  echo "Kamaji has not set the tenant up for joins within {attempts * interval}s: $setup_missing"; exit 1
fi
"""


def _inner_join_script(node: str, kubeconfig: str = CONTAINER_KUBECONFIG) -> str:
    """Runs inside the container: mint a short-lived token, join, delete the token, wait for Ready.

    Only the token command's stdout is the join command: a warning kubeadm
    prints on stderr must never become part of the command that runs next.
    """
    kc = kubeconfig
    err = f"{kc}.err"
    return f"""set -u
trap 'rm -f {kc} {err}' EXIT
""" + _kamaji_setup_wait(kc) + f"""join=""
for attempt in $(seq 1 30); do
  # Kamaji sets up the bootstrap RBAC a moment after the TCP is Ready.
  if join=$(kubeadm token create --kubeconfig {kc} --ttl {BOOTSTRAP_TOKEN_TTL} \\
      --description "join {node}" --print-join-command 2>{err}); then break; fi
  last_error=$(cat {err}); join=""; sleep 2
done
if [ -z "$join" ]; then echo "kubeadm token create failed: $last_error"; exit 1; fi
token=$(printf '%s' "$join" | sed -E 's/.*--token ([^ ]+).*/\\1/')
if ! output=$($join --node-name {node} --ignore-preflight-errors={IGNORED_PREFLIGHT_ERRORS} 2>&1); then
  kubeadm token delete --kubeconfig {kc} "${{token%%.*}}" >/dev/null 2>&1
  echo "kubeadm join failed: $output"; exit 1
fi
kubeadm token delete --kubeconfig {kc} "${{token%%.*}}" >/dev/null 2>&1 || true
echo "joined {node}"
""" + _node_ready_wait(node, kc)


def _container_lookup(cluster: str) -> str:
    """Shell that sets $owner and $running ("absent", "true" or "false") for container $name.
    Only Docker's "No such container" means absent; any other failure stops the script
    (`docker container inspect`: a plain inspect also matches images, volumes, networks)."""
    return f"""lookup() {{
  if info=$(docker container inspect --format {_STATE_FORMAT} "$name" 2>&1); then
    owner=${{info%|*}}; running=${{info##*|}}
  else
    case "$info" in
      *"No such container"*) owner=""; running=absent ;;
      *) echo "worker $name: cannot inspect its container (is Docker running?): $info" >&2; exit 1 ;;
    esac
  fi
  if [ "$running" != absent ] && [ "$owner" != {shlex.quote(cluster)} ]; then
    foreign=1
  else
    foreign=""
  fi
}}
"""


def no_proxy_extra(worker: Worker) -> list[str]:
    """What a worker must reach without a proxy, as kind adds for its nodes (its networks, its
    node names, the in-cluster DNS suffixes): the tenant's pod and service CIDRs, the platform's
    Docker network (API endpoint, other nodes), the tenant's worker names."""
    return [worker.tenant.service_cidr, worker.tenant.pod_cidr, worker.management.docker_subnet,
            *worker.tenant.worker_names(), ".svc", ".svc.cluster", ".svc.cluster.local"]


def create_script(worker: Worker) -> str:
    """Start the container (if absent, or started if stopped) and join it (if not joined to this
    tenant's control plane). Safe to run twice.

    The `docker run` flags are kind's own for its nodes (provision.go `commonArgs`,
    `runArgsForNode`), including what kind adds on some hosts ($KHP_HOST_FLAGS from the
    management cluster's host check, proxies by name: management/docker_host.py), plus the
    fixed address and our labels. A container joined to another control plane (its CA is not
    this tenant's: the TCP was recreated) is removed and created again, so no CNI config or
    iptables rule of the old cluster is left on it (`kubeadm reset` would leave them).
    """
    name = shlex.quote(worker.name)
    inner = shlex.quote(_inner_join_script(worker.name))
    run_args = " ".join(shlex.quote(arg) for arg in docker_run_args(worker)[:-1])
    return f"""set -eu
name={name}
fail() {{
  printf 'worker %s: %s\\n' "$name" "$1" | {REDACT_SED} >&2
  docker rm -f -v "$name" >/dev/null 2>&1 || true
  exit 1
}}
{_container_lookup(worker.management.name)}{docker_host.proxy_script(no_proxy_extra(worker))}\
run_container() {{
  # shellcheck disable=SC2086 # flags, split on purpose
  docker run {run_args} $proxy_flags ${{{docker_host.HOST_FLAGS_ENV}:-}} \\
    {shlex.quote(worker.image)} >/dev/null || fail "docker run failed"
}}
wait_containerd() {{
  for attempt in $(seq 1 60); do
    if docker exec "$name" systemctl is-active --quiet containerd 2>/dev/null; then return 0; fi
    sleep 2
  done
  fail "containerd did not start in the container within 120s"
}}
lookup
if [ -n "$foreign" ]; then
  # Never adopt (or, on failure, remove) a container another stack's kind cluster owns.
  echo "worker $name: a container of that name belongs to kind cluster '$owner'," \\
    "not {worker.management.name}; two stacks on one host need different tenant names" >&2
  exit 1
fi
case "$running" in
  absent) run_container ;;
  false) echo "worker $name was stopped; starting it"
         docker start "$name" >/dev/null || fail "docker start failed" ;;
esac
wait_containerd
if docker exec "$name" test -f {JOINED_KUBELET_CONFIG}; then
  # The tenant's CA, as PEM without line breaks, from its kubeconfig and from the node.
  want=$(printf '%s\\n' "${KUBECONFIG_ENV}" | sed -n 's/^ *certificate-authority-data: *//p' \\
    | head -n 1 | base64 -d 2>/dev/null | tr -d '\\r\\n' || true)
  have=$(docker exec "$name" cat {NODE_CA_CERT} 2>/dev/null | tr -d '\\r\\n' || true)
  # No CA data in the kubeconfig: nothing to compare, leave the node as it is.
  if [ -z "$want" ] || [ "$want" = "$have" ]; then
    echo "worker $name already joined"; exit 0
  fi
  echo "worker $name was joined to another control plane of tenant {worker.tenant.name}; creating it again"
  docker rm -f -v "$name" >/dev/null || fail "docker rm failed"
  run_container
  wait_containerd
fi
docker exec "$name" modprobe br_netfilter >/dev/null 2>&1 || true
printf '%s' "${KUBECONFIG_ENV}" | docker exec -i "$name" \\
  sh -c 'umask 077; cat > {CONTAINER_KUBECONFIG}' || fail "could not hand the kubeconfig to the container"
output=$(docker exec "$name" bash -c {inner} 2>&1) || fail "$output"
printf '%s\\n' "$output" | {REDACT_SED}
"""


def _inner_delete_script(node: str, kubeconfig: str) -> str:
    """Runs inside the container: drain the node, then delete it from the tenant.

    Exit REMOVED when the node is gone (or never was in the tenant), DRAIN_FAILED when the
    drain fails (a PodDisruptionBudget, a pod that will not go),
    API_UNREACHABLE when the tenant API does not answer. `$1` is `drain` or `no-drain`.
    `--force` deletes pods no controller recreates; `--delete-emptydir-data` drops their
    emptyDir volumes: both would go with the node anyway.
    """
    kc = kubeconfig
    bounded = (f"timeout {API_CALL_TIMEOUT_SECONDS} kubectl --kubeconfig {kc}"
               f" --request-timeout={API_REQUEST_TIMEOUT}")
    return f"""set -u
trap 'rm -f {kc}' EXIT
if ! found=$({bounded} get node {node} -o name 2>&1); then
  case "$found" in
    *"(NotFound)"*) echo "node {node} is not in the tenant"; exit {REMOVED} ;;
  esac
  echo "$found"; exit {API_UNREACHABLE}
fi
if [ "$1" = drain ]; then
  if ! out=$(kubectl --kubeconfig {kc} drain {node} --ignore-daemonsets --delete-emptydir-data \\
      --force --timeout={DRAIN_TIMEOUT} 2>&1); then
    # drain cordons first and leaves it so on failure (kubectl pkg/cmd/drain): the node must
    # keep taking pods while it stays, e.g. when the change that replaced it is reverted.
    kubectl --kubeconfig {kc} uncordon {node} >/dev/null 2>&1 || true
    echo "$out"; exit {DRAIN_FAILED}
  fi
fi
if ! out=$({bounded} delete node {node} --ignore-not-found --timeout=60s 2>&1); then
  echo "$out"; exit {API_UNREACHABLE}
fi
echo "node {node} removed from the tenant"
"""


def delete_script(worker: Worker) -> str:
    """Drain the node and delete it from the tenant, then remove the container.

    A drain that fails stops here: the node (uncordoned again) and its container stay, so a
    rolling replacement or a scale-down never throws pods away behind a PodDisruptionBudget.
    The node is uncordoned again after a failed drain.
    `KHP_SKIP_DRAIN=1` skips the drain (`make down`: the whole platform goes). A tenant API
    that does not answer, or a node already gone, does not stop the container's removal.
    """
    name = shlex.quote(worker.name)
    kc = "/tmp/tenant-admin.conf"
    inner = shlex.quote(_inner_delete_script(worker.name, kc))
    return f"""set -eu
name={name}
{_container_lookup(worker.management.name)}lookup
if [ "$running" = absent ]; then
  echo "container $name is already gone"; exit 0
fi
if [ -n "$foreign" ]; then
  echo "warning: container $name belongs to kind cluster '$owner'," \\
    "not {worker.management.name}: left alone" >&2
  exit 0
fi
drain=drain
[ "${{{SKIP_DRAIN_ENV}:-}}" = 1 ] && drain=no-drain
status={API_UNREACHABLE}
output="the container is stopped and does not start"
if [ "$running" = false ] && docker start "$name" >/dev/null 2>&1; then
  running=true  # only for kubectl, which needs neither containerd nor the kubelet
fi
if [ "$running" = true ] \\
    && printf '%s' "${KUBECONFIG_ENV}" | docker exec -i "$name" sh -c 'umask 077; cat > {kc}'; then
  output=$(docker exec "$name" bash -c {inner} bash "$drain" 2>&1) && status=0 || status=$?
fi
case "$status" in
  {REMOVED}) printf '%s\\n' "$output" | {REDACT_SED} ;;
  {DRAIN_FAILED})
    printf 'worker %s: the drain failed, so the node and its container are kept:\\n%s\\n' \\
      "$name" "$output" | {REDACT_SED} >&2
    echo "Resolve what blocks the eviction (kubectl get pdb -A in the tenant) and run again, or" \\
      "remove the worker without a drain: {SKIP_DRAIN_ENV}=1 (its pods are deleted with it)." >&2
    exit 1 ;;
  *) printf 'warning: could not remove node %s from tenant %s (API unreachable?): %s\\n' \\
       "$name" {shlex.quote(worker.tenant.name)} "$output" | {REDACT_SED} >&2 ;;
esac
# -v: also the container's anonymous /var volume (images, kubelet data), as kind does. A
# failure here fails the delete: the state keeps the container, which kind never removes.
if ! out=$(docker rm -f -v "$name" 2>&1); then
  echo "worker $name: docker rm failed, the container is still there: $out" >&2; exit 1
fi
echo "container $name removed"
"""
