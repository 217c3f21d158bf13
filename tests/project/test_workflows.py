"""The CI workflows: triggers, jobs and the commands the project relies on."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
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
    block = re.search(r"## The commands\n\n```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    (line,) = [ln for ln in block.group(1).splitlines() if ln.startswith("make test ")]
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
    """Where the preview goes (a PR comment, the job summary): the tests on forks, below."""
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
    assert "$(POLICY_ARGS)" in makefile.split("\npreview:", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"^POLICY_ARGS = --policy-pack policy ", makefile, re.M)


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


# A pull request from a fork: GitHub hands its `pull_request` run a read-only GITHUB_TOKEN, and
# pulumi/actions fails its step when the comment is refused (pulumi/actions#926). The workflow asks
# for the comment only on a same-repository pull request and writes the preview to the job summary
# on every one. The `if:` and `${{ }}` expressions are evaluated below, as GitHub would, for each
# kind of pull request, so the tests show which steps run and what the job's verdict is.

_TOKENS = re.compile(r"\s*(?:('(?:[^']|'')*')|(==|!=|&&|\|\||[!().])|([A-Za-z_][\w-]*))")
_STATUS_FUNCTIONS = re.compile(r"\b(?:success|failure|always|cancelled)\(")


def _number(value) -> float:
    """GitHub's coercion for `==` between different types: null 0, booleans 0/1, strings parsed."""
    if value is None or isinstance(value, (bool, int, float)):
        return float(value or 0)
    if isinstance(value, str):
        try:
            return float(value) if value.strip() else 0.0
        except ValueError:
            return math.nan
    return math.nan


def _equal(left, right) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold()  # GitHub ignores case when comparing strings
    if type(left) is type(right):
        return left == right
    return _number(left) == _number(right)


def _truthy(value) -> bool:
    return not (value is None or value is False or value == "" or value == 0
                or (isinstance(value, float) and math.isnan(value)))


def evaluate(expression: str, context: dict, status: dict):
    """The subset of GitHub's expression syntax that the workflows use: string literals, true,
    false, null, property access on dicts (a missing key is null), the status functions, !, ==,
    !=, && and || (which return an operand, as GitHub's do) and parentheses."""
    tokens, pos = [], 0
    expression = expression.strip()
    while pos < len(expression):
        match = _TOKENS.match(expression, pos)
        assert match and match.end() > pos, f"cannot read {expression[pos:]!r}"
        tokens.append(next(group for group in match.groups() if group is not None))
        pos = match.end()
    tokens.append("")

    def take(expected=None):
        token = tokens.pop(0)
        assert expected is None or token == expected, f"{expected!r} expected, got {token!r}"
        return token

    def primary():
        token = take()
        if token == "(":
            value = either()
            take(")")
            return value
        if token.startswith("'"):
            return token[1:-1].replace("''", "'")
        if token in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[token]
        if tokens[0] == "(":
            take("(")
            take(")")
            return status[token]
        value = context.get(token)
        while tokens[0] == ".":
            take(".")
            name = take()
            value = value.get(name) if isinstance(value, dict) else None
        return value

    def unary():
        if tokens[0] == "!":
            take()
            return not _truthy(unary())
        return primary()

    def comparison():
        value = unary()
        while tokens[0] in ("==", "!="):
            negated = take() == "!="
            value = _equal(value, unary()) != negated
        return value

    def both():
        value = comparison()
        while tokens[0] == "&&":
            take()
            right = comparison()
            value = right if _truthy(value) else value
        return value

    def either():
        value = both()
        while tokens[0] == "||":
            take()
            right = both()
            value = value if _truthy(value) else right
        return value

    value = either()
    assert tokens == [""], f"left over in {expression!r}: {tokens}"
    return value


def _unwrap(expression: str) -> str:
    expression = expression.strip()
    if expression.startswith("${{") and expression.endswith("}}"):
        return expression[3:-2]
    return expression


def _as_input(value) -> str:
    """What a `with:` value or an `${{ }}` in one becomes: the step receives a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def interpolate(text: str, context: dict, status: dict) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _as_input(evaluate(m.group(1), context, status)), text)


def simulate(workflow: dict, job: str, github: dict, outcomes: dict[str, str] | None = None):
    """Run a job's steps as GitHub decides them: each step's `if:` (none is `success()`, and one
    without a status function gets `success() && ...`), its `continue-on-error`, and its `with:`
    inputs with their expressions evaluated. `outcomes` says how a step that runs ends (by id or
    name; `success` otherwise). Returns {step: inputs} for the steps that ran, and the job's status."""
    outcomes = outcomes or {}
    steps_context, ran, failed = {}, {}, False
    for step in steps(workflow, job):
        key = step.get("id") or step.get("name") or step["uses"]
        context = {"github": github, "steps": steps_context, "matrix": {"stack": "dev"},
                   "runner": {"temp": "/runner/temp"}, "secrets": {"GITHUB_TOKEN": "***"}}
        status = {"success": not failed, "failure": failed, "always": True, "cancelled": False}
        condition = _unwrap(step.get("if", "success()"))
        if not _STATUS_FUNCTIONS.search(condition):
            condition = f"success() && ({condition})"
        if not _truthy(evaluate(condition, context, status)):
            steps_context[key] = {"outcome": "skipped", "conclusion": "skipped", "outputs": {}}
            continue
        outcome = outcomes.get(key, "success")
        conclusion = "success" if step.get("continue-on-error") is True else outcome
        failed = failed or conclusion == "failure"
        steps_context[key] = {"outcome": outcome, "conclusion": conclusion, "outputs": {}}
        ran[key] = {name: interpolate(_as_input(value), context, status)
                    for name, value in step.get("with", {}).items()}
    return ran, "failure" if failed else "success"


REPOSITORY = "example-org/kamaji-hami-platform"


def pull_request(head_repo: str | None, fork: bool | None = None) -> dict:
    """The github context of a `pull_request` run; head_repo None: the fork has been deleted."""
    head = None if head_repo is None else {
        "full_name": head_repo, "fork": head_repo != REPOSITORY if fork is None else fork}
    return {"repository": REPOSITORY, "event_name": "pull_request", "base_ref": "main",
            "head_ref": "feature", "event": {"pull_request": {
                "title": "x", "head": {"ref": "feature", "repo": head}, "base": {"ref": "main"}}}}


SAME_REPOSITORY = pull_request(REPOSITORY)
FORK = pull_request("someone/kamaji-hami-platform")
SUMMARY_STEPS = ("summary", "Preview not in the job summary")
CAPACITY = "GPU capacity, base against head (job summary)"


@pytest.mark.parametrize(("expression", "expected"), [
    ("'A/b' == 'a/B'", True), ("null == false", True), ("null == 'a/b'", False), ("'' == false", True),
    ("!(true && 'x') || null", None), ("'it''s' != 'its'", True), ("a.b.c == null", True),
    ("always() && a.b == 'x'", False)])
def test_the_expression_evaluator_follows_githubs_documented_rules(expression, expected):
    """Loose equality (types coerced to numbers, null 0), strings compared ignoring case, && and ||
    returning an operand: the rules of GitHub's "Evaluate expressions" reference."""
    assert evaluate(expression, {"a": {"b": None}}, {"always": True}) == expected


@pytest.mark.parametrize(("github", "comments"), [
    (SAME_REPOSITORY, "true"),
    # GitHub compares strings ignoring case.
    (pull_request(REPOSITORY.upper()), "true"),
    # A repository that is itself a fork, on its own branch: its token can write. `head.repo.fork`
    # is true there, which is why the condition reads full_name.
    (pull_request(REPOSITORY, fork=True), "true"),
    (FORK, "false"),
    # A deleted fork: head.repo is null, and null == false holds in GitHub's loose equality.
    (pull_request(None), "false"),
], ids=["same-repository", "same-repository-other-case", "repository-that-is-a-fork", "fork",
        "deleted-fork"])
def test_the_pr_comment_is_asked_for_only_on_a_same_repository_pull_request(github, comments):
    workflow = load("preview.yml")
    ran, status = simulate(workflow, "preview", github)
    assert ran["preview"]["comment-on-pr"] == comments and status == "success"
    assert action(workflow, "preview", "pulumi/actions@v7")["with"]["comment-on-pr"] == (
        "${{ github.event.pull_request.head.repo.full_name == github.repository }}")
    # Nothing else comments: no second pulumi/actions step, no PR number, no gh or API call.
    text = (WORKFLOWS / "preview.yml").read_text()
    assert text.count("comment-on-pr") == 1 and "gh pr " not in text and "api.github.com" not in text
    assert "comment-on-summary" not in text.replace("`comment-on-summary`", "")


@pytest.mark.parametrize("github", [SAME_REPOSITORY, FORK], ids=["same-repository", "fork"])
@pytest.mark.parametrize(("outcomes", "status", "fallback"), [
    ({}, "success", False),
    # A policy violation: pulumi/actions fails the step, and the job with it.
    ({"preview": "failure"}, "failure", False),
    # A preview too large for one env value: the summary step cannot start; the job stays green.
    ({"summary": "failure"}, "success", True),
    ({"preview": "failure", "summary": "failure"}, "failure", True),
], ids=["passes", "preview-fails", "summary-fails", "both-fail"])
def test_every_pull_request_gets_the_summary_and_only_the_preview_decides_the_job(
        github, outcomes, status, fallback):
    ran, job = simulate(load("preview.yml"), "preview", github, outcomes)
    assert job == status
    assert "preview" in ran and "summary" in ran and CAPACITY in ran
    assert (SUMMARY_STEPS[1] in ran) is fallback


def test_the_preview_step_is_never_continue_on_error_and_the_summary_step_always_runs():
    workflow = load("preview.yml")
    preview = action(workflow, "preview", "pulumi/actions@v7")
    assert preview["id"] == "preview" and "if" not in preview
    assert "continue-on-error" not in preview and "continue-on-error" not in preview["with"]
    summary = next(s for s in steps(workflow, "preview") if s.get("id") == "summary")
    assert summary["if"] == "always()" and summary["continue-on-error"] is True
    assert summary["env"]["PREVIEW"] == "${{ steps.preview.outputs.output }}"
    assert summary["env"]["OUTCOME"] == "${{ steps.preview.outcome }}"
    assert '>> "$GITHUB_STEP_SUMMARY"' in summary["run"]
    fallback = next(s for s in steps(workflow, "preview") if s.get("name") == SUMMARY_STEPS[1])
    assert fallback["if"] == "always() && steps.summary.outcome == 'failure'"
    order = [s.get("id") or s.get("name") for s in steps(workflow, "preview")]
    assert order.index("preview") < order.index("summary") < order.index(SUMMARY_STEPS[1])


def test_no_expression_is_spliced_into_a_run_script():
    """`${{ }}` inside `run:` is pasted into the script before bash reads it: a branch name, a PR
    title or the preview's text (a fork writes both) would be code. They come in through env."""
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for name, job in load(path.name)["jobs"].items():
            for step in job["steps"]:
                assert "${{" not in step.get("run", ""), f"{path.name} {name}: {step.get('name')}"
    untrusted = re.compile(r"github\.head_ref|pull_request\.(title|body|head\.ref|head\.label)"
                           r"|steps\.\w+\.outputs")
    for step in steps(load("preview.yml"), "preview"):
        for key, value in step.items():
            if key != "env" and isinstance(value, str):
                assert not untrusted.search(value), (step.get("name"), key)


def _summary_step(name: str) -> dict:
    (step,) = [s for s in steps(load("preview.yml"), "preview") if name in (s.get("id"), s.get("name"))]
    return step


def _run_step(step: dict, tmp_path: Path, **env: str) -> str:
    summary = tmp_path / "summary.md"
    summary.unlink(missing_ok=True)
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                          cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "GITHUB_STEP_SUMMARY": str(summary), **env})
    assert done.returncode == 0, done.stderr
    return summary.read_text()


HOSTILE_PREVIEW = (
    "Previewing update (dev):\n"
    "    + kubernetes:core/v1:ConfigMap: (create)\n"
    "        data: \"````\\n```\\n# Heading $(touch pwned) `touch pwned2` </code></pre> <img src=x>\"\n"
    "```\n"
    "   ``````\n"
    "\x1b[1mResources:\x1b[0m\n"
    "    + 3 to create\n")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_summary_fences_the_preview_text_so_nothing_in_it_breaks_out(tmp_path):
    """The step's script as GitHub runs it (bash -e, pipefail), on a preview whose text holds
    backtick runs of 3, 4 and 6, HTML and command substitutions: the text lands verbatim
    (colour codes out) between fences longer than any backtick run in it, and nothing runs."""
    written = _run_step(_summary_step("summary"), tmp_path, PREVIEW=HOSTILE_PREVIEW,
                        OUTCOME="success", STACK="dev")
    heading, opening, *body, closing, end = written.split("\n")
    assert heading == "### Pulumi preview: dev stack" and end == ""
    fence = closing
    assert set(fence) == {"`"} and opening == f"{fence} text"
    text = HOSTILE_PREVIEW.replace("\x1b[1m", "").replace("\x1b[0m", "")
    assert "\n".join(body) == text.rstrip("\n")
    assert len(fence) > max(len(run) for run in re.findall(r"`+", text))
    # CommonMark closes a backtick fence only on a line of at least as many backticks: none has.
    assert not any(fence in line for line in body)
    assert not list(tmp_path.glob("pwned*"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_summary_says_where_the_report_is_when_there_is_no_preview_text(tmp_path):
    """After a failed preview pulumi/actions sets no `output`; a preview too large for env stops
    the summary step, and the next step says so."""
    written = _run_step(_summary_step("summary"), tmp_path, PREVIEW="", OUTCOME="failure", STACK="ci")
    assert written == ("### Pulumi preview: ci stack\n"
                       "No preview text here (the preview step's outcome: failure): see the job's log.\n")
    written = _run_step(_summary_step(SUMMARY_STEPS[1]), tmp_path, STACK="dev")
    assert written.startswith("Pulumi preview, dev stack: not written here") and "log" in written
