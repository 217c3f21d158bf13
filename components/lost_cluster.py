"""Finish `pulumi destroy` when the kind management cluster is already gone.

Every `kubernetes:*` resource of the stack lives in the kind cluster: the Helm releases,
namespaces, NetworkPolicies and TenantControlPlanes directly, and everything created through a
tenant provider indirectly, because tenant control planes are pods of that cluster. Once the
cluster is lost (deleted by hand, Docker reset), `pulumi destroy` cannot delete them (a Helm
release cannot be uninstalled from an unreachable cluster, pulumi-kubernetes#2675) and stops.

This command makes Pulumi forget exactly those resources, after checking that the cluster is
really gone, so that `make down` can finish: the `command:local:Command` resources (kind
cluster, worker containers) stay in the state, because their delete scripts remove containers
and tolerate a cluster or API server that no longer answers.

    python -m components.lost_cluster --stack dev [--yes]

The original export is kept as a private backup; `pulumi stack import --file <backup>` undoes
the edit. Resource inputs and outputs are never printed (they may hold secret ciphertext).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from components.config import ConfigError
from components.gpu import PROJECT_ROOT, load_stack

# Everything of the kubernetes provider's packages lives in the lost cluster; the provider
# resources themselves are `pulumi:providers:kubernetes` and so are kept (their delete is local).
FORGET_TYPE_PREFIX = "kubernetes:"
SUPPORTED_SCHEMA_VERSIONS = (3, 4)  # 4 = 3 plus a `features` list (pulumi/pulumi apitype)

# Fields of a state resource that reference other resources by URN.
DEPENDENCIES = "dependencies"
PROPERTY_DEPENDENCIES = "propertyDependencies"
DELETED_WITH = "deletedWith"
# Opaque provider data: never printed, never scanned (may hold secret ciphertext).
OPAQUE_FIELDS = frozenset({"inputs", "outputs"})
URN_SEPARATOR = "::"  # `provider` is "<provider urn>::<provider id>"

KIND_NODE_SUFFIX = "-control-plane"
TOOL_TIMEOUT_SECONDS = 60
PULUMI_TIMEOUT_SECONDS = 300  # a state export/import of a large stack takes longer than docker info
STDERR_TAIL_LINES = 5
BACKUP_DIR = PROJECT_ROOT / ".pulumi-state-backups"
CONFIRM_WORD = "yes"
NEXT_STEP = "make down"
STACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*){0,2}")

EXIT_DONE, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2


class Refused(Exception):
    """A one-line reason not to touch the state (exit 1)."""


# --- pure functions: selection and surgery -------------------------------------------------------


def resource_name(urn: str) -> str:
    """The logical name: what follows the last `::` of a URN."""
    return urn.rsplit(URN_SEPARATOR, 1)[-1]


def deployment_of(export: dict[str, Any]) -> dict[str, Any]:
    """The `deployment` of a `pulumi stack export` document, checked for a schema this edit knows."""
    version = export.get("version")
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise Refused(f"state schema version {version!r} is not one this command edits "
                      f"({', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))})")
    deployment = export.get("deployment")
    if not isinstance(deployment, dict) or not isinstance(deployment.get("resources", []), list):
        raise Refused("the export has no deployment with a resource list")
    return deployment


def state_resources(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    """The resources of `resources`, then those of `pending_operations` (an interrupted create
    of a kubernetes resource is in the cluster too, or nowhere)."""
    pending = [op.get("resource", {}) for op in deployment.get("pending_operations") or []]
    return list(deployment.get("resources") or []) + pending


def select_forgotten(resources: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The resources that lived in the lost cluster, in state order.

    Selected by type alone: every `kubernetes:` resource was reached through a provider pointing
    at the kind cluster or at a tenant control plane running inside it. Providers, components,
    commands and the stack stay, so `pulumi destroy` still runs their (local) deletes.
    """
    return [res for res in resources if str(res.get("type", "")).startswith(FORGET_TYPE_PREFIX)]


def _without_references(resource: dict[str, Any], forgotten: frozenset[str]) -> dict[str, Any]:
    """A copy of a kept resource with every dependency edge to a forgotten URN removed."""
    kept = copy.deepcopy(resource)
    if isinstance(kept.get(DEPENDENCIES), list):
        kept[DEPENDENCIES] = [urn for urn in kept[DEPENDENCIES] if urn not in forgotten]
    if isinstance(kept.get(PROPERTY_DEPENDENCIES), dict):
        edited: dict[str, Any] = {}
        for prop, urns in kept[PROPERTY_DEPENDENCIES].items():
            remaining = [urn for urn in urns if urn not in forgotten]
            # An empty list that was empty before stays; one emptied by the edit goes.
            if remaining or not urns:
                edited[prop] = remaining
        kept[PROPERTY_DEPENDENCIES] = edited
    if kept.get(DELETED_WITH) in forgotten:
        del kept[DELETED_WITH]
    return kept


def forget(export: dict[str, Any], urns: Iterable[str]) -> dict[str, Any]:
    """The export without the given resources and without any dependency edge to them.

    Removes them from `resources` and `pending_operations`, and drops their URNs from the kept
    resources' `dependencies`, `propertyDependencies` (a list emptied by this goes) and
    `deletedWith` (the key goes). Everything else, key order included, is unchanged; the input
    is not modified.
    """
    forgotten = frozenset(urns)
    edited = copy.deepcopy(export)
    deployment = deployment_of(edited)
    if "resources" in deployment:
        deployment["resources"] = [_without_references(res, forgotten) for res in deployment["resources"]
                                   if res.get("urn") not in forgotten]
    if deployment.get("pending_operations"):
        operations = []
        for operation in deployment["pending_operations"]:
            resource = operation.get("resource", {})
            if resource.get("urn") in forgotten:
                continue
            operations.append({**operation, "resource": _without_references(resource, forgotten)})
        deployment["pending_operations"] = operations
    return edited


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _refers_to(value: str, forgotten: frozenset[str]) -> str | None:
    if value in forgotten:
        return value
    head = value.rsplit(URN_SEPARATOR, 1)[0]  # a provider reference ends in ::<id>
    return head if head in forgotten else None


def dangling_references(export: dict[str, Any], urns: Iterable[str]) -> list[str]:
    """`<resource> <field> -> <forgotten urn>` for every reference the edit could not remove.

    `parent` and `provider` edges (or fields newer than this command) to a forgotten resource
    cannot be dropped without changing the kept resource's identity; `pulumi stack import`
    would reject them, so they are reported before anything is imported. Inputs and outputs
    are opaque provider data and are not read.
    """
    forgotten = frozenset(urns)
    deployment = deployment_of(export)
    findings = []
    for resource in state_resources(deployment):
        for field, value in resource.items():
            if field in OPAQUE_FIELDS or field == "urn":
                continue
            for text in _strings(value):
                target = _refers_to(text, forgotten)
                if target:
                    findings.append(f"{resource.get('urn')} {field} -> {target}")
    return findings


def describe(resources: Sequence[dict[str, Any]]) -> list[str]:
    """One line per resource: type and name, nothing of its inputs or outputs."""
    width = max((len(res.get("type", "")) for res in resources), default=0)
    return [f"  {res.get('type', ''):<{width}}  {resource_name(res.get('urn', ''))}"
            + ("  (read, not owned)" if res.get("external") else "") for res in resources]


def stderr_tail(text: str | bytes | None, lines: int = STDERR_TAIL_LINES) -> str:
    """The last non-empty lines of a tool's stderr, joined with ` | ` for a one-line message."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    tail = [line.strip() for line in (text or "").splitlines() if line.strip()][-lines:]
    return " | ".join(tail) if tail else "(no error output)"


# --- side effects ----------------------------------------------------------------------------------


def run(argv: list[str], timeout: float = TOOL_TIMEOUT_SECONDS) -> subprocess.CompletedProcess[str]:
    """Run a tool without a shell; a missing tool or a hang is a refusal, an exit code is not."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError as error:
        raise Refused(f"`{argv[0]}` is not installed or not on PATH") from error
    except subprocess.TimeoutExpired as error:
        raise Refused(f"`{' '.join(argv)}` did not finish within {timeout:g} s") from error


def confirm_cluster_gone(name: str) -> None:
    """Refuse unless Docker answers, kind lists no cluster `name` and its node container is gone.

    Each check rules out a different false "lost": a Docker daemon that is down hides a cluster
    that still exists; kind's list names clusters by their node labels; a node container that
    survived without labels would still hold the control planes.
    """
    info = run(["docker", "info"])
    if info.returncode != 0:
        raise Refused(f"cannot confirm the cluster is gone: Docker is unreachable "
                      f"(`docker info`: {stderr_tail(info.stderr)})")
    clusters = run(["kind", "get", "clusters"])
    if clusters.returncode != 0:
        raise Refused(f"cannot confirm the cluster is gone: `kind get clusters` failed: "
                      f"{stderr_tail(clusters.stderr)}")
    if name in {line.strip() for line in clusters.stdout.splitlines()}:
        raise Refused(f"kind cluster {name!r} exists: use `{NEXT_STEP}` to destroy the stack normally")
    node = f"{name}{KIND_NODE_SUFFIX}"
    if run(["docker", "inspect", "--type", "container", node]).returncode == 0:
        raise Refused(f"container {node!r} still exists: the cluster is not lost; "
                      f"start it or remove it, then use `{NEXT_STEP}`")


def export_state(stack: str) -> tuple[str, dict[str, Any]]:
    """The raw export text (for the backup, byte for byte) and its parsed form."""
    result = run(["pulumi", "stack", "export", "--stack", stack], timeout=PULUMI_TIMEOUT_SECONDS)
    if result.returncode != 0:
        raise Refused(f"`pulumi stack export --stack {stack}` failed (exit {result.returncode}): "
                      f"{stderr_tail(result.stderr)}")
    try:
        export = json.loads(result.stdout)
    except json.JSONDecodeError as error:
        # The position only: the text itself is state and is not printed.
        raise Refused(f"`pulumi stack export` printed no valid JSON (line {error.lineno})") from error
    if not isinstance(export, dict):
        raise Refused("`pulumi stack export` printed JSON that is not a deployment")
    return result.stdout, export


def write_private(path: Path, text: str) -> None:
    """Create `path` readable by its owner only; never overwrite (the state holds ciphertext)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def write_backup(folder: Path, stack: str, text: str, now: datetime | None = None) -> Path:
    """Save the untouched export as `<folder>/<stack>-<UTC time>.json` (mode 0600)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    base = f"{stack.replace('/', '_')}-{stamp}"
    for attempt in range(100):
        path = folder / (f"{base}.json" if attempt == 0 else f"{base}-{attempt}.json")
        try:
            write_private(path, text)
        except FileExistsError:
            continue
        return path
    raise Refused(f"could not create a new backup file in {folder}")


def import_state(stack: str, export: dict[str, Any]) -> None:
    """`pulumi stack import` the edited export from a private temporary file, removed afterwards."""
    fd, name = tempfile.mkstemp(prefix="lost-cluster-", suffix=".json")  # mode 0600
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(export, handle, indent=4)
        result = run(["pulumi", "stack", "import", "--stack", stack, "--file", name],
                     timeout=PULUMI_TIMEOUT_SECONDS)
    finally:
        Path(name).unlink(missing_ok=True)
    if result.returncode != 0:
        raise Refused(f"`pulumi stack import --stack {stack}` failed (exit {result.returncode}), "
                      f"the state is unchanged: {stderr_tail(result.stderr)}")


def confirmed(count: int, stdin: TextIO, stdout: TextIO) -> bool:
    """Ask to type the confirmation word; a stdin that is not a terminal cannot confirm."""
    if not stdin.isatty():
        raise Refused("stdin is not a terminal: pass --yes to confirm without a prompt")
    print(f"Forget these {count} resource(s) from the state? Type {CONFIRM_WORD} to continue: ",
          end="", file=stdout, flush=True)
    return stdin.readline().strip() == CONFIRM_WORD


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m components.lost_cluster",
        description="Forget the stack's kubernetes resources when its kind cluster is already gone, "
                    f"so that `{NEXT_STEP}` can finish.")
    parser.add_argument("--stack", required=True, help="stack whose Pulumi.<stack>.yaml and state to use")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    parser.add_argument("--backup-dir", type=Path, default=BACKUP_DIR,
                        help=f"where the original export is saved (default: {BACKUP_DIR})")
    args = parser.parse_args(argv)
    if not STACK_NAME.fullmatch(args.stack):
        parser.error(f"--stack {args.stack!r} is not a stack name")
    return args


def main(argv: Sequence[str] | None = None, stdin: TextIO | None = None) -> int:
    args = parse_args(argv)
    stdin = stdin or sys.stdin
    try:
        cluster = load_stack(args.stack.rsplit("/", 1)[-1]).management.name
    except (ValueError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        confirm_cluster_gone(cluster)
        raw, export = export_state(args.stack)
        resources = state_resources(deployment_of(export))
        forgotten = select_forgotten(resources)
        if not forgotten:
            print(f"Stack {args.stack} holds no kubernetes resources; nothing to forget. "
                  f"Next: {NEXT_STEP} STACK={args.stack}")
            return EXIT_DONE
        urns = {res["urn"] for res in forgotten}
        edited = forget(export, urns)
        dangling = dangling_references(edited, urns)
        if dangling:
            raise Refused(f"{len(dangling)} kept reference(s) to forgotten resources cannot be removed "
                          f"safely, first: {dangling[0]}")
        print(f"kind cluster {cluster!r} is gone. Resources of stack {args.stack} to forget "
              f"(they lived in it):")
        print("\n".join(describe(forgotten)))
        print(f"{len(forgotten)} to forget; {len(resources) - len(forgotten)} kept "
              "(stack, components, providers, commands).")
        if not args.yes and not confirmed(len(forgotten), stdin, sys.stdout):
            raise Refused("not confirmed, the state is unchanged")
        backup = write_backup(args.backup_dir, args.stack, raw)
        print(f"Backup of the original state: {backup}")
        import_state(args.stack, edited)
    except Refused as reason:
        print(f"refused: {reason}", file=sys.stderr)
        return EXIT_REFUSED
    except OSError as error:
        print(f"failed: {error}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"Forgot {len(forgotten)} resource(s). To undo: pulumi stack import --stack {args.stack} "
          f"--file {backup}")
    print(f"Next: {NEXT_STEP} STACK={args.stack}")
    return EXIT_DONE


if __name__ == "__main__":
    sys.exit(main())
