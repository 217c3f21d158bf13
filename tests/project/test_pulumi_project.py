"""Pulumi.yaml's config declarations, checked against the Pulumi engine's own rules.

The rules are read in pulumi/pulumi v3.276.0 (cited in Pulumi.yaml's comment). Where that Go
module is on this machine, the file is also validated against its project.json schema.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from kamaji_hami_platform import config
from tests.harness import ROOT

pytestmark = pytest.mark.unit

PROJECT = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
DECLARED: dict[str, dict[str, Any]] = PROJECT["config"]
PULUMI_SDK = Path("/root/go/pkg/mod/github.com/pulumi/pulumi/sdk/v3@v3.276.0")
PROJECT_SCHEMA = PULUMI_SDK / "go/common/workspace/project.json"
# project.json:328 simpleConfigType, :371 configTypeDeclaration.
CONFIG_TYPES = ("string", "integer", "boolean", "array", "object")
DECLARATION_KEYS = {"type", "items", "description", "secret", "default", "value"}


def test_every_config_key_is_declared_with_a_description_and_its_type():
    assert set(DECLARED) == set(config.CONFIG_KEYS)
    for key in config.CONFIG_KEYS:
        spec = config.ROOT.field(key)
        assert DECLARED[key]["description"].strip(), key
        assert DECLARED[key]["type"] == spec.type, key


def test_declarations_follow_the_engine_rules():
    """Unprefixed keys (project.go:842), a known type (project.json:328), `items` for an array
    (project.go:861), only the attributes of a declaration (project.json:371), and a default for
    every key a stack may leave out, since a declared key without one is required
    (pkg/workspace/config.go:319)."""
    for key, declaration in DECLARED.items():
        assert ":" not in key
        assert set(declaration) <= DECLARATION_KEYS, key
        assert declaration["type"] in CONFIG_TYPES, key
        if declaration["type"] == "array":
            assert declaration["items"]["type"] in CONFIG_TYPES, key
        assert ("default" in declaration) != config.ROOT.field(key).required, key


def test_pulumi_yaml_validates_against_the_engines_project_schema():
    """Against project.json itself when the Go module is here; otherwise say so (the rules above
    still ran)."""
    if not PROJECT_SCHEMA.is_file():
        warnings.warn(f"{PROJECT_SCHEMA} is absent: Pulumi.yaml was checked against the cited rules only",
                      stacklevel=1)
        return
    schema = json.loads(PROJECT_SCHEMA.read_text())
    simple = schema["$defs"]["simpleConfigType"]["enum"]
    assert tuple(simple) == CONFIG_TYPES, "the engine's config types changed: check the cited rules"
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(PROJECT)]
    assert errors == []


def _passes(type_name: str, items: dict[str, Any] | None, value: Any) -> bool:
    """sdk/go/common/workspace/project.go:780 ValidateConfigValue, for values read from YAML."""
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and value.lstrip("+-").isdigit())
    if type_name == "boolean":
        return isinstance(value, bool) or value in ("true", "false")
    if type_name == "object":
        return isinstance(value, dict)
    return isinstance(value, list) and items is not None and all(
        _passes(items["type"], items.get("items"), item) for item in value)


@pytest.mark.parametrize("path", sorted(ROOT.glob("Pulumi.*.yaml")), ids=lambda p: p.name)
def test_every_stack_file_passes_the_declared_types(path: Path):
    """What the CLI checks before the program runs (pkg/workspace/config.go:145, :319)."""
    stack = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
    for key, declaration in DECLARED.items():
        value = stack.get(f"{config.PROJECT}:{key}")
        if value is None:
            assert "default" in declaration, f"{path.name} lacks {key}, which has no default"
        else:
            assert _passes(declaration["type"], declaration.get("items"), value), (path.name, key)
