"""Every generated name against the rules Kubernetes, kind and Docker apply (kamaji_hami_platform/names.py).

The rules are checked here against names the API server is known to accept or refuse; the
sim tier applies the longest names the config accepts to a real kube-apiserver.
"""

from __future__ import annotations

import pytest

from kamaji_hami_platform import names
from kamaji_hami_platform.config import ConfigError, parse_config
from kamaji_hami_platform.gpu import render as hami_render
from tests.harness import run_program

pytestmark = pytest.mark.unit
LONGEST_TENANT = "t" + "x" * 38 + "a"


@pytest.fixture
def longest(dev_config) -> dict:
    """The longest names and most workers the config accepts."""
    dev_config["management"]["name"] = "k" * 40
    dev_config["tenants"][0].update(name=LONGEST_TENANT, workers=99)
    return dev_config


@pytest.mark.parametrize(("rule", "good", "bad"), [
    (names.DNS1123_LABEL, "a" * 63, "a" * 64),
    (names.DNS1123_LABEL, "tenant-a-worker-0", "tenant_a"),
    (names.DNS1035_LABEL, "tenant-a", "1tenant"),
    (names.CRONJOB_NAME, "c" * 52, "c" * 53),
    (names.LABEL_VALUE, "a.b_c-d", "-a"),
    (names.KIND_CLUSTER_NAME, "kamaji.dev" + "x" * 100, "Kamaji"),
    (names.DOCKER_CONTAINER_NAME, "Tenant_a.1" + "x" * 300, "-tenant"),
])
def test_each_rule_accepts_and_refuses_what_its_source_does(rule, good, bad):
    assert rule.problem(good) is None
    assert rule.problem(bad) is not None


def test_the_longest_config_is_accepted_and_every_name_it_makes_keeps_its_rule(longest):
    platform = parse_config(longest)
    shapes = [names.TenantShape(f"tenants[{i}].name", t.name, t.workers, t.gpus is not None)
              for i, t in enumerate(platform.tenants)]
    generated = names.generated(platform.management.name, shapes)
    assert len(generated) > 3 * 99, "every worker's names are among them"
    assert names.check(platform.management.name, shapes) == []


def test_capacity_cronjob_names_keep_short_names_and_shorten_long_ones_uniquely():
    assert names.capacity_cronjob_name("tenant-a-worker-0") == "hami-mock-gpu-capacity-tenant-a-worker-0"
    long_ones = [names.capacity_cronjob_name(names.worker_name(LONGEST_TENANT, i)) for i in range(99)]
    assert max(map(len, long_ones)) <= 52 and len(set(long_ones)) == 99
    assert all(names.CRONJOB_NAME.problem(n) is None for n in long_ones)


def test_the_program_renders_the_names_the_rules_checked(longest):
    """Under mocks with the longest config: every object's metadata.name fits its kind's rule."""
    program = run_program(longest)
    rules = {"kubernetes:batch/v1:CronJob": names.CRONJOB_NAME,
             "kubernetes:core/v1:Namespace": names.DNS1123_LABEL,
             "kubernetes:core/v1:NodePatch": names.DNS1123_SUBDOMAIN}
    checked = 0
    for reg in program.registrations:
        if reg.type in rules:
            assert rules[reg.type].problem(reg.inputs["metadata"]["name"]) is None, reg.name
            checked += 1
    assert checked > 99
    cronjobs = {r.inputs["metadata"]["name"] for r in program.of_type("kubernetes:batch/v1:CronJob")}
    rendered = {o["metadata"]["name"] for o in hami_render.capacity_agent_objects(
        {n: 10 for n in parse_config(longest).tenants[0].worker_names()}) if o["kind"] == "CronJob"}
    assert cronjobs == rendered | {"hami-mock-gpu-capacity-tenant-b-worker-0"}


def test_a_name_that_breaks_a_rule_is_refused_naming_the_tenant_and_the_limit(monkeypatch, dev_config):
    """If a formula ever makes a name too long (here: a longer worker suffix), the config is
    refused before any resource, at the tenant's path, with the limit."""
    monkeypatch.setattr(names, "worker_name", lambda tenant, index: f"{tenant}-{'w' * 60}-{index}")
    with pytest.raises(ConfigError) as caught:
        parse_config(dev_config)
    problems = caught.value.problems
    assert any(p.startswith("tenants[0].name: makes a worker (hostname and node name) 'tenant-a-")
               and "a DNS-1123 label allows 63" in p for p in problems), problems
    assert any(p.startswith("tenants[1].name:") for p in problems)
