"""Validation of the stack config: pure, no Pulumi runtime."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kamaji_hami_platform.config import ConfigError, PlatformConfig, parse_config

pytestmark = pytest.mark.unit


def problems_of(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw)
    return caught.value.problems


def assert_refused(raw: dict[str, Any], path: str, fragment: str) -> None:
    problems = problems_of(raw)
    matching = [p for p in problems if p.startswith(f"{path}:") and fragment in p]
    assert matching, f"no problem at {path} mentioning {fragment!r} in {problems}"


class TestDevStack:
    def test_dev_stack_parses_to_two_tenants_with_one_a100_each(self, dev_config):
        platform = parse_config(dev_config)
        assert [t.name for t in platform.tenants] == ["tenant-a", "tenant-b"]
        for tenant in platform.tenants:
            assert tenant.workers == 1
            assert tenant.gpus is not None and tenant.gpus.per_worker == 1
            assert tenant.gpus.model.memory_mib == 81920
            assert tenant.gpus.model.product == "NVIDIA A100-SXM4-80GB"
            assert tenant.hami.gpu_scheduler_policy == "binpack"

    def test_builtin_a100_model(self, dev_config):
        model = parse_config(dev_config).gpu_models["A100-80GB"]
        assert (model.memory_mib, model.cores, model.split_count) == (81920, 100, 10)

    def test_defaults_fill_optional_keys(self, dev_config):
        del dev_config["management"]
        tenant = dev_config["tenants"][0]
        for key in ("controlPlaneReplicas", "hami"):
            tenant.pop(key)
        platform = parse_config(dev_config)
        assert platform.management.name == "kamaji"
        assert platform.tenants[0].control_plane_replicas == 1
        assert platform.tenants[0].hami.gpu_scheduler_policy == "spread"

    def test_dns_service_ip_is_tenth_address(self, dev_config):
        assert parse_config(dev_config).tenants[0].dns_service_ip == "10.37.0.10"


class TestRefusals:
    def test_duplicate_tenant_names(self, dev_config):
        dev_config["tenants"][1]["name"] = "tenant-a"
        assert_refused(dev_config, "tenants[1].name", "duplicate tenant name 'tenant-a'")

    @pytest.mark.parametrize("name", ["Tenant-A", "1tenant", "tenant_a", "tenant-", "a" * 41, ""])
    def test_names_that_are_not_dns_1035_labels(self, dev_config, name):
        dev_config["tenants"][0]["name"] = name
        assert_refused(dev_config, "tenants[0].name", "")

    def test_reserved_namespace_as_tenant_name(self, dev_config):
        dev_config["tenants"][0]["name"] = "kamaji-system"
        assert_refused(dev_config, "tenants[0].name", "namespace the management cluster uses")

    @pytest.mark.parametrize("version", ["v1.29.9", "v1.37.0", "v2.35.0"])
    def test_kubernetes_versions_outside_supported_range(self, dev_config, version):
        dev_config["tenants"][0]["kubernetesVersion"] = version
        assert_refused(dev_config, "tenants[0].kubernetesVersion", "outside v1.30-v1.36")

    @pytest.mark.parametrize("version", ["1.35.0", "v1.35", "v1.35.0-rc.1", "latest"])
    def test_versions_without_the_image_tag_format(self, dev_config, version):
        dev_config["tenants"][0]["kubernetesVersion"] = version
        assert_refused(dev_config, "tenants[0].kubernetesVersion", "must look like v1.35.0")

    @pytest.mark.parametrize("cidr", ["10.36.0.0/33", "10.36.0.1/16", "not-a-cidr", "fd00::/64"])
    def test_malformed_cidrs(self, dev_config, cidr):
        dev_config["tenants"][0]["podCidr"] = cidr
        assert_refused(dev_config, "tenants[0].podCidr", cidr)

    def test_cidrs_overlapping_each_other(self, dev_config):
        dev_config["tenants"][1]["podCidr"] = "10.36.128.0/17"
        assert_refused(dev_config, "tenants[1].podCidr", "overlaps tenants[0].podCidr")

    def test_pod_and_service_cidr_of_one_tenant_overlapping(self, dev_config):
        dev_config["tenants"][0]["serviceCidr"] = "10.36.0.0/24"
        assert_refused(dev_config, "tenants[0].serviceCidr", "overlaps tenants[0].podCidr")

    @pytest.mark.parametrize(("cidr", "owner"), [
        ("10.244.0.0/16", "pod CIDR"), ("10.96.0.0/20", "service CIDR")])
    def test_cidrs_overlapping_the_management_cluster(self, dev_config, cidr, owner):
        dev_config["tenants"][0]["serviceCidr"] = cidr
        assert_refused(dev_config, "tenants[0].serviceCidr", f"management cluster's {owner}")

    def test_unknown_gpu_model(self, dev_config):
        dev_config["tenants"][0]["gpus"]["model"] = "H100-80GB"
        assert_refused(dev_config, "tenants[0].gpus.model", "unknown GPU model 'H100-80GB'")

    @pytest.mark.parametrize(("key", "value"), [
        ("memoryMiB", 0), ("cores", -5), ("splitCount", 0), ("memoryMiB", "lots")])
    def test_non_positive_model_figures(self, dev_config, key, value):
        model = {"memoryMiB": 40960, "cores": 100, "splitCount": 4, "product": "NVIDIA A100-40GB"}
        model[key] = value
        dev_config["gpuModels"] = {"A100-40GB": model}
        assert_refused(dev_config, f"gpuModels.A100-40GB.{key}", "")

    def test_model_product_without_nvidia(self, dev_config):
        dev_config["gpuModels"] = {"X": {"memoryMiB": 1, "cores": 1, "splitCount": 1,
                                         "product": "Acme GPU"}}
        assert_refused(dev_config, "gpuModels.X.product", "must contain 'NVIDIA'")

    def test_custom_model_is_usable(self, dev_config):
        dev_config["gpuModels"] = {"A100-40GB": {"memoryMiB": 40960, "cores": 100,
                                                 "splitCount": 4, "product": "NVIDIA A100-40GB"}}
        dev_config["tenants"][0]["gpus"]["model"] = "A100-40GB"
        assert parse_config(dev_config).tenants[0].gpus.model.memory_mib == 40960

    def test_gpus_with_zero_workers(self, dev_config):
        dev_config["tenants"][0]["workers"] = 0
        assert_refused(dev_config, "tenants[0].gpus", "0 workers")

    def test_more_cards_than_hamis_stable_card_sort_covers(self, dev_config):
        """Go's sort.Sort is an insertion sort up to 12 elements (src/sort/zsortinterface.go
        maxInsertion), unstable beyond: 13 cards would make HAMi's tied-card choice unknowable."""
        dev_config["tenants"][0]["gpus"]["perWorker"] = 13
        assert_refused(dev_config, "tenants[0].gpus.perWorker", "between 1 and 12")

    @pytest.mark.parametrize(("pod_cidr", "workers", "limit"), [
        ("10.36.0.0/22", 5, 4), ("10.36.0.0/21", 9, 8)])
    def test_more_workers_than_node_ranges_in_the_pod_cidr(self, dev_config, pod_cidr, workers, limit):
        """Kamaji's controller-manager gives each node a /24 of podCidr (--allocate-node-cidrs,
        no --node-cidr-mask-size: clastix/kamaji 26.8.2-edge internal/builders/controlplane/
        deployment.go; kube-controller-manager's IPv4 default is 24)."""
        dev_config["tenants"][0]["podCidr"] = pod_cidr
        dev_config["tenants"][0]["workers"] = workers
        assert_refused(dev_config, "tenants[0].workers", f"holds only {limit}")
        dev_config["tenants"][0]["workers"] = limit
        assert parse_config(dev_config).tenants[0].workers == limit

    def test_node_image_by_tag_or_by_digest(self, dev_config):
        digest = "sha256:" + "ab" * 32
        dev_config["management"]["nodeImage"] = f"kindest/node:v1.35.0@{digest}"
        assert parse_config(dev_config).management.node_image.endswith(digest)
        dev_config["management"]["nodeImage"] = "kindest/node@" + digest
        assert_refused(dev_config, "management.nodeImage", "explicit tag")

    def test_unknown_keys_are_named(self, dev_config):
        dev_config["tenants"][0]["workerz"] = 2
        assert_refused(dev_config, "tenants[0].workerz", "unknown key")

    def test_unknown_scheduler_policy(self, dev_config):
        dev_config["tenants"][0]["hami"]["gpuSchedulerPolicy"] = "topology-aware"
        assert_refused(dev_config, "tenants[0].hami.gpuSchedulerPolicy", "binpack, spread")

    def test_bad_metallb_range(self, dev_config):
        dev_config["management"]["metallbAddressRange"] = "172.30.255.250-172.30.255.200"
        assert_refused(dev_config, "management.metallbAddressRange", "starts after it ends")

    def test_empty_tenant_list(self, dev_config):
        dev_config["tenants"] = []
        assert_refused(dev_config, "tenants", "non-empty list")

    def test_all_problems_are_reported_together(self, dev_config):
        dev_config["tenants"][0]["kubernetesVersion"] = "v1.20.0"
        dev_config["tenants"][1]["podCidr"] = "bogus"
        dev_config["tenants"][1]["workers"] = -1
        problems = problems_of(dev_config)
        assert {p.split(":")[0] for p in problems} >= {
            "tenants[0].kubernetesVersion", "tenants[1].podCidr", "tenants[1].workers"}

    def test_error_message_lists_every_problem(self, dev_config):
        dev_config["tenants"][0]["name"] = "BAD"
        dev_config["tenants"][1]["name"] = "ALSO_BAD"
        with pytest.raises(ConfigError) as caught:
            parse_config(dev_config)
        assert "tenants[0].name" in str(caught.value)
        assert "tenants[1].name" in str(caught.value)


# Random, mostly malformed configs: any JSON-like value in any slot.
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40),
                     st.floats(allow_nan=True), st.text(max_size=20))
_json = st.recursive(_scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)),
    max_leaves=12)


def _mutations(base: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    tenant_keys = ["name", "kubernetesVersion", "controlPlaneReplicas", "podCidr",
                   "serviceCidr", "workers", "gpus", "hami", "gpuQuotas"]

    @st.composite
    def mutate(draw: Any) -> dict[str, Any]:
        config = copy.deepcopy(base)
        for _ in range(draw(st.integers(1, 4))):
            target = draw(st.sampled_from(["root", "management", "tenant", "gpus", "hami"]))
            value = draw(_json)
            if target == "root":
                config[draw(st.sampled_from(["management", "tenants", "gpuModels",
                                             "referencePod"]))] = value
            elif target == "management" and isinstance(config.get("management"), dict):
                config["management"][draw(st.sampled_from(
                    ["name", "nodeImage", "metallbAddressRange", "kamajiEtcdReplicas"]))] = value
            elif isinstance(config.get("tenants"), list) and config["tenants"]:
                tenant = config["tenants"][draw(st.integers(0, len(config["tenants"]) - 1))]
                if not isinstance(tenant, dict):
                    continue
                if target == "tenant":
                    tenant[draw(st.sampled_from(tenant_keys))] = value
                elif target == "gpus" and isinstance(tenant.get("gpus"), dict):
                    tenant["gpus"][draw(st.sampled_from(["model", "perWorker", "mock"]))] = value
                elif isinstance(tenant.get("hami"), dict):
                    tenant["hami"][draw(st.sampled_from(
                        ["gpuSchedulerPolicy", "nodeLockTimeout"]))] = value
        return config

    return mutate()


@pytest.mark.unit
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_loader_only_ever_raises_config_error(data):
    from tests.harness import dev_stack_config

    raw = data.draw(_mutations(dev_stack_config()))
    try:
        result = parse_config(raw)
    except ConfigError as error:
        assert error.problems, "a ConfigError must carry at least one problem"
        assert all(":" in problem for problem in error.problems)
    else:
        assert isinstance(result, PlatformConfig)


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(raw=_json)
def test_loader_survives_any_top_level_value(raw):
    with contextlib.suppress(ConfigError):
        parse_config(raw)
