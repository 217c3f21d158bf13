"""Only the nodes the config lists may register: the renderer (tenant/node_admission.py) and its
wiring (every join waits for the policy; a removed node's leave comes after the list shrank).
The real API server enforcing it: tests/sim/test_node_admission.py."""

from __future__ import annotations

import copy
import dataclasses
import json
import re

import pytest

from kamaji_hami_platform import manifest_resources
from kamaji_hami_platform.config import load_stack_file, parse_config
from kamaji_hami_platform.tenant import node_admission
from kamaji_hami_platform.tenant.node_admission import node_admission_objects
from tests.harness import PRODUCTION_STACK, dev_stack_config, production_config, run_program
from tests.plan_model import ops, plan

pytestmark = pytest.mark.unit

POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
HOSTS = ("gpu-node-1", "gpu-node-2", "gpu-node-3")


def _listed(policy: dict) -> list[str]:
    """The names the policy's CEL expression lists (a JSON list after `in`)."""
    (validation,) = policy["spec"]["validations"]
    match = re.fullmatch(r"object\.metadata\.name in (\[.*\])", validation["expression"])
    assert match, validation["expression"]
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def dev():
    return parse_config(dev_stack_config())


@pytest.fixture(scope="module")
def prod():
    return load_stack_file(PRODUCTION_STACK)


class TestTheObjects:
    def test_a_policy_and_its_deny_binding_under_one_stable_name(self, dev):
        policy, binding = node_admission_objects(dev.tenants[0], dev.management)
        assert (policy["apiVersion"], policy["kind"]) == ("admissionregistration.k8s.io/v1",
                                                          "ValidatingAdmissionPolicy")
        assert (binding["apiVersion"], binding["kind"]) == ("admissionregistration.k8s.io/v1",
                                                            "ValidatingAdmissionPolicyBinding")
        assert policy["metadata"] == binding["metadata"] == {"name": "kamaji-hami-platform-nodes"}
        assert binding["spec"] == {"policyName": "kamaji-hami-platform-nodes", "validationActions": ["Deny"]}
        assert policy["spec"]["failurePolicy"] == "Fail"

    def test_only_a_kubelets_create_and_update_of_a_node_are_judged(self, dev):
        """A kubelet registers by CREATE and changes its Node's metadata by UPDATE; its status (a
        subresource of its own, which the drain's volume detach relies on), deletes and the
        platform's own requests (as the tenant's admin) are never judged."""
        spec = node_admission_objects(dev.tenants[0])[0]["spec"]
        assert spec["matchConstraints"] == {"resourceRules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
             "resources": ["nodes"]}]}
        assert spec["matchConditions"] == [{"name": "kubelets-only",
                                            "expression": '"system:nodes" in request.userInfo.groups'}]

    def test_container_workers_are_listed(self, dev):
        config = dev_stack_config()
        config["tenants"][1]["workers"] = 3
        platform = parse_config(config)
        assert _listed(node_admission_objects(platform.tenants[0])[0]) == ["tenant-a-worker-0"]
        assert _listed(node_admission_objects(platform.tenants[1])[0]) == [
            "tenant-b-worker-0", "tenant-b-worker-1", "tenant-b-worker-2"]

    def test_hosts_are_listed_by_their_names(self, prod):
        ml_prod, sandbox = prod.tenants
        assert _listed(node_admission_objects(ml_prod, prod.management)[0]) == list(HOSTS)
        assert _listed(node_admission_objects(sandbox, prod.management)[0]) == [
            host.name for host in sandbox.hosts]

    def test_no_worker_lists_no_name(self, dev):
        config = dev_stack_config()
        config["tenants"][0]["workers"] = 0
        config["tenants"][0].pop("gpus", None)
        config["tenants"][0].pop("gpuWorkloads", None)
        config["tenants"][0].pop("gpuQuotas", None)
        tenant = parse_config(config).tenants[0]
        assert _listed(node_admission_objects(tenant)[0]) == []

    def test_the_message_names_the_node_and_the_tenant_and_how_to_add_one(self, dev, prod):
        (validation,) = node_admission_objects(dev.tenants[0], dev.management)[0]["spec"]["validations"]
        assert validation["reason"] == "Forbidden"
        assert validation["message"].startswith("this node is not a node of tenant tenant-a in the "
                                                "kamaji-hami-platform config")
        assert "raise tenants[name=tenant-a].workers" in validation["message"]
        assert validation["messageExpression"].startswith('"node " + object.metadata.name + " is not a node')
        (hosts,) = node_admission_objects(prod.tenants[0], prod.management)[0]["spec"]["validations"]
        assert "list it in tenants[name=ml-prod].hosts and run pulumi up" in hosts["message"]
        for text in (validation["message"], validation["messageExpression"], hosts["message"]):
            assert "\n" not in text  # the API server refuses a message with a line break

    def test_the_same_config_renders_the_same_objects_and_host_order_does_not_matter(self, prod):
        ml_prod = prod.tenants[0]
        assert node_admission_objects(ml_prod, prod.management) == node_admission_objects(
            load_stack_file(PRODUCTION_STACK).tenants[0], prod.management)
        reordered = dataclasses.replace(ml_prod, hosts=tuple(reversed(ml_prod.hosts)))
        assert node_admission_objects(reordered, prod.management) == node_admission_objects(
            ml_prod, prod.management)

    def test_both_kinds_have_a_typed_resource(self):
        for kind in (node_admission.POLICY_KIND, node_admission.BINDING_KIND):
            assert (node_admission.API_VERSION, kind) in manifest_resources._CONSTRUCTORS


class TestTheWiring:
    @pytest.mark.parametrize("tenant", ["tenant-a", "tenant-b"])
    def test_each_tenant_gets_the_policy_through_its_own_provider(self, dev_program, dev, tenant):
        (component,) = [r for r in dev_program.of_type("kamaji-hami-platform:index:KamajiTenant")
                        if r.name == tenant]
        provider = dev_program.named(f"{tenant}-k8s")
        control_plane = dev_program.named(f"{tenant}-control-plane")
        rendered = node_admission_objects(next(t for t in dev.tenants if t.name == tenant), dev.management)
        for type_, obj in zip((POLICY, BINDING), rendered, strict=True):
            name = obj["metadata"]["name"]
            (reg,) = [r for r in dev_program.of_type(type_)
                      if r.parent == component.urn and r.inputs["metadata"]["name"] == name]
            assert reg.provider.startswith(provider.urn + "::")
            assert reg.options["deletedWith"] == control_plane.urn
            assert reg.inputs["spec"] == obj["spec"]

    def test_every_container_worker_joins_after_the_policy(self):
        config = dev_stack_config()
        config["tenants"][1]["workers"] = 3
        program = run_program(config)
        for tenant, workers in (("tenant-a", 1), ("tenant-b", 3)):
            policy = program.named(f"{tenant}-validatingadmissionpolicy-kamaji-hami-platform-nodes")
            binding = program.named(f"{tenant}-validatingadmissionpolicybinding-kamaji-hami-platform-nodes")
            for index in range(workers):
                worker = program.named(f"{tenant}-worker-{index}")
                assert program.depends_on(worker, policy) and program.depends_on(worker, binding)
                assert not program.depends_on(policy, worker)

    def test_every_host_leaves_joins_and_waits_after_the_policy(self, production_program):
        policy, binding = (production_program.named(f"ml-prod-{kind}-kamaji-hami-platform-nodes")
                           for kind in ("validatingadmissionpolicy", "validatingadmissionpolicybinding"))
        for host in HOSTS:
            for suffix in ("-leave", "-join", ""):
                step = production_program.named(f"ml-prod-{host}{suffix}")
                assert production_program.depends_on(step, policy), step.name
                assert production_program.depends_on(step, binding), step.name

    def test_a_removed_worker_leaves_after_the_list_shrank(self):
        """Pulumi deletes what the config dropped after every update: the removed node's leave
        (drain, delete) runs against the shrunk list, which judges only a kubelet's CREATE."""
        config = dev_stack_config()
        config["tenants"][0]["workers"] = 2
        before = run_program(config)
        config["tenants"][0]["workers"] = 1
        steps = plan(before, run_program(config))
        planned = ops(steps)
        policy = "tenant-a-validatingadmissionpolicy-kamaji-hami-platform-nodes"
        assert planned[policy] == "update"
        assert planned["tenant-a-worker-1"] == "delete"
        names = [s.name for s in steps]
        assert names.index(policy) < names.index("tenant-a-worker-1")
        assert "replace" not in planned.get("tenant-a-worker-0", "")
        assert "tenant-b-validatingadmissionpolicy-kamaji-hami-platform-nodes" not in planned

    def test_a_removed_host_leaves_after_the_list_shrank_and_the_others_stay(self):
        config, secret_keys = production_config()
        before = run_program(config, stack="prod", secret_keys=secret_keys)
        after_config = copy.deepcopy(config)
        after_config["tenants"][0]["hosts"] = [h for h in config["tenants"][0]["hosts"]
                                               if h["name"] != "gpu-node-3"]
        after = run_program(after_config, stack="prod", secret_keys=secret_keys)
        steps = plan(before, after)
        planned = ops(steps)
        policy = "ml-prod-validatingadmissionpolicy-kamaji-hami-platform-nodes"
        assert planned[policy] == "update"
        assert _listed(after.named(policy).inputs) == ["gpu-node-1", "gpu-node-2"]
        names = [s.name for s in steps]
        assert planned["ml-prod-gpu-node-3-leave"] == "delete"
        assert names.index(policy) < names.index("ml-prod-gpu-node-3-leave")
        assert not any(name.startswith(("ml-prod-gpu-node-1", "ml-prod-gpu-node-2")) for name in planned)
