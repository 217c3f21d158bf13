"""Construct over gRPC: the provider process (provider/) builds a KamajiTenant or a HamiNodePool
from resource inputs in each encoding another language's SDK and the engine can send, and calls
back into a resource monitor served here, which records every registration and answers it.

As the engine runs a component provider: `python provider/ <engine address>`, then `Construct`
with the monitor's address in the request (pulumi sdk/python/lib/pulumi/provider/server.py
`ProviderServicer._construct` connects to `request.monitorEndpoint`).
"""

import base64
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import (
    engine_pb2_grpc,
    provider_pb2,
    provider_pb2_grpc,
    resource_pb2,
    resource_pb2_grpc,
)

from kamaji_hami_platform.gpu import component as gpu_component
from kamaji_hami_platform.tenant import component as tenant_component
from tests.program.test_component_provider import PROVIDER, RPC_TIMEOUT_SECONDS, _Engine, _read_port, _stop

pytestmark = pytest.mark.unit

# The wire's signatures (pulumi sdk/python/lib/pulumi/runtime/rpc.py `_special_sig_key`,
# `_special_resource_sig`, `_special_output_value_sig`, `UNKNOWN`).
SIG = "4dabf18193072939515e22adb298388d"
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
OUTPUT_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

PROJECT, STACK = "other-language", "lab"
STACK_URN = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{STACK}"
COMMAND = "command:local:Command"
TENANT_KUBECONFIG = """apiVersion: v1
kind: Config
current-context: t
clusters: [{name: t, cluster: {server: "https://172.28.255.1:6443"}}]
contexts: [{name: t, context: {cluster: t, user: admin}}]
users: [{name: admin, user: {token: not-a-secret}}]
"""
# What the monitor supports (pulumi proto/pulumi/resource.proto ResourceMonitorFeature), as a recent
# engine: resource references and output values among them.
FEATURES = [resource_pb2.RESOURCE_MONITOR_FEATURE_SECRETS,
            resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES,
            resource_pb2.RESOURCE_MONITOR_FEATURE_OUTPUT_VALUES,
            resource_pb2.RESOURCE_MONITOR_FEATURE_ALIAS_SPECS,
            resource_pb2.RESOURCE_MONITOR_FEATURE_DELETED_WITH,
            resource_pb2.RESOURCE_MONITOR_FEATURE_REPLACE_WITH]


def urn(type_: str, name: str, parent_type: str | None = None) -> str:
    qualified = f"{parent_type}${type_}" if parent_type else type_
    return f"urn:pulumi:{STACK}::{PROJECT}::{qualified}::{name}"


def _child_urn(parent: str, type_: str, name: str) -> str:
    """The URN the engine gives a child (pulumi sdk/go/common/resource/urn.go `NewURN`: the parent's
    qualified type, `$`, the child's type)."""
    if not parent or parent == STACK_URN:
        return urn(type_, name)
    return urn(type_, name, parent.split("::")[2])


class _Monitor(resource_pb2_grpc.ResourceMonitorServicer):
    """Records registrations, answers them with their inputs as outputs (IDs unknown in a preview,
    as the engine's for resources to create), and rehydrated references' getResource invokes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.dry_run = True
        self.registrations: list[resource_pb2.RegisterResourceRequest] = []
        self.invokes: list[resource_pb2.ResourceInvokeRequest] = []

    def reset(self, dry_run: bool) -> None:
        with self.lock:
            self.dry_run = dry_run
            self.registrations, self.invokes = [], []

    def GetDeploymentInfo(self, request: Any, context: Any) -> resource_pb2.DeploymentInfo:
        return resource_pb2.DeploymentInfo(project=PROJECT, stack=STACK, dryRun=self.dry_run,
                                           supportedFeatures=FEATURES)

    def SupportsFeature(self, request: Any, context: Any) -> resource_pb2.SupportsFeatureResponse:
        return resource_pb2.SupportsFeatureResponse(hasSupport=request.id in FEATURES)

    def RegisterResource(self, request: Any, context: Any) -> resource_pb2.RegisterResourceResponse:
        with self.lock:
            self.registrations.append(request)
        resource_id = "" if self.dry_run or not request.custom else f"{request.name}-id"
        return resource_pb2.RegisterResourceResponse(
            urn=_child_urn(request.parent, request.type, request.name), id=resource_id,
            object=request.object)

    def RegisterResourceOutputs(self, request: Any, context: Any) -> empty_pb2.Empty:
        return empty_pb2.Empty()

    def ReadResource(self, request: Any, context: Any) -> resource_pb2.ReadResourceResponse:
        """The tenant's admin kubeconfig Secret (the only resource the components read), as Kamaji
        writes it: the kubeconfig, and the TenantControlPlane as controller."""
        properties = struct_pb2.Struct()
        properties.update({
            "data": {"admin.conf": base64.b64encode(TENANT_KUBECONFIG.encode()).decode()},
            "metadata": {"ownerReferences": [{"kind": "TenantControlPlane", "controller": True,
                                              "uid": "uid-t", "name": "t", "apiVersion": "v1"}]}})
        return resource_pb2.ReadResourceResponse(
            urn=_child_urn(request.parent, request.type, request.name), properties=properties)

    def Invoke(self, request: Any, context: Any) -> resource_pb2.ResourceInvokeResponse:
        with self.lock:
            self.invokes.append(request)
        result = struct_pb2.Struct()
        if request.tok == "pulumi:pulumi:getResource":
            wanted = request.args["urn"]
            result.update({"urn": wanted, "id": f"{wanted.split('::')[-1]}10e7e10f", "state": {}})
        return resource_pb2.ResourceInvokeResponse(**{"return": result})


class _Provider:
    def __init__(self, stub: provider_pb2_grpc.ResourceProviderStub, monitor: _Monitor, port: int) -> None:
        self.stub, self.monitor, self.monitor_port = stub, monitor, port

    def construct(self, type_: str, name: str, inputs: dict[str, Any],
                  dependencies: dict[str, list[str]] | None = None, dry_run: bool = True) -> Any:
        self.monitor.reset(dry_run)
        struct = struct_pb2.Struct()
        struct.update(inputs)
        return self.stub.Construct(provider_pb2.ConstructRequest(
            project=PROJECT, stack=STACK, dryRun=dry_run, monitorEndpoint=f"127.0.0.1:{self.monitor_port}",
            type=type_, name=name, parent=STACK_URN, inputs=struct,
            inputDependencies={key: provider_pb2.ConstructRequest.PropertyDependencies(urns=urns)
                               for key, urns in (dependencies or {}).items()},
            accepts_output_values=True), timeout=RPC_TIMEOUT_SECONDS)


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Provider]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    engine_pb2_grpc.add_EngineServicer_to_server(_Engine(), server)
    monitor = _Monitor()
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(monitor, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    stderr_path = tmp_path_factory.mktemp("provider") / "stderr"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(PROVIDER), f"127.0.0.1:{port}"],
            cwd=stderr_path.parent, stdout=subprocess.PIPE, stderr=stderr, text=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(PROVIDER.parent)})
        try:
            provider_port = _read_port(process)
            with grpc.insecure_channel(f"127.0.0.1:{provider_port}") as channel:
                grpc.channel_ready_future(channel).result(timeout=RPC_TIMEOUT_SECONDS)
                yield _Provider(provider_pb2_grpc.ResourceProviderStub(channel), monitor, port)
        finally:
            _stop(process)
            server.stop(grace=None)
            print(stderr_path.read_text(), file=sys.stderr)


def reference(resource_urn: str, resource_id: str | None = None, **extra: str) -> dict[str, Any]:
    """A resource reference as the engine hands it to a provider (pulumi sdk/go/common/resource/plugin/
    rpc.go `MarshalPropertyValue`: urn, id for a custom resource, packageVersion when known)."""
    ref = {SIG: RESOURCE_SIG, "urn": resource_urn, **extra}
    if resource_id is not None:
        ref["id"] = resource_id
    return ref


def output(value: Any = None, dependencies: tuple[str, ...] = (), known: bool = True) -> dict[str, Any]:
    """An output value (rpc.go; the Node.js SDK sends one for an Output input of a component, with
    the URNs of the Output's resources: sdk/nodejs/runtime/rpc.ts `serializeProperty`)."""
    out: dict[str, Any] = {SIG: OUTPUT_SIG, "dependencies": list(dependencies)}
    if known:
        out["value"] = value
    return out


MANAGEMENT_TYPE = "kamaji-hami-platform:index:ManagementCluster"
TENANT_TYPE = tenant_component.TYPE_TOKEN
NETWORK = urn(COMMAND, "lab-network", MANAGEMENT_TYPE)
CLUSTER = urn(COMMAND, "lab-cluster", MANAGEMENT_TYPE)
MANAGEMENT = urn(MANAGEMENT_TYPE, "lab")
# pulumi-command's IDs: the resource's name and 8 hex digits (v1.2.1 local/commandController.go
# `Create`), as the user's `lab-network10e7e10f`.
NETWORK_ID, CLUSTER_ID = "lab-network10e7e10f", "lab-cluster3a41c2d9"
WORKERS = [urn(COMMAND, f"t-worker-{index}", TENANT_TYPE) for index in range(2)]
WORKER_IDS = ["t-worker-05b6e1c7a", "t-worker-1c0ffee42"]
KUBECONFIG = "apiVersion: v1\nkind: Config\n"
CASES = iter(range(1000))


def tenant_inputs(**resources: Any) -> dict[str, Any]:
    # Each Construct claims addresses per management cluster in the one provider process
    # (tenant/addresses.py): a cluster of its own per call.
    # On the shared network: the one whose workers the management network replaces.
    case = next(CASES)
    return {"tenant": {"name": "t", "kubernetesVersion": "v1.35.0", "podCidr": "10.60.0.0/16",
                       "serviceCidr": "10.61.0.0/16", "workers": 2, "workerNetwork": "shared"},
            "management": {"name": f"lab{case}", "dockerNetwork": f"lab{case}",
                           "dockerSubnet": "172.28.0.0/16"},
            "managementKubeconfig": KUBECONFIG, **resources}


def pool_inputs(workers: Any) -> dict[str, Any]:
    return {"tenant": {"name": "t", "kubernetesVersion": "v1.35.0", "podCidr": "10.60.0.0/16",
                       "serviceCidr": "10.61.0.0/16", "workers": 2, "gpus": {"model": "A100-80GB"}},
            "clusterName": "lab", "tenantKubeconfig": KUBECONFIG, "workers": workers}


def registrations(provider: _Provider) -> dict[str, Any]:
    return {request.name: request for request in provider.monitor.registrations}


def rehydrated(provider: _Provider) -> set[str]:
    """The URNs the provider rehydrated: a resource built from a reference reads its state with
    `pulumi:pulumi:getResource` (pulumi/runtime/resource.py `get_resource`)."""
    return {request.args["urn"] for request in provider.monitor.invokes
            if request.tok == "pulumi:pulumi:getResource"}


def construct_error(provider: _Provider, type_: str, inputs: dict[str, Any],
                    dependencies: dict[str, list[str]] | None = None) -> str:
    with pytest.raises(grpc.RpcError) as raised:
        provider.construct(type_, "t" if type_ == TENANT_TYPE else "t-gpus", inputs, dependencies)
    return raised.value.details()


def assert_tenant_uses_network_and_cluster(provider: _Provider, ordered: bool = True) -> None:
    """Each worker is replaced with the network (and, unless the network was the rehydrated
    resource itself, which a Python program's tenant does not order after either, waits for it);
    what the tenant creates in the management cluster goes with the cluster."""
    registered = registrations(provider)
    for name in ("t-worker-0", "t-worker-1"):
        worker = registered[name]
        assert list(worker.replace_with) == [NETWORK], name
        assert (NETWORK in worker.dependencies) == ordered, name
    for name in ("t-namespace", "t-control-plane"):
        assert registered[name].deletedWith == CLUSTER, name
    for name in ("t-worker-image", "t-admin-access", "t-k8s"):
        assert registered[name].deletedWith == "", name


class TestKamajiTenant:
    """`managementNetwork` and `managementCluster` in every encoding, in a preview (the user's
    failing `pulumi preview`): the workers are replaced with the network and wait for it, what the
    tenant makes in the management cluster goes with the cluster, and a value that names no
    resource is refused naming the input, never `'depends_on' was passed a value ... that was not a
    Resource`."""

    def test_a_reference_the_provider_rehydrates(self, provider):
        """The bare reference (what the Node.js SDK sends for a resource it holds:
        rpc.ts `serializeProperty` of a CustomResource, no packageVersion; without dependencies, as
        `excludeResourceReferencesFromDependencies` leaves a component's input): the provider
        process has command:local registered, so it is the Command itself."""
        provider.construct(TENANT_TYPE, "t", tenant_inputs(
            managementNetwork=reference(NETWORK, NETWORK_ID),
            managementCluster=reference(CLUSTER, CLUSTER_ID)))
        assert rehydrated(provider) == {NETWORK, CLUSTER}
        assert_tenant_uses_network_and_cluster(provider, ordered=False)

    def test_a_rehydrated_reference_inside_an_output(self, provider):
        """`mgmt.network` from a program whose SDK rehydrated it: an output value holding the
        reference, with the network's URN as its dependency (an Output of the Command here)."""
        provider.construct(TENANT_TYPE, "t", tenant_inputs(
            managementNetwork=output(reference(NETWORK, NETWORK_ID), (NETWORK,)),
            managementCluster=output(reference(CLUSTER, CLUSTER_ID), (CLUSTER,))),
            {"managementNetwork": [NETWORK], "managementCluster": [CLUSTER]})
        assert rehydrated(provider) == {NETWORK, CLUSTER}
        assert_tenant_uses_network_and_cluster(provider)

    def test_a_reference_the_provider_cannot_rehydrate_inside_an_output(self, provider):
        """A packageVersion no registered module satisfies (rpc.py `get_resource_module`,
        `check_version`: major 2 against pulumi-command 1.2.1) makes the reference its ID
        (`deserialize_resource`); the output value's dependency gives the URN the ID belongs to."""
        provider.construct(TENANT_TYPE, "t", tenant_inputs(
            managementNetwork=output(reference(NETWORK, NETWORK_ID, packageVersion="2.0.0"),
                                     (NETWORK, MANAGEMENT)),
            managementCluster=output(reference(CLUSTER, CLUSTER_ID, packageVersion="2.0.0"),
                                     (CLUSTER, MANAGEMENT))))
        assert rehydrated(provider) == set()
        assert_tenant_uses_network_and_cluster(provider)
        assert MANAGEMENT in registrations(provider)["t-worker-0"].dependencies

    def test_a_reference_the_provider_cannot_rehydrate_alone_is_refused(self, provider):
        """The same reference bare: only its ID reaches the component, and no dependency says
        which resource it is."""
        details = construct_error(provider, TENANT_TYPE, tenant_inputs(
            managementNetwork=reference(NETWORK, NETWORK_ID, packageVersion="2.0.0")))
        assert "management_network (managementNetwork) arrived as the ID 'lab-network10e7e10f'" in details
        assert "was not a Resource" not in details
        details = construct_error(provider, TENANT_TYPE, tenant_inputs(
            managementCluster=reference(CLUSTER, CLUSTER_ID, packageVersion="2.0.0")))
        assert "management_cluster (managementCluster) arrived as the ID 'lab-cluster3a41c2d9'" in details

    def test_the_id_a_program_sends_that_could_not_rehydrate_the_reference(self, provider):
        """The user's case: the Node.js program never loaded @pulumi/command, so its SDK made
        `mgmt.network` the ID (rpc.ts `deserializeProperty`) and sends it as an output value with
        the network's URN as dependency; before, `'depends_on' was passed a value
        lab-network10e7e10f that was not a Resource`."""
        provider.construct(TENANT_TYPE, "t", tenant_inputs(
            managementNetwork=output(NETWORK_ID, (NETWORK,)),
            managementCluster=output(CLUSTER_ID, (CLUSTER,))))
        assert_tenant_uses_network_and_cluster(provider)

    def test_the_id_a_program_sends_in_an_update(self, provider):
        """The same in `pulumi up` (no preview: every value known)."""
        provider.construct(TENANT_TYPE, "t", tenant_inputs(
            managementNetwork=output(NETWORK_ID, (NETWORK,)),
            managementCluster=output(CLUSTER_ID, (CLUSTER,))), dry_run=False)
        assert_tenant_uses_network_and_cluster(provider)

    def test_a_plain_id_with_input_dependencies(self, provider):
        """An ID string with the URN in inputDependencies: the provider wraps it in an Output with
        that dependency (server.py `_select_value`)."""
        provider.construct(TENANT_TYPE, "t", tenant_inputs(
            managementNetwork=NETWORK_ID, managementCluster=CLUSTER_ID),
            {"managementNetwork": [NETWORK], "managementCluster": [CLUSTER]})
        assert_tenant_uses_network_and_cluster(provider)

    def test_a_plain_id_alone_is_refused(self, provider):
        details = construct_error(provider, TENANT_TYPE, tenant_inputs(managementNetwork=NETWORK_ID))
        assert "KamajiTenant 't': management_network (managementNetwork) arrived as the ID" in details
        assert "was not a Resource" not in details

    def test_an_id_whose_dependencies_name_no_command_is_refused(self, provider):
        """Found only once the Output resolves: the registration that needs the URN fails, naming the
        input."""
        details = construct_error(provider, TENANT_TYPE, tenant_inputs(
            managementNetwork=output(NETWORK_ID, (MANAGEMENT,))))
        assert "management_network (managementNetwork) arrived as the ID 'lab-network10e7e10f'" in details
        assert "was not a Resource" not in details

    def test_a_urn_string(self, provider):
        """A URN is the SDK's DependencyResource (pulumi/resource.py): ordered after, replaced with,
        deleted with."""
        provider.construct(TENANT_TYPE, "t", tenant_inputs(managementNetwork=NETWORK,
                                                           managementCluster=CLUSTER))
        assert_tenant_uses_network_and_cluster(provider)

    def test_a_urn_of_another_type_is_refused(self, provider):
        details = construct_error(provider, TENANT_TYPE, tenant_inputs(managementNetwork=MANAGEMENT))
        assert (f"management_network (managementNetwork) is {MANAGEMENT}, a {MANAGEMENT_TYPE}, "
                f"not a {COMMAND}") in details

    def test_unknown_in_a_preview(self, provider):
        """The network being created: the program's Output is unknown (an output value without a
        value, or the unknown sentinel with inputDependencies); its dependency is the network."""
        provider.construct(TENANT_TYPE, "t", tenant_inputs(
            managementNetwork=output(dependencies=(NETWORK, MANAGEMENT), known=False),
            managementCluster=UNKNOWN), {"managementCluster": [CLUSTER]})
        assert_tenant_uses_network_and_cluster(provider)

    def test_unknown_without_dependencies_is_refused(self, provider):
        details = construct_error(provider, TENANT_TYPE, tenant_inputs(managementNetwork=UNKNOWN))
        assert "management_network (managementNetwork) arrived unknown and without dependencies" in details


class TestHamiNodePool:
    """`workers` (KamajiTenant's `workers` output): each GPU registration waits for its own worker
    and is replaced with it."""

    def assert_each_registration_follows_its_worker(self, provider: _Provider) -> None:
        registered = registrations(provider)
        for index, worker in enumerate(WORKERS):
            registration = registered[f"t-gpus-t-worker-{index}"]
            assert list(registration.replace_with) == [worker], index
            assert worker in registration.dependencies, index

    def test_references_the_provider_rehydrates(self, provider):
        provider.construct(gpu_component.TYPE_TOKEN, "t-gpus", pool_inputs(
            [reference(worker, worker_id) for worker, worker_id in zip(WORKERS, WORKER_IDS, strict=True)]))
        assert rehydrated(provider) == set(WORKERS)
        self.assert_each_registration_follows_its_worker(provider)

    def test_the_ids_a_program_sends_that_could_not_rehydrate_them(self, provider):
        """`team.workers` from a program that never loaded @pulumi/command: one output value of
        the IDs, with every worker's URN as dependency (in no order): each ID finds its own."""
        provider.construct(gpu_component.TYPE_TOKEN, "t-gpus", pool_inputs(
            output(WORKER_IDS, tuple(reversed(WORKERS)))))
        self.assert_each_registration_follows_its_worker(provider)

    def test_the_ids_in_an_update(self, provider):
        provider.construct(gpu_component.TYPE_TOKEN, "t-gpus", pool_inputs(
            output(WORKER_IDS, tuple(WORKERS))), dry_run=False)
        self.assert_each_registration_follows_its_worker(provider)

    def test_urn_strings(self, provider):
        provider.construct(gpu_component.TYPE_TOKEN, "t-gpus", pool_inputs(WORKERS))
        self.assert_each_registration_follows_its_worker(provider)

    def test_unknown_in_a_preview(self, provider):
        """The workers being created: the list is unknown; each node's worker is the dependency
        named after it."""
        provider.construct(gpu_component.TYPE_TOKEN, "t-gpus", pool_inputs(
            output(dependencies=tuple(WORKERS), known=False)))
        self.assert_each_registration_follows_its_worker(provider)

    def test_a_list_of_another_length_is_refused(self, provider):
        details = construct_error(provider, gpu_component.TYPE_TOKEN, pool_inputs(
            output([*WORKER_IDS, "t-worker-2deadbeef"], tuple(WORKERS))))
        assert "HamiNodePool 't-gpus': workers: 3 workers for 2 nodes (t-worker-0, t-worker-1)" in details

    def test_plain_ids_are_refused(self, provider):
        details = construct_error(provider, gpu_component.TYPE_TOKEN, pool_inputs(WORKER_IDS))
        assert ("HamiNodePool 't-gpus': workers[0] (t-worker-0) arrived as the ID 't-worker-05b6e1c7a'"
                in details)


class TestProviders:
    """`managementProvider`: a reference the provider rehydrates is the provider the tenant's
    management-side resources use (pulumi:providers:kubernetes is registered by pulumi_kubernetes);
    an ID is refused, naming the input and the kubeconfig to pass instead (providers.py)."""

    PROVIDER_URN = urn("pulumi:providers:kubernetes", "lab-k8s", MANAGEMENT_TYPE)

    def test_a_provider_reference(self, provider):
        inputs = tenant_inputs(managementProvider=reference(self.PROVIDER_URN, "provider-id"))
        del inputs["managementKubeconfig"]
        provider.construct(TENANT_TYPE, "t", inputs)
        assert rehydrated(provider) == {self.PROVIDER_URN}
        assert registrations(provider)["t-namespace"].provider == f"{self.PROVIDER_URN}::lab-k8s10e7e10f"

    def test_a_provider_id_is_refused(self, provider):
        inputs = tenant_inputs(managementProvider="provider-id")
        del inputs["managementKubeconfig"]
        details = construct_error(provider, TENANT_TYPE, inputs)
        assert "management_provider arrived as str, not a provider resource" in details
