"""The policy pack's rules: compliant and violating resources, and the platform itself."""

from __future__ import annotations

import copy

import pytest

from policy import rules
from policy.rules import Resource
from tests.harness import Program

pytestmark = pytest.mark.unit

TCP = {"metadata": {"name": "t", "namespace": "t"},
       "spec": {"controlPlane": {"service": {"serviceType": "LoadBalancer"}},
                "addons": {"konnectivity": {"server": {"port": 8132}}},
                "kubernetes": {"version": "v1.35.0"}, "networkProfile": {"port": 6443}}}
DENY = {"metadata": {"name": "default-deny", "namespace": "t"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}
WORKER = "docker run --label io.kamaji-hami-platform/tenant=t kindest/node:v1.35.0"


def tcp(**spec_changes) -> Resource:
    props = copy.deepcopy(TCP)
    for path, value in spec_changes.items():
        node = props["spec"]
        *parents, leaf = path.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return Resource(rules.TCP_TYPE, "t-control-plane", props)


def as_resources(program: Program) -> list[Resource]:
    return [Resource(r.type, r.name, r.inputs, r.options.get("additionalSecretOutputs", []))
            for r in program.registrations if r.custom]


class TestTcpExposure:
    def test_load_balancer_with_konnectivity_complies(self):
        assert rules.tcp_exposure(tcp()) == []

    def test_without_konnectivity(self):
        assert "Konnectivity" in rules.tcp_exposure(tcp(addons__konnectivity=None))[0]

    def test_cluster_ip_is_refused(self):
        assert "neither" in rules.tcp_exposure(tcp(controlPlane__service__serviceType="ClusterIP"))[0]

    def test_node_port_needs_explicit_ports(self):
        node_port = tcp(controlPlane__service__serviceType="NodePort", networkProfile__port=None)
        assert any("networkProfile.port" in p for p in rules.tcp_exposure(node_port))
        explicit = tcp(controlPlane__service__serviceType="NodePort", networkProfile__port=31443,
                       addons__konnectivity__server__port=31132)
        assert rules.tcp_exposure(explicit) == []


class TestHamiWebhook:
    def release(self, policy):
        values = {"scheduler": {"admissionWebhook": {"failurePolicy": policy}}} if policy else {}
        return Resource(rules.HELM_RELEASE_TYPE, "hami", {"chart": "hami", "values": values})

    def test_fail_complies(self):
        assert rules.hami_webhook_fails_closed(self.release("Fail")) == []

    @pytest.mark.parametrize("policy", ["Ignore", None])
    def test_ignore_or_chart_default_violates(self, policy):
        assert rules.hami_webhook_fails_closed(self.release(policy))

    def test_other_charts_are_not_concerned(self):
        assert rules.hami_webhook_fails_closed(Resource(rules.HELM_RELEASE_TYPE, "x", {"chart": "x"})) == []

    @pytest.mark.parametrize(("change", "said"), [
        ({"enabled": False}, "disabled"), ({"customURL": {"enabled": True}}, "customURL"),
        ({"whitelistNamespaces": ["kube-system", "team-a"]}, "skips namespaces team-a"),
        ({"namespaceSelector": {"matchLabels": {"gpu": "yes"}}}, "namespaceSelector.matchLabels narrows"),
        ({"objectSelector": {"matchExpressions": [{"key": "x"}]}}, "objectSelector.matchExpressions narrows"),
    ])
    def test_a_webhook_that_lets_gpu_pods_past_violates_with_fail(self, change, said):
        """HAMi chart 2.10.0 values.yaml: each key lets a GPU pod past HAMi with Fail kept (issue 38)."""
        webhook = {"failurePolicy": "Fail", "whitelistNamespaces": ["kube-system"], **change}
        release = Resource(rules.HELM_RELEASE_TYPE, "hami", {"chart": "hami", "values": {
            "scheduler": {"admissionWebhook": webhook}}})
        (problem,) = rules.hami_webhook_fails_closed(release)
        assert said in problem

    def test_the_skipped_namespaces_are_the_platforms(self):
        from kamaji_hami_platform.config.rules import WEBHOOK_EXCLUDED_NAMESPACES

        assert rules.WEBHOOK_SYSTEM_NAMESPACES == WEBHOOK_EXCLUDED_NAMESPACES


class TestKubeconfigSecret:
    def command(self, secret, logging):
        props = {"create": "kind get kubeconfig --name k", "logging": logging}
        return Resource(rules.COMMAND_TYPE, "kc", props, ["stdout"] if secret else [])

    def test_secret_and_unlogged_complies(self):
        assert rules.kubeconfig_outputs_secret(self.command(True, "none")) == []

    def test_plain_output_violates(self):
        assert "not a secret" in rules.kubeconfig_outputs_secret(self.command(False, "none"))[0]

    def test_logged_output_violates(self):
        assert "logging on" in rules.kubeconfig_outputs_secret(self.command(True, "stdoutAndStderr"))[0]


class TestImagesPinned:
    def daemonset(self, image):
        return Resource("kubernetes:apps/v1:DaemonSet", "ds", {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": image}]}}}})

    @pytest.mark.parametrize("image", ["registry.k8s.io/kube-proxy:v1.35.0", "localhost:5000/x:1",
                                       "busybox@sha256:" + "a" * 64])
    def test_tagged_images_comply(self, image):
        assert rules.images_pinned(self.daemonset(image)) == []

    @pytest.mark.parametrize("image", ["busybox", "busybox:latest", "localhost:5000/x"])
    def test_untagged_or_latest_violates(self, image):
        assert rules.images_pinned(self.daemonset(image))

    def test_cronjob_containers_are_checked(self):
        job = Resource("kubernetes:batch/v1:CronJob", "cj", {"spec": {"jobTemplate": {"spec": {
            "template": {"spec": {"containers": [{"image": "kubectl"}]}}}}}})
        assert rules.images_pinned(job)

    def test_worker_command_with_latest_node_image_violates(self):
        assert rules.images_pinned(Resource(rules.COMMAND_TYPE, "w", {"create": "docker run kindest/node"}))

    @pytest.mark.parametrize(("version", "pinned"), [
        ("2.10.0", True), ("v2.10.0-rc.1", True), ("^2.0", False), ("~2.10", False), ("2.x", False),
        (">=2.10.0", False)])
    def test_a_chart_version_range_is_not_pinned(self, version, pinned):
        release = Resource(rules.HELM_RELEASE_TYPE, "hami", {"chart": "hami", "version": version})
        assert (rules.images_pinned(release) == []) is pinned

    def test_a_local_chart_is_pinned_by_a_digest_in_its_name_only(self):
        def release(chart: str) -> Resource:
            return Resource(rules.HELM_RELEASE_TYPE, "kamaji", {"chart": chart, "values": {}})
        assert rules.images_pinned(release(".charts/kamaji-26.8.2-edge-230b40f26964-40756e29e933")) == []
        assert "no content digest" in rules.images_pinned(release("./my-kamaji-chart"))[0]
        unknown = Resource(rules.HELM_RELEASE_TYPE, "kamaji", {"chart": rules.UNKNOWN})
        assert rules.images_pinned(unknown) == []

    def test_a_checked_local_kamaji_chart_still_needs_its_image_tag(self):
        """The provider's Check sets `version` from the chart's Chart.yaml (0.0.0+latest at
        clastix/kamaji 26.8.2-edge, appVersion `latest`): the image tag must pin Kamaji."""
        chart = ".charts/kamaji-26.8.2-edge-230b40f26964-40756e29e933"
        unpinned = Resource(rules.HELM_RELEASE_TYPE, "kamaji",
                            {"chart": chart, "version": "0.0.0+latest", "values": {"image": {}}})
        pinned = Resource(rules.HELM_RELEASE_TYPE, "kamaji", {
            "chart": chart, "version": "0.0.0+latest", "values": {"image": {"tag": "26.8.2-edge"}}})
        assert "image.tag" in rules.images_pinned(unpinned)[0]
        assert rules.images_pinned(pinned) == []

    def test_latest_chart_needs_a_pinned_image_tag(self):
        release = Resource(rules.HELM_RELEASE_TYPE, "kamaji", {"chart": "kamaji", "version": "0.0.0+latest",
                                                             "values": {"image": {}}})
        assert "image.tag" in rules.images_pinned(release)[0]


def messages(violations: list[rules.Violation]) -> list[str]:
    return [v.message for v in violations]


class TestStackRules:
    def test_namespace_with_default_deny_complies(self):
        resources = [tcp(), Resource(rules.NETWORK_POLICY_TYPE, "deny", DENY)]
        assert rules.tenant_namespaces_default_deny(resources) == []

    def test_namespace_without_default_deny_violates_naming_the_control_plane(self):
        allow_all = copy.deepcopy(DENY)
        allow_all["spec"]["ingress"] = [{}]
        resources = [tcp(), Resource(rules.NETWORK_POLICY_TYPE, "allow", allow_all)]
        (violation,) = rules.tenant_namespaces_default_deny(resources)
        assert violation.message == "tenant namespace 't' has no default-deny NetworkPolicy"
        assert violation.resource.name == "t-control-plane"

    def test_worker_matching_the_control_plane_complies(self):
        worker = Resource(rules.COMMAND_TYPE, "w", {"create": WORKER})
        assert rules.worker_versions_match([tcp(), worker]) == []

    def test_worker_of_another_version_violates(self):
        worker = Resource(rules.COMMAND_TYPE, "w", {"create": WORKER.replace("v1.35.0", "v1.34.0")})
        (violation,) = rules.worker_versions_match([tcp(), worker])
        assert "runs kindest/node:v1.34.0" in violation.message and violation.resource is worker


class TestThePlatformItself:
    def test_every_resource_of_the_dev_stack_complies(self, dev_program):
        resources = as_resources(dev_program)
        violations = [m for r in resources for rule in rules.RESOURCE_RULES.values() for m in rule(r)]
        violations += [v.message for rule in rules.STACK_RULES.values() for v in rule(resources)]
        assert violations == []

    @pytest.mark.parametrize("exposure", ["LoadBalancer", "NodePort"])
    def test_an_existing_cluster_with_host_workers_complies(self, exposure):
        """The production example (existing cluster, hosts, real and mock GPUs), both exposures."""
        from tests.harness import production_config, run_program
        from tests.program.test_modes import node_port_config

        config, secret_keys = production_config()
        program = run_program(config if exposure == "LoadBalancer" else node_port_config(config),
                              secret_keys=secret_keys, stack="prod")
        resources = as_resources(program)
        assert {r.props["spec"]["controlPlane"]["service"]["serviceType"] for r in resources
                if r.type == rules.TCP_TYPE} == {exposure}
        violations = [m for r in resources for rule in rules.RESOURCE_RULES.values() for m in rule(r)]
        violations += [v.message for rule in rules.STACK_RULES.values() for v in rule(resources)]
        assert violations == []

    def test_the_rules_see_the_resources_they_guard(self, dev_program):
        types = {r.type for r in as_resources(dev_program)}
        guarded = {rules.TCP_TYPE, rules.NETWORK_POLICY_TYPE, rules.HELM_RELEASE_TYPE, rules.COMMAND_TYPE}
        assert guarded <= types


class TestRulesWithUnknowns:
    def test_unknown_deny_policy_spec_is_not_a_missing_default_deny(self):
        deny = Resource(rules.NETWORK_POLICY_TYPE, "deny",
                        {"metadata": DENY["metadata"], "spec": rules.UNKNOWN})
        assert rules.tenant_namespaces_default_deny([tcp(), deny]) == []
        other = Resource(rules.NETWORK_POLICY_TYPE, "deny", {"metadata": {"namespace": "elsewhere"},
                                                             "spec": DENY["spec"]})
        assert rules.tenant_namespaces_default_deny([tcp(), other]) != [], "known and missing: blocks"

    def test_a_policy_nobody_can_see_excuses_only_its_own_component(self):
        """Empty props (nothing seen) may be any namespace's default deny, but only a policy of the
        same component (KamajiTenant) can be this tenant's: the other tenant is still judged."""
        unseen = Resource(rules.NETWORK_POLICY_TYPE, "a-deny", {}, parent="tenant-a")
        tenant_a = Resource(rules.TCP_TYPE, "a-cp", {"metadata": {"namespace": "a"}}, parent="tenant-a")
        tenant_b = Resource(rules.TCP_TYPE, "b-cp", {"metadata": {"namespace": "b"}}, parent="tenant-b")
        violations = rules.tenant_namespaces_default_deny([unseen, tenant_a, tenant_b])
        assert [v.resource.name for v in violations] == ["b-cp"]

    def test_an_unseen_control_plane_is_never_a_violation_and_skips_no_other(self):
        unseen = Resource(rules.TCP_TYPE, "a-cp", {}, parent="tenant-a")
        worker_a = Resource(rules.COMMAND_TYPE, "a-w", {"create": WORKER.replace("=t ", "=a ")},
                            parent="tenant-a")
        known = tcp()
        worker_t = Resource(rules.COMMAND_TYPE, "t-w", {"create": WORKER.replace("v1.35.0", "v1.34.0")})
        assert rules.tenant_namespaces_default_deny([unseen]) == []
        assert messages(rules.worker_versions_match([unseen, worker_a, known, worker_t])) == [
            "t-w: worker runs kindest/node:v1.34.0 but tenant 't' runs v1.35.0"]

    def test_unknown_image_is_not_unpinned_but_a_known_latest_still_is(self):
        spec = {"template": {"spec": {"containers": [{"image": rules.UNKNOWN}, {"image": "busybox:latest"}]}}}
        violations = rules.images_pinned(Resource("kubernetes:apps/v1:DaemonSet", "d", {"spec": spec}))
        assert violations == ["d: image 'busybox:latest' is not pinned to a tag"]

    def test_unknown_worker_script_or_version_is_skipped_not_reported(self):
        worker = Resource(rules.COMMAND_TYPE, "w", {"create": rules.UNKNOWN})
        assert rules.worker_versions_match([tcp(), worker]) == []
        unknown_version = tcp(kubernetes__version=rules.UNKNOWN)
        known_worker = Resource(rules.COMMAND_TYPE, "w", {"create": WORKER})
        assert rules.worker_versions_match([unknown_version, known_worker]) == []
