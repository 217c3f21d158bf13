"""Pure renderings of the management cluster: MetalLB range, kind config, scripts, values."""

from __future__ import annotations

import json

import pytest
import yaml

from components import management_render as render
from components import versions
from components.config import ManagementConfig

pytestmark = pytest.mark.unit


class TestMetallbRange:
    def test_slash_16_matches_the_kamaji_kind_guide(self):
        assert render.metallb_range_from_subnet("172.18.0.0/16") == "172.18.255.200-172.18.255.250"

    def test_slash_24_stays_inside_the_subnet(self):
        assert render.metallb_range_from_subnet("192.168.49.0/24") == "192.168.49.200-192.168.49.250"

    def test_smaller_than_slash_24_asks_for_an_override(self):
        with pytest.raises(ValueError, match=r"management\.metallbAddressRange"):
            render.metallb_range_from_subnet("172.18.0.0/26")

    @pytest.mark.parametrize("ipv6_first", [True, False])
    def test_network_that_also_lists_ipv6_uses_the_ipv4_subnet(self, ipv6_first):
        entries = [{"Subnet": "172.19.0.0/16", "Gateway": "172.19.0.1"},
                   {"Subnet": "fc00:f853:ccd:e793::/64", "Gateway": "fc00:f853:ccd:e793::1"}]
        if ipv6_first:
            entries.reverse()
        assert render.metallb_range_from_ipam(json.dumps(entries)) == "172.19.255.200-172.19.255.250"

    def test_ipv6_only_network_is_refused_with_the_override_key(self):
        ipam = json.dumps([{"Subnet": "fc00::/64"}])
        with pytest.raises(ValueError, match="no IPv4 subnet"):
            render.metallb_range_from_ipam(ipam)

    def test_garbage_from_docker_is_a_clear_error(self):
        with pytest.raises(ValueError, match="cannot parse Docker IPAM"):
            render.metallb_range_from_ipam("Error: No such network: kind")


class TestKind:
    def test_cluster_config_pins_image_and_networks(self):
        config = yaml.safe_load(render.kind_cluster_config(ManagementConfig()))
        assert config["nodes"] == [{"role": "control-plane", "image": versions.KIND_NODE_IMAGE}]
        assert config["networking"] == {"podSubnet": "10.244.0.0/16", "serviceSubnet": "10.96.0.0/16"}
        assert "disableDefaultCNI" not in config["networking"]

    def test_create_is_guarded_by_an_existence_check(self):
        script = render.kind_create_script(ManagementConfig(name="mgmt"))
        assert "kind get clusters" in script and "grep -qx mgmt" in script
        assert "kind create cluster --name mgmt --config -" in script

    def test_delete_tolerates_a_missing_cluster(self):
        script = render.kind_delete_script(ManagementConfig(name="mgmt"))
        assert "kind delete cluster --name mgmt" in script
        assert "already gone" in script

    def test_network_inspect_reads_ipam_as_json(self):
        assert render.docker_network_ipam_command("kind") == \
            "docker network inspect kind --format '{{json .IPAM.Config}}'"


class TestValues:
    def test_cert_manager_installs_its_crds(self):
        assert render.cert_manager_values() == {"crds": {"enabled": True}}

    def test_kamaji_pins_image_tag_and_drops_resources(self):
        values = render.kamaji_values(ManagementConfig(kamaji_etcd_replicas=1))
        assert values["image"] == {"tag": "26.8.2-edge"}
        assert "resources" in values and values["resources"] is None
        assert values["kamaji-etcd"]["replicas"] == 1

    def test_pool_and_advertisement_refer_to_each_other(self):
        assert render.metallb_pool_spec("1.2.3.4-1.2.3.5") == {"addresses": ["1.2.3.4-1.2.3.5"]}
        assert render.metallb_l2_advertisement_spec()["ipAddressPools"] == [render.METALLB_POOL_NAME]
