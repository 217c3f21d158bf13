"""The CI workflows: triggers, jobs and the commands the project relies on."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the bare key `on` as the boolean True.
    document["on"] = document.pop(True, document.get("on"))
    return document


def steps(workflow: dict, job: str) -> list[dict]:
    return workflow["jobs"][job]["steps"]


def runs(workflow: dict, job: str) -> str:
    return "\n".join(step.get("run", "") for step in steps(workflow, job))


def action(workflow: dict, job: str, prefix: str) -> dict:
    matches = [s for s in steps(workflow, job) if s.get("uses", "").startswith(prefix)]
    assert matches, f"{job} does not use {prefix}"
    return matches[-1]


def readme_test_command() -> str:
    block = re.search(r"## Three commands\n\n```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    (line,) = [ln for ln in block.group(1).splitlines() if "test" in ln]
    return line.split("#")[0].strip()


def test_every_workflow_parses_with_jobs_and_triggers():
    for path in sorted(WORKFLOWS.glob("*.yml")):
        workflow = load(path.name)
        assert workflow["on"], path.name
        assert workflow["jobs"], path.name
        for job in workflow["jobs"].values():
            assert job.get("timeout-minutes"), f"{path.name}: every job has a timeout"


def test_test_workflow_runs_the_readme_test_command_on_push_and_pr():
    workflow = load("test.yml")
    assert set(workflow["on"]) == {"push", "pull_request"}
    assert readme_test_command() == "make test"
    assert "make test" in runs(workflow, "unit")
    assert action(workflow, "unit", "actions/setup-python")["with"]["python-version"] == "3.11"


def test_ci_script_runs_the_readme_test_command():
    assert readme_test_command() in (ROOT / ".ci" / "run").read_text()


PREVIEWED_STACKS = ["dev", "ci"]


def test_preview_workflow_previews_each_example_stack_with_the_policy_pack():
    workflow = load("preview.yml")
    assert set(workflow["on"]) == {"pull_request"}
    strategy = workflow["jobs"]["preview"]["strategy"]
    assert strategy["matrix"]["stack"] == PREVIEWED_STACKS and strategy["fail-fast"] is False
    assert all((ROOT / f"Pulumi.{stack}.yaml").is_file() for stack in PREVIEWED_STACKS)
    pulumi = action(workflow, "preview", "pulumi/actions@v7")["with"]
    assert pulumi["command"] == "preview" and pulumi["stack-name"] == "${{ matrix.stack }}"
    assert pulumi["policyPacks"] == "policy"
    assert pulumi["diff"] is True and pulumi["upsert"] is True
    # A comment that must be trimmed loses the diff's front, not the closing tally.
    assert pulumi["always-include-summary"] is True
    # Same-repository pull requests comment; a fork's run gets a read-only token anyway.
    assert workflow["permissions"]["pull-requests"] == "write"
    commands = runs(workflow, "preview")
    assert "pip install -r requirements.txt" in commands
    assert "policy/venv/bin/pip install -r policy/requirements.txt" in commands


def test_e2e_workflow_is_manual_and_nightly_and_always_tears_down():
    workflow = load("e2e.yml")
    assert "workflow_dispatch" in workflow["on"] and workflow["on"]["schedule"][0]["cron"]
    job_steps = steps(workflow, "e2e")
    commands = [s.get("run", "") for s in job_steps]
    order = [next(i for i, c in enumerate(commands) if c.strip() == cmd)
             for cmd in ("make up", "make e2e", "make down")]
    assert order == sorted(order)
    down = next(s for s in job_steps if s.get("run", "").strip() == "make down")
    assert down["if"] == "always()"
    upload = action(workflow, "e2e", "actions/upload-artifact")
    assert upload["if"] == "failure()"
    assert "kind" in runs(workflow, "e2e") and action(workflow, "e2e", "pulumi/actions")


def test_pulumi_cli_version_matches_the_sdk_pin():
    sdk = re.search(r"^pulumi==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    for name, job in (("preview.yml", "preview"), ("e2e.yml", "e2e")):
        assert action(load(name), job, "pulumi/actions")["with"]["pulumi-version"] == sdk


def test_policy_pack_is_a_python_pack_with_pinned_requirements():
    policy = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert policy["runtime"]["name"] == "python"
    assert re.fullmatch(r"pulumi-policy==[\d.]+\n", (ROOT / "policy" / "requirements.txt").read_text())


def test_e2e_workflow_installs_the_pinned_kind():
    from kamaji_hami_platform.versions import KIND_CLI_VERSION

    assert load("e2e.yml")["jobs"]["e2e"]["env"]["KIND_VERSION"] == KIND_CLI_VERSION


def test_e2e_workflow_requires_a_stack_so_it_never_passes_with_everything_skipped():
    assert load("e2e.yml")["jobs"]["e2e"]["env"]["E2E_REQUIRE_STACK"] == "1"


def test_preview_needs_no_repository_secret_so_fork_pull_requests_preview_too():
    """A pull request from a fork gets no secrets: the backend is a throwaway file:// folder on the
    runner and the passphrase a dummy (no previewed stack's config holds a secret value)."""
    workflow = load("preview.yml")
    pulumi = action(workflow, "preview", "pulumi/actions@v7")["with"]
    assert pulumi["cloud-url"].startswith("file://${{ runner.temp }}")
    text = (WORKFLOWS / "preview.yml").read_text()
    assert "secrets." not in text.replace("secrets.GITHUB_TOKEN", "")
    for stack in PREVIEWED_STACKS:
        assert "secure:" not in (ROOT / f"Pulumi.{stack}.yaml").read_text()


@pytest.mark.parametrize(("prefix", "major"), [
    ("actions/checkout@", "v6"), ("actions/setup-python@", "v6"), ("actions/upload-artifact@", "v7"),
    ("pulumi/actions@", "v7")])
def test_actions_are_on_their_current_major(prefix, major):
    uses = [s["uses"] for path in WORKFLOWS.glob("*.yml")
            for job in load(path.name)["jobs"].values() for s in job["steps"] if "uses" in s]
    pinned = [u for u in uses if u.startswith(prefix)]
    assert pinned and all(u == prefix + major for u in pinned), pinned


def test_makefile_never_logs_in_and_preview_needs_no_docker_or_kind():
    makefile = (ROOT / "Makefile").read_text()
    assert "pulumi login" not in makefile, "it would switch the user's global backend"
    preview = re.search(r"^preview:(.*)$", makefile, re.M).group(1)
    assert "check-tools" not in preview and "stack" in preview
    assert "--policy-pack policy" in makefile.split("\npreview:", 1)[1].split("\n\n", 1)[0]


def capacity_step(workflow: dict) -> dict:
    (step,) = [s for s in steps(workflow, "preview") if "planner compare" in s.get("run", "")]
    return step


def test_preview_writes_the_gpu_capacity_comparison_to_the_job_summary_without_secrets():
    """Offline (no secret, no cluster), after a failed preview too, and never failing the job."""
    workflow = load("preview.yml")
    step = capacity_step(workflow)
    assert step["if"] == "always()" and step["continue-on-error"] is True
    assert "secrets." not in yaml.safe_dump(step)
    assert not any(key in yaml.safe_dump(step) for key in ("kubectl", "KUBECONFIG", "kind "))
    script = step["run"]
    assert '--markdown >> "$GITHUB_STEP_SUMMARY"' in script
    # Exit 1 (something does not fit) is a result, not a failure: the script must not end on it.
    assert "|| status=$?" in script and 'if [ "$status" -gt 1 ]' in script
    assert capacity_step(workflow) is steps(workflow, "preview")[-1], "after the preview it reports on"


def test_the_capacity_step_reads_the_base_refs_stack_file_and_handles_a_new_stack():
    step = capacity_step(load("preview.yml"))
    # The base ref through env: a branch name in ${{ }} inside `run` would be spliced into the script.
    assert step["env"]["BASE_REF"] == "${{ github.base_ref }}"
    assert step["env"]["STACK"] == "${{ matrix.stack }}" and "${{" not in step["run"]
    script = step["run"]
    assert ('git fetch --no-tags --depth=1 origin "+refs/heads/$BASE_REF:refs/remotes/origin/$BASE_REF"'
            in script)
    assert 'git show "origin/$BASE_REF:$stack_file" > "$base"' in script
    # A stack new in the pull request has no base file: compare gets a missing path and says so.
    assert '|| rm -f "$base"' in script
    assert 'compare --base "$base" --head "$stack_file"' in script


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                   check=True, capture_output=True)


WORKLOAD = "      gpuWorkloads: [{name: share, replicas: 4, gpumem: 20000, gpucores: 30}]\n"


def _with_workload(text: str, workers: int) -> str:
    """The dev stack with tenant-a at `workers` workers, declaring four 20000 MiB / 30 % pods."""
    head, tail = text.split("    - name: tenant-b", 1)
    head = head.replace("      workers: 1\n", f"      workers: {workers}\n") + WORKLOAD
    return head + "    - name: tenant-b" + tail


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash")
def test_the_capacity_step_run_as_github_would_on_a_shallow_checkout(tmp_path):
    """The step's script in a depth-1 clone of a pull request whose head drops a worker (dev) and
    adds a stack (ci): the summary gets the marked refusal and the new stack, and it exits 0."""
    origin, checkout = tmp_path / "origin", tmp_path / "checkout"
    origin.mkdir()
    _git(origin, "init", "-q", "-b", "main")
    dev = (ROOT / "Pulumi.dev.yaml").read_text()
    (origin / "Pulumi.dev.yaml").write_text(_with_workload(dev, 2))
    _git(origin, "add", ".")
    _git(origin, "commit", "-qm", "base")
    _git(tmp_path, "clone", "-q", "--depth=1", f"file://{origin}", str(checkout))
    (checkout / "Pulumi.dev.yaml").write_text(_with_workload(dev, 1))
    (checkout / "Pulumi.ci.yaml").write_text((ROOT / "Pulumi.ci.yaml").read_text())
    (checkout / ".venv").symlink_to(sys.prefix)
    summary = tmp_path / "summary.md"
    for stack in PREVIEWED_STACKS:
        env = {**os.environ, "BASE_REF": "main", "STACK": stack, "RUNNER_TEMP": str(tmp_path / "runner"),
               "GITHUB_STEP_SUMMARY": str(summary), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(["bash", "-e", "-c", capacity_step(load("preview.yml"))["run"]], cwd=checkout,
                              env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    dev_part, ci_part = summary.read_text().split("### GPU capacity: ci stack")
    assert "| tenant-a | share | 4 of 4 | 0 | 2 | 3 of 4 | 1 | 0 | ⚠ more refused, ⚠ less room |" in dev_part
    assert "The base branch has no Pulumi.ci.yaml (a new stack)" in ci_part

