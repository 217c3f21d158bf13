"""What each management mode needs and refuses, worker hosts, and the stack's secrets: every
problem with its config path, all at once, and never a secret's text in a message."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kamaji_hami_platform.config import (
    ConfigError,
    SecretText,
    load_stack_file,
    parse_config,
    secret_values,
    secrets,
)
from tests.harness import PRODUCTION_STACK, fake_kubeconfig, fake_private_key, stack_config

pytestmark = pytest.mark.unit

KEY = fake_private_key("sentinel-config-key")
KUBECONFIG = fake_kubeconfig("https://10.20.0.10:6443", "sentinel-config-kubeconfig")


@pytest.fixture
def prod() -> dict[str, Any]:
    """The production example as the program receives it: secrets decrypted and known secret."""
    config = stack_config(PRODUCTION_STACK)
    config["managementKubeconfig"] = secret_values(KUBECONFIG)
    config["sshPrivateKeys"] = secret_values({name: KEY for name in config["sshPrivateKeys"]})
    return config


def problems(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(config)
    assert "sentinel-config" not in str(caught.value), "a secret reached a message"
    return caught.value.problems


class TestTheExamples:
    def test_the_production_example_is_valid_as_a_stack_file_and_as_the_program_reads_it(self, prod):
        from_file = load_stack_file(PRODUCTION_STACK)
        from_program = parse_config(prod)
        assert from_file.tenants == from_program.tenants
        assert from_program.ssh_private_keys["gpu-hosts"] == SecretText(KEY)
        assert from_file.ssh_private_keys["gpu-hosts"] == SecretText(None)  # ciphertext, never read
        assert [t.workers for t in from_program.tenants] == [3, 1]
        assert "sentinel" not in repr(from_program)

    def test_the_dev_stack_is_kind_with_container_workers(self, dev_config):
        platform = parse_config(dev_config)
        assert platform.management.is_kind and not any(t.on_hosts for t in platform.tenants)


class TestKindMode:
    def test_refuses_what_only_an_existing_cluster_has(self, dev_config):
        dev_config["management"].update(kubeconfigContext="x", apiExposure="NodePort",
                                        certManager={"install": False}, apiClientCidrs=["10.0.0.0/8"])
        dev_config["tenants"][0]["gpus"]["mock"] = False
        dev_config["tenants"][1].update(hosts=[{"name": "h1", "address": "10.0.0.1", "privateKey": "k"}])
        del dev_config["tenants"][1]["workers"]
        found = problems(dev_config)
        assert found[:4] == [
            "management.kubeconfigContext: is for mode existing: a kind cluster's address and kubeconfig "
            "are the platform's own",
            "management.apiClientCidrs: is for mode existing: a kind cluster's address and kubeconfig "
            "are the platform's own",
            "management.certManager.install: must be true in mode kind: the kind cluster the platform "
            "creates has none",
            "management.apiExposure: must be LoadBalancer in mode kind (MetalLB on the platform's Docker "
            "network); NodePort needs mode existing",
        ]
        assert any(p.startswith("tenants[0].gpus.mock: false needs worker hosts") for p in found)
        assert any(p.startswith("tenants[1].hosts: need management.mode existing") for p in found)

    def test_a_kubeconfig_secret_is_refused(self, dev_config):
        dev_config["managementKubeconfig"] = secret_values(KUBECONFIG)
        assert problems(dev_config) == [
            "managementKubeconfig: is for management.mode existing (kind's kubeconfig is the platform's own)"]


class TestExistingMode:
    def test_what_it_needs(self, prod):
        del prod["managementKubeconfig"]
        del prod["management"]["apiClientCidrs"]
        del prod["management"]["metallbAddressRange"]
        found = problems(prod)
        assert "management.apiClientCidrs: is required in mode existing" in found[0]
        assert "management.metallbAddressRange: is required when the platform installs MetalLB" in found[1]
        assert found[2].startswith("management: mode existing needs the cluster's kubeconfig")

    def test_refuses_the_kind_settings_and_container_workers(self, prod):
        prod["management"].update(nodeImage="kindest/node:v1.35.0", dockerNetwork="n",
                                  tenantSubnet="10.9.0.0/16")
        prod["tenants"][1].update(workers=1)
        prod["tenants"][0].update(addressBlock=3, workerNetwork="own")
        found = problems(prod)
        assert "management.nodeImage: is for mode kind" in found[0]
        assert "management.dockerNetwork: is for mode kind" in found[1]
        assert any(p.startswith("management.tenantSubnet: is for mode kind") for p in found)
        assert any(p.startswith("tenants[1].workers: give workers") for p in found)
        assert any(p.startswith("tenants[0].addressBlock: is for mode kind") for p in found)
        assert any(p.startswith("tenants[0].workerNetwork: is for mode kind") for p in found)

    def test_an_api_client_cidr_holding_a_tenant_s_host_is_refused(self, prod):
        """Each tenant's Service admits its hosts and apiClientCidrs: a CIDR that holds a host
        would admit that host to every tenant's API."""
        prod["management"]["apiClientCidrs"] = ["10.20.0.0/24", "10.20.2.0/24"]
        found = problems(prod)
        assert found == ["management.apiClientCidrs[1]: 10.20.2.0/24 holds tenants[1].hosts[0] (10.20.2.21): "
                         "every tenant's API would admit that host; list narrower CIDRs (the management "
                         "nodes' and Pulumi's host's addresses)"]

    def test_more_source_ranges_than_kamaji_takes_are_refused(self, prod):
        prod["management"]["apiClientCidrs"] = [f"10.30.{i}.0/24" for i in range(0, 30, 2)]  # 15 apart
        found = problems(prod)
        # ml-prod's 3 hosts are 10.20.1.11/32 and 10.20.1.12/31: 17; sandbox's one host: 16, taken.
        assert found == [
            "tenants[0].hosts: its 3 hosts and management.apiClientCidrs make 17 source ranges; Kamaji's "
            "Service takes at most 16: give hosts adjacent addresses, or fewer apiClientCidrs"]

    def test_with_node_port_the_clients_are_not_filtered_by_source_so_not_checked(self, prod):
        prod["management"].update(apiExposure="NodePort", nodePortAddress="10.20.0.5",
                                  apiClientCidrs=["10.20.0.0/16"])
        del prod["management"]["metallbAddressRange"]
        for index, tenant in enumerate(prod["tenants"]):
            tenant.update(apiNodePort=30100 + index, konnectivityNodePort=30200 + index)
        parse_config(prod)

    def test_container_workers_alone_are_refused(self, prod):
        del prod["tenants"][1]["hosts"]
        prod["tenants"][1]["workers"] = 1
        assert any(p.startswith("tenants[1].workers: container workers need the kind management cluster")
                   for p in problems(prod))

    def test_a_tenant_without_hosts_is_told_about_the_workers_default(self, prod):
        del prod["tenants"][1]["hosts"]
        del prod["tenants"][1]["gpus"]
        assert problems(prod) == ["tenants[1]: give hosts (machines reached over SSH), or workers: 0: in "
                                  "mode existing a tenant has no container workers (workers defaults to 1)"]
        prod["tenants"][1]["workers"] = 0
        parse_config(prod)

    def test_node_ports_are_required_unique_and_only_with_node_port(self, prod):
        prod["tenants"][0]["apiNodePort"] = 31000
        assert problems(prod) == ["tenants[0].apiNodePort: is only for management.apiExposure NodePort"]
        prod["management"].update(apiExposure="NodePort", nodePortAddress="10.20.0.10")
        prod["management"]["metallb"] = {"install": False}
        del prod["management"]["metallbAddressRange"]
        prod["tenants"][1].update(apiNodePort=31000)
        found = problems(prod)
        assert "tenants[0].konnectivityNodePort: is required with management.apiExposure NodePort" in found[0]
        clash = "tenants[1].apiNodePort: 31000 is also tenants[0].apiNodePort"
        assert any(p.startswith(clash) for p in found)

    def test_node_port_needs_the_address_workers_reach(self, prod):
        prod["management"].update(apiExposure="NodePort")
        assert any(p.startswith("management.nodePortAddress: is required with apiExposure NodePort")
                   for p in problems(prod))

    @pytest.mark.parametrize("port", [29999, 32768])
    def test_node_ports_are_in_kubernetes_default_range(self, prod, port):
        prod["management"].update(apiExposure="NodePort", nodePortAddress="10.20.0.10")
        prod["tenants"][0].update(apiNodePort=port, konnectivityNodePort=31001)
        assert f"tenants[0].apiNodePort: must be between 30000 and 32767, got {port}" in problems(prod)

    def test_a_metallb_range_of_an_existing_cluster_is_any_ordered_range(self, prod):
        prod["management"]["metallbAddressRange"] = "10.20.0.220-10.20.0.200"
        assert problems(prod) == ["management.metallbAddressRange: '10.20.0.220-10.20.0.200' starts after "
                                  "it ends"]

    def test_cidr_overlaps_are_between_tenants_only(self, prod):
        prod["tenants"][0]["podCidr"] = "10.244.0.0/16"  # kind's own pod CIDR: no kind here
        parse_config(prod)
        prod["tenants"][1]["podCidr"] = "10.244.0.0/16"
        assert any("overlaps tenants[0].podCidr" in p for p in problems(prod))


class TestHosts:
    def test_hosts_and_workers_are_exclusive(self, prod):
        prod["tenants"][0]["workers"] = 3
        assert problems(prod) == ["tenants[0].workers: give workers (containers on the kind network) or "
                                  "hosts (machines over SSH), not both: with hosts, their number is the "
                                  "workers'"]

    def test_one_node_per_machine_and_name(self, prod):
        prod["tenants"][1]["hosts"][0].update(name="gpu-node-1", address="10.20.1.11")
        assert problems(prod) == [
            "tenants[1].hosts[0].name: 'gpu-node-1' is also tenants[0].hosts[0]'s: a machine joins one "
            "tenant, as one node",
            "tenants[1].hosts[0].address: '10.20.1.11' is also tenants[0].hosts[0]'s: a machine joins one "
            "tenant, as one node"]

    def test_every_field_is_checked(self, prod):
        prod["tenants"][0]["hosts"][0].update(address="gpu-1.example.com", port=0, user="Root!",
                                              hostKey="AAAA", extra=1)
        prod["tenants"][0]["hosts"][1]["bastion"].update(privateKey="")
        found = problems(prod)
        assert found == [
            "tenants[0].hosts[0].extra: unknown key (allowed: name, address, user, port, privateKey, "
            "hostKey, insecureSkipHostKeyCheck, bastion)",
            "tenants[0].hosts[0].address: 'gpu-1.example.com' must be an IPv4 address",
            "tenants[0].hosts[0].user: 'Root!' is not a user name",
            "tenants[0].hosts[0].port: must be positive, between 1 and 65535, got 0",
            "tenants[0].hosts[0].hostKey: 'AAAA' must be a public host key like 'ssh-ed25519 AAAA...' "
            "(ssh-keyscan -t ed25519 <host> prints it)",
            "tenants[0].hosts[1].bastion.privateKey: must be a non-empty string, got ''",
        ]

    def test_an_rsa_host_key_is_pinned_as_any_other(self, prod):
        """The platform's OpenSSH client verifies an ssh-rsa host key with rsa-sha2 signatures."""
        prod["tenants"][0]["hosts"][0]["hostKey"] = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7"
        assert parse_config(prod).tenants[0].hosts[0].ssh.host_key.startswith("ssh-rsa ")

    @pytest.mark.parametrize("hop", ["host", "bastion"])
    def test_every_hop_pins_its_host_key_unless_told_not_to(self, prod, hop):
        host = prod["tenants"][0]["hosts"][0]
        endpoint = host if hop == "host" else host["bastion"]
        del endpoint["hostKey"]
        path = "tenants[0].hosts[0]" + ("" if hop == "host" else ".bastion")
        (problem,) = problems(prod)
        assert problem.startswith(f"{path}.hostKey: is required: pin the key {endpoint['address']} answers "
                                  f"with (ssh-keyscan -t ed25519 -p 22 {endpoint['address']}")
        assert "or set insecureSkipHostKeyCheck: true" in problem
        endpoint["insecureSkipHostKeyCheck"] = True
        ssh = parse_config(prod).tenants[0].hosts[0]
        assert (ssh.ssh if hop == "host" else ssh.bastion).insecure_skip_host_key_check is True
        endpoint["hostKey"] = (
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl")
        (problem,) = problems(prod)
        assert problem.startswith(f"{path}.insecureSkipHostKeyCheck: true with a hostKey")

    def test_keys_named_by_hosts_and_bastions_must_be_given(self, prod):
        del prod["sshPrivateKeys"]["bastion"]
        found = problems(prod)
        assert len(found) == 3 and all(p.endswith(".bastion.privateKey: 'bastion' is not in the secret "
                                                  "sshPrivateKeys (given: gpu-hosts)") for p in found)


class TestSecrets:
    def test_plain_text_is_refused_and_never_echoed(self, prod):
        prod["managementKubeconfig"] = KUBECONFIG
        prod["sshPrivateKeys"]["bastion"] = KEY
        assert problems(prod) == [
            "managementKubeconfig: must be a secret: set it with pulumi config set --secret (its value is "
            "not shown here)",
            "sshPrivateKeys.bastion: must be a secret: set it with pulumi config set --secret (its value is "
            "not shown here)",
            "tenants[0].hosts[0].bastion.privateKey: 'bastion' is not in the secret sshPrivateKeys (given: "
            "gpu-hosts)",
            "tenants[0].hosts[1].bastion.privateKey: 'bastion' is not in the secret sshPrivateKeys (given: "
            "gpu-hosts)",
            "tenants[0].hosts[2].bastion.privateKey: 'bastion' is not in the secret sshPrivateKeys (given: "
            "gpu-hosts)",
        ]

    def test_a_kubeconfig_without_a_usable_context_is_refused(self, prod):
        prod["managementKubeconfig"] = SecretText("apiVersion: v1\nkind: Config\ncurrent-context: x\n")
        assert problems(prod) == ["managementKubeconfig: has no current-context naming one of its contexts"]

    def test_secret_text_never_shows(self):
        assert repr(SecretText("sentinel-config-x")) == "SecretText(<secret>)"
        assert "sentinel" not in str(copy.deepcopy(SecretText("sentinel-config-x")).__repr__())


def ssh_keygen(tmp_path: Path, *options: str) -> str:
    path = tmp_path / "key"
    path.unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-f", str(path), "-C", "test", *options], check=True, timeout=60)
    return path.read_text()


class TestPrivateKeyShapes:
    """Real keys from OpenSSH's ssh-keygen (the format pulumi-command and ssh read)."""

    def test_unencrypted_openssh_and_pem_keys_pass(self, tmp_path):
        assert secrets.private_key_problems(ssh_keygen(tmp_path, "-t", "ed25519", "-N", "")) == []
        assert secrets.private_key_problems(ssh_keygen(tmp_path, "-t", "rsa", "-b", "2048", "-m", "PEM",
                                                             "-N", "")) == []

    def test_keys_with_a_passphrase_are_refused(self, tmp_path):
        for options in (("-t", "ed25519"), ("-t", "rsa", "-b", "2048", "-m", "PEM")):
            key = ssh_keygen(tmp_path, *options, "-N", "a passphrase")
            assert secrets.private_key_problems(key) == [secrets.PASSPHRASE_PROBLEM], options

    def test_a_public_key_or_garbage_is_not_a_private_key(self, tmp_path):
        ssh_keygen(tmp_path, "-t", "ed25519", "-N", "")
        public = (tmp_path / "key.pub").read_text()
        assert secrets.private_key_problems(public) == [
            "is not a PEM or OpenSSH private key (-----BEGIN ... PRIVATE KEY-----)"]
