"""Live stack access for the acceptance suite.

Without Docker, kind, the Pulumi CLI or a deployed stack, every case skips
with one reason; nothing here errors or passes without a cluster.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from components.config import PlatformConfig, TenantConfig
from components.gpu import load_stack
from tests.e2e.support import ROOT, backend_env, missing_prerequisite

STACK = os.environ.get("E2E_STACK", "dev")


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


def _client(kubeconfig: str) -> Any:
    from kubernetes import config

    # From the stack output straight into memory: no kubeconfig file to prepare.
    return config.new_client_from_config_dict(yaml.safe_load(kubeconfig))


def connect(stack_name: str) -> LiveStack:
    from pulumi import automation as auto

    stack = auto.select_stack(stack_name=stack_name, work_dir=str(ROOT),
                              opts=auto.LocalWorkspaceOptions(env_vars=backend_env()))
    outputs = {key: value.value for key, value in stack.outputs().items()}
    if "tenants" not in outputs or "tenantKubeconfigs" not in outputs:
        raise LookupError(f"stack {stack_name} has no tenant outputs yet: run `make up`")
    return LiveStack(
        name=stack_name,
        platform=load_stack(stack_name),
        outputs=outputs,
        management=_client(outputs["managementKubeconfig"]),
        tenants={name: _client(kc) for name, kc in outputs["tenantKubeconfigs"].items()},
    )


@pytest.fixture(scope="session")
def live() -> LiveStack:
    reason = missing_prerequisite()
    if reason:
        pytest.skip(f"no live stack reachable: {reason}")
    try:
        return connect(STACK)
    except Exception as error:
        pytest.skip(f"no live stack reachable: stack {STACK!r} could not be read "
                    f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})")
