"""The whole program under mocks in each mode: an existing management cluster with worker hosts over
SSH and real and mock GPUs (examples/production/Pulumi.prod.yaml), next to the kind dev stack, with
the guarantees the dev stack's tests hold (parents, providers, order, determinism, secrets)."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest
import yaml

from kamaji_hami_platform.gpu import render as gpu_render
from kamaji_hami_platform.tenant import host_join, host_leave, host_ssh
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV
from tests.harness import (
    MGMT_KUBECONFIG_SENTINEL,
    TENANT_KUBECONFIG_SENTINEL,
    PlatformMocks,
    Program,
    fake_kubeconfig,
    is_secret,
    key_body,
    plain_text_leaks,
    production_config,
    run_program,
    spy_registrations,
)

pytestmark = pytest.mark.unit

COMMAND = "command:local:Command"
REMOTE = "command:remote:Command"
HELM = "kubernetes:helm.sh/v3:Release"
TCP = "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane"
POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
HOSTS = ("gpu-node-1", "gpu-node-2", "gpu-node-3")


@pytest.fixture
def prod_config() -> tuple[dict[str, Any], tuple[str, ...]]:
    return production_config()


@pytest.fixture
def prod_program(production_program) -> Program:
    return production_program


def needles(config: dict[str, Any]) -> tuple[str, ...]:
    """Every secret text of the run: both kubeconfigs' tokens and the private keys' bodies."""
    return (MGMT_KUBECONFIG_SENTINEL, TENANT_KUBECONFIG_SENTINEL,
            *(key_body(key) for key in config["sshPrivateKeys"].values()))


def node_port_config(config: dict[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(config)
    config["management"].update(apiExposure="NodePort", nodePortAddress="10.20.0.10")
    config["management"]["metallb"] = {"install": False}
    del config["management"]["metallbAddressRange"]
    for index, tenant in enumerate(config["tenants"]):
        tenant.update(apiNodePort=31443 + 10 * index, konnectivityNodePort=31132 + 10 * index)
    return config


class TestNoKindOnAnExistingCluster:
    def test_nothing_is_created_outside_the_cluster_but_on_the_hosts(self, prod_program):
        names = {r.name for r in prod_program.of_type(COMMAND)}
        for kind_only in ("management-kind", "management-network", "management-kubeconfig",
                          "management-docker-host", "management-kindnet-limits"):
            assert kind_only not in names
        assert not [n for n in names if n.endswith("-worker-image") or "-worker-" in n]
        scripts = [r.inputs.get(key, "") for r in prod_program.of_type(COMMAND)
                   for key in ("create", "delete")]
        assert not [s for s in scripts if "docker " in s], "an existing cluster's stack runs no Docker"

    def test_the_provider_takes_the_given_kubeconfig_as_a_secret_and_a_stable_identity(self, prod_program):
        provider = prod_program.named("management-k8s")
        assert is_secret(provider.wire["kubeconfig"])
        assert provider.inputs["clusterIdentifier"] == "existing/prod"
        assert MGMT_KUBECONFIG_SENTINEL in provider.inputs["kubeconfig"]

    def test_what_a_running_platform_cannot_change_is_guarded(self, prod_program):
        guards = {r.name.removeprefix("management-create-only-") for r in prod_program.of_type(COMMAND)
                  if r.name.startswith("management-create-only-")}
        assert guards == {"mode", "name", "kamajiEtcdReplicas", "metallbAddressRange", "apiExposure"}
        assert all(prod_program.named(f"management-create-only-{g}").options["protect"] for g in guards)

    def test_only_the_releases_the_config_installs(self, prod_program):
        releases = {r.name for r in prod_program.of_type(HELM)}
        assert "management-cert-manager" not in releases  # certManager.install: false
        assert {"management-metallb", "management-kamaji"} <= releases
        assert prod_program.named("management-metallb-pool").inputs["spec"] == {
            "addresses": ["10.20.0.200-10.20.0.220"]}

    def test_kamaji_waits_for_the_cluster_check_which_looks_for_cert_manager(self, prod_program):
        check = prod_program.named("management-cluster-check")
        assert "certificates.cert-manager.io" in check.inputs["create"]
        assert prod_program.depends_on(prod_program.named("management-kamaji"), check)
        assert is_secret(check.wire["environment"]["MANAGEMENT_KUBECONFIG"])

    def test_the_cluster_check_looks_for_storage_network_policy_and_a_competing_load_balancer(
            self, prod_program):
        create = prod_program.named("management-cluster-check").inputs["create"]
        assert "get storageclasses" in create and "get daemonsets --all-namespaces" in create
        assert "svccontroller.k3s.cattle.io/svcname" in create  # the platform installs MetalLB here

    def test_what_the_cluster_check_cannot_tell_is_a_warning_of_the_check(self, prod_config, monkeypatch):
        """pulumi-command shows a command's output as passing status lines only: the program warns."""
        class Mocks(PlatformMocks):
            @staticmethod
            def _command_stdout(name: str) -> str:
                if name == "management-cluster-check":
                    return "management cluster reached\nwarning: cannot tell whether the CNI enforces it\n"
                return PlatformMocks._command_stdout(name)

        warned: list[tuple[str, str | None]] = []
        monkeypatch.setattr(pulumi.log, "warn", lambda message, resource=None, *_, **__: warned.append(
            (message, resource and resource._name)))
        config, secret_keys = prod_config
        run_program(config, stack="prod", secret_keys=secret_keys, mocks=Mocks())
        assert ("cannot tell whether the CNI enforces it", "management-cluster-check") in warned

    def test_readiness_runs_with_this_hosts_kubectl_and_a_private_kubeconfig(self, prod_program):
        webhook = prod_program.named("management-kamaji-webhook")
        assert 'kubectl --kubeconfig "$management_kc"' in webhook.inputs["create"]
        assert is_secret(webhook.wire["environment"]["MANAGEMENT_KUBECONFIG"])
        access = prod_program.named("ml-prod-admin-access")
        assert 'kubectl --kubeconfig "$tenant_kc"' in access.inputs["create"]

    def test_hosts_keep_the_kubelets_own_disk_thresholds(self, prod_program, dev_program):
        """The laptop's 0% eviction thresholds and image GC at 100% are kind's alone."""
        def patched(program: Program, tenant: str) -> list[str]:
            spec = program.named(f"{tenant}-control-plane").inputs["spec"]
            return [p["path"] for p in spec["kubernetes"]["kubelet"]["configurationJSONPatches"]]

        assert patched(prod_program, "ml-prod") == ["/cgroupDriver", "/failSwapOn"]
        assert patched(dev_program, "tenant-a") == ["/cgroupDriver", "/failSwapOn",
                                                    "/imageGCHighThresholdPercent", "/evictionHard"]

    def test_control_planes_are_exposed_as_the_config_says(self, prod_program, prod_config):
        spec = prod_program.named("ml-prod-control-plane").inputs["spec"]
        # Behind the platform's MetalLB: no node ports, and only the tenant's hosts and
        # apiClientCidrs pass kube-proxy's source filter, before its masquerade.
        assert spec["controlPlane"]["service"] == {"serviceType": "LoadBalancer",
                                                   "allocateLoadBalancerNodePorts": False}
        assert spec["networkProfile"]["loadBalancerSourceRanges"] == [
            "10.20.0.0/24", "10.20.1.11/32", "10.20.1.12/31"]
        sandbox = prod_program.named("sandbox-control-plane").inputs["spec"]["networkProfile"]
        assert sandbox["loadBalancerSourceRanges"] == ["10.20.0.0/24", "10.20.2.21/32"]
        assert spec["networkProfile"]["port"] == 6443 and "address" not in spec["networkProfile"]
        config, secret_keys = prod_config
        program = run_program(node_port_config(config), secret_keys=secret_keys, stack="prod")
        spec = program.named("sandbox-control-plane").inputs["spec"]
        assert spec["controlPlane"]["service"] == {"serviceType": "NodePort"}
        assert spec["networkProfile"]["address"] == "10.20.0.10"
        assert "loadBalancerSourceRanges" not in spec["networkProfile"]  # Kamaji: LoadBalancer only
        assert spec["networkProfile"]["port"] == 31453
        assert spec["addons"]["konnectivity"]["server"]["port"] == 31142
        assert not program.of_type("kubernetes:metallb.io/v1beta1:IPAddressPool")
        ingress = policy(program, "sandbox", "allow-control-plane-ingress")
        assert ingress["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 31453},
                                                  {"protocol": "TCP", "port": 31142}]

    def test_a_control_plane_admits_its_own_hosts_and_the_client_cidrs_only(self, prod_program):
        ingress = policy(prod_program, "ml-prod", "allow-control-plane-ingress")
        blocks = [peer["ipBlock"]["cidr"] for peer in ingress["ingress"][0]["from"] if "ipBlock" in peer]
        assert blocks == ["10.20.1.11/32", "10.20.1.12/32", "10.20.1.13/32", "10.20.0.0/24"]
        sandbox = policy(prod_program, "sandbox", "allow-control-plane-ingress")
        assert "10.20.1.11/32" not in str(sandbox)


class TestWorkerHosts:
    def test_each_host_leaves_joins_then_waits_for_ready_in_that_order(self, prod_program):
        for host in HOSTS:
            leave = prod_program.named(f"ml-prod-{host}-leave")
            join = prod_program.named(f"ml-prod-{host}-join")
            ready = prod_program.named(f"ml-prod-{host}")
            assert (leave.type, join.type, ready.type) == (COMMAND, COMMAND, COMMAND)
            assert prod_program.depends_on(join, leave) and prod_program.depends_on(ready, join)
            assert prod_program.depends_on(leave, prod_program.named("ml-prod-admin-access"))
            for resource in (leave, join, ready):
                assert resource.parent == prod_program.named("ml-prod").urn
                assert resource.options["deleteBeforeReplace"] is True

    def test_hosts_join_one_after_another(self, prod_program):
        first, second = (prod_program.named(f"ml-prod-{h}") for h in HOSTS[:2])
        assert prod_program.depends_on(prod_program.named(f"ml-prod-{HOSTS[1]}-leave"), first)
        assert not prod_program.depends_on(first, second)

    def test_the_join_runs_here_with_its_script_on_stdin_and_no_delete(self, prod_program):
        """The join runs on this host (a local Command), its script on stdin so that a failure shows
        a one-line command and the reason; the host is reached with this host's OpenSSH client."""
        join = prod_program.named("ml-prod-gpu-node-1-join")
        tenant = prod_program_tenant("ml-prod")
        owner = host_join.Ownership("kamaji-hami-platform", "prod", "prod")
        assert join.inputs["create"] == host_join.RUN_STDIN_SCRIPT
        assert join.inputs["stdin"] == host_join.join_script(tenant, tenant.hosts[0], owner, 8132)
        assert "delete" not in join.inputs and "connection" not in join.inputs
        assert {"stdout", "stderr"} <= set(join.options["additionalSecretOutputs"])

    def test_a_host_is_sent_no_kubeconfig_only_a_token_and_the_ca(self, prod_program):
        """The admin kubeconfig stays on this host: the command sent to the host carries no
        credential, and what goes on its stdin is the bootstrap token alone."""
        join = prod_program.named("ml-prod-gpu-node-1-join")
        script = join.inputs["stdin"]
        remote = script.split("<<'KHP_REMOTE'\n", 1)[1].split("\nKHP_REMOTE", 1)[0]
        assert "kubeconfig" not in remote.lower() and TENANT_KUBECONFIG_SENTINEL not in remote
        assert "printf '%s.%s\\n' \"$token_id\" \"$token_secret\"" in script
        assert "bootstrap.kubernetes.io/token" in script and 'expiration: "$expiration"' in script

    def test_join_and_leave_get_secrets_only_through_the_environment(self, prod_program):
        leave = prod_program.named("ml-prod-gpu-node-1-leave")
        join = prod_program.named("ml-prod-gpu-node-1-join")
        tenant = prod_program_tenant("ml-prod")
        owner = host_join.Ownership("kamaji-hami-platform", "prod", "prod")
        assert leave.inputs["delete"] == host_join.RUN_STDIN_SCRIPT
        assert leave.inputs["stdin"] == host_leave.leave_script(tenant, tenant.hosts[0], owner)
        for command in (leave, join):
            environment = command.wire["environment"]
            assert set(environment) == {KUBECONFIG_ENV, host_join.CA_HASH_ENV, host_ssh.HOST_SSH_KEY_ENV,
                                        host_ssh.BASTION_SSH_KEY_ENV}
            assert all(is_secret(environment[key]) for key in environment if key != host_join.CA_HASH_ENV)
            assert not is_secret(environment[host_join.CA_HASH_ENV])  # a pin, public
        assert "BASTION" not in str(prod_program.named("sandbox-cpu-node-1-leave").wire["environment"])

    def test_a_new_control_plane_rejoins_every_host(self, prod_program):
        """The control plane's UID is a trigger of all three: a replaced control plane resets the
        host (leave's delete) before it joins again."""
        uid = "uid-ml-prod-control-plane"
        endpoint = prod_program.exports["tenants"]["ml-prod"]["endpoint"]
        for host in HOSTS:
            for suffix in ("-leave", "-join", ""):
                triggers = prod_program.named(f"ml-prod-{host}{suffix}").inputs["triggers"]
                # ... and so does another API address (a node port, a load balancer address).
                assert uid in triggers and endpoint in triggers

    def test_gpu_registration_waits_for_the_node_to_be_ready(self, prod_program):
        patch = prod_program.named("ml-prod-gpus-gpu-node-2")
        ready = prod_program.named("ml-prod-gpu-node-2")
        assert prod_program.depends_on(patch, ready)
        assert patch.options["replaceWith"] == [ready.urn]


class KubeletReported(PlatformMocks):
    """A deployed stack whose hosts' Ready waits recorded kubelet `version` (a preview reads
    the last `up`'s outputs of an unchanged command)."""

    def __init__(self, version: str) -> None:
        super().__init__()
        self.version = version

    def _known(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        resource_id, outputs = super()._known(args)
        if args.typ == COMMAND and any(args.name == f"ml-prod-{host}" for host in HOSTS):
            node = args.name.removeprefix("ml-prod-")
            outputs["stdout"] = f"node {node} is Ready (kubelet {self.version})\n"
        return resource_id, outputs


class Joined(PlatformMocks):
    """Each host's join printed the id of its join (as the host's marker has it)."""

    def _known(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        resource_id, outputs = super()._known(args)
        if args.typ == COMMAND and args.name.endswith("-join"):
            outputs["stdout"] = f"joined\njoin: 20261203T120000Z-{len(args.name):08x}\n"
        return resource_id, outputs


def test_a_hosts_ready_wait_and_gpu_registration_follow_its_join(prod_config):
    """A host joined again (its Node lost) is a new Node: the join's id is in the Ready wait's
    environment (a new one updates it) and annotates the GPU registration (a new one updates it,
    which applies it again). The wait, and with it the registration (replace_with), is replaced
    when the host or its control plane changes: its replacement_trigger, known in every preview
    (the join's output is not, when a preview updates the join: issue 38)."""
    config, secret_keys = prod_config
    program = run_program(config, secret_keys=secret_keys, stack="prod", mocks=Joined())
    for host in HOSTS:
        join_id = f"20261203T120000Z-{len(f'ml-prod-{host}-join'):08x}"
        ready = program.named(f"ml-prod-{host}")
        assert ready.inputs["environment"][host_join.JOIN_ID_ENV] == join_id
        assert ready.options["ignoreChanges"] == ["triggers"]
        assert ready.options["replacementTrigger"][:2] == [host, next(
            h["address"] for t in config["tenants"] for h in t.get("hosts", []) if h["name"] == host)]
        assert join_id not in str(ready.options["replacementTrigger"])
        patch = program.named(f"ml-prod-gpus-{host}")
        assert patch.options["replaceWith"] == [ready.urn]
        assert patch.inputs["metadata"]["annotations"][gpu_render.JOIN_ANNOTATION] == join_id


def test_a_preview_of_updated_joins_replaces_no_ready_wait_or_registration(prod_config):
    """A release that changes the join's script updates every host's join; the preview knows none
    of its output. The Ready waits and GPU registrations are updated in that preview, never
    replaced (what `up` does: the same join id, nothing replaced; issue 38, item 6)."""
    from tests.plan_model import preview_plan

    config, secret_keys = prod_config
    before = run_program(config, secret_keys=secret_keys, stack="prod", mocks=Joined())
    original = host_join.join_script

    def new_join_script(*args, **kwargs):
        return original(*args, **kwargs) + "# a later release's join\n"

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(host_join, "join_script", new_join_script)
        steps = preview_plan(before, lambda mocks: run_program(config, secret_keys=secret_keys, stack="prod",
                                                                preview=True, mocks=mocks))
    replaced = {s.name for s in steps if s.op in ("replace", "create-replacement", "delete-replaced")}
    assert replaced == set(), steps
    updated = {s.name for s in steps if s.op == "update"}
    assert {f"ml-prod-{host}-join" for host in HOSTS} <= updated
    assert {f"ml-prod-{host}" for host in HOSTS} <= updated


class TestKubeletSkewInPreview:
    def test_a_tenant_version_a_hosts_kubelet_cannot_serve_fails_the_preview(self, prod_config):
        config, secret_keys = prod_config
        config = copy.deepcopy(config)
        config["tenants"][0]["kubernetesVersion"] = "v1.36.0"  # ml-prod, its hosts at v1.32
        with pytest.raises(Exception, match=r"host gpu-node-\d runs kubelet v1\.32, more than 3 minors older "
                                            r"than its control plane at v1\.36\.0"):
            run_program(config, secret_keys=secret_keys, stack="prod", preview=True,
                        mocks=KubeletReported("v1.32.7"))

    @pytest.mark.parametrize("kubelet", ["v1.33.1", "v1.35.4"])
    def test_within_the_skew_policy_it_passes(self, prod_config, kubelet):
        config, secret_keys = prod_config
        config = copy.deepcopy(config)
        config["tenants"][0]["kubernetesVersion"] = "v1.36.0"
        program = run_program(config, secret_keys=secret_keys, stack="prod", preview=True,
                              mocks=KubeletReported(kubelet))
        assert program.named("ml-prod-gpu-node-1").type == COMMAND


class TestRealAndMockGpus:
    def test_real_cards_turn_hamis_device_plugin_on_and_mock_cards_keep_it_off(self, prod_program):
        def device_plugin(tenant: str) -> bool:
            return prod_program.named(f"{tenant}-gpus-hami").inputs["values"]["devicePlugin"]["enabled"]

        assert device_plugin("ml-prod") is True
        assert device_plugin("sandbox") is False

    def test_real_gpu_prerequisites_are_checked_on_gpu_hosts_only(self, prod_program):
        assert "nvidia-smi" in prod_program.named("ml-prod-gpu-node-1-join").inputs["stdin"]
        assert "nvidia-smi" not in prod_program.named("sandbox-cpu-node-1-join").inputs["stdin"]

    def test_the_plan_counts_every_real_card(self, prod_program):
        capacity = prod_program.exports["tenants"]["ml-prod"]["gpuCapacity"]
        assert capacity["cards"] == 3 * 8
        assert prod_program.exports["tenants"]["ml-prod"]["gpuPlan"]["fits"] is True


class TestGuarantees:
    def test_every_resource_has_a_component_parent(self, prod_program):
        components = {r.urn for r in prod_program.registrations if r.type.startswith("kamaji-hami-platform:")}
        for resource in prod_program.registrations:
            # The stack's reference to its own last outputs (create_only_report.py) is a read of the
            # program's, no infrastructure.
            if resource.type.startswith(("kamaji-hami-platform:", "pulumi:pulumi:StackReference")):
                continue
            assert resource.parent in components, resource.name

    def test_kubernetes_resources_use_their_clusters_provider(self, prod_program):
        """The management cluster's objects (releases, namespaces, policies, control planes) on its
        provider; everything inside a tenant (CNI, kube-proxy, HAMi, node registrations) on the
        tenant's."""
        by_urn = prod_program.by_urn
        on_management = ("kubernetes:core/v1:Namespace", POLICY, TCP)
        for resource in prod_program.registrations:
            if not resource.type.startswith("kubernetes:") or resource.options.get("read"):
                continue
            parent = by_urn[resource.parent]
            tenant = parent.name.removesuffix("-gpus")
            if parent.name == "management" or resource.type in on_management:
                expected = prod_program.named("management-k8s")
            else:
                expected = prod_program.named(f"{tenant}-k8s")
            assert resource.provider.startswith(expected.urn + "::"), resource.name

    def test_no_secret_in_plain_text_anywhere(self, prod_program, prod_config):
        config, _ = prod_config
        for resource in prod_program.registrations:
            assert plain_text_leaks(resource.wire, needles(config)) == [], resource.name

    def test_no_secret_in_any_command_line_or_script(self, prod_program, prod_config):
        config, _ = prod_config
        assert not prod_program.of_type(REMOTE), "no remote Command: every script runs on this host"
        for resource in prod_program.of_type(COMMAND):
            for key in ("create", "delete", "update", "stdin"):
                text = resource.inputs.get(key) or ""
                assert not [n for n in needles(config) if n in text], (resource.name, key)

    def test_the_kubeconfig_export_is_secret(self, prod_program):
        assert "managementKubeconfig" in prod_program.secret_exports
        assert "tenantKubeconfigs" in prod_program.secret_exports

    def test_two_runs_register_identical_inputs(self, prod_config, production_program):
        config, secret_keys = prod_config

        def snapshot(program: Program) -> dict:
            return {(r.type, r.name): (r.wire, sorted(r.dependencies), r.parent, r.provider)
                    for r in program.registrations}

        second = run_program(config, secret_keys=secret_keys, stack="prod")
        assert snapshot(production_program) == snapshot(second)

    def test_a_fresh_preview_plans_everything(self, prod_config):
        config, secret_keys = prod_config
        program = run_program(config, secret_keys=secret_keys, stack="prod", preview=True,
                              mocks=PlatformMocks(fresh_preview=True))
        assert {f"ml-prod-{h}-join" for h in HOSTS} <= {r.name for r in program.of_type(COMMAND)}


class TestKubeconfigContext:
    def test_a_context_of_a_kubeconfig_file_is_read_and_kept_secret(self, prod_config, tmp_path):
        config, _ = prod_config
        other = yaml.safe_load(fake_kubeconfig("https://other:6443", "sentinel-other-context-token"))
        document = yaml.safe_load(fake_kubeconfig("https://10.20.0.10:6443", MGMT_KUBECONFIG_SENTINEL))
        document["contexts"][0]["name"] = "prod-admin"
        document["contexts"].append({"name": "other", "context": {"cluster": "o", "user": "o"}})
        document["clusters"].append({"name": "o", "cluster": other["clusters"][0]["cluster"]})
        document["users"].append({"name": "o", "user": other["users"][0]["user"]})
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(document))
        del config["managementKubeconfig"]
        config["management"].update(kubeconfigContext="prod-admin", kubeconfigFile=str(path))
        program = run_program(config, secret_keys=("sshPrivateKeys",), stack="prod")
        provider = program.named("management-k8s")
        assert is_secret(provider.wire["kubeconfig"])
        kubeconfig = yaml.safe_load(provider.inputs["kubeconfig"])
        assert kubeconfig["current-context"] == "prod-admin"
        assert "sentinel-other-context-token" not in provider.inputs["kubeconfig"], "only the context given"

    def test_a_missing_context_stops_before_anything_is_registered(self, prod_config, tmp_path, monkeypatch):
        config, _ = prod_config
        path = tmp_path / "kubeconfig"
        path.write_text(fake_kubeconfig("https://10.20.0.10:6443", MGMT_KUBECONFIG_SENTINEL))
        del config["managementKubeconfig"]
        config["management"].update(kubeconfigContext="nope", kubeconfigFile=str(path))
        registered = spy_registrations(monkeypatch)
        with pytest.raises(pulumi.RunError) as caught:
            run_program(config, secret_keys=("sshPrivateKeys",), stack="prod")
        assert f"{path} has no context 'nope' (it has: ctx)" in str(caught.value)
        assert MGMT_KUBECONFIG_SENTINEL not in str(caught.value)
        assert registered == []


class TestImpossibleMixtures:
    def test_all_problems_are_reported_with_paths_before_anything_registers(self, prod_config, monkeypatch):
        config, secret_keys = prod_config
        config["tenants"][1]["workers"] = 2  # containers next to hosts, on an existing cluster
        config["management"]["dockerSubnet"] = "172.30.0.0/16"
        config["tenants"][0]["hosts"][2]["privateKey"] = "missing-key"
        registered = spy_registrations(monkeypatch)
        with pytest.raises(pulumi.RunError) as caught:
            run_program(config, secret_keys=secret_keys, stack="prod")
        message = str(caught.value)
        assert "management.dockerSubnet: is for mode kind" in message
        assert "tenants[1].workers: give workers" in message
        assert "tenants[0].hosts[2].privateKey: 'missing-key' is not in the secret sshPrivateKeys" in message
        assert registered == []
        assert not [n for n in needles(config) if n in message]

    def test_a_secret_set_in_plain_text_is_refused_without_echoing_it(self, prod_config):
        config, _ = prod_config
        with pytest.raises(pulumi.RunError) as caught:
            run_program(config, secret_keys=("sshPrivateKeys",), stack="prod")
        assert "managementKubeconfig: must be a secret" in str(caught.value)
        assert MGMT_KUBECONFIG_SENTINEL not in str(caught.value)


def prod_program_tenant(name: str):
    from kamaji_hami_platform.config import load_stack_file
    from tests.harness import PRODUCTION_STACK

    return next(t for t in load_stack_file(PRODUCTION_STACK).tenants if t.name == name)


def policy(program: Program, tenant: str, name: str) -> dict[str, Any]:
    return program.named(f"{tenant}-networkpolicy-{tenant}-{name}").inputs["spec"]
