"""The checks of an existing management cluster, for real: the cluster check and the admin-access
wait run with the kubectl built from Kubernetes 1.35.4 against a real kube-apiserver (marker `sim`).

The API server holds the objects the check reads (StorageClasses, DaemonSets, a ClusterRole, CRDs);
no controller runs, so the objects are all there is, as the check sees them on a real cluster too.
What this does not show: a real CNI or ServiceLB at work (the check never looks at one, only at
their objects). The admin-access wait meets a real API server, one that refuses its credentials, a
closed port and a listener that never answers.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.management import access, existing
from kamaji_hami_platform.tenant import admin_access
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV
from tests.harness import dev_stack_config
from tests.project.shell_cases import production_platform
from tests.sim.cluster import TenantApi, tenant_api, toolchain_or_skip

pytestmark = pytest.mark.sim

SCRIPT_TIMEOUT = 120


@pytest.fixture(scope="module")
def api() -> Iterator[TenantApi]:
    bin_dir = toolchain_or_skip()
    with tenant_api(parse_config(dev_stack_config()).tenants[0], bin_dir) as running:
        yield running


@pytest.fixture(scope="module")
def platform():
    return production_platform()


def run(script: str, api: TenantApi, **env: str) -> subprocess.CompletedProcess[str]:
    """`script` as the local Command runs it on this host, with the built kubectl first on PATH."""
    environment = {**os.environ, "PATH": f"{api.bin}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run(["/bin/sh", "-c", script], env=environment, capture_output=True, text=True,
                          timeout=SCRIPT_TIMEOUT, check=False)


def check(api: TenantApi, platform) -> subprocess.CompletedProcess[str]:
    script = existing.cluster_check_script(platform.management, access.MANAGEMENT_KUBECONFIG_ENV)
    return run(script, api, **{access.MANAGEMENT_KUBECONFIG_ENV: api.kubeconfig.read_text()})


def crd(plural: str, kind: str) -> dict:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.cert-manager.io"},
            "spec": {"group": "cert-manager.io", "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}]}}


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def storage_class(name: str, annotations: dict[str, str] | None = None) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "example.com/none",
            "metadata": {"name": name, "annotations": annotations or {}}}


def daemonset(where: str, labels: dict[str, str] | None = None) -> dict:
    ns, name = where.split("/")
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "agent", "image": "registry.example/agent:1"}]}}}}


def delete(api: TenantApi, *what: str) -> None:
    result = api.kubectl("delete", "--ignore-not-found", "--wait=false", *what)
    assert result.returncode == 0, result.stderr


CERT_MANAGER = (crd("certificates", "Certificate"), crd("issuers", "Issuer"))


class TestClusterCheck:
    """Each test sets up what it needs on the module's one API server, and removes what it adds."""

    def test_an_empty_cluster_lacks_cert_manager_and_a_default_class_and_cannot_tell_its_cni(
            self, api, platform):
        delete(api, "crd/certificates.cert-manager.io", "crd/issuers.cert-manager.io")
        result = check(api, platform)
        assert result.returncode == 1, result.stdout
        items = result.stderr.strip().split("\n  - ")[1:]
        assert [item.split(":")[0] for item in items] == ["cert-manager", "a default StorageClass"]
        assert "(StorageClasses: none)" in items[1]
        (warning,) = existing.check_warnings(result.stdout)
        assert warning.startswith("cannot tell whether the CNI enforces NetworkPolicy: no DaemonSet")

    def test_a_cluster_with_everything_passes(self, api, platform):
        api.apply([*CERT_MANAGER, namespace("calico-system"), storage_class("slow"),
                   storage_class("standard", {"storageclass.kubernetes.io/is-default-class": "true"}),
                   daemonset("kube-system/kube-proxy"), daemonset("calico-system/calico-node")])
        try:
            result = check(api, platform)
            assert result.returncode == 0, result.stderr
            assert "cert-manager is installed" in result.stdout
            assert "default StorageClass: standard\n" in result.stdout
            assert "the CNI of DaemonSet calico-system/calico-node enforces it" in result.stdout
            assert existing.check_warnings(result.stdout) == []
        finally:
            delete(api, "storageclass/standard", "storageclass/slow")
            delete(api, "daemonset/calico-node", "-n", "calico-system")

    def test_the_beta_annotation_flannel_and_servicelb_as_kubectl_prints_them(self, api, platform):
        api.apply([*CERT_MANAGER, namespace("kube-flannel"),
                   storage_class("legacy", {"storageclass.beta.kubernetes.io/is-default-class": "true"}),
                   daemonset("kube-flannel/kube-flannel-ds"),
                   daemonset("kube-system/svclb-traefik-0c4a2f1e",
                             {existing.K3S_SERVICELB_SVCNAME_LABEL: "traefik"})])
        try:
            result = check(api, platform)
            assert result.returncode == 1
            assert "default StorageClass: legacy" in result.stdout
            items = result.stderr.strip().split("\n  - ")[1:]
            assert [item.split(":")[0] for item in items] == [
                "a CNI that enforces NetworkPolicy",
                "no other LoadBalancer controller beside the platform's MetalLB (pool "
                "10.20.0.200-10.20.0.220)"]
            assert "flannel (DaemonSet kube-flannel/kube-flannel-ds)" in items[0]
            assert "(DaemonSets kube-system/svclb-traefik-0c4a2f1e)" in items[1]
        finally:
            delete(api, "storageclass/legacy")
            delete(api, "daemonset/kube-flannel-ds", "-n", "kube-flannel")
            delete(api, "daemonset/svclb-traefik-0c4a2f1e", "-n", "kube-system")

    @pytest.mark.parametrize(("resources", "passes"), [
        (["nodes", "pods", "namespaces", "networkpolicies"], True),   # kind v0.24.0 and newer
        (["nodes", "pods", "namespaces"], False),                      # kind v0.23.0
    ])
    def test_kindnet_by_its_cluster_role(self, api, platform, resources, passes):
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "kindnet"},
                "rules": [{"apiGroups": [""], "resources": resources[:3], "verbs": ["list", "watch"]},
                          *([{"apiGroups": ["networking.k8s.io"], "resources": resources[3:],
                              "verbs": ["list", "watch"]}] if resources[3:] else [])]}
        api.apply([role, daemonset("kube-system/kindnet")], force=True)
        try:
            result = check(api, platform)
            if passes:
                assert "kindnet (kube-system/kindnet) enforces it" in result.stdout, result.stderr
            else:
                assert "kindnet (kube-system/kindnet) has no access to NetworkPolicies" in result.stderr
        finally:
            delete(api, "clusterrole/kindnet")
            delete(api, "daemonset/kindnet", "-n", "kube-system")


def silent_listener() -> tuple[socket.socket, int]:
    """A port that accepts connections and never answers: a TLS handshake there waits forever."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return server, server.getsockname()[1]


def kubeconfig_for(server: str, token: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "t",
        "clusters": [{"name": "t", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": token}}]})


class TestAdminAccessWait:
    def wait(self, api: TenantApi, platform, kubeconfig: str, call_timeout: int = 30):
        script = admin_access.tenant_admin_access_script(platform.tenants[0], platform.management,
                                                         bound=0, interval=0, call_timeout=call_timeout)
        return run(script, api, **{KUBECONFIG_ENV: kubeconfig})

    def test_an_admin_is_authorized(self, api, platform):
        result = self.wait(api, platform, api.kubeconfig.read_text())
        assert result.returncode == 0, result.stderr
        assert "tenant ml-prod: the admin kubeconfig is authorized" in result.stdout

    def test_an_api_that_answers_with_an_error_is_not_a_network_problem(self, api, platform):
        result = self.wait(api, platform, kubeconfig_for(api.url, "not-a-token"))
        assert result.returncode == 1
        assert "was not authorized within 0s (last answer: error: You must be logged in to the server" \
            in result.stderr
        assert "apiClientCidrs" not in result.stderr

    def test_a_closed_port_did_not_answer(self, api, platform):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        result = self.wait(api, platform, kubeconfig_for(f"https://127.0.0.1:{port}", "t"))
        assert result.returncode == 1
        assert f"did not answer within 0s (1 of 1 tries unanswered; last: The connection to the server " \
            f"127.0.0.1:{port} was refused" in result.stderr
        assert "management.apiClientCidrs (10.20.0.0/24)" in result.stderr

    def test_a_silent_api_is_given_up_by_kubectl(self, api, platform):
        """A listener that never answers: kubectl gives up within its request timeout (15s); here
        its TLS handshake timeout (10s) comes first. Either is "Unable to connect to the server"."""
        server, port = silent_listener()
        try:
            result = self.wait(api, platform, kubeconfig_for(f"https://127.0.0.1:{port}", "t"))
        finally:
            server.close()
        assert result.returncode == 1
        assert "(1 of 1 tries unanswered; last: Unable to connect to the server: " in result.stderr

    def test_a_call_that_outlives_its_bound_is_cut_off(self, api, platform):
        server, port = silent_listener()
        try:
            kubeconfig = kubeconfig_for(f"https://127.0.0.1:{port}", "t")
            result = self.wait(api, platform, kubeconfig, call_timeout=2)
        finally:
            server.close()
        assert result.returncode == 1
        assert "(1 of 1 tries unanswered; last: no answer within 2s)" in result.stderr


def test_the_scripts_name_no_path_of_this_machine(platform):
    assert str(Path.home()) not in existing.cluster_check_script(platform.management, "KC")
