"""The platform's own namespaces' NetworkPolicies (management/network_policy.py): which there are per
mode and per installed component, and which flows they admit by the evaluator of tests/netpol_eval.py.
That evaluator agrees with kindnetd's real controller on these flows in the live tier
(tests/live/test_kind_cluster.py test_the_platform_s_namespaces_admit_only_their_flows), which
also shows the premises no rule is written for: the node's root reaches every webhook, and a pod
reaches the API server's Service.
"""

from __future__ import annotations

import pytest

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.config.loader import load_stack_file
from kamaji_hami_platform.management.network_policy import platform_network_policies
from kamaji_hami_platform.tenant.network_policy import network_policies
from tests.harness import PRODUCTION_STACK
from tests.netpol_eval import Endpoint, allowed

pytestmark = pytest.mark.unit

# Pods as the charts label them (see the live test for the templates cited).
WEBHOOK = Endpoint("cert-manager", "10.244.0.10", {"app.kubernetes.io/component": "webhook"})
METALLB = Endpoint("metallb-system", "10.244.0.11", {"app.kubernetes.io/component": "controller"})
KAMAJI = Endpoint("kamaji-system", "10.244.0.12", {"app.kubernetes.io/name": "kamaji",
                                                   "app.kubernetes.io/component": "controller-manager"})
ETCD = [Endpoint("kamaji-system", f"10.244.0.{13 + i}", {"app.kubernetes.io/name": "kamaji-etcd"})
        for i in range(2)]
SETUP_JOB = Endpoint("kamaji-system", "10.244.0.15", {"job-name": "kamaji-etcd-setup-2"})
CP_A = Endpoint("tenant-a", "10.244.0.16", {"kamaji.clastix.io/name": "tenant-a",
                                             "kamaji.clastix.io/component": "deployment"})
NAMED_ONLY = Endpoint("tenant-a", "10.244.0.19", {"kamaji.clastix.io/name": "tenant-a"})  # not Kamaji's
PLAIN_A = Endpoint("tenant-a", "10.244.0.17")
DNS = Endpoint("kube-system", "10.244.0.2", {"k8s-app": "kube-dns"})
OTHER = Endpoint("default", "10.244.0.18")
TENANT_ADDRESS = Endpoint(None, "172.30.64.130")  # a control plane's MetalLB address, outside the pods
NODE_ROOT = Endpoint(None, "172.30.0.2", node_root=True)


@pytest.fixture
def policies(dev_config):
    platform = parse_config(dev_config)
    return [*platform_network_policies(platform.management),
            *(policy for tenant in platform.tenants
              for policy in network_policies(tenant, platform.management))]


def test_each_platform_namespace_on_kind_denies_by_default(dev_config):
    rendered = platform_network_policies(parse_config(dev_config).management)
    deny = {p["metadata"]["namespace"]: p["spec"] for p in rendered
            if p["metadata"]["name"] == "default-deny"}
    assert set(deny) == {"cert-manager", "metallb-system", "kamaji-system"}
    assert all(spec["policyTypes"] == ["Ingress", "Egress"] for spec in deny.values())


def test_an_existing_cluster_s_namespaces_are_its_admin_s():
    assert platform_network_policies(load_stack_file(PRODUCTION_STACK).management) == []


@pytest.mark.parametrize(("source", "destination", "port"), [
    (KAMAJI, ETCD[0], 2379), (SETUP_JOB, ETCD[0], 2379), (ETCD[1], ETCD[0], 2380), (ETCD[0], ETCD[1], 2379),
    (CP_A, ETCD[0], 2379), (KAMAJI, CP_A, 6443), (KAMAJI, DNS, 53), (ETCD[0], DNS, 53), (SETUP_JOB, DNS, 53),
    (NODE_ROOT, WEBHOOK, 10250), (NODE_ROOT, METALLB, 9443), (NODE_ROOT, KAMAJI, 9443),
])
def test_the_flows_the_platform_needs_are_admitted(policies, source, destination, port):
    assert allowed(policies, source, destination, port)


@pytest.mark.parametrize(("source", "destination", "port"), [
    (PLAIN_A, ETCD[0], 2379), (NAMED_ONLY, ETCD[0], 2379), (OTHER, ETCD[0], 2379), (OTHER, ETCD[0], 2380),
    (KAMAJI, ETCD[0], 2380),
    (WEBHOOK, ETCD[0], 2379), (OTHER, KAMAJI, 9443), (OTHER, WEBHOOK, 10250), (OTHER, METALLB, 9443),
    (CP_A, KAMAJI, 9443), (SETUP_JOB, CP_A, 6443), (WEBHOOK, DNS, 53), (WEBHOOK, OTHER, 443),
    (METALLB, CP_A, 6443), (KAMAJI, TENANT_ADDRESS, 6443), (WEBHOOK, TENANT_ADDRESS, 6443),
    (METALLB, TENANT_ADDRESS, 6443),
])
def test_every_other_flow_is_dropped(policies, source, destination, port):
    assert not allowed(policies, source, destination, port)
