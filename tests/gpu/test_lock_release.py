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
# hang, as a quiet cluster's would. Pods (`uid nodeName`, as the agent's jsonpath prints them):
# bound-* are bound, late-* after two reads, gone-* are not found (nothing, under --ignore-not-found),
# erroring-* fail to be read, the rest are never bound.
KUBECTL = r"""#!/bin/bash
state=$KUBECTL_STATE
# A config override (--request-timeout, --server, --token, ...) makes the real kubectl skip its
# in-cluster configuration and call localhost:8080 (client-go's deferred loading: seen live).
for arg in "$@"; do
  case "$arg" in --request-timeout*|--server*|--token*|--kubeconfig*|--context*|--cluster*|--user*)
    echo "error: $arg: no in-cluster configuration with an override" >&2; exit 3 ;; esac
done
case "$1 $2" in
  "get nodes")
    if [ ! -e "$state/watched" ]; then touch "$state/watched"; cat "$state/events"; exit 0; fi
    sleep 60 ;;
  "get pod")
    pod=$5; n=$(cat "$state/reads-$pod" 2>/dev/null || echo 0); echo $((n + 1)) > "$state/reads-$pod"
    case "$pod" in
      bound-*) printf 'uid-1 tenant-a-worker-0' ;;
      late-*) if [ "$n" -ge 2 ]; then printf 'uid-1 tenant-a-worker-0'; else printf 'uid-1 '; fi ;;
      gone-*) ;;
      erroring-*) echo "Error from server (InternalError): etcdserver: leader changed" >&2; exit 1 ;;
      *) printf 'uid-1 ' ;;
    esac ;;
  "get node")  # the node read again after a conflict: written since, the lock the same
    printf '%s %s' "$(cat "$state/reread-version")" "$(cat "$state/reread-lock")" ;;
  "annotate node")
    case "$*" in *--resource-version=3*) echo "Error from server (Conflict): the object has been modified" >&2
      echo "$*" >> "$state/conflicted"; exit 1 ;; esac
    echo "$*" >> "$state/annotated" ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""


def run_agent(tmp_path: Path, events: list[str], follow_seconds: int = 2, run_seconds: int = 6,
              reread: tuple[str, str] = ("", "")) -> tuple[list[str], str]:
    tools = tmp_path / "bin"
    stand_in(tools, "kubectl", KUBECTL)
    state = tmp_path / "state"
    state.mkdir()
    (state / "reread-version").write_text(reread[0])
    (state / "reread-lock").write_text(reread[1])
    (state / "events").write_text("".join(f"{line}\n" for line in events))
    script = f"timeout {run_seconds} sh -c {quote(lock_release.agent_script())}"
    result = run_script(script, shell="sh", tools=(tools,), timeout=30,
                        env={"KUBECTL_STATE": str(state), "GPU_NODE_LABEL": "gpu=on", "CALL_SECONDS": "5",
                             "FOLLOW_SECONDS": str(follow_seconds), "HOME": str(tmp_path)})
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
    release = "annotate node tenant-a-worker-0 hami.io/mutex.lock- --resource-version={}"
    assert sorted(annotated) == [release.format(version) for version in (101, 103, 105)]
    assert "released tenant-a-worker-0's lock, held by team/gone-1 (gone)" in said


def test_a_pod_that_never_binds_holds_up_no_other_release(tmp_path):
    """Each lock is followed on its own: a lock whose pod never binds (followed for 10 s) does not
    delay the release of the next node's lock, which happens within the run's 2 s."""
    annotated, _ = run_agent(tmp_path, [
        "tenant-a-worker-1 201 2026-12-05T10:00:00Z,default,never-2",
        "tenant-a-worker-0 202 2026-12-05T10:00:00Z,default,bound-2",
        "tenant-a-worker-0 202 2026-12-05T10:00:00Z,default,bound-2",  # the same lock again: one follow
    ], follow_seconds=10, run_seconds=2)
    assert annotated == [
        "annotate node tenant-a-worker-0 hami.io/mutex.lock- --resource-version=202"]


def test_a_node_written_since_is_read_again_and_its_lock_released_if_still_the_same(tmp_path):
    """Seen in the sim tier: HAMi patches the node (its handshake) between the watch event and the
    release, the annotate at the old resourceVersion conflicts, and the lock stood until the
    timeout. Now the node is read again and the release retried while it holds the same lock."""
    lock = "2026-12-05T10:00:00Z,default,bound-3"
    annotated, said = run_agent(tmp_path, [f"tenant-a-worker-0 301 {lock}"], reread=("402", lock))
    assert annotated == ["annotate node tenant-a-worker-0 hami.io/mutex.lock- --resource-version=402"]
    assert "released tenant-a-worker-0's lock, held by default/bound-3" in said


def test_a_lock_taken_since_is_never_removed(tmp_path):
    """After the conflict the node holds another pod's lock: nothing is released."""
    annotated, _ = run_agent(tmp_path, ["tenant-a-worker-0 311 2026-12-05T10:00:00Z,default,bound-4"],
                             reread=("412", "2026-12-05T10:00:02Z,default,other-1"))
    assert annotated == []
