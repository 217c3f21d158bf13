"""JSON Schema (draft 2020-12) of a stack file, generated from the config's key tables (config/fields.py).

`python -m kamaji_hami_platform.config.json_schema > schema/stack-config.schema.json` writes the
published copy (tests/config/test_json_schema.py fails while it differs). The schema checks every key's
type, bounds, enum and text rules as `parse_config` does; the rules that compare keys stay in code
(config.CODE_ONLY_RULES, listed in the schema's `$comment`).
"""

from __future__ import annotations

import json
from typing import Any

from kamaji_hami_platform import config
from kamaji_hami_platform.config import Field, Section

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_PATH = "schema/stack-config.schema.json"
REGENERATE = f"python -m kamaji_hami_platform.config.json_schema > {SCHEMA_PATH}"
PREFIX = f"{config.PROJECT}:"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _anchored(pattern: str) -> str:
    # The validator fullmatches; JSON Schema's `pattern` searches.
    return f"^(?:{pattern})$"


def _text_rules(spec: Field) -> dict[str, Any]:
    patterns = [check.pattern for check in spec.checks]
    if spec.cidr_prefix is not None:
        patterns.append(config.cidr_pattern(*spec.cidr_prefix))
    rules: dict[str, Any] = {"minLength": 1}
    if spec.enum:
        rules["enum"] = list(spec.enum)
    lengths = [check.max_length for check in spec.checks if check.max_length is not None]
    if lengths:
        rules["maxLength"] = min(lengths)
    if len(patterns) == 1:
        rules["pattern"] = _anchored(patterns[0])
    elif patterns:  # one object holds one `pattern`
        rules["allOf"] = [{"pattern": _anchored(p)} for p in patterns]
    if spec.reserved:
        rules["not"] = {"enum": list(spec.reserved)}
    return rules


def _value_schema(spec: Field) -> dict[str, Any]:
    if spec.type == "array":
        # An array of sections, or of strings with the key's own text rules (a list of CIDRs).
        items = _ref(spec.ref) if spec.ref else {"type": "string", **_text_rules(spec)}
        return {"type": "array", "minItems": 1, "items": items}
    if spec.ref is not None:
        return _ref(spec.ref)
    schema: dict[str, Any] = {"type": spec.type}
    if spec.type == "integer":
        schema |= {k: v for k, v in (("minimum", spec.minimum), ("maximum", spec.maximum)) if v is not None}
    elif spec.type == "string":
        schema |= _text_rules(spec)
    return schema


def field_schema(spec: Field) -> dict[str, Any]:
    """One key: its value's schema (null allowed where the validator reads null as absent)."""
    value = _value_schema(spec)
    schema: dict[str, Any] = {"description": spec.description}
    if spec.nullable:
        schema["anyOf"] = [value, {"type": "null"}]
    else:
        schema |= value
    if spec.default is not None:
        schema["default"] = spec.default
    return schema


def section_schema(section: Section, min_properties: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "description": section.description,
        "type": "object",
        "properties": {spec.key: field_schema(spec) for spec in section.fields},
        "additionalProperties": False,
    }
    required = [spec.key for spec in section.fields if spec.required]
    if required:
        schema["required"] = required
    if min_properties:
        schema["minProperties"] = min_properties
    return schema


def _quota_schema(section: Section, description: str) -> dict[str, Any]:
    # An empty quota is refused ("must set at least one quota key"); null is read as none.
    return {"anyOf": [section_schema(section, min_properties=1), {"type": "null"}],
            "description": description}


def _defs() -> dict[str, Any]:
    excluded = Section("gpuQuotaWebhookExcluded", "GPU quota of a namespace HAMi's webhook skips.", tuple(
        f for f in config.QUOTA_LIMITS.fields if not f.key.startswith(config.HAMI_QUOTA_PREFIX)))
    namespace = config.QUOTA_NAMESPACE
    defs = {section.name: section_schema(section) for section in config.SECTIONS}
    defs[config.TENANT.name]["minProperties"] = 1
    defs[config.QUOTA_LIMITS.name] = _quota_schema(config.QUOTA_LIMITS, config.QUOTA_LIMITS.description)
    defs[excluded.name] = _quota_schema(
        excluded, "GPU quota of a namespace HAMi's webhook skips: only requests.nvidia.com/gpu applies")
    defs["gpuQuotas"] = {
        "description": "namespace of the tenant cluster -> its GPU quota",
        "type": "object",
        "propertyNames": {"pattern": _anchored(namespace.pattern), "maxLength": namespace.max_length},
        "properties": {ns: _ref(excluded.name) for ns in config.WEBHOOK_EXCLUDED_NAMESPACES},
        "additionalProperties": _ref(config.QUOTA_LIMITS.name),
    }
    defs["gpuModels"] = {
        "description": "extra GPU models by name; the built-in ones cannot be redefined",
        "type": "object",
        "propertyNames": {"not": {"enum": sorted(config.BUILTIN_GPU_MODELS)}},
        "additionalProperties": _ref(config.GPU_MODEL.name),
    }
    # A secret as a stack file holds it: Pulumi's ciphertext, which only the program decrypts.
    defs["secret"] = {
        "description": "a Pulumi secret (pulumi config set --secret): the stack file holds its ciphertext",
        "type": "object",
        "properties": {config.SECURE_KEY: {"type": "string", "minLength": 1}},
        "required": [config.SECURE_KEY],
        "additionalProperties": False,
    }
    defs[config.SSH_KEYS_KEY] = {
        "description": "SSH private keys by name, each a Pulumi secret",
        "type": "object",
        "propertyNames": {"pattern": _anchored(config.KEY_NAME.pattern)},
        "additionalProperties": _ref("secret"),
    }
    defs[config.ROOT.name] = _config_block()
    return dict(sorted(defs.items()))


def _config_block() -> dict[str, Any]:
    """The `config:` mapping: the platform's keys with the project prefix; other keys (providers',
    `pulumi:`) are not the platform's to judge."""
    properties = {PREFIX + spec.key: field_schema(spec) for spec in config.ROOT.fields}
    # Pulumi.yaml's default for it (a declared key needs one to be optional): read as absent.
    properties[PREFIX + config.MANAGEMENT_KUBECONFIG_KEY]["anyOf"].append({"const": ""})
    return {
        "description": "The config: block of a stack file. " + config.ROOT.description,
        "type": "object",
        "properties": properties,
        "required": [PREFIX + spec.key for spec in config.ROOT.fields if spec.required],
    }


def _comment() -> str:
    rules = "; ".join(f"{key}: {text}" for key, text in config.CODE_ONLY_RULES.items())
    return (f"Generated from kamaji_hami_platform/config/fields.py by `{REGENERATE}`; do not edit. "
            "Checked by the program only (pulumi preview reports them), as JSON Schema cannot "
            f"express them: {rules}.")


def stack_config_schema() -> dict[str, Any]:
    """The schema of a `Pulumi.<stack>.yaml` file; `$defs/config` is its `config:` block."""
    return {
        "$schema": DIALECT,
        "title": f"{config.PROJECT} stack file (Pulumi.<stack>.yaml)",
        "description": "Each key's type, bounds, enum and text rules as the program validates them; "
                       "rules across keys (overlapping CIDRs, address blocks, generated name lengths, "
                       "workers per podCidr, ...) are checked by the program only: see $comment.",
        "$comment": _comment(),
        "type": "object",
        "properties": {"config": _ref(config.ROOT.name)},
        "required": ["config"],
        "$defs": _defs(),
    }


def render() -> str:
    return json.dumps(stack_config_schema(), indent=2) + "\n"


if __name__ == "__main__":
    print(render(), end="")
