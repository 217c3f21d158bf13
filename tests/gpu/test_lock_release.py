"""Mock mode's node-lock release agent (kamaji_hami_platform/gpu/lock_release.py): its RBAC, its
Deployment, and its program run here against a stand-in kubectl that answers as the API server
would (a watch of the GPU nodes, pod reads, an annotate at a resourceVersion)."""

from __future__ import annotations

from pathlib import Path

from kamaji_hami_platform import versions
from kamaji_hami_platform.gpu import lock_release
from tests.standins import run_script, stand_in

NODES = ["tenant-a-worker-0", "tenant-a-worker-1"]


def by_kind(objects: list[dict], kind: str) -> dict:
    return next(o for o in objects if o["kind"] == kind)


def test_rbac_reads_nodes_and_pods_and_annotates_only_the_gpu_nodes():
    """`kubectl annotate node N` GETs, then PATCHes the node: both on exactly the GPU nodes; the
    watch lists and watches nodes; pods are only read (no patch on anyone's pod)."""
    role = by_kind(lock_release.lock_release_objects(NODES, versions.LOCK_RELEASE_IMAGE), "ClusterRole")
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"], "resourceNames": NODES},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
    ]


def test_the_agent_runs_unprivileged_from_the_mirror():
    objects = lock_release.lock_release_objects(NODES, versions.LOCK_RELEASE_IMAGE, "mirror.example:5000")
    deployment = by_kind(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == "mirror.example:5000/docker.io/clastix/kubectl:v1.35"
    security = container["securityContext"]
    assert security["runAsNonRoot"] and security["readOnlyRootFilesystem"]
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert pod["serviceAccountName"] == lock_release.LOCK_RELEASE_AGENT
    assert {e["name"]: e["value"] for e in container["env"]}["GPU_NODE_LABEL"] == "gpu=on"
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] != "ClusterRole"
            and o["kind"] != "ClusterRoleBinding"} == {"kube-system"}


# One watch: the lines the API server's events give (name, resourceVersion, lock); later watches
# hang, as a quiet cluster's would. Pods: bound-* are bound, late-* after two reads, gone-* are not
# found, erroring-* give a server error, the rest are never bound.
KUBECTL = r"""#!/bin/bash
state=$KUBECTL_STATE
case "$1 $2" in
  "get nodes")
    if [ ! -e "$state/watched" ]; then touch "$state/watched"; cat "$state/events"; exit 0; fi
    sleep 60 ;;
  "get pod")
    pod=$5; n=$(cat "$state/reads-$pod" 2>/dev/null || echo 0); echo $((n + 1)) > "$state/reads-$pod"
    case "$pod" in
      bound-*) printf 'tenant-a-worker-0' ;;
      late-*) [ "$n" -ge 2 ] && printf 'tenant-a-worker-0' ;;
      gone-*) echo "Error from server (NotFound): pods \"$pod\" not found" >&2; exit 1 ;;
      erroring-*) echo "Error from server (InternalError): etcdserver: leader changed" >&2; exit 1 ;;
    esac ;;
  "annotate node") echo "$*" >> "$state/annotated" ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""


def run_agent(tmp_path: Path, events: list[str]) -> tuple[list[str], str]:
    tools = tmp_path / "bin"
    stand_in(tools, "kubectl", KUBECTL)
    state = tmp_path / "state"
    state.mkdir()
    (state / "events").write_text("".join(f"{line}\n" for line in events))
    script = f"timeout 6 sh -c {quote(lock_release.SCRIPT)}"
    result = run_script(script, shell="sh", tools=(tools,), timeout=30,
                        env={"KUBECTL_STATE": str(state), "GPU_NODE_LABEL": "gpu=on", "FOLLOW_SECONDS": "1"})
    annotated = (state / "annotated").read_text().splitlines() if (state / "annotated").exists() else []
    return annotated, result.stdout


def quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def test_a_lock_is_released_once_its_pod_is_bound_or_gone_at_the_version_read(tmp_path):
    annotated, said = run_agent(tmp_path, [
        "tenant-a-worker-0 101 2026-12-05T10:00:00Z,default,bound-1",
        "tenant-a-worker-1 102 ",
        "tenant-a-worker-0 103 2026-12-05T10:00:01Z,team,gone-1",
        "tenant-a-worker-1 104 2026-12-05T10:00:02Z",  # the legacy form names no pod: left to the timeout
        "tenant-a-worker-0 105 2026-12-05T10:00:03Z,default,late-1",
        "tenant-a-worker-1 106 2026-12-05T10:00:04Z,default,never-1",  # never bound: left to the timeout
        "tenant-a-worker-1 107 2026-12-05T10:00:05Z,default,erroring-1",  # no answer: never released
    ])
    assert annotated == [
        "annotate node tenant-a-worker-0 hami.io/mutex.lock- --resource-version=101",
        "annotate node tenant-a-worker-0 hami.io/mutex.lock- --resource-version=103",
        "annotate node tenant-a-worker-0 hami.io/mutex.lock- --resource-version=105",
    ]
    assert "released tenant-a-worker-0's lock, held by team/gone-1" in said
