"""The component provider (provider/) used as a program in another language uses it, with the real
CLI v3.276.0 and its Python and Node.js language hosts: `pulumi package get-schema ./provider`,
`pulumi package gen-sdk ./provider --language python|nodejs`, and `pulumi package add <provider>`
(docs/components.md) in a Python project that uses only the generated SDK and in a TypeScript
project whose index.ts is the docs' example, as it is. Each program is previewed by the real engine
with the project's policy pack, and plans exactly the resources and outputs, and at least the
dependencies, of the same components used from Python (the package itself, no provider): the
reference, previewed by the same engine.

The commands that run the plugin's install (get-schema, gen-sdk, add) reach PyPI and the npm
registry (tests/engine/other_languages.py); the previews nothing. Each step's time is printed at the
end of the run.
"""

from __future__ import annotations

import json
import py_compile
import subprocess
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import kamaji_hami_platform
from kamaji_hami_platform.gpu import component as gpu_component
from kamaji_hami_platform.management import component as management_component
from kamaji_hami_platform.tenant import component as tenant_component
from policy import rules
from tests.engine.engine import COMMAND_PLUGIN, INSTALL_TIMEOUT, KUBERNETES_PLUGIN, ROOT, Engine, Preview
from tests.engine.other_languages import (
    NODE_SDK,
    Timings,
    engine_of_its_own,
    parents,
    pin,
    plan_dependencies,
    planned,
    python_package_program,
    python_sdk_program,
    stack_outputs,
    typecheck,
    typescript_program,
    with_children,
)

pytestmark = pytest.mark.engine

PACKAGE = "kamaji-hami-platform"
PYTHON_MODULE = "pulumi_kamaji_hami_platform"
NODE_PACKAGE = "@pulumi/kamaji-hami-platform"
TYPE_TOKENS = {
    "ManagementCluster": management_component.TYPE_TOKEN,
    "KamajiTenant": tenant_component.TYPE_TOKEN,
    "HamiNodePool": gpu_component.TYPE_TOKEN,
}
KUBERNETES_PROVIDER = (f"/kubernetes/v{KUBERNETES_PLUGIN[1]}/schema.json"
                       "#/resources/pulumi:providers:kubernetes")
COMMAND = f"/command/v{COMMAND_PLUGIN[1]}/schema.json#/resources/command:local:Command"
INPUTS = {
    "ManagementCluster": {"management", "helmValues", "charts", "kubeconfig", "images"},
    "KamajiTenant": {"tenant", "managementProvider", "managementKubeconfig", "managementCluster",
                     "management", "hostFlags", "managementNetwork", "sshPrivateKeys", "images"},
    "HamiNodePool": {"tenant", "clusterName", "tenantProvider", "tenantKubeconfig", "workers", "gpuModels",
                     "referencePod", "helmValues", "chart", "images"},
}
OUTPUTS = {
    "ManagementCluster": {"kubeconfig", "provider", "poolRange", "hostFlags", "cluster", "network"},
    "KamajiTenant": {"endpoint", "kubeconfig", "adminKubeconfig", "provider", "nodeNames", "workers"},
    "HamiNodePool": {"cards", "capacity", "gpuPlan"},
}
REQUIRED = {"ManagementCluster": [], "KamajiTenant": ["tenant"],
            "HamiNodePool": ["clusterName", "tenant", "workers"]}
PACK_POLICIES = {*rules.RESOURCE_RULES, *rules.STACK_RULES}
FRESH_OPS = {"create", "read"}  # `read`: the tenant's admin kubeconfig Secret, read back by the tenant
STACK = "lab"
# The resources of the docs' example (ManagementCluster `lab`, tenant `team-a`, pool `team-a-gpus`).
WORKER = "kamaji-hami-platform:index:KamajiTenant$command:local:Command::team-a-worker-0"
TENANT_NETWORK = "kamaji-hami-platform:index:KamajiTenant$command:local:Command::team-a-network"
GPU_REGISTRATION = ("kamaji-hami-platform:index:HamiNodePool$kubernetes:core/v1:NodePatch"
                    "::team-a-gpus-team-a-worker-0")
COMPONENT_PROVIDER = f"pulumi:providers:{PACKAGE}::default_0_1_0"
# What a preview shows for an output it cannot know (pulumi sdk/go/common/resource/sig/sig.go
# `UnknownStringValue`): the tenant's endpoint, read from its kubeconfig once its API server runs.
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


@dataclass
class Languages:
    engine: Engine
    timings: Timings

    @property
    def provider(self) -> Path:
        return self.engine.project / "provider"


@dataclass
class Program:
    """A program previewed: its folder, project name, what `pulumi package add` said, its preview and
    the plan the preview saved."""

    folder: Path
    project: str
    added: str
    preview: Preview
    plan: Path

    def steps(self) -> dict[str, str]:
        return planned(self.preview, self.project)

    def dependencies(self) -> dict[str, set[str]]:
        return plan_dependencies(self.plan, self.project)


@pytest.fixture(scope="module")
def languages(engine: Engine, request: pytest.FixtureRequest) -> Iterator[Languages]:
    timings = Timings()
    with timings.step("setup: a home, backend and project copy of its own, plugins, kubernetes schema label"):
        own = engine_of_its_own(engine, "other-languages")
    yield Languages(own, timings)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            reporter.write_line("other languages, time of each step (tests/engine/test_other_languages.py):")
            for line in timings.lines():
                reporter.write_line(line)


@pytest.fixture(scope="module")
def schema(languages: Languages) -> dict[str, Any]:
    """`pulumi package get-schema ./provider` from the project's root; the first run makes
    provider/venv (the Python host, from provider/requirements.txt), the second reinstalls into it."""
    runs = []
    for run in ("first: makes provider/venv", "again: provider/venv there"):
        with languages.timings.step(f"pulumi package get-schema ./provider ({run})"):
            runs.append(languages.engine.pulumi("package", "get-schema", "./provider",
                                                cwd=languages.engine.project, timeout=INSTALL_TIMEOUT))
    first, again = (json.loads(result.stdout) for result in runs)
    assert first == again
    return first


@pytest.fixture(scope="module")
def sdks(languages: Languages, schema: dict[str, Any]) -> Path:
    out = languages.engine.work / "sdks"
    for language in ("python", "nodejs"):
        with languages.timings.step(f"pulumi package gen-sdk ./provider --language {language}"):
            result = languages.engine.pulumi("package", "gen-sdk", "./provider", "--language", language,
                                             "--out", str(out), cwd=languages.engine.project,
                                             timeout=INSTALL_TIMEOUT)
        assert f"SDK has been written to {out / language}" in result.stdout + result.stderr
    return out


def preview_program(languages: Languages, folder: Path, project: str, label: str) -> tuple[Preview, Path]:
    """A fresh stack of the program, previewed with the project's policy pack, its plan saved."""
    languages.engine.new_stack(STACK, cwd=folder)
    plan = folder / "plan.json"
    with languages.timings.step(f"pulumi preview: {label}"):
        preview = languages.engine.preview(
            STACK, "--policy-pack", str(languages.engine.project / "policy"), "--save-plan", str(plan),
            cwd=folder, policy=False)
    return preview, plan


def add_package(languages: Languages, folder: Path, label: str) -> str:
    with languages.timings.step(f"pulumi package add <provider> in the {label} project"):
        result = languages.engine.pulumi("package", "add", str(languages.provider), cwd=folder,
                                         timeout=INSTALL_TIMEOUT)
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def reference(languages: Languages, schema: dict[str, Any]) -> Program:
    """The docs' example in Python with the package itself, in the provider's virtualenv."""
    folder = python_package_program(languages.engine.work / "python-package",
                                     languages.provider / "venv")
    preview, plan = preview_program(languages, folder, "khp-python-package", "the package itself (reference)")
    return Program(folder, "khp-python-package", "", preview, plan)


@pytest.fixture(scope="module")
def python_program(languages: Languages, schema: dict[str, Any]) -> Program:
    folder = python_sdk_program(languages.engine.work / "python-sdk")
    added = add_package(languages, folder, "Python")
    preview, plan = preview_program(languages, folder, "khp-python-sdk", "Python program, generated SDK")
    return Program(folder, "khp-python-sdk", added, preview, plan)


@pytest.fixture(scope="module")
def typescript(languages: Languages, schema: dict[str, Any]) -> Program:
    folder = typescript_program(languages.engine.work / "typescript")
    added = add_package(languages, folder, "TypeScript")
    with languages.timings.step("tsc --noEmit (the docs' example type-checked)"):
        checked = typecheck(languages.engine, folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    preview, plan = preview_program(languages, folder, "khp-typescript", "TypeScript example, Node.js host")
    return Program(folder, "khp-typescript", added, preview, plan)


# --- pulumi package get-schema --------------------------------------------------------------------

def test_get_schema_names_the_package_at_its_version_with_its_dependencies(
        languages: Languages, schema: dict[str, Any],
) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert schema["name"] == PACKAGE
    assert schema["version"] == kamaji_hami_platform.__version__ == pyproject["project"]["version"]
    assert {dep["name"]: dep["version"] for dep in schema["dependencies"]} == {
        KUBERNETES_PLUGIN[0]: KUBERNETES_PLUGIN[1], COMMAND_PLUGIN[0]: COMMAND_PLUGIN[1]}
    # The Python host made the plugin's virtualenv, with this package in it.
    venv_python = languages.provider / "venv" / "bin" / "python"
    found = subprocess.run(
        [str(venv_python), "-c", "import kamaji_hami_platform; print(kamaji_hami_platform.__version__)"],
        capture_output=True, text=True, timeout=120, check=False)
    assert found.stdout.strip() == kamaji_hami_platform.__version__, found.stderr


def test_get_schema_has_the_three_components_under_their_type_tokens(schema: dict[str, Any]) -> None:
    assert set(schema["resources"]) == set(TYPE_TOKENS.values())
    for component, token in TYPE_TOKENS.items():
        assert token == f"{PACKAGE}:index:{component}"
        resource = schema["resources"][token]
        assert resource["isComponent"] is True
        assert set(resource["inputProperties"]) == INPUTS[component], component
        assert set(resource["properties"]) == OUTPUTS[component], component
        assert sorted(resource.get("requiredInputs", [])) == REQUIRED[component], component


def test_get_schema_refers_to_kubernetes_and_command_at_the_pinned_versions(schema: dict[str, Any]) -> None:
    management = schema["resources"][TYPE_TOKENS["ManagementCluster"]]["properties"]
    tenant = schema["resources"][TYPE_TOKENS["KamajiTenant"]]
    pool = schema["resources"][TYPE_TOKENS["HamiNodePool"]]["inputProperties"]
    assert management["provider"]["$ref"] == KUBERNETES_PROVIDER
    assert management["cluster"]["$ref"] == management["network"]["$ref"] == COMMAND
    assert tenant["inputProperties"]["managementProvider"]["$ref"] == KUBERNETES_PROVIDER
    assert tenant["inputProperties"]["managementNetwork"]["$ref"] == COMMAND
    assert tenant["properties"]["provider"]["$ref"] == KUBERNETES_PROVIDER
    assert tenant["properties"]["workers"]["items"]["$ref"] == COMMAND
    assert pool["tenantProvider"]["$ref"] == KUBERNETES_PROVIDER
    assert pool["workers"]["items"]["$ref"] == COMMAND
    # The settings are types of the package, spelled as in a stack file.
    assert tenant["inputProperties"]["tenant"]["$ref"] == f"#/types/{PACKAGE}:index:TenantSettings"
    assert {"kubernetesVersion", "podCidr", "serviceCidr", "gpus"} <= set(
        schema["types"][f"{PACKAGE}:index:TenantSettings"]["properties"])


# --- pulumi package gen-sdk -----------------------------------------------------------------------

def test_gen_sdk_python_has_the_three_components(sdks: Path) -> None:
    module = sdks / "python" / PYTHON_MODULE
    plugin = json.loads((module / "pulumi-plugin.json").read_text())
    assert plugin == {"resource": True, "name": PACKAGE, "version": kamaji_hami_platform.__version__}
    init = (module / "__init__.py").read_text()
    for component, file in (("ManagementCluster", "management_cluster.py"),
                            ("KamajiTenant", "kamaji_tenant.py"), ("HamiNodePool", "hami_node_pool.py")):
        source = (module / file).read_text()
        assert f"class {component}(pulumi.ComponentResource):" in source
        assert f"'{TYPE_TOKENS[component]}'" in source and "remote=True" in source
        assert f'"{TYPE_TOKENS[component]}": "{component}"' in init
        py_compile.compile(str(module / file), doraise=True)
    setup = (sdks / "python" / "setup.py").read_text()
    assert f"'pulumi_kubernetes>={KUBERNETES_PLUGIN[1]}'" in setup
    assert f"'pulumi_command>={COMMAND_PLUGIN[1]}'" in setup


def test_gen_sdk_nodejs_has_the_three_components(sdks: Path) -> None:
    folder = sdks / "nodejs"
    package = json.loads((folder / "package.json").read_text())
    assert package["name"] == NODE_PACKAGE
    assert package["pulumi"] == {"resource": True, "name": PACKAGE,
                                 "version": kamaji_hami_platform.__version__}
    assert package["dependencies"]["@pulumi/kubernetes"] == KUBERNETES_PLUGIN[1]
    assert package["dependencies"]["@pulumi/command"] == COMMAND_PLUGIN[1]
    index = (folder / "index.ts").read_text()
    for component, file in (("ManagementCluster", "managementCluster.ts"),
                            ("KamajiTenant", "kamajiTenant.ts"), ("HamiNodePool", "hamiNodePool.ts")):
        source = (folder / file).read_text()
        assert f"export class {component} extends pulumi.ComponentResource" in source
        assert f"__pulumiType = '{TYPE_TOKENS[component]}'" in source
        assert "true /*remote*/" in source
        assert f'export const {component}: typeof import("./{file[:-3]}").{component}' in index


# --- programs ----------------------------------------------------------------------------------------

def assert_green(preview: Preview) -> None:
    """Passed, said nothing but the tier's provider version notice, planned only creates (and the
    tenant's kubeconfig read), and every policy of the pack judged something and found nothing."""
    assert preview.returncode == 0, preview.text()
    assert preview.diagnostics("error") == [], preview.text()
    assert preview.unexpected_warnings() == [], preview.text()
    assert preview.violations() == [], preview.text()
    assert set(preview.ops().values()) <= FRESH_OPS, preview.ops()
    assert preview.policies_passed() >= PACK_POLICIES, preview.policies_passed()


def assert_plans_what_the_package_plans(program: Program, reference: Program) -> None:
    """The same steps (URN and operation) and stack outputs as the reference; each resource waits
    for all that it waits for in the reference (a dependency on a component counted as one on its
    children), and beyond that only for whole components given as `dependsOn`."""
    assert_green(program.preview)
    steps = program.steps()
    assert steps == reference.steps()
    assert stack_outputs(program.preview) == stack_outputs(reference.preview)
    components = {urn for urn in steps if urn.rsplit("::", 2)[-2] in TYPE_TOKENS.values()}
    assert len(components) == 3
    parent_of = parents(program.preview, program.project)
    ours, theirs = program.dependencies(), reference.dependencies()
    created = {urn for urn, op in steps.items() if op == "create"}
    assert created <= set(ours) and created <= set(theirs)  # a plan holds no reads
    for urn in created:
        assert theirs[urn] <= with_children(ours[urn], parent_of, components), urn
        assert ours[urn] - components <= theirs[urn], urn
    # The provider plugin constructed the components (the reference has none to load).
    assert any(urn.endswith(COMPONENT_PROVIDER) for urn in ours)
    assert not any(urn.endswith(COMPONENT_PROVIDER) for urn in theirs)


def by_suffix(dependencies: dict[str, set[str]], suffix: str) -> set[str]:
    [urn] = [urn for urn in dependencies if urn.endswith(suffix)]
    return dependencies[urn]


def test_the_reference_previews_green(reference: Program) -> None:
    assert_green(reference.preview)
    assert len(reference.steps()) > 50
    outputs = stack_outputs(reference.preview)
    assert list(outputs["cards"]) == ["team-a-worker-0"] and len(outputs["cards"]["team-a-worker-0"]) == 1
    assert outputs["endpoint"] == UNKNOWN
    dependencies = reference.dependencies()
    assert any(urn.endswith(WORKER) for urn in by_suffix(dependencies, GPU_REGISTRATION))
    assert any(urn.endswith(TENANT_NETWORK) for urn in by_suffix(dependencies, WORKER))


def test_package_add_wires_the_local_provider_into_a_python_project(
        languages: Languages, python_program: Program,
) -> None:
    folder = python_program.folder
    project = yaml.safe_load((folder / "Pulumi.yaml").read_text())
    assert project["packages"] == {PACKAGE: str(languages.provider)}
    assert "sdks/kamaji-hami-platform" in (folder / "requirements.txt").read_text().splitlines()
    assert f"import {PYTHON_MODULE} as kamaji_hami_platform" in python_program.added
    # The program's virtualenv has the generated SDK and the pinned pulumi, not the package itself.
    found = subprocess.run(
        [str(folder / "venv" / "bin" / "python"), "-c",
         "import importlib.metadata as m, importlib.util as u; "
         f"print(m.version('pulumi'), u.find_spec('{PYTHON_MODULE}') is not None, "
         "u.find_spec('kamaji_hami_platform') is not None)"],
        cwd=folder, capture_output=True, text=True, timeout=120, check=False)
    assert found.stdout.split() == [pin("pulumi").split("==")[1], "True", "False"], found.stderr


def test_a_python_program_with_the_generated_sdk_plans_what_the_package_plans(
        python_program: Program, reference: Program,
) -> None:
    assert_plans_what_the_package_plans(python_program, reference)
    dependencies = python_program.dependencies()
    assert any(urn.endswith(WORKER) for urn in by_suffix(dependencies, GPU_REGISTRATION))


def test_package_add_wires_the_local_provider_into_a_typescript_project(
        languages: Languages, typescript: Program,
) -> None:
    folder = typescript.folder
    project = yaml.safe_load((folder / "Pulumi.yaml").read_text())
    assert project["packages"] == {PACKAGE: str(languages.provider)}
    package = json.loads((folder / "package.json").read_text())
    assert package["dependencies"] == {NODE_PACKAGE: "file:sdks/kamaji-hami-platform",
                                       "@pulumi/pulumi": NODE_SDK}
    assert f'import * as kamajiHamiPlatform from "{NODE_PACKAGE}";' in typescript.added
    installed = json.loads((folder / "node_modules" / "@pulumi" / "pulumi" / "package.json").read_text())
    assert installed["version"] == NODE_SDK
    version = languages.engine.pulumi("version", cwd=folder).stdout.strip()
    assert version == f"v{NODE_SDK}"


def test_the_docs_typescript_example_plans_what_the_package_plans(
        typescript: Program, reference: Program,
) -> None:
    """docs/components.md's example, as it is, in a TypeScript project: type-checked by tsc (in the
    fixture) and previewed with the Node.js host."""
    assert_plans_what_the_package_plans(typescript, reference)
    dependencies = typescript.dependencies()
    # `workers: team.workers`, passed from TypeScript as it is: each GPU registration still waits for
    # its own worker (resource_inputs.py), as the worker for its tenant's network.
    assert any(urn.endswith(WORKER) for urn in by_suffix(dependencies, GPU_REGISTRATION))
    assert any(urn.endswith(TENANT_NETWORK) for urn in by_suffix(dependencies, WORKER))
