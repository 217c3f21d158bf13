"""Pure renderings of the management cluster: MetalLB range, kind config, scripts, values."""

from __future__ import annotations

import pytest
import yaml

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management import render
from tests.standins import run_script, stand_in

pytestmark = pytest.mark.unit


def run_with_kind(script: str, workdir, clusters: str = "", docker_down: bool = False,
                  node_networks: str = "kamaji-hami"):
    """Run a kind script in `workdir` with a stand-in kind that lists `clusters` (or fails
    as kind does when Docker does not answer) and records its calls, and a stand-in docker
    whose kind node is attached to `node_networks`."""
    bin_dir = workdir / "bin"
    stand_in(bin_dir, "docker", f"""#!/bin/bash
printf '%s\\n' "$*" >> {workdir}/docker.calls
[ "$1 $2" = "container inspect" ] && [[ "$4" == *NetworkSettings.Networks* ]] && echo "{node_networks} "
""")
    stand_in(bin_dir, "kind", f"""#!/bin/bash
printf '%s\\n' "$*" >> {workdir}/kind.calls
if [ "$1 $2" = "get clusters" ]; then
  if [ -n "{'1' if docker_down else ''}" ]; then
    echo "ERROR: failed to list clusters: Cannot connect to the Docker daemon" >&2
    exit 1
  fi
  if [ -z "{clusters}" ]; then echo "No kind clusters found." >&2; else echo "{clusters}"; fi
fi
""")
    return run_script(script, shell="sh", tools=(bin_dir,), cwd=workdir, stdin="kind: Cluster\n")


def kind_calls(workdir) -> list[str]:
    return (workdir / "kind.calls").read_text().splitlines()


class TestKind:
    def test_cluster_config_pins_image_and_networks(self):
        config = yaml.safe_load(render.kind_cluster_config(ManagementConfig()))
        assert config["nodes"] == [{"role": "control-plane", "image": versions.KIND_NODE_IMAGE}]
        assert config["networking"] == {"podSubnet": "10.244.0.0/16", "serviceSubnet": "10.96.0.0/16"}
        assert "disableDefaultCNI" not in config["networking"]

    def test_create_is_guarded_by_an_existence_check(self, tmp_path):
        script = render.kind_create_script(ManagementConfig(name="mgmt"))
        assert run_with_kind(script, tmp_path, clusters="mgmt").returncode == 0
        assert kind_calls(tmp_path) == ["get clusters"]
        result = run_with_kind(script, tmp_path, clusters="other")
        assert result.returncode == 0, result.stderr
        assert kind_calls(tmp_path)[-1] == \
            "create cluster --name mgmt --config - --kubeconfig .kind/mgmt.kubeconfig --wait 120s"

    def test_create_fails_when_kind_put_its_node_on_another_network(self, tmp_path):
        """kind reads the network from an env variable it calls unsupported (kind v0.31.0
        providers/docker/provider.go): a release that ignores it is caught at once."""
        script = render.kind_create_script(ManagementConfig(name="mgmt"))
        ok = run_with_kind(script, tmp_path, clusters="")
        assert ok.returncode == 0, ok.stderr
        assert "container inspect" in (tmp_path / "docker.calls").read_text()
        wrong = run_with_kind(script, tmp_path, clusters="mgmt", node_networks="kind")
        assert wrong.returncode == 1
        assert "is on Docker network(s) kind, not kamaji-hami" in wrong.stderr
        assert "kind delete cluster --name mgmt" in wrong.stderr and "v0.31.0" in wrong.stderr

    def test_create_never_touches_the_users_kubeconfig(self, tmp_path):
        """kind writes only the file --kubeconfig names (kind v0.31.0
        pkg/cluster/internal/kubeconfig/internal/kubeconfig/paths.go), mode 0600."""
        result = run_with_kind(render.kind_create_script(ManagementConfig(name="mgmt")), tmp_path,
                               clusters="")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / ".kind").stat().st_mode & 0o077 == 0, "the folder is private"
        assert "--kubeconfig .kind/mgmt.kubeconfig" in kind_calls(tmp_path)[-1]

    def test_delete_removes_the_cluster_and_its_private_kubeconfig(self, tmp_path):
        (tmp_path / ".kind").mkdir()
        (tmp_path / ".kind" / "mgmt.kubeconfig").write_text("secret")
        result = run_with_kind(render.kind_delete_script(ManagementConfig(name="mgmt")), tmp_path,
                               clusters="mgmt")
        assert result.returncode == 0, result.stderr
        assert kind_calls(tmp_path)[-1] == "delete cluster --name mgmt --kubeconfig .kind/mgmt.kubeconfig"
        assert not (tmp_path / ".kind" / "mgmt.kubeconfig").exists()

    def test_the_kubeconfig_command_only_reads_so_running_it_again_is_harmless(self, tmp_path):
        """An update runs the create again (issue 38, item 7): `kind get kubeconfig` only reads the
        node's admin kubeconfig (kind v0.31.0 pkg/cluster/internal/kubeconfig/kubeconfig.go)."""
        command = render.kind_kubeconfig_command(ManagementConfig(name="mgmt"))
        for _ in range(2):
            assert run_with_kind(command, tmp_path, clusters="mgmt").returncode == 0
        assert kind_calls(tmp_path) == ["get kubeconfig --name mgmt"] * 2

    def test_delete_tolerates_a_missing_cluster(self, tmp_path):
        result = run_with_kind(render.kind_delete_script(ManagementConfig(name="mgmt")), tmp_path,
                               clusters="other")
        assert result.returncode == 0
        assert "already gone" in result.stdout
        assert not any(c.startswith("delete") for c in kind_calls(tmp_path))

    @pytest.mark.parametrize("script", [render.kind_delete_script, render.kind_create_script])
    def test_a_docker_failure_is_an_error_not_already_gone(self, tmp_path, script):
        result = run_with_kind(script(ManagementConfig(name="mgmt")), tmp_path, docker_down=True)
        assert result.returncode != 0
        assert "is Docker running?" in result.stderr and "Cannot connect" in result.stderr
        assert kind_calls(tmp_path) == ["get clusters"], "nothing created or deleted"


class TestValues:
    def test_cert_manager_installs_its_crds(self):
        assert render.cert_manager_values() == {"crds": {"enabled": True}}

    def test_kamaji_pins_image_tag_and_drops_resources(self):  # kind guide: --set resources=null
        values = render.kamaji_values(ManagementConfig(kamaji_etcd_replicas=1))
        assert values["image"] == {"tag": "26.8.2-edge"}
        assert "resources" in values and values["resources"] is None
        assert values["kamaji-etcd"]["replicas"] == 1

    def test_pool_and_advertisement_refer_to_each_other(self):
        assert render.metallb_pool_spec("1.2.3.4-1.2.3.5") == {"addresses": ["1.2.3.4-1.2.3.5"]}
        assert render.metallb_l2_advertisement_spec()["ipAddressPools"] == [render.METALLB_POOL_NAME]
