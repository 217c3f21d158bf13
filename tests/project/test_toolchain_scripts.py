"""The toolchain's own shell (toolchain/**/*.sh: the tiers' builds and the live engine's scripts)
passes shellcheck, as the platform's rendered scripts do."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.project.test_shell_scripts import shellcheck

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "toolchain").rglob("*.sh"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(path.relative_to(ROOT)) for path in SCRIPTS])
def test_the_toolchain_script_passes_shellcheck(script: Path):
    result = subprocess.run([shellcheck(), "--shell=bash", str(script)], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stdout


def test_the_live_stack_hands_its_older_provider_the_programs_patch_force():
    """The live tier's provider reads force only from its environment (providers.py
    PATCH_FORCE_ENV): the stack's environment says what the program's providers ask for."""
    from kamaji_hami_platform.providers import ENABLE_PATCH_FORCE, PATCH_FORCE_ENV

    env_sh = (ROOT / "toolchain/live/stack/env.sh").read_text()
    assert f"export {PATCH_FORCE_ENV}={str(ENABLE_PATCH_FORCE).lower()}\n" in env_sh
