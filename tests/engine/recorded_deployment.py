"""A recorded stack (tests/recorded_state.py's record of what a version of the program registered)
deployed as that version's `pulumi up` would have left it: its Kubernetes objects on real API
servers of the sim tier (the management cluster and one per tenant, each with the admin Secret
Kamaji would have written), and its Pulumi state, as a deployment document (apitype DeploymentV3,
pulumi sdk/v3 v3.276.0 go/common/apitype/core.go) that `pulumi stack import` takes, its secrets in
plaintext so that the import encrypts them for the tier's passphrase.

Each resource's state is what its provider writes, at the versions the tier runs:
- a command (pulumi-command 1.2.1): its inputs with `stdout` and `stderr`, secret where its
  `additionalSecretOutputs` say; a kubeconfig command printed the management cluster's kubeconfig,
  the Kamaji chart's fetch the folder its release names;
- a Kubernetes object (pulumi-kubernetes provider.go `checkpointObject`): the live object as the
  API server answered the provider's server-side apply (with the provider's field manager), with
  `__inputs`, `__initialApiVersion` and `__fieldManager`; its id `<namespace>/<name>`;
- a Helm release (helm_release.go `checkpointRelease`): the release, its inputs as a secret
  `__inputs` (no objects: Release v3's preview never reads the cluster);
- a read (`Secret.get`): an external resource with the object read;
- providers, explicit and default (`default_<version>`, pkg/resource/deploy/providers), with the
  plugin version among their inputs.

What the recording's mocks made up is replaced everywhere by what the tier really has: the
kubeconfigs (by the mock's sentinel: the management cluster's, or a tenant's) and each control
plane's UID (the admin Secret's controller, as Kamaji sets it). A tenant's API keeps the address
the recording gave it, which the tier's proxy joins to its API server: what is rendered from it
(kube-proxy's config, and the hash its DaemonSet carries) stays as that version's `up` left it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

from tests.engine.proxy import TierProxy
from tests.harness import (
    MGMT_KUBECONFIG_SENTINEL,
    SECRET_SIG,
    SECRET_VALUE,
    TENANT_KUBECONFIG_SENTINEL,
    _plain,
    tenant_lb_address,
)
from tests.recorded_state import UPGRADE_FROM, recorded_state
from tests.sim.cluster import TenantApi, tenant_api

RESOURCE_REFERENCE = "5cf8f73096256a8f31e491e813e4eb8e"
PLUGIN_VERSIONS = {"kubernetes": "4.34.2", "command": "1.2.1"}
ENGINE_VERSION = "v3.276.0"
# The manifest's integrity check (pkg/resource/deploy/manifest.go `NewMagic`): sha256 of the version.
MAGIC = hashlib.sha256(ENGINE_VERSION.encode()).hexdigest()
COMMAND_PACKAGE = "command:"
RELEASE = "kubernetes:helm.sh/v3:Release"
KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"
STACK_TYPE = "pulumi:pulumi:Stack"
NAMESPACE = "kubernetes:core/v1:Namespace"
TCP_KIND = "TenantControlPlane"
ADMIN_KUBECONFIG_KEY = "admin.conf"
MANAGEMENT = "management"
# The recording mocks' tenant API port (tests/harness.py PlatformMocks: `https://<address>:6443`).
MOCK_API_PORT = 6443
SERVICE_CIDR = "10.96.0.0/12"
CRD_TIMEOUT = 60
# Kamaji publishes its chart only as this version (clastix/kamaji charts/kamaji/Chart.yaml).
KAMAJI_CHART_VERSION = "0.0.0+latest"


def _secret(value: Any) -> dict[str, str]:
    return {SECRET_SIG: SECRET_VALUE, "plaintext": json.dumps(value)}


def _state_value(value: Any) -> Any:
    """A wire value as a deployment holds it: secrets in plaintext (encrypted by the import)."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG) == SECRET_VALUE:
            return _secret(_plain(value.get("value")))
        if value.get(SECRET_SIG) == RESOURCE_REFERENCE:
            return value
        return {key: _state_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_state_value(item) for item in value]
    return value


def real_urns(text: str) -> str:
    """The recording's URNs as the engine makes them: the mocks put the root stack's type in a
    top-level component's type chain (`pulumi:pulumi:Stack$...`), the engine leaves it out
    (pulumi pkg/v3 v3.276.0 resource/deploy/source_eval.go: the parent's type unless it is the
    root stack's, `resource.RootStackType`)."""
    return text.replace(f"::{STACK_TYPE}$", "::")


def _is_mock_kubeconfig(value: str) -> bool:
    """A kubeconfig the recording's mocks made (tests/harness.py fake_kubeconfig, with a sentinel
    token); other kubeconfigs in inputs (kube-proxy's, in its ConfigMap) are the program's own."""
    return "clusters:" in value and (MGMT_KUBECONFIG_SENTINEL in value or TENANT_KUBECONFIG_SENTINEL in value)


def cluster_of_kubeconfig(kubeconfig: str) -> str:
    """Which cluster a recorded (mock) kubeconfig reaches: `management` or a tenant's name."""
    if MGMT_KUBECONFIG_SENTINEL in kubeconfig:
        return MANAGEMENT
    token = yaml.safe_load(kubeconfig)["users"][0]["user"]["token"]
    secret_name = token.removeprefix(f"{TENANT_KUBECONFIG_SENTINEL}-")
    return secret_name.removesuffix("-admin-kubeconfig")


def tenant_address(tenant: str) -> str:
    """The address the recording's mocks gave the tenant's API (tests/harness.py PlatformMocks,
    from its admin Secret's name): what its kubeconfig, its endpoint and everything rendered
    from them (kube-proxy's config and its hash, kindnet's) say."""
    return f"{tenant_lb_address(f'{tenant}-admin-kubeconfig')}:{MOCK_API_PORT}"


@dataclass
class Clusters:
    """The tier's API servers standing in for the recorded stack's clusters."""

    apis: dict[str, TenantApi]

    def kubeconfig(self, cluster: str) -> str:
        """The admin kubeconfig of a cluster: a tenant's names the recorded address, which the
        tier's proxy joins to its API server (tests/engine/proxy.py `tunnel`). Without a last
        newline, as `pulumi config set --secret managementKubeconfig < file` stores it."""
        document = yaml.safe_load(self.apis[cluster].kubeconfig.read_text())
        if cluster != MANAGEMENT:
            document["clusters"][0]["cluster"]["server"] = f"https://{tenant_address(cluster)}"
        return yaml.safe_dump(document).removesuffix("\n")

    def loopback_port(self, cluster: str) -> int:
        return int(self.apis[cluster].url.rsplit(":", 1)[1])


@contextmanager
def clusters(names: list[str], bin_dir: Path, crds: list[dict[str, Any]],
             proxy: TierProxy) -> Iterator[Clusters]:
    """An API server for the management cluster (with `crds`) and one for each tenant, reached
    through the proxy at the tenant's recorded address."""
    with ExitStack() as stack:
        managers = {name: tenant_api(SimpleNamespace(name=name, service_cidr=SERVICE_CIDR), bin_dir)
                    for name in [MANAGEMENT, *names]}
        # Started together: each waits seconds for its post-start hooks.
        with ThreadPoolExecutor(max_workers=len(managers)) as pool:
            started = {name: pool.submit(manager.__enter__) for name, manager in managers.items()}
        for name, manager in managers.items():
            if started[name].exception() is None:
                stack.push(manager.__exit__)
        apis = {name: future.result() for name, future in started.items()}
        if crds:
            apis[MANAGEMENT].apply(crds)
            for crd in crds:
                _wait_established(apis[MANAGEMENT], crd["metadata"]["name"])
        running = Clusters(apis)
        for name in names:
            proxy.tunnel(tenant_address(name), running.loopback_port(name))
            stack.callback(proxy.close_tunnel, tenant_address(name))
        yield running


def _wait_established(api: TenantApi, crd: str) -> None:
    """Until the CRD serves (`kubectl wait` fails at once while its status has no conditions)."""
    deadline = time.monotonic() + CRD_TIMEOUT
    while time.monotonic() < deadline:
        status = api.kubectl("get", f"crd/{crd}", "-o",
                             "jsonpath={.status.conditions[?(@.type=='Established')].status}")
        if status.stdout.strip() == "True":
            return
        time.sleep(0.5)
    raise AssertionError(f"CRD {crd} not established within {CRD_TIMEOUT}s")


@dataclass
class Live:
    """What the deployment created on the API servers: objects by URN, reads by URN."""

    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    reads: dict[str, dict[str, Any]] = field(default_factory=dict)
    replacements: dict[str, str] = field(default_factory=dict)


def field_manager(urn: str) -> str:
    """The provider's field manager for one object (`pulumi-kubernetes-<random>`, kept in its
    state: provider.go `fieldManagerName`), made stable per URN."""
    return "pulumi-kubernetes-" + hashlib.sha256(urn.encode()).hexdigest()[:8]


def object_id(manifest: dict[str, Any]) -> str:
    metadata = manifest.get("metadata", {})
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata['name']}" if namespace else metadata["name"]


class RecordedStack:
    """One recorded stack: its records, the cluster each of its Kubernetes resources lives on,
    and the mock values to replace."""

    def __init__(self, version: str, record: str, stack: str, project: str,
                 folder: Path = UPGRADE_FROM, exports: dict[str, Any] | None = None) -> None:
        self.version = version
        self.stack = stack
        self.project = project
        # The stack's outputs, where the recording kept them (a recording of today's program).
        self.exports = exports or {}
        text = (folder / version / f"{record}.json").read_text()
        by_urn = {item["urn"]: item for item in json.loads(real_urns(text))}
        ordered = recorded_state(version, record, folder).registrations
        self.records = [by_urn[real_urns(registration.urn)] for registration in ordered]
        self.by_urn = by_urn

    def provider_record(self, record: dict[str, Any]) -> dict[str, Any] | None:
        urn = record["provider"].rsplit("::", 1)[0] if record["provider"] else ""
        return self.by_urn.get(urn)

    def cluster(self, record: dict[str, Any]) -> str:
        """The cluster a Kubernetes resource is on: its provider's kubeconfig's."""
        provider = record if record["type"] == KUBERNETES_PROVIDER else self.provider_record(record)
        assert provider is not None, f"{record['urn']} has no explicit provider"
        return cluster_of_kubeconfig(_plain(provider["wire"])["kubeconfig"])

    def tenants(self) -> list[str]:
        return sorted({self.cluster(record) for record in self.records
                       if record["type"] == KUBERNETES_PROVIDER} - {MANAGEMENT})

    def kubernetes_objects(self) -> list[dict[str, Any]]:
        return [record for record in self.records
                if record["custom"] and record["type"].startswith("kubernetes:") and record["type"] != RELEASE
                and not record["options"].get("read")]

    def local_charts(self) -> list[tuple[str, str, str]]:
        """(folder, chart name, version) of every release whose chart is a folder of the project
        (Kamaji's, fetched by `make kamaji-chart` into `.charts/`), for stand-ins of them."""
        return [(chart, _plain(record["wire"]).get("name", record["name"]), KAMAJI_CHART_VERSION)
                for record in self.records if record["type"] == RELEASE
                for chart in [_plain(record["wire"])["chart"]] if chart.startswith((".", "/"))]

    def reads(self) -> list[dict[str, Any]]:
        return [record for record in self.records if record["options"].get("read")]

    @property
    def stack_urn(self) -> str:
        return f"urn:pulumi:{self.stack}::{self.project}::pulumi:pulumi:Stack::{self.project}-{self.stack}"


def _apply(api: TenantApi, manifest: dict[str, Any], manager: str) -> dict[str, Any]:
    result = api.kubectl("apply", "--server-side", "--force-conflicts", f"--field-manager={manager}",
                         "-o", "json", "-f", "-", stdin=json.dumps(manifest))
    if result.returncode != 0:
        raise AssertionError(f"the API server refused {object_id(manifest)}: {result.stderr}")
    return json.loads(result.stdout)


def _admin_secret(namespace: str, name: str, kubeconfig: str,
                  control_plane: dict[str, Any]) -> dict[str, Any]:
    """The Secret Kamaji writes for a control plane: its admin kubeconfig, the TCP its controller."""
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace, "ownerReferences": [{
                "apiVersion": control_plane["apiVersion"], "kind": TCP_KIND,
                "name": control_plane["metadata"]["name"], "uid": control_plane["metadata"]["uid"],
                "controller": True, "blockOwnerDeletion": True}]},
            "data": {ADMIN_KUBECONFIG_KEY: base64.b64encode(kubeconfig.encode()).decode()}}


def deploy(recorded: RecordedStack, running: Clusters) -> Live:
    """Create the recorded stack's objects on the API servers, in the order `up` created them, and
    note what replaces each mock value."""
    live = Live()
    declared = {(recorded.cluster(record), _plain(record["wire"])["metadata"]["name"])
                for record in recorded.kubernetes_objects() if record["type"] == NAMESPACE}
    for record in recorded.kubernetes_objects():
        cluster = recorded.cluster(record)
        manifest = _replace(_plain(record["wire"]), live.replacements)
        namespace = manifest.get("metadata", {}).get("namespace")
        if namespace and (cluster, namespace) not in declared:  # a chart's (created_namespace)
            running.apis[cluster].apply([{"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": namespace}}], manager="helm")
        if record["type"] == "kubernetes:core/v1:NodePatch":  # a patch of the node its worker registered
            running.apis[cluster].apply([{"apiVersion": "v1", "kind": "Node",
                                          "metadata": {"name": manifest["metadata"]["name"]}}],
                                        manager="kubelet")
        applied = _apply(running.apis[cluster], manifest, field_manager(record["urn"]))
        live.objects[record["urn"]] = applied
        if applied.get("kind") == TCP_KIND:
            live.replacements[f"uid-{record['name']}"] = applied["metadata"]["uid"]
    for record in recorded.reads():
        namespace, name = record["options"]["id"].split("/")
        tenant = name.removesuffix("-admin-kubeconfig")
        control_plane = next(obj for obj in live.objects.values()
                             if obj.get("kind") == TCP_KIND and obj["metadata"]["namespace"] == namespace)
        api = running.apis[recorded.cluster(record)]
        secret = _admin_secret(namespace, name, running.kubeconfig(tenant), control_plane)
        live.reads[record["urn"]] = _apply(api, secret, "kamaji")
    return live


def _replace(value: Any, replacements: dict[str, str], kubeconfigs: Clusters | None = None) -> Any:
    """The value with every mock string replaced (substrings), and every mock kubeconfig by the
    cluster's real one."""
    if isinstance(value, dict):
        return {key: _replace(item, replacements, kubeconfigs) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace(item, replacements, kubeconfigs) for item in value]
    if isinstance(value, str):
        if kubeconfigs is not None and _is_mock_kubeconfig(value):
            return kubeconfigs.kubeconfig(cluster_of_kubeconfig(value))
        for mock, real in replacements.items():
            value = value.replace(mock, real)
    return value


def _package(type_: str) -> str:
    return type_.split(":", 1)[0]


class Deployment:
    """The state document of a deployed recorded stack."""

    def __init__(self, recorded: RecordedStack, running: Clusters, live: Live) -> None:
        self.recorded = recorded
        self.running = running
        self.live = live
        self.resources: list[dict[str, Any]] = []
        self.default_providers: dict[str, str] = {}
        # (type, name) -> the inputs the provider checked (tests/engine/checked_inputs.py).
        self.checked: dict[tuple[str, str], dict[str, Any]] = {}

    def _real(self, value: Any) -> Any:
        return _replace(value, self.live.replacements, self.running)

    def to_check(self) -> list[dict[str, Any]]:
        """The custom resources as tests/engine/check_replay.py registers them, providers first."""
        resources = []
        for record in self.recorded.records:
            if not record["custom"] or record["options"].get("read"):
                continue
            provider = self.recorded.provider_record(record)
            resources.append({"type": record["type"], "name": record["name"],
                              "inputs": self._real(record["wire"]),
                              "provider": provider["name"] if provider else ""})
        return sorted(resources, key=lambda resource: not resource["type"].startswith("pulumi:providers:"))

    def _provider_reference(self, record: dict[str, Any]) -> str:
        if record["provider"]:
            return record["provider"]
        package = _package(record["type"])
        if package not in self.default_providers:
            version = PLUGIN_VERSIONS[package]
            urn = (f"urn:pulumi:{self.recorded.stack}::{self.recorded.project}::pulumi:providers:{package}"
                   f"::default_{version.replace('.', '_')}")
            provider_id = str(uuid.uuid5(uuid.NAMESPACE_URL, urn))
            self.resources.append({"urn": urn, "custom": True, "id": provider_id,
                                   "type": f"pulumi:providers:{package}", "inputs": {"version": version},
                                   "outputs": {"version": version}})
            self.default_providers[package] = f"{urn}::{provider_id}"
        return self.default_providers[package]

    def _command_outputs(self, record: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
        stdout = ""
        if record["name"].endswith("-kubeconfig"):
            stdout = self.running.kubeconfig(MANAGEMENT)
        elif record["name"].endswith("-kamaji-chart"):
            release = next(other for other in self.recorded.records
                           if other["type"] == RELEASE and other["name"].endswith("-kamaji"))
            stdout = _plain(release["wire"])["chart"] + "\n"
        secret_outputs = set(record["options"].get("additionalSecretOutputs", []))
        printed = {"stdout": stdout, "stderr": ""}
        return {**inputs, **{key: _secret(value) if key in secret_outputs else value
                             for key, value in printed.items()}}

    def _custom(self, record: dict[str, Any], resource: dict[str, Any]) -> None:
        type_ = record["type"]
        wire = self.checked.get((type_, record["name"])) or self._real(record["wire"])
        inputs = _state_value(wire)
        plain = _plain(wire)
        if type_.startswith("pulumi:providers:"):
            inputs = {**inputs, "version": PLUGIN_VERSIONS[type_.rsplit(":", 1)[-1]]}
            resource.update(id=f"{record['name']}_id", inputs=inputs, outputs=inputs)
            return
        resource["provider"] = self._provider_reference(record)
        if type_.startswith(COMMAND_PACKAGE):  # local and remote commands write the same state
            resource.update(id=f"{record['name']}_id", inputs=inputs,
                            outputs=self._command_outputs(record, inputs))
        elif type_ == RELEASE:
            resource.update(id=f"{plain.get('namespace', 'default')}/{plain.get('name', record['name'])}",
                            inputs=inputs, outputs={**inputs, "status": {
                                "name": plain.get("name", ""), "namespace": plain.get("namespace", ""),
                                "chart": plain.get("chart", ""), "version": plain.get("version", ""),
                                "status": "deployed", "revision": 1}, "__inputs": _secret(plain)})
        else:
            applied = self.live.objects[record["urn"]]
            resource.update(id=object_id(applied), inputs=inputs, outputs={
                **applied, "__inputs": inputs, "__initialApiVersion": applied["apiVersion"],
                "__fieldManager": field_manager(record["urn"])})

    def _resource(self, record: dict[str, Any]) -> dict[str, Any]:
        options = record["options"]
        resource: dict[str, Any] = {"urn": record["urn"], "custom": record["custom"], "type": record["type"],
                                    "parent": record["parent"] or self.recorded.stack_urn,
                                    "dependencies": record["dependencies"]}
        if options.get("read"):
            resource.update(id=options["id"], external=True, inputs={},
                            outputs=self.live.reads[record["urn"]], provider=self._provider_reference(record))
            return resource
        if record["custom"]:
            self._custom(record, resource)
        else:
            resource["inputs"] = _state_value(self._real(record["wire"]))
        for key in ("protect", "retainOnDelete", "deletedWith", "additionalSecretOutputs", "replaceOnChanges",
                    "ignoreChanges", "replaceWith", "replacementTrigger", "propertyDependencies"):
            if options.get(key):
                resource[key] = options[key]
        return resource

    def document(self, secrets_providers: dict[str, Any]) -> dict[str, Any]:
        """The deployment, its secrets to be encrypted by `secrets_providers` (the target stack's
        own, from its export: an import keeps the document's, and has no other key to use)."""
        self.resources = [{"urn": self.recorded.stack_urn, "custom": False, "type": STACK_TYPE,
                           "outputs": _state_value(self._real(self.recorded.exports))}]
        self.default_providers = {}
        for record in self.recorded.records:
            self.resources.append(self._resource(record))
        return {"version": 3, "deployment": {
            "manifest": {"time": "2026-12-04T00:00:00Z", "magic": MAGIC, "version": ENGINE_VERSION},
            "secrets_providers": secrets_providers, "resources": self.resources}}
