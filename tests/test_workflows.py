"""The CI workflows: triggers, jobs and the commands the project relies on."""

from __future__ import annotations

import re
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
    block = re.search(r"## Two commands\n\n```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
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


def test_preview_workflow_previews_each_example_stack_with_the_policy_pack_and_comments():
    workflow = load("preview.yml")
    assert set(workflow["on"]) == {"pull_request"}
    strategy = workflow["jobs"]["preview"]["strategy"]
    assert strategy["matrix"]["stack"] == PREVIEWED_STACKS and strategy["fail-fast"] is False
    assert all((ROOT / f"Pulumi.{stack}.yaml").is_file() for stack in PREVIEWED_STACKS)
    pulumi = action(workflow, "preview", "pulumi/actions@v7")["with"]
    assert pulumi["command"] == "preview" and pulumi["stack-name"] == "${{ matrix.stack }}"
    assert pulumi["policyPacks"] == "policy" and pulumi["comment-on-pr"] is True
    assert pulumi["diff"] is True and pulumi["upsert"] is True
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
