"""The platform's scripts run against stand-in tools: the one runner the unit tests share.

A stand-in plays a real tool (docker, kind, kubectl, kubeadm) well enough for a script's logic.
`tests/fakes/` holds the shared ones: `docker`, whose containers, networks and calls live in a
state folder (`FAKE_DOCKER_STATE`), and under `node/` the tools inside a kind node; a test writes
a tool of its own with `stand_in`. Nothing here talks to a real Docker, cluster or host.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

FAKES = Path(__file__).parent / "fakes"
DEFAULT_TIMEOUT_SECONDS = 60


def stand_in(bin_dir: Path, name: str, body: str) -> Path:
    """An executable `name` in `bin_dir` (created) that runs `body`, a script with its shebang."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    tool = bin_dir / name
    tool.write_text(body)
    tool.chmod(0o755)
    return tool


def run_script(script: str, *, shell: str = "bash", tools: Iterable[Path] = (FAKES,),
               docker_state: Path | None = None, env: Mapping[str, str] | None = None,
               cwd: Path | None = None, stdin: str | None = None,
               timeout: int = DEFAULT_TIMEOUT_SECONDS) -> subprocess.CompletedProcess[str]:
    """Run `script` as the platform runs it (`/bin/<shell> -c`), the stand-ins' folders first on
    PATH; `docker_state`: the stand-in docker's state folder."""
    environment = {**os.environ, "PATH": os.pathsep.join([*map(str, tools), os.environ["PATH"]])}
    if docker_state is not None:
        environment["FAKE_DOCKER_STATE"] = str(docker_state)
    environment.update(env or {})
    return subprocess.run([f"/bin/{shell}", "-c", script], env=environment, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=timeout, check=False)


def run_on_kind_node(script: str, state: Path, node: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`script` (sh, as a local Command runs it) with the stand-in docker whose kind node `node`
    runs: the readiness waits reach the management cluster through it."""
    (state / "containers").mkdir(parents=True, exist_ok=True)
    (state / "containers" / node).touch()
    return run_script(script, docker_state=state, env=env)


def docker_calls(state: Path) -> list[str]:
    """Every call the stand-in docker received, in order."""
    calls = state / "calls"
    return calls.read_text().splitlines() if calls.exists() else []
