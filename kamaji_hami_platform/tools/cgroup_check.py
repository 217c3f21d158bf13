"""Whether the Docker host's cgroup version suits the stack: `make up` and `make preview` run it
first (`python -m kamaji_hami_platform.tools.cgroup_check --stack <stack> --mode up|preview`).

On a cgroup v1 Docker host, kind's node and the worker containers run kubelets that Kubernetes
1.35 stops unless `management.failCgroupV1` is false (kamaji_hami_platform/cgroup_v1.py). Without
this check `make up` would create the Docker network and then wait out kind's own timeout on a node
whose kubelet never starts. In preview it says what it found; a Docker that does not answer is
no finding (preview needs no Docker; `make up` checks Docker first). Worker hosts check their own
cgroups when they join; an existing management cluster is not this machine's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from kamaji_hami_platform import cgroup_v1
from kamaji_hami_platform.config import ConfigError, load_stack

DOCKER_INFO_TIMEOUT_SECONDS = 20
CGROUP_VERSION_FORMAT = "{{.CgroupVersion}}"  # docker info's field (Docker Engine API SystemInfo)


def docker_cgroup_version() -> str | None:
    """The Docker host's cgroup version ("1" or "2"), or None when Docker does not answer."""
    try:
        result = subprocess.run(["docker", "info", "--format", CGROUP_VERSION_FORMAT], capture_output=True,
                                text=True, timeout=DOCKER_INFO_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = result.stdout.strip()
    return version if result.returncode == 0 and version in ("1", "2") else None


def verdict(fail_cgroup_v1: bool, cgroup_version: str | None, stack: str) -> tuple[bool, str | None]:
    """(whether `up` may go on, what to say)."""
    if cgroup_version != "1":
        return True, None
    if not fail_cgroup_v1:
        return True, (f"the Docker host runs cgroup v1; {cgroup_v1.CONFIG_PATH} is false, so the "
                      "platform's kubelets start there (cgroup v1 is deprecated in Kubernetes 1.35)")
    return False, (f"the Docker host runs cgroup v1 (docker info: CgroupVersion 1), where the kubelet of "
                   f"Kubernetes 1.35 does not start by default, so kind's node would never be Ready: set "
                   f"{cgroup_v1.CONFIG_PATH}: false in Pulumi.{stack}.yaml (KEP-5573; nothing has been "
                   "created), or run Docker on a cgroup v2 host (systemd.unified_cgroup_hierarchy=1)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--mode", choices=("preview", "up"), default="up")
    parser.add_argument("--root", type=Path, default=None, help="the project folder (default: here)")
    args = parser.parse_args(argv)
    try:
        management = load_stack(args.stack, args.root).management
    except (ConfigError, ValueError, OSError):
        return 0  # the engine's own run says what is wrong with the config
    if not management.is_kind:
        return 0
    may_go_on, message = verdict(management.fail_cgroup_v1, docker_cgroup_version(), args.stack)
    if message:
        prefix = "note" if may_go_on else ("error" if args.mode == "up" else "warning")
        print(f"{prefix}: {message}", file=sys.stderr)
    return 0 if may_go_on or args.mode == "preview" else 1


if __name__ == "__main__":
    sys.exit(main())
