"""An existing management cluster: the kubeconfig of one context of a file, the check before
anything is installed, and the readiness waits with this host's kubectl, run against a stand-in
kubectl that records its arguments (never a secret among them) and the kubeconfig file it got."""

from __future__ import annotations

import dataclasses
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from kamaji_hami_platform.config import load_stack_file
from kamaji_hami_platform.management import access, existing, kamaji_webhook
from kamaji_hami_platform.tenant import admin_access
from kamaji_hami_platform.tenant.node_join import KUBECONFIG_ENV
from tests.harness import PRODUCTION_STACK, fake_kubeconfig
from tests.standins import run_script, stand_in

pytestmark = pytest.mark.unit

SECRET = "sentinel-existing-token"
KUBECTL = r"""#!/bin/bash
# Stand-in kubectl: logs its arguments, copies the kubeconfig it was given, answers per $FAKE_MODE
# and the cluster's objects in $FAKE_* (as kubectl prints them with the check's jsonpath); a kind
# named in $FAKE_FORBIDDEN is refused.
printf '%s\n' "$*" >> "$STATE/calls"
for arg in "$@"; do case "$prev" in --kubeconfig) cp "$arg" "$STATE/kubeconfig-seen" ;; esac; prev=$arg; done
forbid() { case " ${FAKE_FORBIDDEN:-} " in *" $1 "*)
  echo "Error from server (Forbidden): $1 is forbidden: User \"ops\" cannot list resource \"$1\"" >&2
  exit 1 ;; esac; }
case "$*" in
  *"get --raw /version"*) [ "$FAKE_MODE" = unreachable ] && { echo "dial tcp: i/o timeout" >&2; exit 1; }
                         echo '{"gitVersion":"v1.35.0"}' ;;
  *"get crd"*) [ "$FAKE_MODE" = no-cert-manager ] \
                 && { echo 'crd "certificates.cert-manager.io" not found' >&2; exit 1; }
               echo customresourcedefinition.apiextensions.k8s.io/certificates.cert-manager.io ;;
  *"get storageclasses "*) forbid storageclasses; printf '%s\n' "${FAKE_STORAGECLASSES-standard true}" ;;
  *"get persistentvolumeclaims"*) printf '%s\n' "${FAKE_CLAIMS:-}" ;;
  *"get persistentvolumes"*) printf '%s\n' "${FAKE_VOLUMES:-}" ;;
  *"get storageclass "*)
      [ -n "${FAKE_NAMED_CLASS:-}" ] || { echo 'Error from server (NotFound): "fast" not found' >&2; exit 1; }
      echo "storageclass.storage.k8s.io/$FAKE_NAMED_CLASS" ;;
  *"get daemonsets --all-namespaces -l svccontroller.k3s.cattle.io/svcname"*) forbid servicelb
      printf '%s' "${FAKE_SVCLB:-}" ;;
  *"get daemonsets --all-namespaces"*) forbid daemonsets
      printf '%s\n' "${FAKE_DAEMONSETS-kube-system/kube-proxy
calico-system/calico-node}" ;;
  *"get clusterrole kindnet"*) forbid clusterroles; printf '%s' "${FAKE_KINDNET_RULES:-}" ;;
  *"get serviceaccounts"*) printf '%s' "${FAKE_SVCLB_ACCOUNT:-}" ;;
  *"get nodes -l svccontroller.k3s.cattle.io/enablelb"*) printf '%s' "${FAKE_ENABLELB_NODES:-}" ;;
  *"create --dry-run=server"*) cat >/dev/null; echo tenantcontrolplane/platform-webhook-probe ;;
  *"auth can-i"*) case "${FAKE_CAN_I:-yes}" in
                    yes) echo yes ;;
                    no) echo no; exit 1 ;;
                    unreachable)
                      echo "Unable to connect to the server: dial tcp 10.20.0.200:6443: i/o timeout" >&2
                      exit 1 ;;
                    hang) exec sleep 5 ;;
                  esac ;;
  *) echo "stand-in kubectl: unexpected call: $*" >&2; exit 2 ;;
esac
"""


@pytest.fixture
def platform():
    return load_stack_file(PRODUCTION_STACK)


def run(script: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A script of mode existing with a stand-in kubectl on this host (its calls in tmp_path)."""
    stand_in(tmp_path / "bin", "kubectl", KUBECTL)
    return run_script(script, shell="sh", tools=(tmp_path / "bin",), env={"STATE": str(tmp_path), **env})


def calls(tmp_path: Path) -> str:
    return (tmp_path / "calls").read_text()


class TestKubeconfigOfAContext:
    def document(self) -> dict:
        document = yaml.safe_load(fake_kubeconfig("https://10.20.0.10:6443", SECRET))
        document["contexts"].append({"name": "other", "context": {"cluster": "o", "user": "o"}})
        document["clusters"].append({"name": "o", "cluster": {"server": "https://o"}})
        document["users"].append({"name": "o", "user": {"token": "sentinel-other"}})
        return document

    def test_only_the_context_its_cluster_and_user(self):
        text = existing.kubeconfig_for_context(yaml.safe_dump(self.document()), "ctx", "f")
        result = yaml.safe_load(text)
        assert result["current-context"] == "ctx"
        assert [c["name"] for c in result["clusters"]] == ["c"]
        assert [u["name"] for u in result["users"]] == ["u"]
        assert "sentinel-other" not in text

    def test_relative_file_paths_are_made_absolute_as_kubectl_reads_them(self):
        document = self.document()
        document["clusters"][0]["cluster"]["certificate-authority"] = "pki/ca.crt"
        document["users"][0]["user"] = {"client-certificate": "/abs/client.crt", "client-key": "client.key"}
        result = yaml.safe_load(existing.kubeconfig_for_context(yaml.safe_dump(document), "ctx", "f",
                                                                Path("/home/ops/.kube")))
        assert result["clusters"][0]["cluster"]["certificate-authority"] == "/home/ops/.kube/pki/ca.crt"
        assert result["users"][0]["user"] == {"client-certificate": "/abs/client.crt",
                                              "client-key": "/home/ops/.kube/client.key"}

    def test_problems_name_the_file_and_context_never_the_content(self):
        with pytest.raises(ValueError, match=r"^f has no context 'x' \(it has: ctx, other\)$"):
            existing.kubeconfig_for_context(yaml.safe_dump(self.document()), "x", "f")
        broken = self.document()
        broken["users"] = []
        with pytest.raises(ValueError) as caught:
            existing.kubeconfig_for_context(yaml.safe_dump(broken), "ctx", "f")
        assert SECRET not in str(caught.value)

    def test_the_file_is_kubeconfigfile_else_kubeconfig_else_home(self, platform, monkeypatch):
        management = platform.management
        monkeypatch.setenv("HOME", "/home/ops")
        assert existing.kubeconfig_path(management, {}) == Path("/home/ops/.kube/config")
        assert existing.kubeconfig_path(management, {"KUBECONFIG": "/a:/b"}) == Path("/a")


class TestClusterCheck:
    """The check before anything is installed on an existing cluster, against a stand-in kubectl
    playing the cluster's objects: everything missing in one message, each with its fix; what it
    cannot tell a warning that does not block."""

    def check(self, platform, tmp_path: Path, etcd_storage: str | None = "", **env: str):
        script = existing.cluster_check_script(platform.management, "KC", etcd_storage)
        return run(script, tmp_path, KC=fake_kubeconfig("https://10.20.0.10:6443", SECRET), **env)

    def test_a_cluster_with_everything_passes_with_every_call_bounded(self, platform, tmp_path):
        kubeconfig = fake_kubeconfig("https://10.20.0.10:6443", SECRET)
        result = run(existing.cluster_check_script(platform.management, "KC"), tmp_path, KC=kubeconfig)
        assert result.returncode == 0, result.stderr
        assert "cert-manager is installed" in result.stdout
        assert "default StorageClass: standard" in result.stdout
        assert "NetworkPolicy: the CNI of DaemonSet calico-system/calico-node enforces it" in result.stdout
        assert "no k3s ServiceLB: MetalLB alone gives the pool 10.20.0.200-10.20.0.220" in result.stdout
        assert existing.check_warnings(result.stdout) == []
        assert (tmp_path / "kubeconfig-seen").read_text() == kubeconfig
        assert SECRET not in calls(tmp_path)
        assert all("--request-timeout=30s" in call for call in calls(tmp_path).splitlines())

    def test_an_unreachable_cluster_fails_first(self, platform, tmp_path):
        result = self.check(platform, tmp_path, FAKE_MODE="unreachable")
        assert result.returncode == 1
        assert "cannot reach the management cluster with the stack's kubeconfig: dial tcp" in result.stderr
        assert len(calls(tmp_path).splitlines()) == 1
        assert SECRET not in result.stderr + result.stdout

    def test_everything_missing_is_listed_at_once_each_with_its_fix(self, platform, tmp_path):
        result = self.check(platform, tmp_path, FAKE_MODE="no-cert-manager", FAKE_STORAGECLASSES="local",
                            FAKE_DAEMONSETS="kube-flannel/kube-flannel-ds\nkube-system/kube-proxy",
                            FAKE_SVCLB=" kube-system/svclb-traefik-1a2b3c4d")
        assert result.returncode == 1
        (header, *items) = result.stderr.strip().split("\n  - ")
        assert header == "the management cluster lacks what the platform needs (nothing was installed):"
        assert [item.split(":")[0] for item in items] == [
            "cert-manager", "a default StorageClass", "a CNI that enforces NetworkPolicy",
            "no other LoadBalancer controller beside the platform's MetalLB (pool 10.20.0.200-10.20.0.220)"]
        assert all("Fix: " in item for item in items)
        assert "(StorageClasses: local)" in items[1]
        assert "flannel (DaemonSet kube-flannel/kube-flannel-ds) does not" in items[2]
        assert "DaemonSets kube-system/svclb-traefik-1a2b3c4d" in items[3]
        assert "--disable=servicelb" in items[3]
        assert SECRET not in result.stderr + result.stdout

    @pytest.mark.parametrize(("classes", "found"), [
        ("standard true", "standard"),
        ("old  true\nother", "old"),          # only the beta annotation: still the default
        ("a false\nb true\nc", "b"),
    ])
    def test_the_default_storage_class_by_either_annotation(self, platform, tmp_path, classes, found):
        result = self.check(platform, tmp_path, FAKE_STORAGECLASSES=classes)
        assert result.returncode == 0, result.stderr
        assert f"default StorageClass: {found}\n" in result.stdout

    def test_no_storage_class_at_all(self, platform, tmp_path):
        result = self.check(platform, tmp_path, FAKE_STORAGECLASSES="")
        assert result.returncode == 1
        assert "(StorageClasses: none)" in result.stderr
        assert "kubectl annotate storageclass <class> storageclass.kubernetes.io/is-default-class=true" \
            in result.stderr

    def test_without_a_default_kamaji_etcds_bound_volumes_pass(self, platform, tmp_path):
        """A platform installed before: the check runs again on the next `up` (its script changed)."""
        claims = "\n".join(f"data-kamaji-etcd-{i} Bound" for i in range(3))
        result = self.check(platform, tmp_path, FAKE_STORAGECLASSES="local", FAKE_CLAIMS=claims)
        assert result.returncode == 0, result.stderr
        assert "no default StorageClass, but kamaji-etcd's 3 volumes are bound already" in result.stdout
        assert "-n kamaji-system get persistentvolumeclaims" in calls(tmp_path)
        pending = claims.replace("2 Bound", "2 Pending")
        two = self.check(platform, tmp_path, FAKE_STORAGECLASSES="local", FAKE_CLAIMS=pending)
        assert two.returncode == 1

    def test_without_a_default_volumes_without_a_class_are_a_warning(self, platform, tmp_path):
        volumes = " Available\n Available\nlocal Available\n Available\n Bound"
        result = self.check(platform, tmp_path, FAKE_STORAGECLASSES="local", FAKE_VOLUMES=volumes)
        assert result.returncode == 0, result.stderr
        (warning,) = existing.check_warnings(result.stdout)
        assert warning.startswith("no default StorageClass: kamaji-etcd's 3 volumes may bind to the 3 "
                                  "Available PersistentVolumes without a class")
        short = self.check(platform, tmp_path, FAKE_STORAGECLASSES="local", FAKE_VOLUMES=" Available")
        assert short.returncode == 1

    def test_a_storage_class_the_kamaji_values_name_must_exist_instead(self, platform, tmp_path):
        assert self.check(platform, tmp_path, "fast", FAKE_STORAGECLASSES="",
                          FAKE_NAMED_CLASS="fast").returncode == 0
        result = self.check(platform, tmp_path, "fast")
        assert result.returncode == 1
        assert "StorageClass fast, which kamaji-etcd's volumes name" in result.stderr
        script = existing.cluster_check_script(platform.management, "KC", None)
        assert "get storageclass" not in script, "no kamaji-etcd: no volumes to provision"

    def test_kamaji_values_decide_which_storage_class(self):
        assert existing.etcd_storage_class(None) == ""
        assert existing.etcd_storage_class({"kamaji-etcd": {"replicas": 3}}) == ""
        assert existing.etcd_storage_class(
            {"kamaji-etcd": {"persistentVolumeClaim": {"storageClassName": "fast"}}}) == "fast"
        assert existing.etcd_storage_class({"kamaji-etcd": {"deploy": False}}) is None

    @pytest.mark.parametrize("daemonsets", [
        "kube-system/cilium", "calico-system/calico-node", "kube-system/canal", "kube-system/antrea-agent",
        "kube-system/kube-router", "kube-system/weave-net",
        "kube-flannel/kube-flannel-ds\nkube-system/calico-node",  # Calico's policy engine with flannel
    ])
    def test_a_cni_known_to_enforce_network_policy_passes(self, platform, tmp_path, daemonsets):
        result = self.check(platform, tmp_path, FAKE_DAEMONSETS=daemonsets)
        assert result.returncode == 0, result.stderr
        assert "NetworkPolicy: the CNI of DaemonSet" in result.stdout
        assert existing.check_warnings(result.stdout) == []

    def test_kindnet_enforces_only_with_network_policy_access(self, platform, tmp_path):
        """kind v0.24.0 gave kindnet's ClusterRole list/watch on networkpolicies with the policy engine."""
        new = self.check(platform, tmp_path, FAKE_DAEMONSETS="kube-system/kindnet",
                         FAKE_KINDNET_RULES='["nodes","pods","namespaces"] ["networkpolicies"]')
        assert new.returncode == 0, new.stderr
        assert "kindnet (kube-system/kindnet) enforces it" in new.stdout
        old = self.check(platform, tmp_path, FAKE_DAEMONSETS="kube-system/kindnet",
                         FAKE_KINDNET_RULES='["podsecuritypolicies"] ["nodes","pods","namespaces"]')
        assert old.returncode == 1
        assert "kindnet (kube-system/kindnet) has no access to NetworkPolicies" in old.stderr
        unreadable = self.check(platform, tmp_path, FAKE_DAEMONSETS="kube-system/kindnet",
                                FAKE_FORBIDDEN="clusterroles")
        assert unreadable.returncode == 0
        assert existing.check_warnings(unreadable.stdout)[0].startswith(
            "cannot tell whether kindnet (kube-system/kindnet) enforces NetworkPolicy")

    @pytest.mark.parametrize(("env", "why"), [
        ({"FAKE_DAEMONSETS": "kube-system/aws-node\nkube-system/kube-proxy"},
         "no DaemonSet of a CNI this check"),
        ({"FAKE_DAEMONSETS": ""}, "no DaemonSet of a CNI this check"),
        ({"FAKE_FORBIDDEN": "daemonsets"}, "listing DaemonSets failed (Error from server (Forbidden)"),
    ])
    def test_a_cni_it_cannot_tell_is_a_warning_with_how_to_confirm(self, platform, tmp_path, env, why):
        result = self.check(platform, tmp_path, **env)
        assert result.returncode == 0, result.stderr
        (warning,) = [w for w in existing.check_warnings(result.stdout) if "NetworkPolicy" in w]
        assert warning.startswith("cannot tell whether the CNI enforces NetworkPolicy")
        assert why in warning and "To confirm by hand: docs/operations/troubleshooting.md" in warning

    @pytest.mark.parametrize("env", [{"FAKE_SVCLB_ACCOUNT": "serviceaccount/svclb"},
                                     {"FAKE_ENABLELB_NODES": "node/edge-1"}])
    def test_servicelb_set_up_but_serving_nothing_is_a_warning(self, platform, tmp_path, env):
        result = self.check(platform, tmp_path, **env)
        assert result.returncode == 0, result.stderr
        (warning,) = existing.check_warnings(result.stdout)
        assert warning.startswith("k3s's ServiceLB serves no Service now but was set up on this cluster")
        assert "--disable=servicelb" in warning

    def test_servicelb_is_looked_for_only_when_the_platform_gives_metallb_its_pool(self, platform):
        for management in (dataclasses.replace(platform.management, install_metallb=False,
                                               metallb_address_range=None),
                           dataclasses.replace(platform.management, api_exposure="NodePort",
                                               metallb_address_range=None, node_port_address="10.20.0.5")):
            assert "svccontroller" not in existing.cluster_check_script(management, "KC")
        assert "svccontroller" in existing.cluster_check_script(platform.management, "KC")

    def test_cert_manager_is_looked_for_only_when_the_platform_does_not_install_it(self, platform):
        installs = dataclasses.replace(platform.management, install_cert_manager=True)
        assert "cert-manager.io" not in existing.cluster_check_script(installs, "KC")

    def test_warnings_are_the_lines_the_check_marks(self):
        assert existing.check_warnings("a\nwarning: cannot tell x\nwarning: y\n") == ["cannot tell x", "y"]
        assert existing.check_warnings(None) == []


class TestReadinessWithThisHostsKubectl:
    def test_the_webhook_wait_dry_runs_with_the_stacks_kubeconfig(self, platform, tmp_path):
        kubeconfig = fake_kubeconfig("https://10.20.0.10:6443", SECRET)
        script = kamaji_webhook.kamaji_webhook_wait_script(platform.management, attempts=2, interval=0)
        result = run(script, tmp_path, **{access.MANAGEMENT_KUBECONFIG_ENV: kubeconfig})
        assert result.returncode == 0, result.stderr
        assert "create --dry-run=server -o name -f -" in calls(tmp_path)
        assert (tmp_path / "kubeconfig-seen").read_text() == kubeconfig
        assert "docker" not in script and SECRET not in calls(tmp_path)

    def test_admin_access_uses_a_private_file_removed_at_exit(self, platform, tmp_path):
        tenant = platform.tenants[0]
        kubeconfig = fake_kubeconfig("https://10.20.0.200:6443", SECRET)
        script = admin_access.tenant_admin_access_script(tenant, platform.management, bound=0, interval=0)
        result = run(script, tmp_path, **{KUBECONFIG_ENV: kubeconfig})
        assert result.returncode == 0, result.stderr
        used = next(line for line in calls(tmp_path).splitlines() if "auth can-i" in line).split()[1]
        assert not Path(used).exists(), "the kubeconfig file outlived the script"
        assert (tmp_path / "kubeconfig-seen").read_text() == kubeconfig

class TestAdminAccessWaitOnThisHost:
    """The admin-access wait of mode existing: each try bounded by kubectl's request timeout and by
    `timeout` around the call; an API that does not answer is told apart from an answer "no", and
    its message names the addresses the tenant API admits."""

    def wait(self, platform, tmp_path: Path, bound: int = 0, call_timeout: int = 30, **env: str):
        script = admin_access.tenant_admin_access_script(platform.tenants[0], platform.management,
                                                         bound=bound, interval=0, call_timeout=call_timeout)
        kubeconfig = fake_kubeconfig("https://10.20.0.200:6443", SECRET)
        return run(script, tmp_path, **{KUBECONFIG_ENV: kubeconfig}, **env)

    def test_each_try_is_bounded(self, platform, tmp_path):
        assert self.wait(platform, tmp_path).returncode == 0
        (call,) = calls(tmp_path).splitlines()
        assert call.split()[2:] == ["--request-timeout=15s", "auth", "can-i", "*", "*", "--all-namespaces"]
        script = admin_access.tenant_admin_access_script(platform.tenants[0], platform.management)
        assert 'timeout 30 kubectl --kubeconfig "$tenant_kc" --request-timeout=15s auth can-i' in script

    def test_an_api_that_does_not_answer_names_the_addresses_it_admits(self, platform, tmp_path):
        result = self.wait(platform, tmp_path, FAKE_CAN_I="unreachable")
        assert result.returncode == 1
        first, network = result.stderr.splitlines()
        assert first == ("tenant ml-prod: the tenant API did not answer within 0s (1 of 1 tries unanswered; "
                         "last: Unable to connect to the server: dial tcp 10.20.0.200:6443: i/o timeout).")
        assert network.startswith("The tenant API admits only the tenant's hosts (10.20.1.11, 10.20.1.12, "
                                  "10.20.1.13) and management.apiClientCidrs (10.20.0.0/24)")
        assert "Pulumi's host must reach it from one of them" in network
        assert "get service ml-prod" in network
        assert "Kamaji" not in result.stderr and SECRET not in result.stderr

    def test_a_call_that_hangs_is_cut_off(self, platform, tmp_path):
        result = self.wait(platform, tmp_path, call_timeout=1, FAKE_CAN_I="hang")
        assert result.returncode == 1
        assert ("did not answer within 0s (1 of 1 tries unanswered; last: no answer within 1s)"
                in result.stderr)

    def test_an_answer_no_blames_kamajis_rbac_not_the_network(self, platform, tmp_path):
        result = self.wait(platform, tmp_path, FAKE_CAN_I="no")
        assert result.returncode == 1
        assert "the admin kubeconfig was not authorized within 0s (last answer: no)" in result.stderr
        assert "kubeadm:cluster-admins" in result.stderr and "apiClientCidrs" not in result.stderr

    def test_the_wait_keeps_its_bound_when_the_api_does_not_answer(self, platform, tmp_path):
        """Tries start until the bound has passed: with each try cut off after 1s, a 2s wait makes
        two or three tries, never the tries of a count of attempts."""
        started = time.monotonic()
        result = self.wait(platform, tmp_path, bound=2, call_timeout=1, FAKE_CAN_I="hang")
        elapsed = time.monotonic() - started
        assert result.returncode == 1 and elapsed < 2 + 1 + 2
        tries = calls(tmp_path).count("auth can-i")
        assert 2 <= tries <= 3 and f"{tries} of {tries} tries unanswered" in result.stderr
