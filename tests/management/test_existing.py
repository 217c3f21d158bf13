"""An existing management cluster: the kubeconfig of one context of a file, the check before
anything is installed, and the readiness waits with this host's kubectl, run against a stand-in
kubectl that records its arguments (never a secret among them) and the kubeconfig file it got."""

from __future__ import annotations

import subprocess
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
# Stand-in kubectl: logs its arguments, copies the kubeconfig it was given, answers per $FAKE_MODE.
printf '%s\n' "$*" >> "$STATE/calls"
for arg in "$@"; do case "$prev" in --kubeconfig) cp "$arg" "$STATE/kubeconfig-seen" ;; esac; prev=$arg; done
case "$*" in
  *"get --raw /version"*) [ "$FAKE_MODE" = unreachable ] && { echo "dial tcp: i/o timeout" >&2; exit 1; }
                         echo '{"gitVersion":"v1.35.0"}' ;;
  *"get crd"*) [ "$FAKE_MODE" = no-cert-manager ] \
                 && { echo 'crd "certificates.cert-manager.io" not found' >&2; exit 1; }
               echo customresourcedefinition.apiextensions.k8s.io/certificates.cert-manager.io ;;
  *"create --dry-run=server"*) cat >/dev/null; echo tenantcontrolplane/platform-webhook-probe ;;
  *"auth can-i"*) echo yes ;;
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
    def test_reaches_the_cluster_and_finds_cert_manager(self, platform, tmp_path):
        kubeconfig = fake_kubeconfig("https://10.20.0.10:6443", SECRET)
        result = run(existing.cluster_check_script(platform.management, "KC"), tmp_path, KC=kubeconfig)
        assert result.returncode == 0, result.stderr
        assert "cert-manager is installed" in result.stdout
        assert (tmp_path / "kubeconfig-seen").read_text() == kubeconfig
        assert SECRET not in calls(tmp_path)
        assert "--request-timeout=30s" in calls(tmp_path)

    @pytest.mark.parametrize(("mode", "message"), [
        ("unreachable", "cannot reach the management cluster with the stack's kubeconfig: dial tcp"),
        ("no-cert-manager", "management.certManager.install is false, but cert-manager is not installed"),
    ])
    def test_fails_naming_what_is_wrong(self, platform, tmp_path, mode, message):
        result = run(existing.cluster_check_script(platform.management, "KC"), tmp_path,
                     KC=fake_kubeconfig("https://x", SECRET), FAKE_MODE=mode)
        assert result.returncode == 1 and message in result.stderr
        assert SECRET not in result.stderr + result.stdout


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
        script = admin_access.tenant_admin_access_script(tenant, platform.management, attempts=1, interval=0)
        result = run(script, tmp_path, **{KUBECONFIG_ENV: kubeconfig})
        assert result.returncode == 0, result.stderr
        used = next(line for line in calls(tmp_path).splitlines() if "auth can-i" in line).split()[1]
        assert not Path(used).exists(), "the kubeconfig file outlived the script"
        assert (tmp_path / "kubeconfig-seen").read_text() == kubeconfig
