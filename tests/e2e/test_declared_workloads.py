"""Each tenant's declared gpuWorkloads, deployed: HAMi places and refuses them as the exported plan says.

Runs after test_acceptance.py (file order), whose namespaces are gone by then. Per GPU tenant that
declares workloads: the stack's `gpuPlan` output must be the planner's plan for the stack's config
(so the export is what is checked); the cards must be registered and unused (TC-00's
precondition); then one pod per replica, all created at once as a workload's controller creates
them (a pod the API server refuses, under a namespace's gpuQuotas, is recorded with its message),
and each waited for until it runs or is refused. What HAMi did is judged pod by pod by
tests/e2e/workloads.py: each running pod's node, cards and charged MiB and cores, each refusal and
its reason, the cards left as one of the ends the walk over every order reaches, each workload's
running count the plan's `placed`; refused pods are held Pending across one scheduler back-off.
The pods, and the namespaces the case created, are always removed, and their removal awaited.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e import cases
from tests.e2e.cases import POD_TIMEOUT, GpuTenant
from tests.e2e.conftest import LiveStack
from tests.e2e.support import FILTERING_FAILED, REQUEST_TIMEOUT, wait_for
from tests.e2e.workloads import (
    REFUSED,
    RUNNING,
    WORKLOAD_LABEL,
    DeclaredPlan,
    Replica,
    Seen,
    bypassing_namespaces,
    declared_plan,
    judge,
    namespaces,
    observed,
    refusal_codes,
    refused_at_creation,
    replica_pod,
    running_counts,
)

pytestmark = pytest.mark.e2e

T = REQUEST_TIMEOUT
DELETE_TIMEOUT = 180
FORBIDDEN = 403
NOT_FOUND = 404


def core(t: GpuTenant) -> Any:  # kubernetes.client.CoreV1Api
    return t.core()


def declared_tenants(live: LiveStack) -> list[GpuTenant]:
    return [GpuTenant(live.tenants[t.name], live.platform, t, live.gpu_cards(t.name))
            for t in live.platform.tenants if t.gpus is not None and t.gpu_workloads]


def workload_evidence(t: GpuTenant, replicas: list[Replica]) -> str:
    """The pods' evidence, namespace by namespace, then the nodes and HAMi's extender log once."""
    lines = [f"tenant {t.name}"]
    for namespace in dict.fromkeys(r.namespace for r in replicas):
        lines += cases.pod_evidence(t, [r.pod for r in replicas if r.namespace == namespace], namespace)
    return "\n".join([*lines, *cases.cluster_evidence(t)])


def remove_pods(t: GpuTenant, names: list[str]) -> None:
    """Delete the case's pods (by label: an interrupted run's too) and await them gone."""
    from kubernetes.client.exceptions import ApiException

    for namespace in names:
        try:
            core(t).delete_collection_namespaced_pod(namespace, label_selector=WORKLOAD_LABEL,
                                                     grace_period_seconds=0, _request_timeout=T)
        except ApiException as error:
            if error.status != NOT_FOUND:
                raise

    def gone() -> bool:
        return all(not core(t).list_namespaced_pod(namespace, label_selector=WORKLOAD_LABEL,
                                                   _request_timeout=T).items for namespace in names)

    wait_for(f"the declared-workload pods of {t.name} in {names} to be deleted", gone, DELETE_TIMEOUT)


def _namespace_phase(t: GpuTenant, namespace: str) -> str | None:
    """`Active`, `Terminating`, or None when there is no such namespace."""
    from kubernetes.client.exceptions import ApiException

    try:
        return core(t).read_namespace(namespace, _request_timeout=T).status.phase
    except ApiException as error:
        if error.status == NOT_FOUND:
            return None
        raise


def create_missing_namespaces(t: GpuTenant, names: list[str], created: list[str]) -> None:
    """Create the namespaces that do not exist, each added to `created` at once (only those are
    deleted after, even when a later one fails)."""
    for namespace in names:
        phase = _namespace_phase(t, namespace)
        if phase == "Terminating":  # an earlier run's, on its way out: wait, then it is ours
            wait_for(f"namespace {namespace} to finish terminating",
                     lambda ns=namespace: _namespace_phase(t, ns) is None, DELETE_TIMEOUT)
            phase = None
        if phase is None:
            core(t).create_namespace({"metadata": {"name": namespace}}, _request_timeout=T)
            created.append(namespace)


def delete_namespaces(t: GpuTenant, names: list[str]) -> None:
    from kubernetes.client.exceptions import ApiException

    for namespace in names:
        try:
            core(t).delete_namespace(namespace, _request_timeout=T)
        except ApiException as error:
            if error.status != NOT_FOUND:
                raise
    for namespace in names:
        wait_for(f"namespace {namespace} of {t.name} to be deleted",
                 lambda ns=namespace: _namespace_phase(t, ns) is None, DELETE_TIMEOUT)


def create_pod(t: GpuTenant, replica: Replica) -> str:
    """Create the replica's pod: "" when the API server took it, else its refusal (a quota's)."""
    from kubernetes.client.exceptions import ApiException

    try:
        core(t).create_namespaced_pod(replica.namespace, replica_pod(replica), _request_timeout=T)
    except ApiException as error:
        if error.status == FORBIDDEN:  # HAMi's webhook or a ResourceQuota, as the plan may say
            return str(error.body or error.reason)
        raise
    return ""


# kube-scheduler's own refusal (e.g. `Too many pods`), when HAMi is never asked: a FailedScheduling
# event whose message is a FitError's. kube-scheduler records FailedScheduling for a failed bind too
# (the extender's error as the message, e.g. HAMi's `node ... is locked: node lock contention`), and
# then retries the pod: that is no refusal. (kubernetes v1.35.4 pkg/scheduler/framework/types.go
# NoNodeAvailableMsg "0/%v nodes are available", FitError.Error; schedule_one.go
# handleSchedulingFailure.)
FAILED_SCHEDULING = "FailedScheduling"
FIT_ERROR_PREFIX = "0/"


def is_refusal(reason: str, message: str) -> bool:
    """A scheduling event that refuses the pod: HAMi's FilteringFailed, or kube-scheduler's
    FailedScheduling for want of a node (not for a failed bind, which it retries)."""
    return reason == FILTERING_FAILED or (reason == FAILED_SCHEDULING
                                          and (message or "").startswith(FIT_ERROR_PREFIX))


def settle(t: GpuTenant, replica: Replica, timeout: float) -> str:
    """Wait until the pod runs or is refused (`is_refusal`, on its UID): `Running` or `refused`. A
    pod HAMi places on a node whose lock another pod holds fails its bind and is retried after a
    back-off (HAMi v2.10.0 pkg/util/nodelock/nodelock.go LockNode does not wait), until the holder
    is bound and the lock released, or the lock expires: hence the node-lock timeout."""
    uid = cases.read_pod(t, replica.pod, replica.namespace).metadata.uid

    def settled() -> str | None:
        pod = cases.read_pod(t, replica.pod, replica.namespace)
        if pod.status.phase != "Pending":
            return pod.status.phase  # Running, or a Failed the judge reports
        events = core(t).list_namespaced_event(replica.namespace, field_selector=f"involvedObject.uid={uid}",
                                               _request_timeout=T)
        refused = any(is_refusal(e.reason, e.message) for e in events.items)
        return REFUSED if refused and not pod.spec.node_name else None

    return wait_for(f"{replica.namespace}/{replica.pod} of {t.name} Running or refused", settled,
                    timeout, evidence=lambda: workload_evidence(t, [replica]))


def deploy(t: GpuTenant, expected: DeclaredPlan) -> tuple[list[Replica], dict[str, str]]:
    """Create every replica's pod at once, then wait for each: the refused ones, and the API
    server's refusal of each pod it did not create."""
    timeout = POD_TIMEOUT + t.tenant.hami.node_lock_timeout_seconds * len(expected.replicas)
    at_creation = {r.pod: message for r in expected.replicas if (message := create_pod(t, r))}
    created = [r for r in expected.replicas if r.pod not in at_creation]
    return [r for r in created if settle(t, r, timeout) == REFUSED], at_creation


def check_refusals(t: GpuTenant, expected: DeclaredPlan, refused: list[Replica]) -> None:
    """Each pod HAMi refused names a reason the plan gives its workload; all stay Pending and
    unbound across one scheduler back-off (one wait for all, per namespace). A pod the plan places
    has no reason to match: the judge reports it."""
    for replica in refused:
        codes = [code for code in refusal_codes(expected.reasons(replica.workload)) if " " not in code]
        if codes:
            cases.wait_refused(t, replica.pod, codes, replica.namespace, hold=False)
    for namespace in dict.fromkeys(r.namespace for r in refused):
        cases.hold_refused(t, [r.pod for r in refused if r.namespace == namespace], namespace)


def observe(t: GpuTenant, replica: Replica, at_creation: dict[str, str]) -> Seen:
    if replica.pod in at_creation:
        return refused_at_creation(replica, at_creation[replica.pod])
    pod = cases.read_pod(t, replica.pod, replica.namespace)
    seen = observed(replica, pod.status.phase, pod.spec.node_name, pod.metadata.annotations or {})
    if seen.state == RUNNING:
        assert pod.spec.node_name == seen.node, (
            f"{replica.pod} runs on {pod.spec.node_name}, HAMi recorded {seen.node!r}\n"
            f"{workload_evidence(t, [replica])}")
    return seen


def check_export(live: LiveStack, t: GpuTenant, expected: DeclaredPlan) -> None:
    exported = live.outputs["tenants"][t.name].get("gpuPlan")
    assert exported == expected.exported, (
        f"the stack's tenants.{t.name}.gpuPlan output is not the planner's plan for Pulumi.{live.name}.yaml "
        f"(the stack file changed since `make up`? run it again):\nexported {exported}\n"
        f"planned  {expected.exported}")


def check_tenant(live: LiveStack, t: GpuTenant) -> None:
    try:
        expected = declared_plan(live.platform, t.tenant)
    except ValueError as error:
        pytest.fail(f"{t.name}: the declared workloads allow {error}: too many ends to judge a live run "
                    "against; declare fewer replicas or workloads to check them live", pytrace=False)
    check_export(live, t, expected)
    blind = bypassing_namespaces(t.tenant.gpu_workloads)
    assert not blind, f"{t.name}: HAMi's webhook never sees {blind}: its pods would bypass HAMi and the plan"
    used = namespaces(t.tenant.gpu_workloads)
    remove_pods(t, [ns for ns in used if _namespace_phase(t, ns) == "Active"])
    cases.check_cards_empty_and_registered(t)
    created: list[str] = []
    try:
        create_missing_namespaces(t, used, created)
        refused, at_creation = deploy(t, expected)
        check_refusals(t, expected, refused)
        seen = [observe(t, replica, at_creation) for replica in expected.replicas]
        problems = judge(expected, seen)
        assert not problems, ("\n".join([f"{t.name}: HAMi did not do what the plan says:", *problems])
                              + f"\n{workload_evidence(t, expected.replicas)}")
        print(f"[declared] {t.name}: Running per workload {running_counts(seen)}, refused "
              f"{[r.pod for r in refused]}, refused at creation {sorted(at_creation)}, as the plan says")
    finally:
        remove_pods(t, [ns for ns in used if ns not in created and _namespace_phase(t, ns) == "Active"])
        delete_namespaces(t, created)


def test_declared_workloads_are_placed_and_refused_as_the_exported_plan_says(live: LiveStack):
    tenants = declared_tenants(live)
    if not tenants:
        pytest.skip(f"no GPU tenant of stack {live.name} declares gpuWorkloads: nothing to deploy "
                    "(declare some under tenants[i].gpuWorkloads to run this case)")
    for tenant in tenants:
        check_tenant(live, tenant)
