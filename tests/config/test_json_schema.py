"""The published JSON Schema of a stack file: generated, valid, and in step with `parse_config`."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError, validators

from kamaji_hami_platform import config
from kamaji_hami_platform.config import ConfigError, json_schema, parse_config
from tests.harness import ROOT, dev_stack_config

pytestmark = pytest.mark.unit

SCHEMA_FILE = ROOT / json_schema.SCHEMA_PATH
STACK_FILES = sorted(ROOT.glob("Pulumi.*.yaml"))


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """`pattern` as JSON Schema defines it (ECMA-262), as editors run it: `$` is the end of the
    text; Python's `re.search` would also match it before a trailing newline."""
    if isinstance(instance, str) and not re.search(re.sub(r"\$$", r"\\Z", pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


EcmaValidator = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})
VALIDATOR = EcmaValidator(json_schema.stack_config_schema())


def stack_document(raw: dict[str, Any]) -> dict[str, Any]:
    """An unprefixed config (as parse_config takes it) as a stack file."""
    return {"config": {json_schema.PREFIX + key: value for key, value in raw.items()}}


def schema_errors(raw: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in VALIDATOR.iter_errors(stack_document(raw))]


def test_the_published_schema_is_the_generated_one():
    assert SCHEMA_FILE.read_text() == json_schema.render(), (
        f"{json_schema.SCHEMA_PATH} is stale: regenerate it with `{json_schema.REGENERATE}`")


def test_the_schema_is_a_valid_draft_2020_12_schema():
    schema = json.loads(SCHEMA_FILE.read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_every_key_has_a_description_and_every_code_only_rule_is_listed():
    for section in (*config.SECTIONS, config.ROOT):
        for spec in section.fields:
            assert spec.description and "\n" not in spec.description, f"{section.name}.{spec.key}"
    comment = json_schema.stack_config_schema()["$comment"]
    assert all(f"{key}: {text}" in comment for key, text in config.CODE_ONLY_RULES.items())


def test_the_repositorys_stack_files_are_found():
    assert {p.name for p in STACK_FILES} >= {"Pulumi.dev.yaml", "Pulumi.ci.yaml"}


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_every_stack_file_validates_against_the_schema(path: Path):
    document = yaml.safe_load(path.read_text())
    assert [e.message for e in VALIDATOR.iter_errors(document)] == []
    config.load_stack_file(path)  # and the validator agrees


def _set(path: str, value: Any) -> Any:
    def plant(raw: dict[str, Any]) -> None:
        *parents, leaf = path.split(".")
        node: Any = raw
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if value is _DELETE:
            del node[leaf]
        else:
            node[leaf] = value
    return plant


_DELETE = object()
PLANTED = {
    "unknown tenant key": _set("tenants.0.workerz", 2),
    "unknown management key": _set("management.nmae", "x"),
    "missing tenant name": _set("tenants.0.name", _DELETE),
    "missing tenants": _set("tenants", _DELETE),
    "no tenant": _set("tenants", []),
    "workers above the maximum": _set("tenants.0.workers", 100),
    "negative workers": _set("tenants.0.workers", -1),
    "workers as text": _set("tenants.0.workers", "2"),
    "workers as a boolean": _set("tenants.0.workers", True),
    "13 cards per worker": _set("tenants.0.gpus.perWorker", 13),
    "mock as text": _set("tenants.0.gpus.mock", "yes"),
    "unknown scheduler policy": _set("tenants.0.hami.gpuSchedulerPolicy", "topology-aware"),
    "node lock over 5m": _set("tenants.0.hami.nodeLockTimeout", "6m"),
    "reserved namespace as name": _set("tenants.0.name", "kube-system"),
    "name of 41 characters": _set("tenants.0.name", "a" * 41),
    "name with a trailing newline": _set("tenants.0.name", "tenant-a\n"),
    "unsupported version": _set("tenants.0.kubernetesVersion", "v1.29.9"),
    "version with leading zeros": _set("tenants.0.kubernetesVersion", "v1.035.0"),
    "pod CIDR /23": _set("tenants.0.podCidr", "10.36.0.0/23"),
    "IPv6 service CIDR": _set("tenants.0.serviceCidr", "fd00::/108"),
    "node image without tag": _set("management.nodeImage", "kindest/node"),
    "subnet /25": _set("management.dockerSubnet", "172.30.0.0/25"),
    "two dashes in the MetalLB range": _set("management.metallbAddressRange", "1-2-3"),
    "etcd replicas 6": _set("management.kamajiEtcdReplicas", 6),
    "HAMi quota in kube-system": _set("tenants.0.gpuQuotas",
                                      {"kube-system": {"limits.nvidia.com/gpumem": 1}}),
    "misleading quota key": _set("tenants.0.gpuQuotas", {"team": {"limits.nvidia.com/gpu": 1}}),
    "empty quota": _set("tenants.0.gpuQuotas", {"team": {}}),
    "built-in model redefined": _set("gpuModels", {"A100-80GB": {"memoryMiB": 1, "cores": 1, "splitCount": 1,
                                                                 "product": "NVIDIA X"}}),
    "model without NVIDIA": _set("gpuModels", {"X": {"memoryMiB": 1, "cores": 1, "splitCount": 1,
                                                     "product": "Acme"}}),
    "reference pod with 101 cores": _set("referencePod.gpucores", 101),
}


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_planted_errors_are_rejected_by_the_schema_and_the_validator(planted: str):
    raw = copy.deepcopy(dev_stack_config())
    PLANTED[planted](raw)
    assert schema_errors(raw), f"the schema accepts {planted}"
    with pytest.raises(ConfigError):
        parse_config(raw)


@pytest.mark.parametrize(("plant", "rule"), [
    (_set("tenants.1.podCidr", "10.36.128.0/17"), "overlap"),
    (_set("tenants.1.name", "tenant-a"), "duplicate-name"),
    (_set("tenants.0.gpus.model", "H100"), "gpu-model"),
    (_set("tenants.0.podCidr", "10.36.0.1/16"), "cidr-value"),
    (_set("tenants.0.workers", 0), "gpus-without-workers"),
    (_set("management.metallbAddressRange", "172.30.255.250-172.30.255.200"), "address-range"),
])
def test_what_only_the_program_checks_passes_the_schema(plant, rule):
    """The rules listed in the schema's $comment: the schema accepts, the validator refuses, and
    every problem it reports is tagged as one of them."""
    raw = copy.deepcopy(dev_stack_config())
    plant(raw)
    assert schema_errors(raw) == []
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    assert caught.value.problems == caught.value.code_only
    assert rule in config.CODE_ONLY_RULES


# --- generated configs: the dev config with wrong types, bounds, enums and keys ----------------

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False),
                     st.text(max_size=8), st.just([]), st.just({}))
# Texts each string rule takes or refuses, near its edges.
_TEXTS = ("", "x", "tenant-c", "Tenant-C", "a" * 40, "a" * 41, "tenant-c\n", "kube-system", "v1.35.0",
          "v1.36.1", "v1.29.9", "v1.37.0", "v1.035.0", "1.35.0", "10.40.0.0/16", "10.40.0.0/22",
          "10.40.0.0/23", "10.40.0.1/16", "10.40.0.0/255.255.0.0", "10.40.0.0/016", "010.40.0.0/16",
          "172.31.0.0/16", "172.31.0.0/24", "172.31.0.0/25", "fd00::/64", "5s", "300s", "301s", "0s", "1m",
          "5m", "6m", "05s", "binpack", "spread", "topology-aware", "kindest/node:v1.35.0", "kindest/node",
          "registry.local:5000/node:v1", "NVIDIA X", "Acme", "nvidia", "kamaji-hami", "-net", "A100-80GB",
          "172.30.255.200-172.30.255.210", "1-2-3", "172.30.255.210-172.30.255.200", "\u0665s")
_KEYS = st.sampled_from(["bogus", "name", "workers", "gpus", "model", "hami", "perWorker"])


def _edges(spec: config.Field) -> list[Any]:
    """Values at the edges of what a key takes: its bounds and one past them, its enum and
    reserved words, its default, a wrong type."""
    edges: list[Any] = [*spec.enum, *spec.reserved, None, [], {}]
    if spec.type == "integer":
        low = spec.minimum if spec.minimum is not None else 0
        high = spec.maximum if spec.maximum is not None else low + 1000
        edges += [low - 1, low, low + 1, high - 1, high, high + 1, float(low), str(low), True]
    elif spec.type == "boolean":
        edges += [True, False, "true", 1]
    elif spec.type == "string":
        edges += [spec.default, 1] if spec.default is not None else [1]
    return edges


def _field_values(spec: config.Field) -> st.SearchStrategy[Any]:
    texts = [st.sampled_from(_TEXTS)] if spec.type == "string" else []
    return st.one_of(st.sampled_from(_edges(spec)), *texts, _SCALARS)


def _nodes(raw: dict[str, Any]) -> list[tuple[dict[str, Any], config.Section]]:
    """The mappings of a config that a section describes."""
    found: list[tuple[dict[str, Any], config.Section]] = []
    for key, section in (("management", config.MANAGEMENT), ("referencePod", config.REFERENCE_POD)):
        if isinstance(raw.get(key), dict):
            found.append((raw[key], section))
    for spec in (raw.get("gpuModels") or {}).values() if isinstance(raw.get("gpuModels"), dict) else ():
        if isinstance(spec, dict):
            found.append((spec, config.GPU_MODEL))
    for tenant in raw.get("tenants") if isinstance(raw.get("tenants"), list) else ():
        if isinstance(tenant, dict):
            found.append((tenant, config.TENANT))
            for key, section in (("gpus", config.GPUS), ("hami", config.HAMI)):
                if isinstance(tenant.get(key), dict):
                    found.append((tenant[key], section))
            quotas = tenant.get("gpuQuotas")
            for limits in quotas.values() if isinstance(quotas, dict) else ():
                if isinstance(limits, dict):
                    found.append((limits, config.QUOTA_LIMITS))
    return found


def _base() -> dict[str, Any]:
    """The dev config with every section present, so that each can be mutated."""
    raw = copy.deepcopy(dev_stack_config())
    raw["referencePod"] = {"gpumem": 20000, "gpucores": 30, "gpu": 1}
    raw["gpuModels"] = {"A100-40GB": {"memoryMiB": 40960, "cores": 100, "splitCount": 4,
                                      "product": "NVIDIA A100-SXM4-40GB"}}
    raw["tenants"][1]["gpuQuotas"] = {"team": {"requests.nvidia.com/gpu": 1}}
    return raw


@st.composite
def mutated_configs(draw: Any) -> dict[str, Any]:
    raw = _base()
    for _ in range(draw(st.integers(1, 2))):
        node, section = draw(st.sampled_from(_nodes(raw)))
        spec = draw(st.sampled_from(section.fields))
        action = draw(st.sampled_from(["value"] * 6 + ["delete", "unknown key", "section"]))
        if action == "value":
            node[spec.key] = draw(_field_values(spec))
        elif action == "delete":
            node.pop(spec.key, None)
        elif action == "unknown key":
            node[draw(_KEYS) + "x"] = draw(_SCALARS)
        else:  # the whole section: null, empty, a wrong type, or keys of another section
            key = draw(st.sampled_from(config.ROOT.keys))
            raw[key] = draw(st.one_of(st.none(), st.just({}), st.just([]), _SCALARS,
                                      st.dictionaries(_KEYS, _SCALARS, max_size=2)))
    return raw


def disagreement(raw: dict[str, Any]) -> tuple[str, str | None]:
    """Why schema and validator disagree on `raw` beyond the rules only the program checks, if they do:
    (1) what `parse_config` accepts, the schema must accept; (2) what the schema accepts, the
    validator must accept, or refuse only by config.CODE_ONLY_RULES. Also which verdicts they gave."""
    schema_ok = not schema_errors(raw)
    try:
        parse_config(raw)
    except ConfigError as error:
        beyond = [p for p in error.problems if p not in error.code_only]
        if not schema_ok:
            return "refused by both", None
        return "refused by the program only", (
            f"the schema accepts what the validator refuses: {beyond}" if beyond else None)
    return "accepted", None if schema_ok else f"the schema refuses a valid config: {schema_errors(raw)}"


def test_the_schema_and_the_validator_agree_on_every_key_at_its_edges():
    """Each key of each section in the config, one at a time: every edge value, deleted, and an
    unknown key beside it (the same two rules as the property test below)."""
    cases = 0
    found: list[str] = []
    for index, (_, section) in enumerate(_nodes(_base())):
        for spec in section.fields:
            for value in [*_edges(spec), _DELETE]:
                raw = _base()
                node = _nodes(raw)[index][0]
                if value is _DELETE:
                    node.pop(spec.key, None)
                else:
                    node[spec.key] = copy.deepcopy(value)
                _, problem = disagreement(raw)
                found += [f"{section.name}.{spec.key} = {value!r}: {problem}"] if problem else []
                cases += 1
    assert cases > 300
    assert found == [], "\n".join(found)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=mutated_configs())
def test_the_schema_and_the_validator_agree_on_generated_configs(raw):
    """For every generated config: (1) whatever `parse_config` accepts, the schema accepts, so what
    the schema rejects, the validator rejects; and (2) whatever the schema accepts, the validator
    accepts too, unless every problem it reports comes from a rule the schema cannot express
    (config.CODE_ONLY_RULES: overlapping CIDRs, address blocks, generated names, workers per
    podCidr, ..., listed in the schema's $comment). So on a config that breaks no such rule,
    schema and validator give the same verdict."""
    verdicts, problem = disagreement(raw)
    event(verdicts)
    assert problem is None, problem
