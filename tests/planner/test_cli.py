"""`kamaji-hami-plan workloads` and `compare`: declared gpuWorkloads as a table, JSON, with what-if
changes, and a base stack file against a head one (the pull-request job summary)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kamaji_hami_platform.config import load_stack_file
from kamaji_hami_platform.gpu.workloads import plan_workloads
from kamaji_hami_platform.planner import cli as planner

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
TENANTS = "kamaji-hami-platform:tenants"
# The mission's workload: three 20000 MiB / 30 % pods fit one A100 80GB; the fourth finds 10 % cores.
SHARE = {"name": "share", "replicas": 4, "gpumem": 20000, "gpucores": 30}
REFUSAL = "kubectl describe pod: 0/1 nodes are available: 1 1/1 CardInsufficientCore."


def stack_file(tmp_path: Path, name: str = "Pulumi.dev.yaml", workers: int = 1,
               workloads: list[dict[str, Any]] | None = None, **tenant_a: Any) -> Path:
    """The dev stack's config with tenant-a changed and declaring `workloads` (default SHARE), the
    other tenants declaring none."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    for other in document["config"][TENANTS][1:]:
        other.pop("gpuWorkloads", None)
    tenant = document["config"][TENANTS][0]
    tenant.update(workers=workers, gpuWorkloads=[SHARE] if workloads is None else workloads, **tenant_a)
    if not tenant["gpuWorkloads"]:
        del tenant["gpuWorkloads"]
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = planner.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


class TestWorkloads:
    def test_table_of_a_refused_replica(self, tmp_path, capsys):
        code, out, _ = run(capsys, "workloads", "--stack-file", stack_file(tmp_path))
        assert code == 1
        lines = out.splitlines()
        assert lines[0] == "stack file: Pulumi.dev.yaml"
        assert "tenant-a  (gpu policy binpack, node policy binpack; 1 worker(s), 1 A100-80GB each)" in lines
        share = next(ln for ln in lines if ln.split()[:1] == ["share"])
        assert share.split() == ["share", "default", "4", "3", "1", "0"]
        assert lines[lines.index(share) + 1].strip() == REFUSAL
        card = next(ln for ln in lines if "tenant-a-worker-0 " in ln).split()
        assert card[2:] == ["21920", "10", "7"], "80 GiB - 3 x 20000 MiB, 100 - 3 x 30 %, 10 - 3 slots"
        assert lines[-1].strip() == ("does not fit; smallest change that fits: 1 more worker(s) of this "
                                     "tenant's shape (workers: 2) or 1 more card(s) per worker "
                                     "(gpus.perWorker: 2)")
        assert "tenant-b" not in out, "a tenant without declared workloads is left out"

    def test_json_is_each_tenants_workload_plan(self, tmp_path, capsys):
        path = stack_file(tmp_path)
        code, out, _ = run(capsys, "workloads", "--stack-file", path, "--json")
        report = json.loads(out)
        tenant = next(t for t in load_stack_file(path).tenants if t.name == "tenant-a")
        assert code == 1 and report["fits"] is False and report["whatIf"] == []
        assert report["tenants"] == {"tenant-a": plan_workloads(tenant, "kamaji").as_output()}
        share = report["tenants"]["tenant-a"]["workloads"]["share"]
        assert (share["placed"], share["refused"], share["headroom"]) == (3, 1, 0)

    def test_stack_name_reads_the_file_in_the_current_directory(self, tmp_path, capsys, monkeypatch):
        stack_file(tmp_path, "Pulumi.team.yaml")
        monkeypatch.chdir(tmp_path)
        assert run(capsys, "workloads", "--stack", "team")[0] == 1

    def test_no_declared_workloads_fits(self, capsys, monkeypatch):
        monkeypatch.chdir(ROOT)
        code, out, _ = run(capsys, "workloads", "--stack", "ci")
        assert code == 0 and "no tenant declares gpuWorkloads" in out

    def test_three_replicas_fit_with_headroom_zero(self, tmp_path, capsys):
        path = stack_file(tmp_path, workloads=[{**SHARE, "replicas": 3}])
        code, out, _ = run(capsys, "workloads", "--stack-file", path)
        assert code == 0 and out.splitlines()[-1].strip() == "fits" and "kubectl" not in out


class TestWhatIf:
    def test_one_more_worker_turns_the_refusal_into_a_fit(self, tmp_path, capsys):
        path = stack_file(tmp_path)
        code, out, _ = run(capsys, "workloads", "--stack-file", path, "--add-workers", "tenant-a=1")
        assert code == 0
        assert "what-if: tenant-a: workers 1 -> 2" in out
        share = next(ln for ln in out.splitlines() if ln.split()[:1] == ["share"])
        assert share.split()[3:] == ["4", "0", "2"], "placed, refused, headroom"
        # Either worker may take the first pod: what each card has left depends on that tie.
        assert "21920-61920" in out
        assert "(ranges: the order HAMi takes the pods in and its picks between tied nodes decide)" in out

    def test_more_cards_per_worker_turns_the_refusal_into_a_fit(self, tmp_path, capsys):
        path = stack_file(tmp_path)
        code, out, _ = run(capsys, "workloads", "--stack-file", path, "--cards-per-worker", "tenant-a=2",
                           "--json")
        report = json.loads(out)
        assert code == 0 and report["fits"] is True
        assert report["whatIf"] == ["tenant-a: gpus.perWorker 1 -> 2"]
        assert len(report["tenants"]["tenant-a"]["cards"]["tenant-a-worker-0"]) == 2
        assert "perWorker: 1" in path.read_text(), "the stack file itself is not changed"

    def test_flags_repeat_and_add_up(self, tmp_path, capsys):
        code, out, _ = run(capsys, "workloads", "--stack-file", stack_file(tmp_path),
                           "--add-workers", "tenant-a=1", "--add-workers", "tenant-a=2")
        assert code == 0 and "workers 1 -> 2" in out and "workers 2 -> 4" in out

    def test_beyond_the_pod_cidr_is_refused_with_the_validators_message(self, tmp_path, capsys):
        path = stack_file(tmp_path, podCidr="10.36.0.0/22")
        code, out, err = run(capsys, "workloads", "--stack-file", path, "--add-workers", "tenant-a=4")
        assert code == 2 and out == ""
        assert err.startswith("error: the what-if config (tenant-a: workers 1 -> 5) does not validate")
        assert "podCidr 10.36.0.0/22 holds only 4: use at most 4 workers" in err

    def test_more_than_twelve_cards_is_refused_with_the_validators_message(self, tmp_path, capsys):
        code, _, err = run(capsys, "workloads", "--stack-file", stack_file(tmp_path),
                           "--cards-per-worker", "tenant-a=13")
        assert code == 2 and "tenants[0].gpus.perWorker: must be positive, between 1 and 12, got 13" in err

    @pytest.mark.parametrize(("flag", "spec", "message"), [
        ("--add-workers", "tenant-x=1",
         "--add-workers: no tenant 'tenant-x' in the stack (tenants: tenant-a, tenant-b)"),
        ("--add-workers", "tenant-a", "expected TENANT=N with N a positive integer"),
        ("--add-workers", "tenant-a=x", "expected TENANT=N with N a positive integer"),
        ("--add-workers", "tenant-a=0", "expected TENANT=N with N a positive integer"),
        ("--add-workers", "tenant-a=-1", "expected TENANT=N with N a positive integer"),
        ("--cards-per-worker", "=2", "expected TENANT=N with N a positive integer"),
    ])
    def test_bad_values_are_a_clear_error_and_exit_2(self, tmp_path, capsys, flag, spec, message):
        code, out, err = run(capsys, "workloads", "--stack-file", stack_file(tmp_path), flag, spec)
        assert code == 2 and out == "" and err.startswith("error: ") and message in err

    def test_cards_for_a_tenant_without_gpus(self, tmp_path, capsys):
        path = stack_file(tmp_path, workloads=[], gpus=None)
        code, _, err = run(capsys, "workloads", "--stack-file", path, "--cards-per-worker", "tenant-a=2")
        assert code == 2 and "tenant 'tenant-a' has no gpus to change" in err


def test_bad_stack_arguments_exit_2(tmp_path, capsys):
    assert run(capsys, "workloads", "--stack-file", tmp_path / "none.yaml")[0] == 2
    (tmp_path / "broken.yaml").write_text("config: [\n")
    code, _, err = run(capsys, "workloads", "--stack-file", tmp_path / "broken.yaml")
    assert code == 2 and "not valid YAML" in err
    with pytest.raises(SystemExit) as exit_info:
        planner.main(["workloads", "--add-workers"])
    assert exit_info.value.code == 2


@pytest.mark.parametrize("command", ["workloads", "compare"])
def test_help_states_the_exit_codes(capsys, command):
    with pytest.raises(SystemExit):
        planner.main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 when" in text and "1 when" in text and "2 for bad arguments" in text


class TestCompare:
    def test_fewer_workers_in_head_marks_the_refusal(self, tmp_path, capsys):
        base = stack_file(tmp_path, "base.yaml", workers=2)
        head = stack_file(tmp_path, "Pulumi.dev.yaml", workers=1)
        code, out, _ = run(capsys, "compare", "--base", base, "--head", head, "--markdown")
        assert code == 1
        assert out.startswith("### GPU capacity: Pulumi.dev.yaml\n")
        assert ("| tenant | workload | base placed | base refused | base headroom | head placed "
                "| head refused | head headroom | change |") in out
        assert "| tenant-a | share | 4 of 4 | 0 | 2 | 3 of 4 | 1 | 0 | ⚠ more refused, ⚠ less room |" in out
        assert ("- **tenant-a does not fit: share: 0/1 nodes are available: 1 1/1 CardInsufficientCore. "
                "Smallest change that fits: 1 more worker(s)") in out

    def test_more_room_in_head_fits(self, tmp_path, capsys):
        base = stack_file(tmp_path, "base.yaml", workers=1)
        head = stack_file(tmp_path, "head.yaml", workers=2)
        code, out, _ = run(capsys, "compare", "--base", base, "--head", head, "--markdown", "--title", "dev")
        assert code == 0 and out.startswith("### dev\n")
        assert "| tenant-a | share | 3 of 4 | 1 | 0 | 4 of 4 | 0 | 2 | fewer refused, more room |" in out
        assert "Everything fits in head." in out

    def test_a_new_stack_has_no_base(self, tmp_path, capsys):
        head = stack_file(tmp_path, workloads=[{**SHARE, "replicas": 3}])
        code, out, _ = run(capsys, "compare", "--base", tmp_path / "missing.yaml", "--head", head,
                           "--markdown")
        assert code == 0
        assert "> The base branch has no Pulumi.dev.yaml (a new stack): every workload is new." in out
        assert "| tenant-a | share | - | - | - | 3 of 3 | 0 | 0 |  |" in out

    def test_a_base_that_does_not_validate_is_said_not_crashed_on(self, tmp_path, capsys):
        base = tmp_path / "base.yaml"
        base.write_text(f"config:\n  {TENANTS}: []\n")
        head = stack_file(tmp_path)
        code, out, _ = run(capsys, "compare", "--base", base, "--head", head, "--markdown")
        assert code == 1
        assert "> The base branch's Pulumi.dev.yaml does not validate" in out
        assert "| tenant-a | share | - | - | - | 3 of 4 | 1 | 0 | ⚠ refused |" in out
        assert "<details><summary>why the base does not validate</summary>" in out
        assert "tenants: must be a non-empty list of tenants" in out

    def test_added_and_removed_workloads_and_tenants(self, tmp_path, capsys):
        small = {"name": "small", "replicas": 1, "gpumem": 1000}
        base = stack_file(tmp_path, "base.yaml", workloads=[SHARE, small])
        head_doc = yaml.safe_load(stack_file(tmp_path, "head.yaml", workloads=[{**small, "name": "tiny"}])
                                  .read_text())
        head_doc["config"][TENANTS][1]["gpuWorkloads"] = [small]
        (tmp_path / "head.yaml").write_text(yaml.safe_dump(head_doc))
        code, out, _ = run(capsys, "compare", "--base", base, "--head", tmp_path / "head.yaml")
        rows = {tuple(line.split()[:2]): line for line in out.splitlines()[2:]}
        assert code == 0
        assert rows[("tenant-a", "tiny")].endswith("new workload")
        assert rows[("tenant-b", "small")].endswith("new workload")
        assert rows[("tenant-a", "share")].endswith("workload removed")
        assert rows[("tenant-a", "small")].split()[-5:] == ["-", "-", "-", "workload", "removed"]

    def test_a_removed_tenant(self, tmp_path, capsys):
        base = stack_file(tmp_path, "base.yaml")
        head_doc = yaml.safe_load(base.read_text())
        head_doc["config"][TENANTS] = head_doc["config"][TENANTS][1:]
        (tmp_path / "head.yaml").write_text(yaml.safe_dump(head_doc))
        code, out, _ = run(capsys, "compare", "--base", base, "--head", tmp_path / "head.yaml", "--markdown")
        assert code == 0 and "| tenant-a | share | 3 of 4 | 1 | 0 | - | - | - | tenant removed |" in out

    def test_a_head_that_does_not_validate(self, tmp_path, capsys):
        head = tmp_path / "Pulumi.dev.yaml"
        head.write_text(f"config:\n  {TENANTS}: []\n")
        code, out, _ = run(capsys, "compare", "--base", stack_file(tmp_path, "base.yaml"), "--head", head,
                           "--markdown")
        assert code == 1 and "**Pulumi.dev.yaml does not validate.**" in out

    def test_a_missing_head_is_a_bad_argument(self, tmp_path, capsys):
        code, _, err = run(capsys, "compare", "--base", tmp_path / "a.yaml", "--head", tmp_path / "b.yaml")
        assert code == 2 and err.startswith("error: --head: no stack file")
        with pytest.raises(SystemExit) as exit_info:
            planner.main(["compare", "--head", str(tmp_path / "b.yaml")])
        assert exit_info.value.code == 2
