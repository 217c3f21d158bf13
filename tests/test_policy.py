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


# --- the pack itself, as pulumi-policy runs it during a preview of a fresh stack ---------------

POLICY_DIR = Path(rules.__file__).parent


@pytest.fixture(scope="module")
def pack():
    """policy/pack.py as the CLI loads it (the pack's folder on sys.path), with pulumi-policy 1.21."""
    import importlib
    import sys

    sys.path.insert(0, str(POLICY_DIR))
    try:
        return importlib.import_module("pack")
    finally:
        sys.path.remove(str(POLICY_DIR))


def fresh_preview_props(reg) -> dict:
    """A registration's inputs as a first preview sends them to the analyzer: every input
    computed from another resource's output is still unknown (the engine's sentinel)."""
    from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

    computed = reg.options.get("propertyDependencies", {})
    return {key: UNKNOWN_STRING_VALUE if computed.get(key) else value for key, value in reg.inputs.items()}


def run_policies(pack, regs, props=fresh_preview_props) -> list[str]:
    """Every policy of the pack over these registrations, props behind pulumi-policy's own
    unknown-checking proxy; an UnknownValueError escaping a policy fails the test, since
    pulumi-policy would then downgrade that policy to advisory for the whole preview."""
    from types import SimpleNamespace

    from pulumi_policy import ResourceValidationPolicy
    from pulumi_policy.proxy import unknown_checking_proxy

    def args(reg):
        return SimpleNamespace(resource_type=reg.type, name=reg.name,
                               props=unknown_checking_proxy(props(reg)),
                               opts=SimpleNamespace(additional_secret_outputs=reg.options.get(
                                   "additionalSecretOutputs", [])))

    violations: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        violations.append(message)

    custom = [reg for reg in regs if reg.custom]
    for policy in pack.policies():
        if isinstance(policy, ResourceValidationPolicy):
            for reg in custom:
                policy.validate(args(reg), report)
        else:
            policy.validate(SimpleNamespace(resources=[args(reg) for reg in custom]), report)
    return violations


class TestPoliciesBlockInPreview:
    def test_a_fresh_stack_has_unknowns_and_every_policy_still_runs_and_passes(self, pack, dev_program):
        unknown = [r.name for r in dev_program.registrations
                   if r.custom and any(fresh_preview_props(r)[k] != v for k, v in r.inputs.items())]
        assert "tenant-a-worker-0" in unknown and "tenant-a-admin-access" in unknown
        assert run_policies(pack, dev_program.registrations) == []

    def test_a_violation_is_still_reported_next_to_unknowns(self, pack, dev_program):
        regs = copy.deepcopy(dev_program.registrations)
        hami = next(r for r in regs if r.name == "tenant-a-gpus-hami")
        hami.inputs["values"]["scheduler"]["admissionWebhook"]["failurePolicy"] = "Ignore"
        tcp_reg = next(r for r in regs if r.name == "tenant-b-control-plane")
        del tcp_reg.inputs["spec"]["addons"]["konnectivity"]
        regs = [r for r in regs if r.name != "tenant-a-networkpolicy-tenant-a-default-deny"]
        worker = next(r for r in regs if r.name == "tenant-b-worker-0")
        worker.inputs["create"] = worker.inputs["create"].replace("kindest/node:v1.35.0",
                                                                  "kindest/node:v1.34.0")
        violations = run_policies(pack, regs)
        assert any("failurePolicy is 'Ignore'" in v for v in violations)
        assert any("Konnectivity is not enabled" in v for v in violations)
        assert any("'tenant-a' has no default-deny" in v for v in violations)
        assert any("runs kindest/node:v1.34.0" in v for v in violations)

    def test_a_value_the_rule_needs_but_cannot_know_is_not_a_violation(self, pack, dev_program):
        from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

        def everything_unknown(reg) -> dict:
            keep = ("metadata",) if reg.type == rules.NETWORK_POLICY_TYPE else ()
            return {k: (v if k in keep else UNKNOWN_STRING_VALUE) for k, v in reg.inputs.items()}

        assert run_policies(pack, dev_program.registrations, everything_unknown) == []


class TestRulesWithUnknowns:
    def test_unknown_deny_policy_spec_is_not_a_missing_default_deny(self):
        deny = Resource(rules.NETWORK_POLICY_TYPE, "deny",
                        {"metadata": DENY["metadata"], "spec": rules.UNKNOWN})
        assert rules.tenant_namespaces_default_deny([tcp(), deny]) == []
        other = Resource(rules.NETWORK_POLICY_TYPE, "deny", {"metadata": {"namespace": "elsewhere"},
                                                             "spec": DENY["spec"]})
        assert rules.tenant_namespaces_default_deny([tcp(), other]) != [], "known and missing: blocks"

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
