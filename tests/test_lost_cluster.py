"""The lost-cluster recovery: selection and state surgery directly, the CLI through stand-in tools."""

from __future__ import annotations

import copy
import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components import lost_cluster
from components.gpu import load_stack

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
FAKES = Path(__file__).parent / "fakes" / "lost_cluster"
STACK = "dev"
CLUSTER = load_stack(STACK).management.name
PROJECT = "kamaji-hami-platform"
SECRET_SIG = "4dabf18193072939515e22adb298388d"
CIPHERTEXT = "v1:cGxlYXNlLWRvLW5vdC1wcmludC1tZQ==:ciphertext-sentinel"
INPUT_SENTINEL = "input-value-sentinel"

MGMT = f"{PROJECT}:index:ManagementCluster"
TENANT = f"{PROJECT}:index:KamajiTenant"
POOL = f"{PROJECT}:index:HamiNodePool"
COMMAND = "command:local:Command"


def urn(*types: str, name: str) -> str:
    """Pulumi's URN: the parent types (not the root stack's) and the type joined by `$`."""
    return f"urn:pulumi:{STACK}::{PROJECT}::{'$'.join(types)}::{name}"


STACK_URN = urn("pulumi:pulumi:Stack", name=f"{PROJECT}-{STACK}")
CMD_PROVIDER = urn("pulumi:providers:command", name="default_1_1_0")
MGMT_URN = urn(MGMT, name="management")
KIND = urn(MGMT, COMMAND, name="management-kind")
KUBECONFIG = urn(MGMT, COMMAND, name="management-kubeconfig")
MGMT_K8S = urn(MGMT, "pulumi:providers:kubernetes", name="management-k8s")
CERT_MANAGER = urn(MGMT, "kubernetes:helm.sh/v3:Release", name="cert-manager")
KAMAJI = urn(MGMT, "kubernetes:helm.sh/v3:Release", name="kamaji")
TENANT_URN = urn(TENANT, name="tenant-a")
NAMESPACE = urn(TENANT, "kubernetes:core/v1:Namespace", name="tenant-a-namespace")
TCP = urn(TENANT, "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane", name="tenant-a-control-plane")
ADMIN_SECRET = urn(TENANT, "kubernetes:core/v1:Secret", name="tenant-a-admin-kubeconfig")
TENANT_K8S = urn(TENANT, "pulumi:providers:kubernetes", name="tenant-a-k8s")
WORKER = urn(TENANT, COMMAND, name="tenant-a-worker-0")
POOL_URN = urn(POOL, name="tenant-a-gpus")
NODE_PATCH = urn(POOL, "kubernetes:core/v1:NodePatch", name="tenant-a-worker-0-gpus")
HAMI = urn(POOL, "kubernetes:helm.sh/v3:Release", name="tenant-a-gpus-hami")
CRONJOB = urn(POOL, "kubernetes:batch/v1:CronJob", name="tenant-a-gpus-gpu-capacity")
WORKER_1 = urn(TENANT, COMMAND, name="tenant-a-worker-1")

IN_CLUSTER = {CERT_MANAGER, KAMAJI, NAMESPACE, TCP, ADMIN_SECRET, NODE_PATCH, HAMI, CRONJOB}


def secret() -> dict[str, str]:
    return {SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": CIPHERTEXT}


def resource(urn_: str, type_: str, *, custom: bool = True, parent: str | None = STACK_URN,
             provider: str | None = None, deps: list[str] | None = None,
             prop_deps: dict[str, list[str]] | None = None, **extra: Any) -> dict[str, Any]:
    """A resource as `pulumi stack export` writes it (field order included)."""
    res: dict[str, Any] = {"urn": urn_, "custom": custom}
    if custom:
        res["id"] = f"{urn_.rsplit('::', 1)[-1]}-id"
    res["type"] = type_
    res["inputs"] = {"note": INPUT_SENTINEL, "secretInput": secret()}
    res["outputs"] = {"note": INPUT_SENTINEL, "secretOutput": secret()}
    if parent:
        res["parent"] = parent
    if provider:
        res["provider"] = provider
    if deps is not None:
        res["dependencies"] = deps
    if prop_deps is not None:
        res["propertyDependencies"] = prop_deps
    res.update(extra)
    res["created"] = "2025-01-01T00:00:00.000000000Z"
    res["modified"] = "2025-01-01T00:00:00.000000000Z"
    return res


def provider_ref(provider_urn: str) -> str:
    return f"{provider_urn}::{provider_urn.rsplit('::', 1)[-1]}-id"


def exported_deployment() -> dict[str, Any]:
    """A realistic export of the dev stack: one tenant, the management cluster, HAMi."""
    cmd, mgmt_k8s, tenant_k8s = provider_ref(CMD_PROVIDER), provider_ref(MGMT_K8S), provider_ref(TENANT_K8S)
    resources = [
        resource(STACK_URN, "pulumi:pulumi:Stack", custom=False, parent=None),
        resource(CMD_PROVIDER, "pulumi:providers:command", parent=None),
        resource(MGMT_URN, MGMT, custom=False),
        resource(KIND, COMMAND, parent=MGMT_URN, provider=cmd, deps=[], prop_deps={}),
        resource(KUBECONFIG, COMMAND, parent=MGMT_URN, provider=cmd, deps=[KIND],
                 prop_deps={"create": [KIND]}, additionalSecretOutputs=["stdout"]),
        resource(MGMT_K8S, "pulumi:providers:kubernetes", parent=MGMT_URN, deps=[KUBECONFIG, KIND],
                 prop_deps={"kubeconfig": [KUBECONFIG], "clusterIdentifier": [KIND]}),
        resource(CERT_MANAGER, "kubernetes:helm.sh/v3:Release", parent=MGMT_URN, provider=mgmt_k8s,
                 deps=[], prop_deps={}),
        resource(KAMAJI, "kubernetes:helm.sh/v3:Release", parent=MGMT_URN, provider=mgmt_k8s,
                 deps=[CERT_MANAGER], prop_deps={}),
        resource(TENANT_URN, TENANT, custom=False, deps=[KAMAJI]),
        resource(NAMESPACE, "kubernetes:core/v1:Namespace", parent=TENANT_URN, provider=mgmt_k8s,
                 deps=[], prop_deps={}),
        resource(TCP, "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane", parent=TENANT_URN,
                 provider=mgmt_k8s, deps=[NAMESPACE], prop_deps={"metadata": [NAMESPACE]},
                 customTimeouts={"create": 900}),
        resource(ADMIN_SECRET, "kubernetes:core/v1:Secret", parent=TENANT_URN, provider=mgmt_k8s,
                 deps=[TCP], external=True),
        resource(TENANT_K8S, "pulumi:providers:kubernetes", parent=TENANT_URN, deps=[ADMIN_SECRET, TCP],
                 prop_deps={"kubeconfig": [ADMIN_SECRET], "clusterIdentifier": [TCP]}),
        resource(WORKER, COMMAND, parent=TENANT_URN, provider=cmd, deps=[TCP, ADMIN_SECRET, KIND],
                 prop_deps={"create": [TCP], "environment": [ADMIN_SECRET, KIND], "delete": [TCP]},
                 deletedWith=TCP, additionalSecretOutputs=["stdout"]),
        resource(POOL_URN, POOL, custom=False, deps=[WORKER]),
        resource(NODE_PATCH, "kubernetes:core/v1:NodePatch", parent=POOL_URN, provider=tenant_k8s,
                 deps=[WORKER], prop_deps={"metadata": [WORKER]}),
        resource(HAMI, "kubernetes:helm.sh/v3:Release", parent=POOL_URN, provider=tenant_k8s,
                 deps=[NODE_PATCH], prop_deps={"values": [NODE_PATCH]}, deletedWith=TCP),
    ]
    pending = [
        {"resource": resource(CRONJOB, "kubernetes:batch/v1:CronJob", parent=POOL_URN,
                              provider=tenant_k8s, deps=[HAMI]), "type": "creating"},
        {"resource": resource(WORKER_1, COMMAND, parent=TENANT_URN, provider=cmd, deps=[TCP, KIND],
                              prop_deps={"create": [TCP]}), "type": "creating"},
    ]
    return {"version": 3, "deployment": {
        "manifest": {"time": "2025-01-01T00:00:00Z", "magic": "abc", "version": "v3.200.0"},
        "secrets_providers": {"type": "passphrase", "state": {"salt": "v1:salt"}},
        "resources": resources,
        "pending_operations": pending,
        "metadata": {},
    }}


def all_resources(export: dict[str, Any]) -> list[dict[str, Any]]:
    deployment = export["deployment"]
    return deployment["resources"] + [op["resource"] for op in deployment.get("pending_operations", [])]


def references(res: dict[str, Any]) -> list[tuple[str, str]]:
    """Every URN a resource points at, with the field that holds it."""
    found = [("dependencies", u) for u in res.get("dependencies", [])]
    found += [("propertyDependencies", u) for urns in res.get("propertyDependencies", {}).values()
              for u in urns]
    found += [(field, res[field]) for field in ("deletedWith", "parent") if field in res]
    if "provider" in res:
        provider_urn, _, _ = res["provider"].rpartition("::")
        found.append(("provider", provider_urn))
    return found


def by_urn(export: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {res["urn"]: res for res in export["deployment"]["resources"]}


# --- pure functions -----------------------------------------------------------------------------


class TestSelection:
    def test_selects_exactly_what_lives_in_the_cluster(self):
        export = exported_deployment()
        selected = {res["urn"] for res in lost_cluster.select_forgotten(export["deployment"]["resources"])}
        assert selected == IN_CLUSTER - {CRONJOB}, "the pending CronJob is not in `resources`"

    def test_kubernetes_providers_components_and_commands_are_kept(self):
        export = exported_deployment()
        selected = {res["urn"] for res in lost_cluster.select_forgotten(export["deployment"]["resources"])}
        for kept in (MGMT_K8S, TENANT_K8S, KIND, KUBECONFIG, WORKER, MGMT_URN, TENANT_URN, POOL_URN,
                     STACK_URN, CMD_PROVIDER):
            assert kept not in selected


class TestSurgery:
    def test_removes_resources_and_pending_operations(self):
        edited = lost_cluster.forget(exported_deployment(), IN_CLUSTER)
        assert not any(res["type"].startswith("kubernetes:") for res in all_resources(edited))
        assert [op["resource"]["urn"] for op in edited["deployment"]["pending_operations"]] == [WORKER_1]

    def test_no_reference_to_a_forgotten_resource_remains(self):
        edited = lost_cluster.forget(exported_deployment(), IN_CLUSTER)
        dangling = [(res["urn"], field, target) for res in all_resources(edited)
                    for field, target in references(res) if target in IN_CLUSTER]
        assert dangling == []

    def test_worker_keeps_only_its_edge_to_the_kind_cluster(self):
        worker = by_urn(lost_cluster.forget(exported_deployment(), IN_CLUSTER))[WORKER]
        assert worker["dependencies"] == [KIND]
        assert worker["propertyDependencies"] == {"environment": [KIND]}
        assert "deletedWith" not in worker, "the worker's own delete must run on destroy"

    def test_already_empty_property_dependencies_stay(self):
        export = exported_deployment()
        by_urn(export)[KUBECONFIG]["propertyDependencies"]["stdin"] = []
        kubeconfig = by_urn(lost_cluster.forget(export, IN_CLUSTER))[KUBECONFIG]
        assert kubeconfig["propertyDependencies"] == {"create": [KIND], "stdin": []}

    def test_kept_resources_are_unchanged_but_for_forgotten_edges(self):
        original = exported_deployment()
        edited = lost_cluster.forget(original, IN_CLUSTER)
        before = [res for res in original["deployment"]["resources"] if res["urn"] not in IN_CLUSTER]
        after = edited["deployment"]["resources"]
        assert [res["urn"] for res in after] == [res["urn"] for res in before], "order kept"
        for old, new in zip(before, after, strict=True):
            untouched = {key for key in old if key not in ("dependencies", "propertyDependencies",
                                                           "deletedWith")}
            assert [k for k in new if k in untouched] == [k for k in old if k in untouched], "key order"
            assert {k: new[k] for k in untouched} == {k: old[k] for k in untouched}
            if not any(target in IN_CLUSTER for _, target in references(old)):
                assert new == old, f"{old['urn']} had no edge into the cluster and must not change"

    def test_everything_outside_the_resources_is_unchanged(self):
        original = exported_deployment()
        edited = lost_cluster.forget(original, IN_CLUSTER)
        for key in ("manifest", "secrets_providers", "metadata"):
            assert edited["deployment"][key] == original["deployment"][key]
        assert list(edited["deployment"]) == list(original["deployment"])
        assert edited["version"] == original["version"]

    def test_does_not_modify_its_input(self):
        original = exported_deployment()
        snapshot = copy.deepcopy(original)
        lost_cluster.forget(original, IN_CLUSTER)
        assert original == snapshot

    def test_a_kept_child_of_a_forgotten_resource_is_reported(self):
        export = exported_deployment()
        orphan = resource(urn(TENANT, "kubernetes:helm.sh/v3:Release", COMMAND, name="hook"), COMMAND,
                          parent=KAMAJI, deps=[])
        export["deployment"]["resources"].append(orphan)
        edited = lost_cluster.forget(export, IN_CLUSTER)
        findings = lost_cluster.dangling_references(edited, IN_CLUSTER)
        assert len(findings) == 1 and orphan["urn"] in findings[0] and KAMAJI in findings[0]

    def test_a_provider_reference_to_a_forgotten_resource_is_reported(self):
        export = exported_deployment()
        by_urn(export)[WORKER]["provider"] = provider_ref(TCP)
        findings = lost_cluster.dangling_references(lost_cluster.forget(export, IN_CLUSTER), IN_CLUSTER)
        assert any(WORKER in finding and TCP in finding for finding in findings)

    def test_an_unknown_schema_version_is_refused(self):
        export = exported_deployment()
        export["version"] = 99
        with pytest.raises(lost_cluster.Refused, match="99"):
            lost_cluster.forget(export, IN_CLUSTER)


class TestConfirmation:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    def test_only_the_confirmation_word_confirms(self):
        assert lost_cluster.confirmed(3, self.Terminal("yes\n"), io.StringIO())
        assert not lost_cluster.confirmed(3, self.Terminal("y\n"), io.StringIO())
        assert not lost_cluster.confirmed(3, self.Terminal(""), io.StringIO())

    def test_a_stdin_that_is_not_a_terminal_cannot_confirm(self):
        with pytest.raises(lost_cluster.Refused, match="--yes"):
            lost_cluster.confirmed(3, io.StringIO("yes\n"), io.StringIO())


def test_stderr_tail_keeps_the_last_lines_on_one_line():
    text = "\n".join(f"line {i}" for i in range(20)) + "\n\n"
    tail = lost_cluster.stderr_tail(text, lines=2)
    assert tail.count("line") == 2 and "line 19" in tail and "\n" not in tail


# --- the CLI through stand-in docker, kind and pulumi -------------------------------------------------


class Cli:
    """One sandbox: fake tool state, an export file, a backup folder."""

    def __init__(self, tmp_path: Path, export: dict[str, Any] | None = None) -> None:
        self.state = tmp_path / "state"
        self.state.mkdir()
        self.backups = tmp_path / "backups"
        self.export_text = json.dumps(export or exported_deployment(), indent=4)
        self.export_file = tmp_path / "export.json"
        self.export_file.write_text(self.export_text)

    def run(self, *args: str, stdin: int | None = subprocess.DEVNULL,
            **env: str) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "PATH": f"{FAKES}:{os.environ['PATH']}",
                    "FAKE_LOST_CLUSTER_STATE": str(self.state), "FAKE_PULUMI_EXPORT": str(self.export_file),
                    **env}
        return subprocess.run(
            [sys.executable, "-m", "components.lost_cluster", "--stack", STACK,
             "--backup-dir", str(self.backups), *args],
            cwd=ROOT, env=full_env, stdin=stdin, capture_output=True, text=True, timeout=120, check=False)

    def calls(self) -> list[str]:
        path = self.state / "calls"
        return path.read_text().splitlines() if path.exists() else []

    def imported(self) -> dict[str, Any] | None:
        path = self.state / "imported.json"
        return json.loads(path.read_text()) if path.exists() else None

    def backups_written(self) -> list[Path]:
        return sorted(self.backups.glob("*")) if self.backups.exists() else []

    def assert_state_untouched(self) -> None:
        assert not any(call.startswith("pulumi stack import") for call in self.calls())
        assert self.imported() is None
        assert self.backups_written() == []


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


class TestEndToEnd:
    def test_forgets_the_cluster_resources_and_keeps_the_rest(self, cli):
        result = cli.run("--yes")
        assert result.returncode == 0, result.stderr
        imported = cli.imported()
        assert imported is not None
        assert not [res["urn"] for res in all_resources(imported) if res["type"].startswith("kubernetes:")]
        remaining = {res["urn"] for res in all_resources(imported)}
        dangling = [(res["urn"], field, target) for res in all_resources(imported)
                    for field, target in references(res) if target not in remaining]
        assert dangling == []
        original = by_urn(exported_deployment())
        kept = by_urn(imported)
        assert set(kept) == set(original) - IN_CLUSTER
        for name in (STACK_URN, CMD_PROVIDER, MGMT_URN, KIND, KUBECONFIG, MGMT_K8S):
            assert kept[name] == original[name], f"{name} has no edge into the cluster"
        for name in (TENANT_K8S, WORKER, TENANT_URN, POOL_URN):
            for field in ("id", "type", "parent", "provider", "inputs", "outputs", "custom"):
                assert kept[name].get(field) == original[name].get(field)

    def test_backup_is_the_original_export_and_private(self, cli):
        result = cli.run("--yes")
        assert result.returncode == 0, result.stderr
        (backup,) = cli.backups_written()
        assert backup.read_text() == cli.export_text
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600
        assert str(backup) in result.stdout, "the user must be told where the backup is"

    def test_import_file_is_private_and_removed_afterwards(self, cli):
        assert cli.run("--yes").returncode == 0
        assert (cli.state / "imported.mode").read_text().strip() == "600"
        (call,) = [c for c in cli.calls() if c.startswith("pulumi stack import")]
        assert f"--stack {STACK}" in call
        import_file = call.split("--file ", 1)[1].split()[0]
        assert not Path(import_file).exists()

    def test_lists_what_it_forgets_and_points_to_make_down(self, cli):
        result = cli.run("--yes")
        for name in ("cert-manager", "tenant-a-control-plane", "tenant-a-worker-0-gpus"):
            assert name in result.stdout
        assert "management-kind" not in result.stdout, "kept resources are not listed for removal"
        assert "make down" in result.stdout.splitlines()[-1]

    def test_never_prints_inputs_outputs_or_ciphertext(self, cli):
        result = cli.run("--yes")
        assert result.returncode == 0
        for needle in (INPUT_SENTINEL, CIPHERTEXT):
            assert needle not in result.stdout + result.stderr

    def test_checks_the_cluster_before_reading_the_state(self, cli):
        cli.run("--yes")
        tools = [call.split()[0] + " " + call.split()[1] for call in cli.calls()]
        assert tools.index("docker info") < tools.index("kind get") < tools.index("pulumi stack")
        assert f"docker inspect --type container {CLUSTER}-control-plane" in cli.calls()


class TestRefusals:
    def test_refuses_when_kind_lists_the_cluster(self, cli):
        (cli.state / "clusters").write_text(f"other\n{CLUSTER}\n")
        result = cli.run("--yes")
        assert result.returncode == 1
        assert CLUSTER in result.stderr and "make down" in result.stderr
        assert not any(call.startswith("pulumi") for call in cli.calls())
        cli.assert_state_untouched()

    def test_another_kind_cluster_does_not_count(self, cli):
        (cli.state / "clusters").write_text(f"{CLUSTER}-old\nother\n")
        assert cli.run("--yes").returncode == 0

    def test_refuses_when_docker_is_unreachable(self, cli):
        (cli.state / "docker-down").touch()
        result = cli.run("--yes")
        assert result.returncode == 1
        assert "docker" in result.stderr.lower() and "Cannot connect" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert not any(call.startswith(("kind", "pulumi")) for call in cli.calls())
        cli.assert_state_untouched()

    def test_refuses_when_the_control_plane_container_exists(self, cli):
        (cli.state / "containers").mkdir()
        (cli.state / "containers" / f"{CLUSTER}-control-plane").touch()
        result = cli.run("--yes")
        assert result.returncode == 1
        assert f"{CLUSTER}-control-plane" in result.stderr
        assert not any(call.startswith("pulumi") for call in cli.calls())
        cli.assert_state_untouched()

    def test_refuses_without_yes_on_a_non_interactive_stdin(self, cli):
        result = cli.run()
        assert result.returncode == 1
        assert "--yes" in result.stderr
        cli.assert_state_untouched()

    def test_export_failure_shows_pulumi_stderr_and_imports_nothing(self, cli):
        result = cli.run("--yes", FAKE_PULUMI_EXPORT_ERROR="error: passphrase must be set")
        assert result.returncode == 1
        assert "passphrase must be set" in result.stderr
        cli.assert_state_untouched()

    def test_import_failure_is_reported_with_the_backup_kept(self, cli):
        result = cli.run("--yes", FAKE_PULUMI_IMPORT_ERROR="error: snapshot integrity failure")
        assert result.returncode == 1
        assert "snapshot integrity failure" in result.stderr
        assert cli.imported() is None
        (backup,) = cli.backups_written()
        assert str(backup) in result.stdout

    def test_refuses_a_kept_resource_parented_to_a_forgotten_one(self, tmp_path):
        export = exported_deployment()
        export["deployment"]["resources"].append(
            resource(urn(TENANT, "kubernetes:helm.sh/v3:Release", COMMAND, name="hook"), COMMAND,
                     parent=KAMAJI, deps=[]))
        cli = Cli(tmp_path, export)
        result = cli.run("--yes")
        assert result.returncode == 1 and KAMAJI in result.stderr
        cli.assert_state_untouched()

    def test_unknown_stack_is_a_usage_error(self, cli):
        result = cli.run("--yes", "--stack", "no-such-stack")
        assert result.returncode == 2
        assert not cli.calls()

    def test_missing_stack_option_is_a_usage_error(self, cli):
        result = subprocess.run([sys.executable, "-m", "components.lost_cluster"], cwd=ROOT,
                                capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 2
