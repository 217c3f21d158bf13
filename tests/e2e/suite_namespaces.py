"""The suite's own namespaces: claimed fresh for a module's cases, deleted (and awaited) after."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.support import REQUEST_TIMEOUT, NotTheSuites, claim_namespace, release_namespace, wait_for

T = REQUEST_TIMEOUT


def core(client: Any) -> Any:
    from kubernetes import client as k8s

    return k8s.CoreV1Api(client)


def gone(client: Any, namespace: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        core(client).read_namespace(namespace, _request_timeout=T)
    except ApiException as error:
        return error.status == 404
    return False


def delete_namespace(client: Any, namespace: str) -> None:
    """Only the suite's own (labelled) namespace is deleted (tests/e2e/support.py)."""
    release_namespace(core(client), namespace)


def fresh_namespace(client: Any, namespace: str) -> None:
    try:
        claim_namespace(core(client), namespace, lambda: wait_for(
            f"leftover namespace {namespace} to go", lambda: gone(client, namespace), 120))
    except NotTheSuites as error:
        pytest.fail(str(error), pytrace=False)
