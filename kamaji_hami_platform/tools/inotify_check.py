"""Whether this machine's inotify instance limit holds the stack's nodes: `make up` and `make
preview` run it (`python -m kamaji_hami_platform.tools.inotify_check --stack <stack> --mode
up|preview`).

Every node of a kind stack (the kind node and each worker container) runs systemd, containerd, a
kubelet and pods on this machine's kernel, and each takes inotify instances from the one per-user
limit, `fs.inotify.max_user_instances` (128 by default on many distributions). When they run out,
whatever starts next fails: on the live tier a third tenant's HAMi scheduler crash-looped with
`failed to create cert watcher: couldn't initialize inotify: too many open files`, and its chart
never became ready (docs/development/live-stack.md). kind documents the same limit (known issues:
"Pod errors due to too many open files"). Measured there, on Kubernetes v1.35.4: the kind node held
68 instances with three tenants, each worker container 14 to 16. Worker hosts and an existing
management cluster are other machines: not counted.

It reads this machine's limit, so it judges only a local Docker engine (`DOCKER_HOST` unset or a
unix socket); a remote one is not checked. The estimate does not know what else runs as root
beside the stack (another stack's kind node counts too): `KHP_INOTIFY_CHECK=warn` makes `up`
warn instead of stop.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kamaji_hami_platform.config import ConfigError, PlatformConfig, load_stack

LIMIT_FILE = Path("/proc/sys/fs/inotify/max_user_instances")
SYSCTL = "fs.inotify.max_user_instances"
RECOMMENDED = 512  # what kind's known-issues page suggests
# Instances per node, from the live tier's measurement above, rounded up.
KIND_NODE_BASE = 20
KIND_NODE_PER_TENANT = 16
PER_WORKER = 16
HOST_PROCESSES = 8  # dockerd, containerd and whatever else of the user's runs beside them
MODE_ENV = "KHP_INOTIFY_CHECK"  # `warn`: say it, never stop


def needed(platform: PlatformConfig) -> int:
    """About how many inotify instances the stack's nodes hold on this machine."""
    tenants = len(platform.tenants)
    workers = sum(tenant.workers for tenant in platform.tenants)  # kind mode: containers only
    return HOST_PROCESSES + KIND_NODE_BASE + KIND_NODE_PER_TENANT * tenants + PER_WORKER * workers


def limit(path: Path | None = None) -> int | None:
    """This machine's limit (None where there is no such file)."""
    try:
        return int((path or LIMIT_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def verdict(need: int, have: int | None) -> tuple[bool, str | None]:
    """(whether `up` may go on, what to say)."""
    if have is None or need <= have:
        return True, None
    return False, (f"{SYSCTL} is {have}, and this stack's kind node and worker containers need about "
                   f"{need} (measured: about {KIND_NODE_PER_TENANT} per tenant on the kind node, "
                   f"{PER_WORKER} per worker); beyond it the next pod to start fails with 'too many "
                   f"open files'. Raise it first (nothing has been created): sudo sysctl -w "
                   f"{SYSCTL}={max(RECOMMENDED, need)}, and keep it in /etc/sysctl.d/")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--mode", choices=("preview", "up"), default="up")
    parser.add_argument("--root", type=Path, default=None, help="the project folder (default: here)")
    args = parser.parse_args(argv)
    try:
        platform = load_stack(args.stack, args.root)
    except (ConfigError, ValueError, OSError):
        return 0  # the engine's own run says what is wrong with the config
    if not platform.management.is_kind or not local_engine(os.environ.get("DOCKER_HOST", "")):
        return 0
    may_go_on, message = verdict(needed(platform), limit())
    stops = args.mode == "up" and os.environ.get(MODE_ENV) != "warn"
    if message:
        print(f"{'error' if stops else 'warning'}: {message}"
              + (f" ({MODE_ENV}=warn to go on anyway)" if stops else ""), file=sys.stderr)
    return 0 if may_go_on or not stops else 1


def local_engine(docker_host: str) -> bool:
    """Is the Docker engine on this machine's kernel (whose limit this check reads)?"""
    return docker_host == "" or docker_host.startswith("unix://")


if __name__ == "__main__":
    sys.exit(main())
