"""The component provider (provider/): the schema another language's SDK is generated from, read the way
the Pulumi CLI reads it, over gRPC from the provider process; the components' annotations it is
inferred from; and the components taking resource inputs as Outputs, as the provider hands them over.

No Pulumi CLI or Python language host here: the test starts `python provider/ <engine address>` as
the language host would (pulumi-language-python RunPlugin) and calls GetSchema with the SDK's own
generated stubs.
"""

import ast
import json
import selectors
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2
from pulumi.runtime.proto import engine_pb2_grpc, provider_pb2, provider_pb2_grpc

import kamaji_hami_platform
from kamaji_hami_platform import config
from kamaji_hami_platform.config.settings import gpu_model_settings, gpu_models
from kamaji_hami_platform.gpu import component as gpu_component
from kamaji_hami_platform.management import component as management_component
from kamaji_hami_platform.tenant import component as tenant_component
from tests.harness import ROOT, run_program

pytestmark = pytest.mark.unit

PROVIDER = ROOT / "provider"
PACKAGE = "kamaji-hami-platform"
# Importing pulumi_kubernetes and analyzing three components takes a few seconds on a slow machine.
STARTUP_TIMEOUT_SECONDS = 90
RPC_TIMEOUT_SECONDS = 30
STOP_TIMEOUT_SECONDS = 10
TYPE_TOKENS = {
    "ManagementCluster": management_component.TYPE_TOKEN,
    "KamajiTenant": tenant_component.TYPE_TOKEN,
    "HamiNodePool": gpu_component.TYPE_TOKEN,
}
KUBERNETES_PROVIDER = "/kubernetes/v4.34.2/schema.json#/resources/pulumi:providers:kubernetes"
COMMAND = "/command/v1.2.1/schema.json#/resources/command:local:Command"


def _type_ref(name: str) -> str:
    return f"#/types/{PACKAGE}:index:{name}"


class _Engine(engine_pb2_grpc.EngineServicer):
    """Just enough of the engine for a provider that logs: Log accepted and dropped."""

    def Log(self, request: Any, context: Any) -> empty_pb2.Empty:
        return empty_pb2.Empty()


def _read_port(process: subprocess.Popen) -> int:
    """The port the provider prints first on stdout (pulumi/provider/server.py `main`), waited for
    within STARTUP_TIMEOUT_SECONDS."""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout=STARTUP_TIMEOUT_SECONDS):
            raise TimeoutError(f"the provider printed no port within {STARTUP_TIMEOUT_SECONDS} s")
    line = process.stdout.readline().strip()
    if not line.isdigit():
        raise RuntimeError(f"the provider printed {line!r} instead of a port; exit code {process.poll()}")
    return int(line)


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_SECONDS)


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    engine = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    engine_pb2_grpc.add_EngineServicer_to_server(_Engine(), engine)
    engine_port = engine.add_insecure_port("127.0.0.1:0")
    engine.start()
    stderr_path = tmp_path_factory.mktemp("provider") / "stderr"
    # As the Python language host runs a plugin: `python <plugin folder> <engine address>`, in the
    # program's directory (not this one); the package comes from the path as from the plugin's venv.
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(PROVIDER), f"127.0.0.1:{engine_port}"],
            cwd=stderr_path.parent, stdout=subprocess.PIPE, stderr=stderr, text=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
        try:
            port = _read_port(process)
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                grpc.channel_ready_future(channel).result(timeout=RPC_TIMEOUT_SECONDS)
                response = provider_pb2_grpc.ResourceProviderStub(channel).GetSchema(
                    provider_pb2.GetSchemaRequest(version=0), timeout=RPC_TIMEOUT_SECONDS)
            yield json.loads(response.schema)
        except Exception as error:
            raise RuntimeError(f"{error}\nprovider stderr:\n{stderr_path.read_text()}") from error
        finally:
            _stop(process)
            engine.stop(grace=None)


def _resource(schema: dict[str, Any], component: str) -> dict[str, Any]:
    return schema["resources"][TYPE_TOKENS[component]]


class TestSchemaOverGrpc:
    def test_the_package_is_kamaji_hami_platform_at_the_packages_version(self, schema):
        pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
        assert schema["name"] == PACKAGE
        assert schema["version"] == kamaji_hami_platform.__version__ == pyproject["project"]["version"]
        assert {dep["name"]: dep["version"] for dep in schema["dependencies"]} == \
            {"kubernetes": "4.34.2", "command": "1.2.1"}

    def test_the_type_tokens_are_the_ones_the_components_register(self, schema):
        assert set(schema["resources"]) == set(TYPE_TOKENS.values())
        for component, token in TYPE_TOKENS.items():
            assert token == f"{PACKAGE}:index:{component}"
            assert schema["resources"][token]["isComponent"] is True

    def test_management_cluster(self, schema):
        resource = _resource(schema, "ManagementCluster")
        inputs = resource["inputProperties"]
        assert set(inputs) == {"management", "helmValues", "charts", "kubeconfig", "images"}
        assert inputs["images"]["$ref"] == _type_ref("ImageSettings")
        assert resource.get("requiredInputs", []) == []
        # Mode existing: the cluster's kubeconfig, an input (another language passes a secret).
        assert inputs["kubeconfig"]["type"] == "string" and "plain" not in inputs["kubeconfig"]
        assert inputs["management"]["$ref"] == _type_ref("ManagementSettings")
        values = inputs["helmValues"]["additionalProperties"]
        assert values["additionalProperties"]["$ref"] == "pulumi.json#/Any"
        assert inputs["charts"]["additionalProperties"]["$ref"] == _type_ref("ChartSettings")
        outputs = resource["properties"]
        assert set(outputs) == {"kubeconfig", "provider", "poolRange", "hostFlags", "cluster", "network"}
        assert outputs["provider"]["$ref"] == KUBERNETES_PROVIDER
        assert outputs["cluster"]["$ref"] == outputs["network"]["$ref"] == COMMAND
        assert {outputs[key]["type"] for key in ("kubeconfig", "poolRange", "hostFlags")} == {"string"}
        # The analyzer of pulumi 3.272.0 has no way to mark an output secret in the schema
        # (provider/experimental/schema.py `Property` has no `secret`): the kubeconfig is a secret
        # Output at run time, which the engine keeps secret on the wire, but the schema does not say so.
        assert "secret" not in outputs["kubeconfig"]

    def test_kamaji_tenant(self, schema):
        resource = _resource(schema, "KamajiTenant")
        inputs = resource["inputProperties"]
        assert set(inputs) == {"tenant", "managementProvider", "managementKubeconfig", "managementCluster",
                               "management", "hostFlags", "managementNetwork", "sshPrivateKeys", "images"}
        assert inputs["images"]["$ref"] == _type_ref("ImageSettings")
        assert inputs["sshPrivateKeys"]["additionalProperties"]["type"] == "string"
        # One of managementProvider and managementKubeconfig: checked by the component.
        assert sorted(resource["requiredInputs"]) == ["tenant"]
        assert inputs["managementKubeconfig"]["type"] == "string"
        assert inputs["managementCluster"]["$ref"] == COMMAND
        assert inputs["tenant"]["$ref"] == _type_ref("TenantSettings")
        assert inputs["management"]["$ref"] == _type_ref("ManagementSettings")
        assert inputs["managementProvider"]["$ref"] == KUBERNETES_PROVIDER
        assert inputs["managementNetwork"]["$ref"] == COMMAND
        assert inputs["hostFlags"]["type"] == "string" and "plain" not in inputs["hostFlags"]
        outputs = resource["properties"]
        assert set(outputs) == {"endpoint", "kubeconfig", "adminKubeconfig", "provider", "nodeNames",
                                "workers"}
        assert outputs["provider"]["$ref"] == KUBERNETES_PROVIDER
        assert outputs["nodeNames"]["items"]["type"] == "string"
        assert outputs["workers"]["items"]["$ref"] == COMMAND

    def test_hami_node_pool(self, schema):
        resource = _resource(schema, "HamiNodePool")
        inputs = resource["inputProperties"]
        assert set(inputs) == {"tenant", "clusterName", "tenantProvider", "tenantKubeconfig", "workers",
                               "gpuModels", "referencePod", "helmValues", "chart", "images"}
        assert inputs["images"]["$ref"] == _type_ref("ImageSettings")
        assert sorted(resource["requiredInputs"]) == ["clusterName", "tenant", "workers"]
        assert inputs["tenantKubeconfig"]["type"] == "string"
        assert inputs["tenantProvider"]["$ref"] == KUBERNETES_PROVIDER
        # Not plain: another language passes KamajiTenant's `workers` output as it is.
        assert inputs["workers"]["items"]["$ref"] == COMMAND and "plain" not in inputs["workers"]
        assert inputs["gpuModels"]["additionalProperties"]["$ref"] == _type_ref("GpuModelSettings")
        assert inputs["referencePod"]["$ref"] == _type_ref("PodShapeSettings")
        assert inputs["helmValues"]["additionalProperties"]["$ref"] == "pulumi.json#/Any"
        assert inputs["chart"]["$ref"] == _type_ref("ChartSettings")
        outputs = resource["properties"]
        assert set(outputs) == {"cards", "capacity", "gpuPlan"}
        assert outputs["cards"]["additionalProperties"]["items"]["type"] == "string"
        assert outputs["capacity"]["additionalProperties"]["$ref"] == "pulumi.json#/Any"

    def test_settings_are_types_spelled_as_in_a_stack_file(self, schema):
        types = {token.split(":")[-1]: spec for token, spec in schema["types"].items()}
        assert set(types) == {"ManagementSettings", "TenantSettings", "GpuPoolSettings", "HamiSettings",
                              "GpuModelSettings", "PodShapeSettings", "ChartSettings", "GpuWorkloadSettings",
                              "AddonSettings", "HostSettings", "BastionSettings", "ImageSettings"}
        assert set(types["ImageSettings"]["properties"]) == set(config.IMAGES.keys) == {"mirror"}
        tenant = types["TenantSettings"]["properties"]
        assert set(tenant) == {"name", "kubernetesVersion", "podCidr", "serviceCidr", "controlPlaneReplicas",
                               "workers", "addressBlock", "gpus", "hami", "gpuQuotas", "gpuWorkloads",
                               "hosts", "apiNodePort", "konnectivityNodePort", "workerNetwork"}
        assert tenant["hosts"]["items"]["$ref"] == _type_ref("HostSettings")
        host = types["HostSettings"]
        assert set(host["properties"]) == {"name", "address", "privateKey", "user", "port", "hostKey",
                                           "insecureSkipHostKeyCheck", "bastion"}
        assert sorted(host["required"]) == ["address", "name", "privateKey"]
        assert host["properties"]["bastion"]["$ref"] == _type_ref("BastionSettings")
        assert set(types["BastionSettings"]["properties"]) == set(config.BASTION.keys)
        assert tenant["gpuWorkloads"]["items"]["$ref"] == _type_ref("GpuWorkloadSettings")
        assert set(types["GpuWorkloadSettings"]["properties"]) == {
            "name", "replicas", "gpu", "gpumem", "gpumemPercentage", "gpucores", "type", "namespace"}
        assert sorted(types["TenantSettings"]["required"]) == ["kubernetesVersion", "name", "podCidr",
                                                                "serviceCidr"]
        assert tenant["gpus"]["$ref"] == _type_ref("GpuPoolSettings")
        assert tenant["gpuQuotas"]["additionalProperties"]["additionalProperties"]["type"] == "integer"
        assert set(types["ManagementSettings"]["properties"]) == {
            "name", "nodeImage", "dockerNetwork", "dockerSubnet", "metallbAddressRange", "kamajiEtcdReplicas",
            "mode", "kubeconfigContext", "kubeconfigFile", "certManager", "metallb", "apiExposure",
            "nodePortAddress", "apiClientCidrs", "tenantSubnet", "failCgroupV1"}
        # The settings' keys are the stack file's, so a stack file's section is valid component input.
        assert set(types["ManagementSettings"]["properties"]) == set(config.MANAGEMENT.keys)
        assert set(tenant) == set(config.TENANT.keys)
        assert set(host["properties"]) == set(config.HOST.keys)
        assert set(types["GpuModelSettings"]["properties"]) == {"memoryMiB", "cores", "splitCount", "product"}
        assert set(types["GpuPoolSettings"]["properties"]) == {"model", "perWorker", "mock"}
        assert types["GpuPoolSettings"]["required"] == ["model"]

    def test_everything_is_described(self, schema):
        missing = [f"resource {token}" for token, spec in schema["resources"].items()
                   if not spec.get("description", "").strip()]
        missing += [f"type {token}" for token, spec in schema["types"].items()
                    if not spec.get("description", "").strip()]
        for token, spec in schema["resources"].items():
            for kind in ("inputProperties", "properties"):
                missing += [f"{token} {kind}.{name}" for name, prop in spec[kind].items()
                            if not prop.get("description", "").strip()]
        for token, spec in schema["types"].items():
            missing += [f"{token}.{name}" for name, prop in spec["properties"].items()
                        if not prop.get("description", "").strip()]
        assert missing == []


class TestProviderFolder:
    def test_main_stays_thin(self):
        """Imports, a package name and one call: anything more belongs in the package."""
        tree = ast.parse((PROVIDER / "__main__.py").read_text())
        kinds = [type(node).__name__ for node in tree.body]
        assert kinds == ["Expr", "ImportFrom", "ImportFrom", "Assign", "If"], kinds
        modules = {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}
        assert modules == {"pulumi.provider.experimental", "kamaji_hami_platform"}
        main = tree.body[-1]
        assert ast.unparse(main.test) == "__name__ == '__main__'" and len(main.body) == 1
        call = main.body[0].value
        assert ast.unparse(call.func) == "component_provider_host"
        assert ast.unparse(call.args[0]) == "[ManagementCluster, KamajiTenant, HamiNodePool]"
        assert {keyword.arg: ast.unparse(keyword.value) for keyword in call.keywords} == \
            {"name": "PACKAGE", "version": "__version__"}
        assert ast.literal_eval(tree.body[3].value) == PACKAGE

    def test_the_plugin_runs_on_python_in_its_own_venv_with_this_package(self):
        import yaml

        plugin = yaml.safe_load((PROVIDER / "PulumiPlugin.yaml").read_text())
        assert plugin["runtime"]["name"] == "python"
        assert plugin["runtime"]["options"]["virtualenv"] == "venv"
        lines = [line for line in (PROVIDER / "requirements.txt").read_text().splitlines()
                 if line and not line.startswith("#")]
        assert lines == ["-c ../requirements.txt", ".."]
        assert "provider/venv/" in (ROOT / ".gitignore").read_text().splitlines()


def _program(tmp_path: Path, body: str) -> Path:
    main = tmp_path / "__main__.py"
    main.write_text(textwrap.dedent(body))
    return main


def test_workers_and_network_given_as_outputs_order_and_replace_what_they_did(tmp_path):
    """From another language, KamajiTenant's `workers` and ManagementCluster's `network` arrive as
    Outputs (the provider wraps inputs that carry dependencies): the GPU registrations and the
    workers still wait for them, and are replaced with them: `replace_with` names a stand-in whose
    URN the Output gives (resource_inputs.py; pulumi/runtime/resource.py `prepare_resource` awaits
    each replace_with resource's URN). Every other encoding: tests/program/test_construct_encodings.py."""
    main = _program(tmp_path, """
        import pulumi
        from kamaji_hami_platform import (HamiNodePool, HamiNodePoolArgs, KamajiTenant, KamajiTenantArgs,
                                          ManagementCluster, ManagementClusterArgs)

        settings = {"name": "lab", "docker_network": "lab", "docker_subnet": "172.28.0.0/16"}
        tenant = {"name": "t", "kubernetes_version": "v1.35.0", "pod_cidr": "10.60.0.0/16",
                  "service_cidr": "10.61.0.0/16", "workers": 2, "gpus": {"model": "A100-80GB"},
                  "worker_network": "shared"}  # on the management network
        management = ManagementCluster("lab", ManagementClusterArgs(management=settings))
        cluster = KamajiTenant("t", KamajiTenantArgs(
            tenant=tenant, management=settings, management_provider=management.provider,
            management_network=pulumi.Output.from_input(management.network)),
            opts=pulumi.ResourceOptions(depends_on=[management]))
        HamiNodePool("t-gpus", HamiNodePoolArgs(
            tenant=tenant, cluster_name="lab", tenant_provider=cluster.provider,
            workers=pulumi.Output.from_input(cluster.workers)),
            opts=pulumi.ResourceOptions(depends_on=[cluster]))
    """)
    program = run_program({}, main=main, project="other-language", stack="lab")
    network = program.named("lab-network")
    for index in range(2):
        worker = program.named(f"t-worker-{index}")
        registration = program.named(f"t-gpus-t-worker-{index}")
        assert worker.urn in registration.dependencies
        assert registration.options["replaceWith"] == [worker.urn]
        assert network.urn in worker.dependencies and worker.options["replaceWith"] == [network.urn]


def test_gpu_models_round_trip_in_the_stack_files_spelling():
    """A stack's own GPU model, as settings and back (memoryMiB, as the stack file and the schema
    spell it)."""
    models = gpu_models({"A100-40GB": {"memory_miB": 40960, "cores": 100, "split_count": 4,
                                       "product": "NVIDIA A100-PCIE-40GB"}}, "test")
    settings = gpu_model_settings(models)
    assert settings == {"A100-40GB": {"memory_miB": 40960, "cores": 100, "split_count": 4,
                                      "product": "NVIDIA A100-PCIE-40GB"}}
    assert gpu_models(settings, "test")["A100-40GB"] == models["A100-40GB"]
