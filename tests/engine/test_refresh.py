"""`pulumi refresh` of a deployed stack, by the real engine and the real Kubernetes provider, against
real kube-apiservers 1.35 of the sim tier: what `--expect-no-changes` says of the platform's reads.

The live stack first showed it: after a second `up` that planned no changes, `pulumi refresh
--preview-only --expect-no-changes` failed on every tenant's `<tenant>-admin-kubeconfig` read
(`[diff: +apiVersion,kind,metadata]`), a drift no one made (docs/development/live-stack.md). The
cause, and the fix, are in tenant/component.py `read_secret`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from kamaji_hami_platform.management.network_policy import DEFAULT_DENY
from tests.e2e.lifecycle_support import drift_lines
from tests.engine.engine import Engine
from tests.engine.test_targeted_up import TENANT_COMPONENT, management_targets, urn
from tests.engine.test_upgrades import deployed, recorded_today
from tests.harness import production_config

pytestmark = pytest.mark.engine

ADMIN_SECRET_READ = f"{TENANT_COMPONENT}$kubernetes:core/v1:Secret"
POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
TENANT = "ml-prod"  # the production example's first tenant; its namespace is its name


def admin_secret_reads(state: dict[str, Any]) -> list[str]:
    """The URNs of the tenants' admin Secret reads a saved state holds."""
    return [resource["urn"] for resource in state["deployment"]["resources"]
            if resource.get("external") and resource["urn"].endswith("-admin-kubeconfig")]


def test_a_refresh_right_after_up_finds_no_drift_in_the_admin_secret_reads(
        engine: Engine, sim_bin, management_crds, proxy, tmp_path):
    """The production example deployed, then an `up` that reads each tenant's admin Secret from the
    management cluster (the ManagementCluster targeted: the hosts' joins need SSH); then a refresh
    of those reads expects no changes, as a user's drift check does, and the engine agrees."""
    config, _ = production_config()
    exports = recorded_today(tmp_path, config, "production")
    with deployed(engine, sim_bin, management_crds, proxy, "today", "production", tmp_path, exports,
                  {key: value for key, value in config.items()
                   if key not in ("managementKubeconfig", "sshPrivateKeys")}) as (stack, project):
        result = engine.up(stack, *management_targets(stack), cwd=project)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
        reads = admin_secret_reads(engine.export(stack, cwd=project))
        assert reads and all(read.startswith(urn(stack, ADMIN_SECRET_READ, "")) for read in reads), reads
        targets = [argument for read in reads for argument in ("--target", read)]
        refresh = engine.pulumi("refresh", "--preview-only", "--expect-no-changes", "--show-sames",
                                "--stack", stack, *targets, cwd=project, check=False)
    said = refresh.stdout + refresh.stderr
    assert refresh.returncode == 0, said[-5000:]
    # The reads were refreshed (shown unchanged), not left out.
    assert all(read.rsplit("::", 1)[1] in said for read in reads), said[-5000:]


def management_kubectl(engine: Engine, sim_bin, stack: str, project, folder) -> Callable[..., str]:
    """kubectl as the management cluster's admin, with the kubeconfig the stack was given."""
    kubeconfig = folder / "management.kubeconfig"
    kubeconfig.write_text(engine.pulumi("config", "get", "managementKubeconfig", "--stack", stack,
                                        cwd=project).stdout)
    kubeconfig.chmod(0o600)

    def kubectl(*args: str) -> str:
        result = subprocess.run([str(sim_bin / "kubectl"), "--kubeconfig", str(kubeconfig), *args],
                                capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout
    return kubectl


def test_a_policy_loosened_by_hand_is_reported_by_the_drift_check_and_put_back_by_up_refresh(
        engine: Engine, sim_bin, management_crds, proxy, tmp_path):
    """A tenant's default-deny NetworkPolicy in the management cluster edited by hand to deny
    ingress only: `make drift`'s refresh fails naming it, `make up REFRESH=1`'s `up --refresh`
    puts Egress back (the platform's field, taken back from the hand that changed it), and the
    drift check passes again. The real engine, provider and API server decide each step."""
    config, _ = production_config()
    exports = recorded_today(tmp_path, config, "production")
    with deployed(engine, sim_bin, management_crds, proxy, "today", "production", tmp_path, exports,
                  {key: value for key, value in config.items()
                   if key not in ("managementKubeconfig", "sshPrivateKeys")}) as (stack, project):
        kubectl = management_kubectl(engine, sim_bin, stack, project, tmp_path)
        policy = next(r for r in engine.export(stack, cwd=project)["deployment"]["resources"]
                      if r["type"] == POLICY_TYPE and r.get("id") == f"{TENANT}/{DEFAULT_DENY}")
        target = ["--target", policy["urn"]]
        check = ["refresh", "--preview-only", "--expect-no-changes", "--diff", "--stack", stack, *target]
        before = engine.pulumi(*check, cwd=project, check=False)
        assert before.returncode == 0, before.stdout[-4000:] + before.stderr[-2000:]

        kubectl("-n", TENANT, "patch", "networkpolicy", DEFAULT_DENY, "--type=merge",
                "-p", json.dumps({"spec": {"policyTypes": ["Ingress"]}}))
        drifted = engine.pulumi(*check, cwd=project, check=False)
        said = drifted.stdout + drifted.stderr
        assert drifted.returncode != 0, said[-4000:]
        name = policy["urn"].rsplit("::", 1)[1]
        # As the lifecycle reads the display (tests/e2e/lifecycle_support.py drift_lines).
        assert drift_lines(said, [name])[name], said

        repair = engine.up(stack, "--refresh", *target, cwd=project)
        assert repair.returncode == 0, repair.stdout[-4000:] + repair.stderr[-3000:]
        live = json.loads(kubectl("-n", TENANT, "get", "networkpolicy", DEFAULT_DENY, "-o", "json"))
        assert live["spec"]["policyTypes"] == ["Ingress", "Egress"]
        after = engine.pulumi(*check, cwd=project, check=False)
    assert after.returncode == 0, after.stdout[-4000:] + after.stderr[-2000:]
