"""The real Pulumi engine, for the engine tier: the CLI v3.276.0, the Python and Node.js language
hosts, pulumi-command 1.2.1 and pulumi-kubernetes, built by toolchain/pulumi/build.sh into the
toolchain cache, run against a copy of the project with a home, a file backend and a passphrase of
the tier's own, so that nothing of the user's (~/.pulumi, the checkout's stack files, its
`.pulumi-state`) is read or written.

The Kubernetes provider is the v4.25.0 code (the only version of its module the Go proxy serves),
installed as plugin 4.34.2, the version the program's SDK asks for: the program runs exactly as
shipped, and the engine says so in every run ("expected to have version >=4.34.2, but has
4.25.0"), a warning the tests expect and nothing else (docs/development/engine-tier.md).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests import tiers

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "toolchain" / "pulumi" / "build.sh"
# A throwaway passphrase of the tier's throwaway stacks.
PASSPHRASE = "engine-tier-passphrase"
# What the CLI and language hosts are called; the providers are plugins, never found on PATH.
ON_PATH = ("pulumi", "pulumi-language-python", "pulumi-language-python-exec", "pulumi-language-nodejs")
COMMAND_PLUGIN = ("command", "1.2.1", "pulumi-resource-command")
# The plugin version the program's pulumi-kubernetes SDK asks for (requirements.txt).
KUBERNETES_PLUGIN = ("kubernetes", "4.34.2", "pulumi-resource-kubernetes")
KUBERNETES_CODE_VERSION = "4.25.0"
VERSION_WARNING = (f"resource plugin kubernetes is expected to have version >={KUBERNETES_PLUGIN[1]}, "
                   f"but has {KUBERNETES_CODE_VERSION}")
# What a project copy leaves out: caches, state and virtualenvs (the copy links the checkout's).
NOT_COPIED = (".git", ".venv", ".venv-test", ".pulumi-state", ".pulumi-state-backups", "policy/venv",
              "provider/venv", "examples/two-tenants/venv", ".charts", ".kind", "__pycache__",
              ".pytest_cache", ".hypothesis", ".ruff_cache", "benchmarks/results", "build")
LINKED_VENVS = (".venv", "policy/venv")
BUILD_TIMEOUT = 3600
DEFAULT_TIMEOUT = 600
# `--json` streams the engine's events, policy findings included (pulumi preview --help).
STREAMING_JSON = "PULUMI_ENABLE_STREAMING_JSON_PREVIEW"
# The severity of what a program prints on stderr.
PROGRAM_STDERR = "info#err"
INSTALL_TIMEOUT = 900


def toolchain() -> Path:
    """The folder of the built engine (built when missing: minutes on 2 cores, cached after)."""
    result = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"the engine's build failed:\n{result.stderr[-3000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


def toolchain_or_skip() -> Path:
    try:
        return toolchain()
    except (RuntimeError, OSError) as error:
        tiers.unavailable("engine", str(error))


def copy_project(into: Path) -> Path:
    """The project's files (not its caches, state or virtualenvs) copied into `into`, with the
    checkout's program and policy virtualenvs linked (`make venv`, `make policy/venv/.installed`)."""
    ignored = {ROOT / name for name in NOT_COPIED}

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {name for name in names if Path(folder, name) in ignored or name in NOT_COPIED}

    shutil.copytree(ROOT, into, ignore=ignore, symlinks=True)
    for venv in LINKED_VENVS:
        if not (ROOT / venv / "bin" / "python").exists():
            tiers.unavailable("engine", f"{venv} is missing: make venv policy/venv/.installed "
                                        "(make engine does)")
        (into / venv).symlink_to(ROOT / venv)
    return into


@dataclass
class Preview:
    """A `pulumi preview --json`'s engine events, streamed (PULUMI_ENABLE_STREAMING_JSON_PREVIEW):
    the steps it planned, what it said, and what the policy pack found and passed. (The summary
    `--json` gives omits policy violations; the events carry them.)"""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    def _of(self, kind: str) -> list[dict[str, Any]]:
        return [event[kind] for event in self.events if kind in event]

    @property
    def steps(self) -> list[dict[str, Any]]:
        """Each planned step's metadata (`op`, `urn`, `type`, `old`, `new`, `detailedDiff`...)."""
        return [event["metadata"] for event in self._of("resourcePreEvent")]

    def ops(self) -> dict[str, str]:
        """Each step's URN and operation (`create`, `same`, `update`, `replace`, `delete`, `read`...)."""
        return {step["urn"]: step["op"] for step in self.steps}

    def by_name(self) -> dict[str, list[str]]:
        """The operations of each resource name (a replacement is several steps of one URN)."""
        found: dict[str, list[str]] = {}
        for step in self.steps:
            found.setdefault(step["urn"].rsplit("::", 1)[-1], []).append(step["op"])
        return found

    def diagnostics(self, severity: str | None = None) -> list[str]:
        return [entry["message"].strip() for entry in self._of("diagnosticEvent")
                if entry.get("severity") != "debug"
                and (severity is None or entry.get("severity") == severity)]

    def unexpected_warnings(self) -> list[str]:
        """Warnings but the provider version notice the tier's pairing always gives."""
        return [message for message in self.diagnostics("warning") if VERSION_WARNING not in message]

    def violations(self) -> list[dict[str, Any]]:
        """The policy pack's findings: `policyName`, `enforcementLevel`, `resourceUrn`, `message`."""
        return self._of("policyEvent")

    def policies_passed(self) -> set[str]:
        """Every policy that judged a resource or the stack and found nothing."""
        passed: set[str] = set()
        for summary in self._of("policyAnalyzeSummaryEvent") + self._of("policyAnalyzeStackSummaryEvent"):
            passed.update(summary.get("passed") or [])
        return passed

    def text(self) -> str:
        """Everything the run said (errors, warnings, violations), for an assertion's message."""
        found = [f"[{v['enforcementLevel']}] {v['policyName']}: {v['message']}" for v in self.violations()]
        # The Python host's stderr as the engine stops a failed program: its threads' tracebacks,
        # noise once an error says why.
        noise = {PROGRAM_STDERR} if self.diagnostics("error") else set()
        said = [entry["message"].strip() for entry in self._of("diagnosticEvent")
                if entry.get("severity") not in {"debug", *noise}]
        return "\n".join([*said, *found, self.stderr[-4000:]])


@dataclass
class Engine:
    """One tier run's engine: its binaries, its PULUMI_HOME (plugins installed there), a file
    backend, and the project copy that programs run from."""

    bin_dir: Path
    work: Path
    # What only the Kubernetes provider gets (the Helm repositories' proxy): the program must not see
    # it, since a proxy in up's environment is something the program acts on (management/
    # docker_host.py: workers get it, and are replaced when it changes).
    provider_env: dict[str, str] = field(default_factory=dict)
    backend_folder: str = "state"

    @property
    def home(self) -> Path:
        return self.work / "pulumi-home"

    @property
    def backend(self) -> Path:
        return self.work / self.backend_folder

    @property
    def tmp(self) -> Path:
        """The engine's TMPDIR: what pulumi-kubernetes leaves there (each provider's kubeconfig) goes
        with the tier's folder, as `make` removes it with tools/private_tmp.py."""
        return self.work / "tmp"

    def new_backend(self) -> Path:
        """A file backend without stacks from now on (the one before kept on disk): the tests name
        their stacks as users do (dev, ci, prod, lab), so a stack one test made would refuse the
        next one's `pulumi stack init`."""
        self.backend_folder = f"state-{len(list(self.work.glob('state*')))}"
        self.backend.mkdir()
        return self.backend

    @property
    def project(self) -> Path:
        """The session's project copy (fresh stacks previewed from the shipped stack files)."""
        return self.work / "project"

    def project_copy(self, name: str) -> Path:
        """A project copy of its own (a test that writes stack files or charts into it)."""
        copies = len(list(self.work.glob("project-*")))
        return copy_project(self.work / f"project-{copies}-{name}")

    def path_dir(self) -> Path:
        """Only the CLI and the language hosts go on PATH: providers come from PULUMI_HOME."""
        folder = self.work / "path"
        if not folder.exists():
            folder.mkdir()
            for name in ON_PATH:
                (folder / name).symlink_to(self.bin_dir / name)
        return folder

    def env(self) -> dict[str, str]:
        """The engine's environment: the caller's, without its Pulumi settings, with the tier's."""
        self.tmp.mkdir(parents=True, exist_ok=True)  # an engine of its own (work/<name>) too
        environment = {key: value for key, value in os.environ.items()
                       if not key.startswith("PULUMI_") and key not in ("KUBECONFIG",)}
        environment.update({
            "PATH": f"{self.path_dir()}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.backend}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            # Tenant API servers are gone in every preview here: bound each request
            # (pulumi-kubernetes provider.go PULUMI_K8S_CLIENT_TIMEOUT), as `make down` does.
            "PULUMI_K8S_CLIENT_TIMEOUT": "10",
            "NO_COLOR": "1",
            "TMPDIR": str(self.tmp),
        })
        return environment

    def pulumi(self, *args: str, cwd: Path | None = None, input: str | None = None,
               timeout: int = DEFAULT_TIMEOUT, check: bool = True,
               streaming: bool = False) -> subprocess.CompletedProcess[str]:
        environment = self.env()
        if streaming:
            environment[STREAMING_JSON] = "true"
        result = subprocess.run(["pulumi", *args, "--non-interactive"], cwd=cwd or self.project, input=input,
                                env=environment, capture_output=True, text=True, timeout=timeout,
                                check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"pulumi {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
        return result

    def install_plugins(self) -> None:
        """The providers as plugins of the tier's home, the Kubernetes provider behind a wrapper
        that gives it `provider_env` (and nothing else sees)."""
        for name, version, binary in (COMMAND_PLUGIN, KUBERNETES_PLUGIN):
            path = self.bin_dir / binary
            if binary == KUBERNETES_PLUGIN[2] and self.provider_env:
                path = self.work / binary
                exports = "".join(f"export {key}={shlex.quote(value)}\n"
                                  for key, value in self.provider_env.items())
                real = shlex.quote(str(self.bin_dir / binary))
                path.write_text(f'#!/bin/sh\n{exports}exec {real} "$@"\n')
                path.chmod(0o755)
            self.pulumi("plugin", "install", "resource", name, version, "--file", str(path))

    def new_stack(self, name: str, config: dict[str, Any] | None = None, cwd: Path | None = None,
                  secrets: dict[str, str] | None = None) -> str:
        """A stack on the tier's backend; `config` (a stack file's `config:` mapping) written as its
        stack file, `secrets` (config path: value) set with `pulumi config set --secret --path`,
        the value on stdin as the docs tell users to."""
        folder = cwd or self.project
        self.pulumi("stack", "init", name, cwd=folder)
        if config is not None:
            stack_file = folder / f"Pulumi.{name}.yaml"
            document = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else {}
            document["config"] = config
            stack_file.write_text(yaml.safe_dump(document, sort_keys=False))
        for path, value in (secrets or {}).items():
            self.pulumi("config", "set", "--secret", "--path", path, "--stack", name, cwd=folder, input=value)
        return name

    def install(self, folder: Path) -> None:
        """`pulumi install` in a program's folder: its virtualenv from its requirements.txt, as a
        user makes it before a first preview (PyPI, the one registry it needs)."""
        self.pulumi("install", cwd=folder, timeout=INSTALL_TIMEOUT)

    def export(self, stack: str, cwd: Path | None = None) -> dict[str, Any]:
        return json.loads(self.pulumi("stack", "export", "--stack", stack, cwd=cwd).stdout)

    def import_state(self, stack: str, document: dict[str, Any], cwd: Path | None = None) -> None:
        """`pulumi stack import`: plaintext secrets in `document` are encrypted with the stack's key."""
        path = self.work / f"import-{stack}.json"
        path.write_text(json.dumps(document))
        try:
            self.pulumi("stack", "import", "--stack", stack, "--file", str(path), cwd=cwd)
        finally:
            path.unlink()

    def remove_stack(self, stack: str, cwd: Path | None = None) -> None:
        """The stack and its state gone from the tier's backend (`--force`: resources and all)."""
        self.pulumi("stack", "rm", "--yes", "--force", "--stack", stack, cwd=cwd, check=False)

    def up(self, stack: str, *args: str, cwd: Path | None = None,
           timeout: int = DEFAULT_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """`pulumi up --yes` with the project's policy pack, as `make up` runs it."""
        return self.pulumi("up", "--yes", "--stack", stack, *self.policy_args(stack, cwd), *args, cwd=cwd,
                           timeout=timeout, check=False)

    def policy_args(self, stack: str, cwd: Path | None) -> list[str]:
        """`--policy-pack` and the stack's policy config, as `make preview` and `make up` pass them."""
        folder = cwd or self.project
        root = next(parent for parent in (folder, *folder.parents)
                    if (parent / "policy" / "PulumiPolicy.yaml").exists())
        arguments = ["--policy-pack", str(root / "policy")]
        config = root / "policy" / "config" / f"{stack}.json"
        if config.exists():
            arguments += ["--policy-pack-config", str(config)]
        return arguments

    def preview(self, stack: str, *args: str, cwd: Path | None = None, policy: bool = True,
                timeout: int = DEFAULT_TIMEOUT) -> Preview:
        """`pulumi preview --json`, with the project's policy pack (and the stack's policy config,
        as `make preview` passes it) unless `policy` is false."""
        policy_args = self.policy_args(stack, cwd) if policy else []
        result = self.pulumi("preview", "--json", "--stack", stack, *policy_args, *args, cwd=cwd,
                             timeout=timeout, check=False, streaming=True)
        events = []
        for line in result.stdout.splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                events.append({"diagnosticEvent": {"message": line, "severity": "error"}})
        return Preview(result.returncode, events, result.stderr)


@contextmanager
def engine_for_tier(provider_env: dict[str, str] | None = None) -> Iterator[Engine]:
    """An engine with its own home, backend and project copy, removed on exit."""
    bin_dir = toolchain_or_skip()
    work = Path(tempfile.mkdtemp(prefix="khp-engine-"))
    try:
        engine = Engine(bin_dir, work, dict(provider_env or {}))
        engine.backend.mkdir()
        copy_project(engine.project)
        engine.install_plugins()
        yield engine
    finally:
        shutil.rmtree(work, ignore_errors=True)
