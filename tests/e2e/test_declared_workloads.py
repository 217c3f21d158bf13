"""Each tenant's declared gpuWorkloads, deployed: HAMi places and refuses them as the exported plan says.

Runs after test_acceptance.py (file order), whose namespaces are gone by then. Per GPU tenant that
declares workloads: the stack's `gpuPlan` output must be the planner's plan for the stack's config
(so the export is what is checked); the cards must be registered and unused (TC-00's
precondition); then one pod per replica, in the planner's order, each created once the one before
it is Running or refused (HAMi places one pod at a time, and the plan assumes that order). What
HAMi did is judged by tests/e2e/workloads.py: every pod where the sequence puts it, the running
pods' (node, cards) one of the outcomes the plan's ties allow, each workload's running count the
plan's `placed`, each refused pod held Pending with HAMi's reason across one scheduler back-off.
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


def create_pod(t: GpuTenant, replica: Replica) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        core(t).create_namespaced_pod(replica.namespace, replica_pod(replica), _request_timeout=T)
    except ApiException as error:
        if error.status == FORBIDDEN:  # a ResourceQuota: tenants with quota'd workloads are not run here
            raise AssertionError(f"{replica.namespace}/{replica.pod} was refused at creation, not by HAMi's "
                                 f"scheduler, in a namespace without gpuQuotas: {error.body}") from error
        raise


def settle(t: GpuTenant, replica: Replica, timeout: float) -> str:
    """Wait until the pod runs or HAMi refuses it (FilteringFailed on its UID): `Running` or
    `refused`. A pod HAMi places on a node whose lock the previous pod holds binds once the lock
    expires (the mock cards have no device plugin to release it): hence the node-lock timeout."""
    uid = cases.read_pod(t, replica.pod, replica.namespace).metadata.uid

    def settled() -> str | None:
        pod = cases.read_pod(t, replica.pod, replica.namespace)
        if pod.status.phase != "Pending":
            return pod.status.phase  # Running, or a Failed the judge reports
        events = core(t).list_namespaced_event(replica.namespace, field_selector=f"involvedObject.uid={uid}",
                                               _request_timeout=T)
        return REFUSED if any(e.reason == FILTERING_FAILED for e in events.items) else None

    return wait_for(f"{replica.namespace}/{replica.pod} of {t.name} Running or refused by HAMi", settled,
                    timeout, evidence=lambda: workload_evidence(t, [replica]))


def deploy(t: GpuTenant, expected: DeclaredPlan) -> list[Replica]:
    """Create every replica's pod in sequence, each once the one before settled; the refused ones."""
    timeout = POD_TIMEOUT + t.tenant.hami.node_lock_timeout_seconds
    refused = []
    for replica in expected.replicas:
        create_pod(t, replica)
        if settle(t, replica, timeout) == REFUSED:
            refused.append(replica)
    return refused


def check_refusals(t: GpuTenant, expected: DeclaredPlan, refused: list[Replica]) -> None:
    """Each refused pod's FilteringFailed names a reason the plan gives it; all stay Pending and
    unbound across one scheduler back-off (one wait for all, per namespace). A pod the plan places
    has no reason to match: the judge reports it."""
    for replica in refused:
        codes = refusal_codes(expected.placement(replica))
        if codes:
            cases.wait_refused(t, replica.pod, codes, replica.namespace, hold=False)
    for namespace in dict.fromkeys(r.namespace for r in refused):
        cases.hold_refused(t, [r.pod for r in refused if r.namespace == namespace], namespace)


def observe(t: GpuTenant, replica: Replica) -> Seen:
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


def quota_gap(t: GpuTenant) -> str | None:
    """Why this case cannot judge the tenant: its workloads run under gpuQuotas, whose refusals the
    planner models (gpu/workloads.py) but this case's oracle (possible_outcomes) does not yet."""
    quota_namespaces = sorted({w.namespace for w in t.tenant.gpu_workloads} & set(t.tenant.gpu_quotas))
    if not quota_namespaces:
        return None
    return (f"{t.name}: declared workloads run in namespaces with gpuQuotas ({', '.join(quota_namespaces)}): "
            "this case does not judge quota refusals yet (the exported gpuPlan does model them)")


def check_tenant(live: LiveStack, t: GpuTenant) -> None:
    try:
        expected = declared_plan(live.platform, t.tenant)
    except ValueError as error:
        pytest.fail(f"{t.name}: the declared workloads' node ties allow {error}: declare fewer replicas "
                    "or give the workers different shapes to check them live", pytrace=False)
    check_export(live, t, expected)
    blind = bypassing_namespaces(t.tenant.gpu_workloads)
    assert not blind, f"{t.name}: HAMi's webhook never sees {blind}: its pods would bypass HAMi and the plan"
    used = namespaces(t.tenant.gpu_workloads)
    remove_pods(t, [ns for ns in used if _namespace_phase(t, ns) == "Active"])
    cases.check_cards_empty_and_registered(t)
    created: list[str] = []
    try:
        create_missing_namespaces(t, used, created)
        refused = deploy(t, expected)
        check_refusals(t, expected, refused)
        seen = [observe(t, replica) for replica in expected.replicas]
        problems = judge(expected, seen)
        assert not problems, ("\n".join([f"{t.name}: HAMi did not do what the plan says:", *problems])
                              + f"\n{workload_evidence(t, expected.replicas)}")
        print(f"[declared] {t.name}: Running per workload {running_counts(seen)}, refused "
              f"{[r.pod for r in refused]}, as the plan says")
    finally:
        remove_pods(t, [ns for ns in used if ns not in created and _namespace_phase(t, ns) == "Active"])
        delete_namespaces(t, created)


def test_declared_workloads_are_placed_and_refused_as_the_exported_plan_says(live: LiveStack):
    tenants = declared_tenants(live)
    if not tenants:
        pytest.skip(f"no GPU tenant of stack {live.name} declares gpuWorkloads: nothing to deploy "
                    "(declare some under tenants[i].gpuWorkloads to run this case)")
    gaps = [gap for gap in map(quota_gap, tenants) if gap]
    for tenant in tenants:
        if quota_gap(tenant) is None:
            check_tenant(live, tenant)
    if len(gaps) == len(tenants):
        pytest.skip("; ".join(gaps))
    for gap in gaps:
        print(f"[declared] not judged: {gap}")
