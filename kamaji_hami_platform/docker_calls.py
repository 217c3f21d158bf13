"""Every `docker` call of the platform's scripts bounded in time: a Docker daemon that stops
answering fails the script within the bound, saying so, instead of holding `pulumi up` or
`destroy` forever. The scripts define `docker` as a shell function that runs the real one under
coreutils' `timeout` (which executes the binary from PATH, not the function).

Not bounded here: the `docker` calls kind makes itself during `kind create cluster` and
`kind delete cluster`.
"""

from __future__ import annotations

from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script

DOCKER_TIMEOUT_ENV = "KHP_DOCKER_TIMEOUT"
# Long enough for the slowest call a working daemon makes (pulling a kindest/node image on a slow
# link; a worker's join inside `docker exec`, which waits up to 6 minutes for Kamaji and Ready).
DEFAULT_DOCKER_TIMEOUT_SECONDS = 900
TIMED_OUT = 124  # coreutils timeout's exit status
KILL_AFTER_SECONDS = 30  # then KILL, for a client that ignores the TERM


def bounded_docker() -> Shell:
    """Shell that defines the bounded `docker` function (place it after any `command -v docker`)."""
    return Shell(render_script("kamaji_hami_platform", "docker_bounded.sh",
                               timeout_env=Text(DOCKER_TIMEOUT_ENV), default=DEFAULT_DOCKER_TIMEOUT_SECONDS,
                               timed_out=TIMED_OUT, kill_after=KILL_AFTER_SECONDS))
