"""Did the other tenants keep running while a day-2 change was made? Measured, not assumed.

A watch polls every other tenant's API and pods, in a thread, while the change's `up` runs: each
poll lists every pod of the tenant; a pod that went away or came back with another UID, restarted,
or was not Ready at some poll is named in the report, and so is every poll whose API call failed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

POLL_INTERVAL = 2.0
MIN_POLLS = 2  # one during the change at least, and the one after it
FINISHED = ("Succeeded", "Failed")
JOB = "Job"


@dataclass(frozen=True)
class PodState:
    uid: str
    restarts: int
    ready: bool


def runs_to_an_end(pod: Any) -> bool:
    """A Job's pod (the GPU capacity agent's CronJob starts one every minute) or one that ended:
    its going away is no disturbance."""
    owners = pod.metadata.owner_references or []
    return pod.status.phase in FINISHED or any(owner.kind == JOB for owner in owners)


def pod_states(pods: list[Any]) -> dict[str, PodState]:
    """`namespace/name` -> its UID, restarts (all containers) and Ready condition; pods that run to
    an end are left out."""
    states = {}
    for pod in pods:
        if runs_to_an_end(pod):
            continue
        statuses = pod.status.container_statuses or []
        ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
        states[f"{pod.metadata.namespace}/{pod.metadata.name}"] = PodState(
            pod.metadata.uid, sum(s.restart_count for s in statuses), ready)
    return states


@dataclass
class TenantWatch:
    """What one tenant's polls saw."""

    before: dict[str, PodState]
    polls: int = 0
    api_errors: list[str] = field(default_factory=list)
    not_ready: set[str] = field(default_factory=set)
    gone: set[str] = field(default_factory=set)
    restarted: set[str] = field(default_factory=set)

    def observe(self, now: dict[str, PodState]) -> None:
        self.polls += 1
        for pod, was in self.before.items():
            state = now.get(pod)
            if state is None or state.uid != was.uid:
                self.gone.add(pod)
            elif state.restarts > was.restarts:
                self.restarted.add(pod)
            elif not state.ready:
                self.not_ready.add(pod)

    def disturbed(self) -> list[str]:
        """Everything that shows the tenant did not simply keep running (empty when it did); a
        watch that never polled during the change saw nothing, and says so."""
        return (["never polled during the change"] if self.polls < MIN_POLLS else []) + \
            ([f"API unreachable at {len(self.api_errors)} of {self.polls + len(self.api_errors)} polls "
                 f"({self.api_errors[0]})"] if self.api_errors else []) + \
            [f"{pod}: replaced or gone" for pod in sorted(self.gone)] + \
            [f"{pod}: restarted" for pod in sorted(self.restarted)] + \
            [f"{pod}: not Ready at a poll" for pod in sorted(self.not_ready)]


def list_pods(api: Any) -> list[Any]:
    from kubernetes import client

    return client.CoreV1Api(api).list_pod_for_all_namespaces(_request_timeout=10).items


class KeepsRunning:
    """`with KeepsRunning({tenant: api_client}) as watch:` around a change; then `watch.report()`.
    Only pods Ready before the change are followed (one still starting is not the change's)."""

    def __init__(self, tenants: dict[str, Any], interval: float = POLL_INTERVAL) -> None:
        self.tenants = tenants
        self.interval = interval
        self.watches: dict[str, TenantWatch] = {}
        self.failure: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> KeepsRunning:
        for tenant, api in self.tenants.items():
            ready = {pod: state for pod, state in pod_states(list_pods(api)).items() if state.ready}
            if not ready:
                raise AssertionError(f"{tenant}: no Ready pod to follow before the change")
            self.watches[tenant] = TenantWatch(ready)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._raise_failure()
        self._poll()  # and once more after the change

    def _poll(self) -> None:
        for tenant, api in self.tenants.items():
            try:
                states = pod_states(list_pods(api))
            except Exception as error:  # an unreachable API is what the watch reports
                self.watches[tenant].api_errors.append(f"{type(error).__name__}: {str(error)[:120]}")
                continue
            self.watches[tenant].observe(states)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._poll()
                self._stop.wait(self.interval)
        except Exception as error:  # reported by __exit__, not lost with the thread
            self.failure = error

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise AssertionError(f"the watch itself failed: {self.failure!r}") from self.failure

    def report(self) -> dict[str, list[str]]:
        """Each tenant -> what disturbed it (empty lists: every tenant kept running)."""
        return {tenant: watch.disturbed() for tenant, watch in self.watches.items()}

    def summary(self) -> str:
        return ", ".join(f"{tenant}: {len(w.before)} pods, {w.polls} polls, "
                         f"{'undisturbed' if not w.disturbed() else '; '.join(w.disturbed())}"
                         for tenant, w in self.watches.items())


def wait_ready_pods(api: Any, timeout: float = 300) -> None:
    """Until every pod of the tenant is Ready (before a watch starts), or fail naming the rest."""
    deadline = time.monotonic() + timeout
    waiting: list[str] = []
    while time.monotonic() < deadline:
        waiting = [pod for pod, state in pod_states(list_pods(api)).items() if not state.ready]
        if not waiting:
            return
        time.sleep(POLL_INTERVAL)
    raise AssertionError(f"pods not Ready after {timeout:.0f}s: {waiting}")
