"""The whole program under Pulumi mocks: the management cluster's resources."""

from __future__ import annotations

import pytest

from kamaji_hami_platform import versions
from kamaji_hami_platform.management import kamaji_chart
from tests.harness import MGMT_KUBECONFIG_SENTINEL, Program, is_secret, plain_text_leaks, run_program

pytestmark = pytest.mark.unit

HELM = "kubernetes:helm.sh/v3:Release"
COMMAND = "command:local:Command"
COMPONENT = "kamaji-hami-platform:index:ManagementCluster"


def management(program: Program):
    (component,) = program.of_type(COMPONENT)
    return component


class TestManagementResources:
    def test_kind_cluster_command_creates_and_deletes(self, dev_program):
        kind = dev_program.named("management-kind")
        assert "kind create cluster --name kamaji" in kind.inputs["create"]
        assert "kind delete cluster --name kamaji" in kind.inputs["delete"]
        assert "image: kindest/node:v1.35.0" in kind.inputs["stdin"]
        assert kind.options["deleteBeforeReplace"] is True
        assert kind.inputs["environment"] == {"KIND_EXPERIMENTAL_DOCKER_NETWORK": "kamaji-hami"}

    def test_kind_keeps_its_credentials_out_of_the_users_kubeconfig(self, dev_program):
        kind = dev_program.named("management-kind")
        assert "--kubeconfig .kind/kamaji.kubeconfig" in kind.inputs["create"]
        assert "rm -f .kind/kamaji.kubeconfig" in kind.inputs["delete"]

    def test_a_new_docker_network_replaces_the_kind_cluster(self, dev_config):
        """The network is a trigger: kind, the workers and the MetalLB range move together."""
        before = run_program(dev_config).named("management-kind").inputs["triggers"]
        dev_config["management"]["dockerNetwork"] = "kind-b"
        after = run_program(dev_config)
        assert after.named("management-kind").inputs["triggers"] != before
        assert "kind-b" in after.named("management-kind").inputs["triggers"]
        assert "--network kind-b" in after.named("tenant-a-worker-0").inputs["create"]

    @pytest.mark.parametrize(("release", "chart", "namespace"), [
        ("cert-manager", versions.CERT_MANAGER_CHART, "cert-manager"),
        ("metallb", versions.METALLB_CHART, "metallb-system"),
    ])
    def test_helm_releases_are_pinned(self, dev_program, release, chart, namespace):
        reg = dev_program.named(f"management-{release}")
        assert reg.type == HELM
        assert reg.inputs["chart"] == chart.name
        assert reg.inputs["version"] == chart.version
        assert reg.inputs["repositoryOpts"]["repo"] == chart.repository
        assert reg.inputs["namespace"] == namespace
        assert reg.inputs["name"] == release

    def test_kamaji_is_installed_from_the_verified_chart_of_its_tag(self, dev_program):
        """Not `0.0.0+latest` from the repository (republished on every push): the folder the
        fetch command verified, named after the pinned digest; the release waits for it."""
        release, fetch = dev_program.named("management-kamaji"), dev_program.named("management-kamaji-chart")
        assert release.inputs["chart"] == kamaji_chart.chart_dir()
        assert versions.KAMAJI_CHART_SOURCE.digest[:12] in release.inputs["chart"]
        assert "repositoryOpts" not in release.inputs and "version" not in release.inputs
        assert fetch.urn in release.options["propertyDependencies"]["chart"]
        assert fetch.inputs["triggers"] == [versions.KAMAJI_CHART_SOURCE.digest,
                                            versions.KAMAJI_ETCD_CHART_SOURCE.digest]

    def test_kamaji_values_on_the_wire(self, dev_program):
        values = dev_program.named("management-kamaji").inputs["values"]
        assert values["image"]["tag"] == versions.KAMAJI_IMAGE_TAG
        assert "resources" in values and values["resources"] is None

    def test_metallb_pool_takes_the_last_quarter_of_the_platforms_network(self, dev_program):
        pool = dev_program.named("management-metallb-pool")
        assert pool.inputs["apiVersion"] == "metallb.io/v1beta1"
        assert pool.inputs["spec"]["addresses"] == ["172.30.255.200-172.30.255.250"]
        l2 = dev_program.named("management-metallb-l2")
        assert l2.inputs["spec"]["ipAddressPools"] == [pool.inputs["metadata"]["name"]]
        assert dev_program.exports["metallbPoolRange"] == "172.30.255.200-172.30.255.250"

    def test_a_configured_range_is_used(self, dev_config):
        dev_config["management"]["metallbAddressRange"] = "172.30.200.10-172.30.200.20"
        pool = run_program(dev_config).named("management-metallb-pool")
        assert pool.inputs["spec"]["addresses"] == ["172.30.200.10-172.30.200.20"]

    def test_the_network_comes_first_and_goes_last(self, dev_program):
        """kind attaches its node to the platform's network, and every worker too (replace_with:
        a new network, same name, takes them first)."""
        network = dev_program.named("management-network")
        kind = dev_program.named("management-kind")
        assert dev_program.depends_on(kind, network) and network.urn in kind.options["replaceWith"]
        assert network.options["deleteBeforeReplace"] is True
        # A tenant's workers are on its own network, which the kind node joins after kind.
        worker, own = dev_program.named("tenant-a-worker-0"), dev_program.named("tenant-a-network")
        assert dev_program.depends_on(worker, own) and own.urn in worker.options["replaceWith"]
        assert dev_program.depends_on(own, kind)
        layout = "--subnet 172.30.0.0/16 --ip-range 172.30.0.0/18 --gateway 172.30.0.1"
        assert layout in network.inputs["create"]
        assert "docker network rm" in network.inputs["delete"]

    def test_every_child_is_parented_to_the_component(self, dev_program):
        component = management(dev_program)
        children = [r for r in dev_program.registrations if r.parent == component.urn]
        names = {r.name for r in children}
        assert names >= {"management-kind", "management-kubeconfig", "management-k8s",
                         "management-cert-manager", "management-metallb", "management-kamaji",
                         "management-metallb-pool",
                         "management-metallb-l2"}

    def test_every_kubernetes_resource_uses_the_management_provider(self, dev_program):
        provider = dev_program.named("management-k8s")
        on_management = [r for r in dev_program.registrations
                         if r.type.startswith("kubernetes:") and r.parent == management(dev_program).urn]
        # cert-manager, MetalLB, Kamaji, the pool, its advertisement, and the platform's 7 policies
        assert len(on_management) == 5 + 7
        for reg in on_management:
            assert reg.provider.startswith(provider.urn + "::"), reg.name


class TestOrdering:
    def test_kamaji_waits_for_cert_manager(self, dev_program):
        kamaji = dev_program.named("management-kamaji")
        assert dev_program.depends_on(kamaji, dev_program.named("management-cert-manager"))

    def test_pool_waits_for_metallb_and_advertisement_for_pool(self, dev_program):
        pool = dev_program.named("management-metallb-pool")
        assert dev_program.depends_on(pool, dev_program.named("management-metallb"))
        assert dev_program.depends_on(dev_program.named("management-metallb-l2"), pool)

    def test_the_platform_s_policies_wait_for_the_charts_that_make_their_namespaces(self, dev_program):
        policies = dev_program.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
        platform = [policy for policy in policies if policy.parent == management(dev_program).urn]
        assert {policy.inputs["metadata"]["namespace"] for policy in platform} == {
            "cert-manager", "metallb-system", "kamaji-system"}
        for policy in platform:
            for release in ("management-cert-manager", "management-metallb", "management-kamaji"):
                assert dev_program.depends_on(policy, dev_program.named(release)), (policy.name, release)

    def test_no_chart_is_installed_before_kindnetd_is_seen_judging_policies(self, dev_program):
        check = dev_program.named("management-policy-engine")
        assert check.inputs["triggers"] == dev_program.named("management-kindnet-limits").inputs["triggers"]
        assert dev_program.depends_on(check, dev_program.named("management-kindnet-limits"))
        for release in ("management-cert-manager", "management-metallb", "management-kamaji"):
            assert dev_program.depends_on(dev_program.named(release), check), release

    def test_kubeconfig_is_read_after_the_cluster_exists(self, dev_program):
        kubeconfig = dev_program.named("management-kubeconfig")
        assert dev_program.depends_on(kubeconfig, dev_program.named("management-kind"))


class TestSecrets:
    def test_kubeconfig_command_output_is_secret_and_unlogged(self, dev_program):
        cmd = dev_program.named("management-kubeconfig")
        assert "stdout" in cmd.options["additionalSecretOutputs"]
        assert cmd.inputs["logging"] == "none"

    def test_provider_receives_the_kubeconfig_as_a_secret(self, dev_program):
        provider = dev_program.named("management-k8s")
        assert is_secret(provider.wire["kubeconfig"])
        assert MGMT_KUBECONFIG_SENTINEL in provider.inputs["kubeconfig"]

    def test_no_registered_input_holds_the_kubeconfig_in_plain_text(self, dev_program):
        leaks = {r.name: plain_text_leaks(r.wire) for r in dev_program.registrations}
        assert {name: found for name, found in leaks.items() if found} == {}

    def test_kubeconfig_export_is_secret(self, dev_program):
        assert "managementKubeconfig" in dev_program.secret_exports


class TestDeterminism:
    def test_two_runs_register_identical_inputs(self, dev_config, dev_program):
        def snapshot(program: Program) -> dict:
            return {(r.type, r.name): (r.wire, sorted(r.dependencies), r.parent, r.provider)
                    for r in program.registrations}

        first, second = dev_program, run_program(dev_config)
        assert len(first.registrations) == len(snapshot(first))
        assert snapshot(first) == snapshot(second)


class TestPreview:
    def test_program_previews_before_any_cluster_exists(self, dev_config):
        program = run_program(dev_config, preview=True)
        assert program.named("management-kamaji").type == HELM


class TestBadConfig:
    def test_bad_config_stops_the_program_before_any_resource(self, dev_config, monkeypatch):
        import pulumi

        from tests.harness import spy_registrations

        dev_config["tenants"][1]["podCidr"] = "10.36.0.0/16"
        registered = spy_registrations(monkeypatch)
        with pytest.raises(pulumi.RunError) as caught:
            run_program(dev_config)
        assert "tenants[1].podCidr: 10.36.0.0/16 overlaps tenants[0].podCidr" in str(caught.value)
        assert registered == []


def test_workers_start_with_what_kind_adds_on_this_host(dev_program):
    """The host check runs once per kind cluster, after it; its output is every worker's
    $KHP_HOST_FLAGS and a trigger (a changed host replaces the workers, as their spec)."""
    check = dev_program.named("management-docker-host")
    kind = dev_program.named("management-kind")
    assert dev_program.depends_on(check, kind)
    assert check.inputs["triggers"] == [f"{kind.name}_id"]
    worker = dev_program.named("tenant-a-worker-0")
    assert check.urn in worker.options["propertyDependencies"]["environment"]
    assert check.urn in worker.options["propertyDependencies"]["triggers"]
    assert "${KHP_HOST_FLAGS:-}" in worker.inputs["create"]
