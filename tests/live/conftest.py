"""The live tier's engine, started afresh for the session in a folder of its own and stopped after.

Its binaries come from toolchain/live/build.sh (Go modules, cached by version outside the clone);
the engine runs in a network namespace of its own with no route out (engine-start.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import tiers

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "toolchain" / "live" / "scripts"


@dataclass(frozen=True)
class Engine:
    """A running engine: its binaries' folder and its own folder (socket, data, pidfile)."""

    bin: Path
    root: Path

    def script(self, name: str, *args: str, check: bool = True,
               timeout: float = 180) -> subprocess.CompletedProcess:
        result = subprocess.run(["bash", str(SCRIPTS / name), *args], capture_output=True, text=True,
                                timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"{name} {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
        return result

    def run(self, *command: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        """A command in the engine's network namespace, with DOCKER_HOST at its socket."""
        return self.script("engine-run.sh", str(self.bin), str(self.root), *command, check=check,
                           timeout=timeout)

    def docker(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        return self.run("docker", *args, check=check, timeout=timeout)

    def start(self) -> None:
        self.script("engine-start.sh", str(self.bin), str(self.root))

    def stop(self) -> subprocess.CompletedProcess:
        return self.script("engine-stop.sh", str(self.root))

    @property
    def pid(self) -> int:
        return int((self.root / "dockerd.pid").read_text())


def missing_prerequisite() -> str | None:
    """Why the engine cannot run here, if it cannot."""
    if os.geteuid() != 0:
        return "the live engine runs dockerd in a network namespace of its own: it needs root"
    needed = (("go", "Go >= 1.26"), ("unshare", "util-linux"), ("apt-get", "a Debian-based host"))
    for tool, package in needed:
        if shutil.which(tool) is None:
            return f"the live tier needs {tool} ({package})"
    return None


@pytest.fixture(scope="session")
def live_bin() -> Path:
    reason = missing_prerequisite()
    if reason:
        tiers.unavailable("live", reason)
    built = subprocess.run(["bash", str(ROOT / "toolchain" / "live" / "build.sh")], capture_output=True,
                           text=True, timeout=3600, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    return Path(built.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def engine(live_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    started = Engine(live_bin, tmp_path_factory.mktemp("engine"))
    started.start()
    try:
        yield started
    finally:
        stopped = started.stop()
        assert stopped.returncode == 0, stopped.stderr
