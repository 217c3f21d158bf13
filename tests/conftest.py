"""Shared fixtures: the dev stack config and one program run under mocks."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.harness import Program, dev_stack_config, production_config, run_program

# A required tier's skips fail (tests/tiers.py).
from tests.tiers import pytest_collection_finish, pytest_runtest_makereport  # noqa: F401


@pytest.fixture
def dev_config() -> dict[str, Any]:
    """A fresh copy of the real Pulumi.dev.yaml config, safe to modify."""
    return copy.deepcopy(dev_stack_config())


@pytest.fixture(scope="session")
def dev_program() -> Program:
    """The whole program run once under mocks with the real dev stack."""
    return run_program(dev_stack_config())


@pytest.fixture(scope="session")
def production_program() -> Program:
    """The whole program run once under mocks with examples/production/Pulumi.prod.yaml, its secrets
    as the engine hands them over."""
    config, secret_keys = production_config()
    return run_program(config, stack="prod", secret_keys=secret_keys)
