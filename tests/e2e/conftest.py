"""Live stack access for the acceptance suite.

Skips only when there is no stack to test (no Pulumi CLI, no Docker or kind, or the
stack does not exist), with that reason; `E2E_REQUIRE_STACK=1` (the nightly workflow,
the lifecycle run) turns even that into a failure. A stack that exists but cannot be
read (wrong passphrase, bad kubeconfig, never deployed) is a failure with the error's
text, never a skip: a green run means something was tested.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest
import yaml

from kamaji_hami_platform.config import MODE_KIND, PlatformConfig, TenantConfig, load_stack, read_stack_file
from tests.e2e.cases import NAMESPACE
from tests.e2e.suite_namespaces import delete_namespace, fresh_namespace, gone
from tests.e2e.support import ROOT, backend_env, error_text, missing_prerequisite, wait_for

STACK = os.environ.get("E2E_STACK", "dev")
REQUIRE_STACK = "E2E_REQUIRE_STACK"
# The suite checks the platform as the platform: its cluster-admin of each tenant (the tenants' own
# admins get a bounded credential in kind mode, `tenantKubeconfigs`).
PLATFORM_KUBECONFIGS = "platformTenantKubeconfigs"


@dataclass
class LiveStack:
    """A deployed stack: its config, outputs and Kubernetes clients."""

    name: str
    platform: PlatformConfig
    outputs: dict[str, Any]
    management: Any  # kubernetes.client.ApiClient
    tenants: dict[str, Any]  # tenant name -> ApiClient

    def tenant(self, name: str) -> TenantConfig:
        return next(t for t in self.platform.tenants if t.name == name)

    def gpu_cards(self, tenant: str) -> dict[str, list[str]]:
        """node -> card ids, as the deployed stack registered them (its `gpuCards` output)."""
        return self.outputs["tenants"][tenant]["gpuCards"]


def _client(kubeconfig: str) -> Any:
    from kubernetes import config

    # From the stack output straight into memory: no kubeconfig file to prepare.
    return config.new_client_from_config_dict(yaml.safe_load(kubeconfig))


def connect(stack_name: str) -> LiveStack:
    from pulumi import automation as auto

    stack = auto.select_stack(stack_name=stack_name, work_dir=str(ROOT),
                              opts=auto.LocalWorkspaceOptions(env_vars=backend_env()))
    outputs = {key: value.value for key, value in stack.outputs().items()}
    if "tenants" not in outputs or PLATFORM_KUBECONFIGS not in outputs:
        raise LookupError(f"stack {stack_name} exists but has no tenant outputs: run `make up`")
    return LiveStack(
        name=stack_name,
        platform=load_stack(stack_name),
        outputs=outputs,
        management=_client(outputs["managementKubeconfig"]),
        tenants={name: _client(kc) for name, kc in outputs[PLATFORM_KUBECONFIGS].items()},
    )


def no_stack(reason: str) -> NoReturn:
    """Skip for want of a stack, or fail when the run requires one."""
    if os.environ.get(REQUIRE_STACK) == "1":
        pytest.fail(f"{REQUIRE_STACK}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def stack_is_kind(name: str) -> bool:
    """Whether the stack's file says kind (the default; also when there is no file yet)."""
    try:
        raw = read_stack_file(ROOT / f"Pulumi.{name}.yaml")
    except ValueError:
        return True
    return (raw.get("management") or {}).get("mode", MODE_KIND) == MODE_KIND


def open_live_stack(name: str, connect_to: Callable[[str], LiveStack] = connect) -> LiveStack:
    """The stack to test, or a skip (no stack) or a failure (a stack that cannot be read)."""
    from pulumi import automation as auto

    reason = missing_prerequisite(kind=stack_is_kind(name))
    if reason:
        no_stack(f"no live stack reachable: {reason}")
    try:
        return connect_to(name)
    except auto.StackNotFoundError:
        no_stack(f"stack {name!r} does not exist: run `make up` (or set E2E_STACK)")
    except Exception as error:
        pytest.fail(f"stack {name!r} exists but could not be read: {error_text(error)}", pytrace=False)


@pytest.fixture(scope="session")
def live() -> LiveStack:
    return open_live_stack(STACK)


@pytest.fixture(scope="module")
def namespaces(live: LiveStack) -> Iterator[dict[str, Any]]:
    """A fresh test namespace in every tenant; deleted (and awaited) after the module's cases."""
    for client in live.tenants.values():
        fresh_namespace(client, NAMESPACE)
    yield live.tenants
    for client in live.tenants.values():
        delete_namespace(client, NAMESPACE)
    for client in live.tenants.values():
        wait_for(f"namespace {NAMESPACE} to be deleted", lambda c=client: gone(c, NAMESPACE), 180)
