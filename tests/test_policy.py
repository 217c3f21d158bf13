"""The policy pack's rules: compliant and violating resources, and the platform itself."""

from __future__ import annotations

import ast
import copy
from pathlib import Path

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

    def test_latest_chart_needs_a_pinned_image_tag(self):
        release = Resource(rules.HELM_RELEASE_TYPE, "kamaji", {"chart": "kamaji", "version": "0.0.0+latest",
                                                             "values": {"image": {}}})
        assert "image.tag" in rules.images_pinned(release)[0]


class TestStackRules:
    def test_namespace_with_default_deny_complies(self):
        resources = [tcp(), Resource(rules.NETWORK_POLICY_TYPE, "deny", DENY)]
        assert rules.tenant_namespaces_default_deny(resources) == []

    def test_namespace_without_default_deny_violates(self):
        allow_all = copy.deepcopy(DENY)
        allow_all["spec"]["ingress"] = [{}]
        resources = [tcp(), Resource(rules.NETWORK_POLICY_TYPE, "allow", allow_all)]
        assert rules.tenant_namespaces_default_deny(resources) == [
            "tenant namespace 't' has no default-deny NetworkPolicy"]

    def test_worker_matching_the_control_plane_complies(self):
        worker = Resource(rules.COMMAND_TYPE, "w", {"create": WORKER})
        assert rules.worker_versions_match([tcp(), worker]) == []

    def test_worker_of_another_version_violates(self):
        worker = Resource(rules.COMMAND_TYPE, "w", {"create": WORKER.replace("v1.35.0", "v1.34.0")})
        assert "runs kindest/node:v1.34.0" in rules.worker_versions_match([tcp(), worker])[0]


class TestThePlatformItself:
    def test_every_resource_of_the_dev_stack_complies(self, dev_program):
        resources = as_resources(dev_program)
        violations = [m for r in resources for rule in rules.RESOURCE_RULES.values() for m in rule(r)]
        violations += [m for rule in rules.STACK_RULES.values() for m in rule(resources)]
        assert violations == []

    def test_the_rules_see_the_resources_they_guard(self, dev_program):
        types = {r.type for r in as_resources(dev_program)}
        guarded = {rules.TCP_TYPE, rules.NETWORK_POLICY_TYPE, rules.HELM_RELEASE_TYPE, rules.COMMAND_TYPE}
        assert guarded <= types


def test_the_pack_registers_every_rule():
    source = (Path(rules.__file__).parent / "pack.py").read_text()
    tree = ast.parse(source)
    assert "RESOURCE_RULES" in source and "STACK_RULES" in source
    assert any(isinstance(n, ast.FunctionDef) and n.name == "policies" for n in tree.body)
    main = (Path(rules.__file__).parent / "__main__.py").read_text()
    assert "PolicyPack(" in main and "EnforcementLevel.MANDATORY" in main
