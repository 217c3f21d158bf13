"""What the engine tier needs to run the component provider (provider/) the way a user of another
language does: `pulumi package get-schema`, `gen-sdk` and `add`, then programs in Python (the
generated SDK only) and TypeScript previewed with the real language hosts (tests/engine/
test_other_languages.py).

The CLI reinstalls a local plugin's requirements before it runs it for `package get-schema`,
`gen-sdk` and `add` (pulumi v3.276.0 `cmd/pulumi/packageinstallation` `installStep` ->
`packageworkspace.InstallPluginAt` -> the Python host's `InstallDependencies`): pip builds this
package from `..` with setuptools from PyPI every time. So those commands are package installs
(PyPI; `package add` in a TypeScript project also the npm registry); the previews reach nothing
(the Kubernetes provider only the tier's Helm repositories: tests/engine/engine.py).

One adjustment of the tier's own: its Kubernetes provider is the v4.25.0 code installed as plugin
4.34.2 (tests/engine/engine.py), and its schema says `"version": "4.25.0"`. Generating an SDK binds
the component schema's `/kubernetes/v4.34.2/schema.json` references, and the schema loader refuses
a schema of another version than it asked for (pulumi v3.276.0 `codegen/schema/loader.go`
`PackageReferenceVersionMismatchError`: "loader returned kubernetes@4.25.0; requested
kubernetes@4.34.2"), which a user with the real 4.34.2 plugin never sees. So the tier's plugin's
schema, labelled 4.34.2, is put where the loader caches schemas (`$PULUMI_HOME/schemas/
kubernetes-4.34.2.json`, read when newer than the plugin's install: `loadCachedSchemaBytes`), in a
PULUMI_HOME of this module's own.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.engine.engine import KUBERNETES_PLUGIN, ROOT, Engine, Preview, copy_project

DOCS = ROOT / "docs" / "components.md"
SCHEMA_CACHE = "schemas"
# The Node.js SDK of the engine's version (the CLI is v3.276.0, toolchain/pulumi/build.sh); it
# declares `engines.node >=22` (every @pulumi/pulumi from 3.249.0 on), and npm says so on Node.js 20.
NODE_SDK = "3.276.0"
TYPESCRIPT = "5.9.3"
NODE_TYPES = "^20"
TSC_TIMEOUT = 600


@dataclass
class Timings:
    """How long each step took, in the order they ran, for the run's summary."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = time.monotonic() - start

    def lines(self) -> list[str]:
        return [f"  {seconds:7.1f} s  {name}" for name, seconds in self.seconds.items()]


def engine_of_its_own(engine: Engine, name: str) -> Engine:
    """The session's engine (its binaries and settings) with a PULUMI_HOME, backend and project copy
    of its own, so that the relabelled schema stays out of the session's home."""
    own = dataclasses.replace(engine, work=engine.work / name)
    own.work.mkdir()
    own.backend.mkdir()
    copy_project(own.project)
    own.install_plugins()
    label_kubernetes_schema(own)
    return own


def label_kubernetes_schema(engine: Engine) -> None:
    """The tier's Kubernetes plugin's own schema (read from its binary, on this machine), with the
    version of the plugin it is installed as, in the loader's schema cache (the module docstring)."""
    name, version, binary = KUBERNETES_PLUGIN
    result = engine.pulumi("package", "get-schema", str(engine.bin_dir / binary), cwd=engine.work)
    schema = json.loads(result.stdout)
    assert schema["name"] == name, schema["name"]
    schema["version"] = version
    cache = engine.home / SCHEMA_CACHE
    cache.mkdir(mode=0o700, exist_ok=True)
    (cache / f"{name}-{version}.json").write_text(json.dumps(schema))


def pin(requirement: str) -> str:
    """`name==version` of a package, as the root requirements.txt pins it."""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.split("==")[0].strip() == requirement:
            return line.strip()
    raise AssertionError(f"{requirement} is not pinned in requirements.txt")


def typescript_example() -> str:
    """The ```typescript block of docs/components.md, as it is."""
    blocks = re.findall(r"```typescript\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) == 1, f"docs/components.md has {len(blocks)} typescript blocks"
    return blocks[0]


# The settings of the docs' TypeScript example, in each language's spelling.
PYTHON_SDK_PROGRAM = '''"""A management cluster, a tenant and its GPUs, through the generated SDK only."""

import pulumi
import pulumi_kamaji_hami_platform as khp

management = khp.ManagementSettingsArgs(name="lab", docker_network="lab", docker_subnet="172.28.0.0/16")
tenant = khp.TenantSettingsArgs(
    name="team-a", kubernetes_version="v1.35.0", pod_cidr="10.50.0.0/16", service_cidr="10.51.0.0/16",
    gpus=khp.GpuPoolSettingsArgs(model="A100-80GB", per_worker=1))

mgmt = khp.ManagementCluster("lab", management=management)
team = khp.KamajiTenant(
    "team-a", tenant=tenant, management=management, management_kubeconfig=mgmt.kubeconfig,
    host_flags=mgmt.host_flags, management_network=mgmt.network,
    opts=pulumi.ResourceOptions(depends_on=[mgmt]))
gpus = khp.HamiNodePool(
    "team-a-gpus", tenant=tenant, cluster_name="lab", tenant_kubeconfig=team.kubeconfig,
    workers=team.workers, opts=pulumi.ResourceOptions(depends_on=[team]))

pulumi.export("endpoint", team.endpoint)
pulumi.export("cards", gpus.cards)
'''

PYTHON_PACKAGE_PROGRAM = '''"""The same with the package itself (no provider, no SDK): the reference."""

import pulumi

from kamaji_hami_platform import (HamiNodePool, HamiNodePoolArgs, KamajiTenant, KamajiTenantArgs,
                                  ManagementCluster, ManagementClusterArgs)

management = {"name": "lab", "docker_network": "lab", "docker_subnet": "172.28.0.0/16"}
tenant = {"name": "team-a", "kubernetes_version": "v1.35.0", "pod_cidr": "10.50.0.0/16",
          "service_cidr": "10.51.0.0/16", "gpus": {"model": "A100-80GB", "per_worker": 1}}

mgmt = ManagementCluster("lab", ManagementClusterArgs(management=management))
team = KamajiTenant("team-a", KamajiTenantArgs(
    tenant=tenant, management=management, management_kubeconfig=mgmt.kubeconfig,
    host_flags=mgmt.host_flags, management_network=mgmt.network),
    opts=pulumi.ResourceOptions(depends_on=[mgmt]))
gpus = HamiNodePool("team-a-gpus", HamiNodePoolArgs(
    tenant=tenant, cluster_name="lab", tenant_kubeconfig=team.kubeconfig, workers=team.workers),
    opts=pulumi.ResourceOptions(depends_on=[team]))

pulumi.export("endpoint", team.endpoint)
pulumi.export("cards", gpus.cards)
'''

TSCONFIG = {"compilerOptions": {"strict": True, "outDir": "bin", "target": "es2020", "module": "commonjs",
                                "moduleResolution": "node", "sourceMap": True, "experimentalDecorators": True,
                                "pretty": True, "noFallthroughCasesInSwitch": True, "noImplicitReturns": True,
                                "forceConsistentCasingInFileNames": True},
            "files": ["index.ts"]}


def write_project(folder: Path, name: str, runtime: dict[str, Any], files: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    (folder / "Pulumi.yaml").write_text(yaml.safe_dump(
        {"name": name, "description": "the kamaji-hami-platform components from another program",
         "runtime": runtime}, sort_keys=False))
    for path, text in files.items():
        (folder / path).write_text(text)
    return folder


def python_sdk_program(folder: Path) -> Path:
    """A Python program whose requirements are the pulumi SDK alone (`pulumi package add` adds the
    generated SDK)."""
    return write_project(folder, "khp-python-sdk",
                         {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}},
                         {"requirements.txt": f"{pin('pulumi')}\n", "__main__.py": PYTHON_SDK_PROGRAM})


def python_package_program(folder: Path, virtualenv: Path) -> Path:
    """The reference program, run in the provider's own virtualenv (the package and its pins)."""
    return write_project(folder, "khp-python-package",
                         {"name": "python", "options": {"toolchain": "pip", "virtualenv": str(virtualenv)}},
                         {"__main__.py": PYTHON_PACKAGE_PROGRAM})


def typescript_program(folder: Path) -> Path:
    """A TypeScript project as `pulumi new typescript` lays it out, with the docs' example as
    index.ts (`pulumi package add` adds the SDK to package.json and installs everything)."""
    package = {"name": "khp-typescript", "main": "index.ts",
               "devDependencies": {"@types/node": NODE_TYPES, "typescript": TYPESCRIPT},
               "dependencies": {"@pulumi/pulumi": NODE_SDK}}
    return write_project(folder, "khp-typescript", {"name": "nodejs", "options": {"packagemanager": "npm"}},
                         {"package.json": json.dumps(package, indent=4) + "\n",
                          "tsconfig.json": json.dumps(TSCONFIG, indent=4) + "\n",
                          "index.ts": typescript_example()})


def typecheck(engine: Engine, folder: Path) -> subprocess.CompletedProcess[str]:
    """`tsc --noEmit` with the project's TypeScript (the Node.js host only transpiles)."""
    return subprocess.run([str(folder / "node_modules" / ".bin" / "tsc"), "--noEmit", "-p", str(folder)],
                          cwd=folder, env=engine.env(), capture_output=True, text=True,
                          timeout=TSC_TIMEOUT, check=False)


# --- what a preview planned ------------------------------------------------------------------------

def project_free(urn: str, project: str) -> str:
    """A URN with its project's name taken out, to compare programs of different projects."""
    return urn.replace(f"::{project}::", "::<project>::").replace(f"::{project}-", "::<project>-")


def planned(preview: Preview, project: str) -> dict[str, str]:
    """Each step's project-free URN and operation."""
    return {project_free(urn, project): op for urn, op in preview.ops().items()}


def stack_outputs(preview: Preview) -> dict[str, Any]:
    outputs: dict[str, Any] = {}
    for event in preview.events:
        metadata = event.get("resOutputsEvent", {}).get("metadata", {})
        if metadata.get("type") == "pulumi:pulumi:Stack":
            outputs.update(metadata["new"].get("outputs") or {})
    return outputs


def parents(preview: Preview, project: str) -> dict[str, str]:
    return {project_free(step["urn"], project): project_free(step["new"].get("parent") or "", project)
            for step in preview.steps if step.get("new")}


def plan_dependencies(path: Path, project: str) -> dict[str, set[str]]:
    """Each resource's dependencies in a plan saved by `pulumi preview --save-plan` (its goal's
    `dependencies`, pulumi sdk/go/common/apitype/plan.go `GoalV1`)."""
    plans = json.loads(path.read_text())["resourcePlans"]
    return {project_free(urn, project): {project_free(dependency, project)
                                         for dependency in (plan.get("goal") or {}).get("dependencies") or []}
            for urn, plan in plans.items()}


def with_children(dependencies: set[str], parent_of: dict[str, str], components: set[str]) -> set[str]:
    """Dependencies with each component counted as all that it holds (as the Python SDK counts a
    dependency on a local component: pulumi runtime/rpc.py `_add_dependency`)."""
    expanded = set(dependencies)
    for urn in parent_of:
        ancestor = parent_of.get(urn, "")
        while ancestor:
            if ancestor in dependencies and ancestor in components:
                expanded.add(urn)
                break
            ancestor = parent_of.get(ancestor, "")
    return expanded
