"""The configuration reference (docs/reference/configuration.md), generated from the config's key tables.

`python -m kamaji_hami_platform.config.reference > docs/reference/configuration.md` writes the
published copy (tests/project/test_docs.py fails while it differs). Every key of `config.ROOT` and of each
`Section` it reaches is listed with its path, type, default, bounds, enum and text rules, as the
validator reads them (config/fields.py), then the rules only the program checks
(`config.CODE_ONLY_RULES`). The example error is the validator's own message for a bad config.
Hand-written context (how to set values, examples) is kept here as constants.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kamaji_hami_platform import config
from kamaji_hami_platform.config import ConfigError, Field, Section, json_schema, parse_config

REFERENCE_PATH = "docs/reference/configuration.md"
REGENERATE = f"python -m kamaji_hami_platform.config.reference > {REFERENCE_PATH}"

# Sections reached through a map: the placeholder of the map's own keys.
_MAPS = {"gpuModels": ("<model>", config.GPU_MODEL.name),
         "gpuQuotas": ("<namespace>", config.QUOTA_LIMITS.name)}
_SECTIONS = {section.name: section for section in config.SECTIONS}

INTRO = f"""\
All stack configuration lives under the project namespace `{config.PROJECT}:` in
`Pulumi.<stack>.yaml`; the package `kamaji_hami_platform/config/` is the only code that reads it.
Everything is validated before any resource is registered, and all problems are reported at once,
each with its path, as the whole error of `pulumi preview` / `pulumi up` (no traceback). For
example, a tenant at a Kubernetes version Kamaji does not accept and a second tenant whose pod
network overlaps the first one's:
"""

SETTING_VALUES = """\
Set a structured value with a path, a secret with `--secret`:

```bash
pulumi config set --path 'tenants[0].workers' 2
pulumi config set --path 'tenants[0].hami.gpuSchedulerPolicy' binpack
pulumi config set --secret managementKubeconfig < ~/.kube/mgmt.kubeconfig        # mode existing
pulumi config set --secret --path 'sshPrivateKeys.gpu-hosts' < ~/.ssh/gpu-hosts  # worker hosts
```

Bare `pulumi` and `make` must use one backend and one passphrase: export `PULUMI_BACKEND_URL`
(`make` uses `file://$PWD/.pulumi-state` unless you set it) and `PULUMI_CONFIG_PASSPHRASE` for
both. A tenant, as in the dev stack (`Pulumi.dev.yaml`):

```yaml
config:
  kamaji-hami-platform:tenants:
    - name: tenant-a
      kubernetesVersion: v1.35.0
      controlPlaneReplicas: 1
      podCidr: 10.36.0.0/16
      serviceCidr: 10.37.0.0/16
      workers: 1
      gpus: {model: A100-80GB, perWorker: 1}
      hami: {gpuSchedulerPolicy: binpack}
      gpuWorkloads:
        - {name: share, replicas: 3, gpumem: 20000, gpucores: 30}
```

**Create-only** keys are kept by a running platform: a change is refused by `make preview`
(and `up`) before anything is touched, naming the setting; see
[changing a running platform](../operations/day-2.md) for each one and the way out.
"""

# Hand-written notes per key path, shown under the section's own description.
NOTES = {
    "management": "Mode `kind` (the default) builds everything on this machine; mode `existing` "
                  "puts Kamaji on a cluster you run, whose tenants' workers are hosts joined over SSH "
                  "(see [beyond one machine](../beyond-one-machine.md), which also tabulates the keys "
                  "only one mode takes: mixing them is refused).",
    "tenants[].gpuQuotas.<namespace>": (
        "The namespace (a DNS-1035 label of at most "
        f"{config.QUOTA_NAMESPACE.max_length} characters) is created in the tenant cluster unless built "
        "in, with a ResourceQuota `hami-gpu-quota` in it. A quota must set at least one key. "
        "`limits.nvidia.com/gpu` looks right but nobody enforces it: it is refused, naming "
        "`requests.nvidia.com/gpu`. HAMi's keys "
        f"(`{config.HAMI_QUOTA_PREFIX}...`) are refused in "
        + ", ".join(f"`{ns}`" for ns in config.WEBHOOK_EXCLUDED_NAMESPACES)
        + ", whose pods HAMi's webhook skips (`requests.nvidia.com/gpu` is accepted there). Who enforces "
          "each key: [GPU capacity](../gpu-capacity.md).\n\n"
          "```yaml\ngpuQuotas:\n  ml-team: {requests.nvidia.com/gpu: 2, limits.nvidia.com/gpumem: 40000, "
          "limits.nvidia.com/gpucores: 60}\n```"),
    "tenants[].gpuWorkloads[]": (
        "Refused, with the workload's path and all at once: a workload without exactly one of `gpumem` "
        "and `gpumemPercentage`, a duplicate name, a workload in a namespace HAMi's webhook skips, and a "
        "request no card of the tenant's model could ever hold (more memory or compute than a card has, "
        "more cards per pod than a worker has, a `type` that is not part of the model's product string, "
        "or a tenant without `gpus`). What a preview does with them: "
        "[GPU capacity as code](../gpu-capacity.md)."),
    "tenants[].hosts[]": "Mode `existing` only. How a host joins and leaves, and what it must have: "
                         "[beyond one machine](../beyond-one-machine.md).",
    "gpuModels.<model>": "Extra models beside the built-in ones (below), which cannot be redefined.",
}


@dataclass(frozen=True)
class _Node:
    """A section as it appears in a stack file: its key path (`tenants[].gpus`) and its section."""

    path: str
    section: Section


def _child_path(parent: str, spec: Field) -> str:
    path = f"{parent}.{spec.key}" if parent else spec.key
    if spec.key in _MAPS:
        return f"{path}.{_MAPS[spec.key][0]}"
    return f"{path}[]" if spec.type == "array" else path


def _child_section(spec: Field) -> Section | None:
    if spec.ref is None:
        return None
    name = _MAPS[spec.key][1] if spec.key in _MAPS else spec.ref
    return _SECTIONS.get(name)


def walk(section: Section = config.ROOT, path: str = "") -> Iterator[_Node]:
    """Every section of the config, depth first, with the key path it is found at."""
    yield _Node(path, section)
    for spec in section.fields:
        child = _child_section(spec)
        if child is not None:
            yield from walk(child, _child_path(path, spec))


def key_paths() -> list[str]:
    """The key path of every key the config has (`tenants[].hami.nodeLockTimeout`)."""
    return [f"{node.path}.{spec.key}" if node.path else spec.key
            for node in walk() for spec in node.section.fields]


def _code(value: Any) -> str:
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _type(spec: Field, path: str) -> str:
    if spec.ref == "secret":
        return "secret string"
    if spec.key == config.SSH_KEYS_KEY:
        return "mapping of secret strings"
    if spec.key in _MAPS:
        return f"mapping (`{_child_path(path, spec)}`)"
    if spec.type == "array":
        return f"list (`{_child_path(path, spec)}`)" if spec.ref else "list of strings"
    if spec.ref is not None:
        return f"mapping (`{_child_path(path, spec)}`)"
    return spec.type


def _default(spec: Field) -> str:
    if spec.required:
        return "**required**"
    return _code(spec.default) if spec.default is not None else "–"


def _message(check: config.Check) -> str:
    return check.message.replace("{value!r} ", "").replace("{value!r}", "the value")


def _rules(spec: Field) -> str:
    rules = []
    if spec.minimum is not None and spec.maximum is not None:
        rules.append(f"{spec.minimum}..{spec.maximum}")
    elif spec.minimum is not None:
        rules.append(f"≥ {spec.minimum}")
    if spec.enum:
        rules.append(" or ".join(_code(v) for v in spec.enum))
    if spec.cidr_prefix is not None:
        rules.append(f"IPv4 CIDR, /{spec.cidr_prefix[0]} to /{spec.cidr_prefix[1]}")
    rules.extend(_message(check) for check in spec.checks)
    if spec.reserved:
        rules.append("not " + ", ".join(_code(v) for v in spec.reserved))
    if spec.in_code:
        rules.append("more checks with other keys (below)")
    return "; ".join(rules) or "–"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def section_table(node: _Node) -> str:
    rows = ["| key | type | default | accepted (the validator's words) | meaning |", "|---|---|---|---|---|"]
    for spec in node.section.fields:
        path = f"{node.path}.{spec.key}" if node.path else spec.key
        rows.append("| " + " | ".join(_cell(c) for c in (
            f"`{path}`", _type(spec, node.path), _default(spec), _rules(spec), spec.description)) + " |")
    return "\n".join(rows)


def example_error() -> str:
    """The validator's own message for a config with two faults."""
    raw = {"tenants": [
        {"name": "tenant-a", "kubernetesVersion": "v1.29.9", "podCidr": "10.36.0.0/16",
         "serviceCidr": "10.37.0.0/16"},
        {"name": "tenant-b", "kubernetesVersion": "v1.35.0", "podCidr": "10.36.128.0/17",
         "serviceCidr": "10.39.0.0/16"},
    ]}
    try:
        parse_config(raw)
    except ConfigError as error:
        return f"error: {error}"
    raise AssertionError("the example config must be refused")


def builtin_models() -> str:
    rows = ["| model | memory MiB | cores % | split count | product |", "|---|---|---|---|---|"]
    rows += [f"| `{m.name}` | {m.memory_mib} | {m.cores} | {m.split_count} | `{m.product}` |"
             for m in config.BUILTIN_GPU_MODELS.values()]
    return "\n".join(rows)


def code_only_rules() -> str:
    rows = ["| rule | what the program checks |", "|---|---|"]
    rows += [f"| `{key}` | {_cell(text)} |" for key, text in config.CODE_ONLY_RULES.items()]
    return "\n".join(rows)


def schema_and_stacks() -> str:
    return f"""\
`{json_schema.SCHEMA_PATH}` is a JSON Schema (draft 2020-12) of a `Pulumi.<stack>.yaml`,
generated from the same key tables (`kamaji_hami_platform/config/fields.py`) that the validator
reads and that this page is generated from (`make test` fails when either is stale; regenerate
with `{json_schema.REGENERATE}` and `{REGENERATE}`). It checks every key's type, bounds, enum
and text rule; the rules above, across keys, only `pulumi preview` checks, as the schema's
`$comment` lists. An editor with the YAML language server validates a stack file that starts with
`# yaml-language-server: $schema={json_schema.SCHEMA_PATH}` (as `Pulumi.ci.yaml` does).

`Pulumi.yaml` declares the {len(config.ROOT.fields)} top-level keys with a type and description (its
comment cites the Pulumi engine's rules): the CLI checks that each stack's value is a mapping
(`tenants`: a list of mappings), and the optional keys default to `{{}}` (`""` for
`{config.MANAGEMENT_KUBECONFIG_KEY}`; a declared key without a default would be required). The two
secret keys are not declared `secret: true`: the engine would then need a plain default; the
program itself refuses a plain value.

One stack per environment: `Pulumi.dev.yaml` for a laptop (two tenants, one worker and one mock
A100 each), `Pulumi.ci.yaml` a small CI stack (one tenant, one worker, one card, one kamaji-etcd
replica, its own kind cluster, Docker network `kamaji-hami-ci` and subnets `172.31.0.0/16` and
`172.26.0.0/16` (its tenants' own networks), so it runs beside dev and the live suite's lifecycle
run; `make preview STACK=ci`),
and `examples/production/Pulumi.prod.yaml` an existing cluster with worker hosts and real GPUs
(see [beyond one machine](../beyond-one-machine.md))."""


def render() -> str:
    parts = [
        f"<!-- Generated from kamaji_hami_platform/config/fields.py by `{REGENERATE}`; do not edit. -->",
        "",
        "# Configuration reference",
        "",
        INTRO,
        "```",
        example_error(),
        "```",
        "",
        SETTING_VALUES,
    ]
    for node in walk():
        title = "Top-level keys" if not node.path else f"`{node.path}`"
        parts += [f"## {title}", "", node.section.description]
        if node.path in NOTES:
            parts += ["", NOTES[node.path]]
        parts += ["", section_table(node), ""]
        if node.path == "gpuModels.<model>":
            parts += ["Built-in models:", "", builtin_models(), ""]
    parts += [
        "## Rules only the program checks",
        "",
        "Rules that compare keys, or read a value as more than text; `pulumi preview` reports them "
        "with the other problems (the JSON Schema cannot express them):",
        "",
        code_only_rules(),
        "",
        "## The JSON Schema, Pulumi.yaml's declarations, the stacks",
        "",
        schema_and_stacks(),
    ]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(render(), end="")
