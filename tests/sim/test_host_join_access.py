"""A host's join token gets no certificate by itself, on a real kube-apiserver and
kube-controller-manager 1.35 (marker `sim`).

The tenant's node bootstrap RBAC is made by real kubeadm (`kubeadm init phase bootstrap-token`,
`upload-config kubeadm`, `upload-config kubelet`: the functions Kamaji's PhaseBootstrapToken and
PhaseUploadConfig* call, Kamaji internal/kubeadm/bootstraptoken.go, uploadconfig.go), the
platform's bindings for the hosts' token group (tenant/host_join_access.py) are applied as the
platform applies them, and kube-controller-manager runs the CSR approver and signer
(`--controllers=csrapproving,csrsigning`, signing with the API server's client CA), as the
tenant's kube-controller-manager does with Kamaji's `--controllers=*,...`. A kubelet's TLS
bootstrap is played by kubectl with the token: a CertificateSigningRequest as the kubelet makes it
(kubernetes v1.35.4 staging/src/k8s.io/client-go/util/certificate/csr/csr.go, pkg/kubelet/
certificate/bootstrap/bootstrap.go requestNodeCertificate: subject O=system:nodes,
CN=system:node:<name>, signer kubernetes.io/kube-apiserver-client-kubelet). The join's approval
is the join script's own bash (tenant/scripts/host_csr_approval.bash).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kamaji_hami_platform.config import TenantConfig, load_stack_file, parse_config
from kamaji_hami_platform.tenant import host_join, host_join_access, node_admission
from tests.harness import PRODUCTION_STACK, dev_stack_config
from tests.sim.cluster import (
    COMMAND_TIMEOUT,
    TenantApi,
    free_port,
    tenant_api,
    toolchain_or_skip,
)

pytestmark = pytest.mark.sim

KUBEADM_NODE_GROUP = "system:bootstrappers:kubeadm:default-node-token"
HOST = "gpu-host-1"
DECIDED_WITHIN = 60  # seconds; the approver and signer act within a second or two
SIGNER = host_join.KUBELET_SIGNER
# A kubelet's request (client-go util/certificate/csr: usages of an ECDSA key).
KUBELET_USAGES = ["digital signature", "client auth"]
KUBEADM_CONFIG = """apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens: []
nodeRegistration:
  name: sim-control-plane
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.4
"""
# The phases whose RBAC a tenant's join relies on, in Kamaji's order (kubernetesVersion is set, so
# kubeadm asks no one on the internet for it).
KUBEADM_PHASES = (("upload-config", "kubeadm"), ("upload-config", "kubelet"), ("bootstrap-token",))


@dataclass
class Tenant:
    api: TenantApi
    work: Path

    def token(self, group: str) -> tuple[str, Path]:
        """A bootstrap token in `group`, as the join mints it: its id and a kubeconfig that
        authenticates with it."""
        token_id, secret = _random(6), _random(16)
        created = self.api.kubectl("create", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
            "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
            "stringData": {"token-id": token_id, "token-secret": secret, "auth-extra-groups": group,
                           "usage-bootstrap-authentication": "true"}}))
        assert created.returncode == 0, created.stderr
        return token_id, self.api.token_kubeconfig(f"{token_id}.{secret}")

    def request_file(self, node: str, signer: str = SIGNER,
                     organization: str = node_admission.NODES_GROUP) -> tuple[str, Path]:
        """A kubelet's certificate request for `node` (its name and a file to create it from)."""
        key, csr = self.work / f"{_random(8)}.key", self.work / "request.csr"
        subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key),
                        "-subj", f"/O={organization}/CN=system:node:{node}", "-out", str(csr)],
                       capture_output=True, check=True, timeout=COMMAND_TIMEOUT)
        name = f"node-csr-{_random(10)}"
        document = self.work / f"{name}.json"
        document.write_text(json.dumps({
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": base64.b64encode(csr.read_bytes()).decode(), "signerName": signer,
                     "usages": KUBELET_USAGES}}))
        return name, document

    def request(self, kubeconfig: Path, node: str, signer: str = SIGNER,
                organization: str = node_admission.NODES_GROUP) -> str:
        """A kubelet's certificate request for `node`, made with the token; its name."""
        name, document = self.request_file(node, signer, organization)
        created = self.api.kubectl("create", "-f", str(document), kubeconfig=kubeconfig)
        assert created.returncode == 0, created.stderr
        return name

    def csr(self, name: str) -> dict:
        return self.api.get("csr", name)

    def decision(self, name: str) -> str | None:
        conditions = self.csr(name).get("status", {}).get("conditions") or []
        return conditions[0]["type"] if conditions else None

    def wait_issued(self, name: str) -> str:
        """The certificate the signer issued (PEM), waiting for it."""
        deadline = time.monotonic() + DECIDED_WITHIN
        while time.monotonic() < deadline:
            certificate = self.csr(name).get("status", {}).get("certificate")
            if certificate:
                return base64.b64decode(certificate).decode()
            time.sleep(0.5)
        raise AssertionError(f"{name} was not issued within {DECIDED_WITHIN}s: {self.csr(name)}")

    def judge(self, token_id: str, node: str = HOST, then: str = "") -> subprocess.CompletedProcess[str]:
        """A round of the join's approval (`judge_csrs`), as the tenant's admin; with `then`
        (shell), that, then a second round of the same join."""
        round_ = ('judge_csrs; printf "rc=%s approved=%s refused=%s\\n" "$?" "$csr_approved" '
                  '"$csr_refused"\n')
        script = (host_join.tenant_kubectl() + f"token_id={token_id} node={node}\n"
                  + host_join.csr_approval() + round_ + (f"{then}\n{round_}" if then else ""))
        env = {**os.environ, "PATH": f"{self.api.bin}:{os.environ['PATH']}",
               host_join.KUBECONFIG_ENV: self.api.kubeconfig.read_text()}
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env,
                              timeout=COMMAND_TIMEOUT, check=False)


def _random(length: int) -> str:
    return "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(length))


def _subject(certificate: str) -> str:
    printed = subprocess.run(["openssl", "x509", "-noout", "-subject", "-nameopt", "RFC2253"],
                             input=certificate, capture_output=True, text=True, check=True,
                             timeout=COMMAND_TIMEOUT).stdout
    return printed.strip().removeprefix("subject=").strip()


def _bindings_of(api: TenantApi, group: str) -> set[tuple[str, str | None, str, str]]:
    """(kind, namespace, role kind, role) of every binding that names `group`."""
    found = set()
    for item in api.get("clusterrolebindings,rolebindings", "-A")["items"]:
        subjects = item.get("subjects") or []
        if any(subject["kind"] == "Group" and subject["name"] == group for subject in subjects):
            found.add((item["kind"], item["metadata"].get("namespace"), item["roleRef"]["kind"],
                       item["roleRef"]["name"]))
    return found


def _start_controller_manager(api: TenantApi, work: Path) -> subprocess.Popen:
    log = work / "kube-controller-manager.log"
    ca = work / "client-ca"
    return subprocess.Popen(
        [str(api.bin / "kube-controller-manager"), "--kubeconfig", str(api.kubeconfig),
         "--controllers=csrapproving,csrsigning", "--leader-elect=false",
         "--cluster-signing-cert-file", f"{ca}.crt", "--cluster-signing-key-file", f"{ca}.key",
         "--bind-address=127.0.0.1", f"--secure-port={free_port()}"],
        stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=work, start_new_session=True)


@pytest.fixture(scope="module")
def tenant() -> Iterator[Tenant]:
    bin_dir = toolchain_or_skip()
    with tenant_api(parse_config(dev_stack_config()).tenants[0], bin_dir) as api:
        assert api.work is not None
        config = api.work / "kubeadm.yaml"
        config.write_text(KUBEADM_CONFIG)
        for phase in KUBEADM_PHASES:
            ran = subprocess.run([str(bin_dir / "kubeadm"), "init", "phase", *phase, "--config", str(config),
                                  "--kubeconfig", str(api.kubeconfig)],
                                 capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False)
            assert ran.returncode == 0, ran.stderr
        api.apply(host_join_access.join_access_objects(_hosts_tenant()))
        manager = _start_controller_manager(api, api.work)
        try:
            yield Tenant(api, api.work)
        finally:
            manager.terminate()
            manager.wait(timeout=30)


def _hosts_tenant() -> TenantConfig:
    """examples/production's ml-prod, a tenant of hosts."""
    return load_stack_file(PRODUCTION_STACK).tenants[0]


def test_the_hosts_group_has_every_binding_kubeadm_gives_its_node_tokens_but_auto_approval(tenant):
    """Compared with what real kubeadm binds its node group to: the join needs each (discovery
    aside, which is anonymous), and auto-approval is the one left out."""
    kubeadms = _bindings_of(tenant.api, KUBEADM_NODE_GROUP)
    auto_approval = ("ClusterRoleBinding", None, "ClusterRole", host_join_access.AUTO_APPROVAL_CLUSTER_ROLE)
    assert auto_approval in kubeadms
    assert _bindings_of(tenant.api, host_join_access.JOIN_GROUP) == kubeadms - {auto_approval}
    assert host_join.BOOTSTRAP_TOKEN_GROUP == host_join_access.JOIN_GROUP


def test_a_hosts_token_reads_what_kubeadm_join_reads(tenant):
    """kubeadm join's requests with the token (v1.35.4 cmd/kubeadm/app/util/config/cluster.go
    FetchInitConfigurationFromCluster, phases/kubelet/config.go, cmd/phases/join/kubelet.go: the
    check for a Ready Node of the same name), and nothing beyond them."""
    _, token = tenant.token(host_join_access.JOIN_GROUP)
    for request in (("get", "configmap", "kubeadm-config", "-n", "kube-system"),
                    ("get", "configmap", "kubelet-config", "-n", "kube-system")):
        answered = tenant.api.kubectl(*request, "-o", "name", kubeconfig=token)
        assert answered.returncode == 0, answered.stderr
    absent = tenant.api.kubectl("get", "node", HOST, kubeconfig=token)
    assert "(NotFound)" in absent.stderr, absent.stderr
    for forbidden in (("get", "secrets", "-n", "kube-system"), ("get", "configmaps", "-n", "kube-system")):
        refused = tenant.api.kubectl(*forbidden, kubeconfig=token)
        assert "(Forbidden)" in refused.stderr, refused.stderr


def test_kubeadms_node_token_gets_any_nodes_certificate_by_itself(tenant):
    """Why the hosts' token has a group of its own: with kubeadm's, the approver signs a request
    for another node's name (sarapprove.go asks only about the requester)."""
    _, token = tenant.token(KUBEADM_NODE_GROUP)
    name = tenant.request(token, "another-host")
    assert _subject(tenant.wait_issued(name)) == "CN=system:node:another-host,O=system:nodes"
    assert tenant.decision(name) == "Approved"


def test_a_hosts_token_gets_no_certificate_until_the_join_approves_exactly_its_hosts(tenant):
    """The hosts' request waits (a kubeadm-group request made after it is approved first, so the
    approver has judged both); the join's round approves it, the signer issues the host's
    identity, and the certificate authenticates as that node."""
    token_id, token = tenant.token(host_join_access.JOIN_GROUP)
    name = tenant.request(token, HOST)
    _, control_token = tenant.token(KUBEADM_NODE_GROUP)
    tenant.wait_issued(tenant.request(control_token, "control-host"))
    time.sleep(2)
    assert tenant.decision(name) is None and not tenant.csr(name).get("status", {}).get("certificate")
    judged = tenant.judge(token_id)
    assert f"rc=0 approved={name} refused=\n" in judged.stdout, judged.stdout + judged.stderr
    assert f"host {HOST}: approved certificate request {name} (CN=system:node:{HOST},O=system:nodes)" \
        in judged.stdout
    issued = tenant.wait_issued(name)
    assert _subject(issued) == f"CN=system:node:{HOST},O=system:nodes"
    assert tenant.decision(name) == "Approved"


@pytest.mark.parametrize(("node", "signer", "organization"), [
    ("gpu-host-2", SIGNER, node_admission.NODES_GROUP),
    (HOST, "kubernetes.io/kube-apiserver-client", node_admission.NODES_GROUP),
    (HOST, SIGNER, "system:masters"),
], ids=["another-hosts-name", "another-signer", "another-group"])
def test_any_other_request_of_the_token_is_denied_and_stops_the_join(tenant, node, signer, organization):
    """A token that asks for another identity is denied, never signed; the round fails, naming
    the request. The API server itself refuses nothing here (the signer's own rules aside, a
    request for system:masters is a valid CSR): the join is what stops it."""
    token_id, token = tenant.token(host_join_access.JOIN_GROUP)
    name = tenant.request(token, node, signer=signer, organization=organization)
    judged = tenant.judge(token_id)
    assert "rc=1 approved= refused=" in judged.stdout and name in judged.stdout, judged.stdout + judged.stderr
    assert tenant.decision(name) == "Denied"
    time.sleep(2)
    assert not tenant.csr(name).get("status", {}).get("certificate")


def test_a_second_request_for_the_host_is_approved_and_another_joins_is_not_judged(tenant):
    """A kubelet restarted before its certificate came asks again with a new key (client-go
    util/certificate/certificate_manager.go): approved, as it grants nothing more. A request of
    another token (another join) is not this join's to judge."""
    token_id, token = tenant.token(host_join_access.JOIN_GROUP)
    first = tenant.request(token, HOST)
    _, other_token = tenant.token(host_join_access.JOIN_GROUP)
    others = tenant.request(other_token, HOST)
    second, document = tenant.request_file(HOST)
    judged = tenant.judge(token_id, then=f"kubectl --kubeconfig {token} create -f {document} >/dev/null")
    assert f"rc=0 approved={first} refused=\n" in judged.stdout, judged.stdout + judged.stderr
    assert f"rc=0 approved={first} {second} refused=\n" in judged.stdout, judged.stdout
    decisions = (tenant.decision(first), tenant.decision(second), tenant.decision(others))
    assert decisions == ("Approved", "Approved", None)
    assert _subject(tenant.wait_issued(second)) == f"CN=system:node:{HOST},O=system:nodes"


def test_the_token_secrets_create_prints_the_api_servers_stamp_the_join_reads_its_clock_from(tenant):
    """The join reads the tenant's clock from its create of the token (`-o jsonpath=` of the
    Secret's creationTimestamp, host_join.bash): a UTC time in whole seconds, which GNU date
    parses, within a second or two of this machine's clock (the same clock here)."""
    before, token_id = int(time.time()), _random(6)
    created = tenant.api.kubectl(
        "create", "-f", "-", "-o", "jsonpath={.metadata.creationTimestamp}", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
            "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
            "stringData": {"token-id": token_id, "token-secret": _random(16)}}))
    assert created.returncode == 0, created.stderr
    stamped = subprocess.run(["date", "-u", "-d", created.stdout, "+%s"], capture_output=True, text=True,
                             check=True, timeout=COMMAND_TIMEOUT).stdout
    assert before - 1 <= int(stamped) <= time.time() + 1, created.stdout
