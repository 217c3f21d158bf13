"""Run a command, the Pulumi CLI, with a TMPDIR of its own that is removed when it ends.

pulumi-kubernetes writes the kubeconfig of every Kubernetes provider it configures, credentials
included, into a new file `$TMPDIR/kubeconfig<random>` and never removes it (provider v4
pkg/provider/util.go writeKubeconfigToFile, called by provider.go Configure for Helm's settings
whenever the kubeconfig is known): each preview, up and destroy of a deployed stack would leave the
management cluster's and every tenant's platform kubeconfig behind (mode 0600, until the machine
cleans /tmp). `make up`, `make preview` and `make down` run pulumi through this tool:

    python -m kamaji_hami_platform.tools.private_tmp pulumi up --yes --stack dev

The folder is made by mkdtemp (mode 0700) under the caller's TMPDIR and removed with whatever the
command left in it, also when the command fails or is interrupted (SIGINT reaches pulumi from the
terminal; SIGTERM is passed on to it); the exit status is the command's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from types import FrameType

FOLDER_PREFIX = "khp-pulumi-"


def run(command: list[str]) -> int:
    """The command's exit status, after its private TMPDIR is gone."""
    with tempfile.TemporaryDirectory(prefix=FOLDER_PREFIX) as private:
        process = subprocess.Popen(command, env={**os.environ, "TMPDIR": private})

        def pass_on(signum: int, _frame: FrameType | None) -> None:
            process.send_signal(signum)

        previous = signal.signal(signal.SIGTERM, pass_on)
        try:
            while True:
                try:
                    return process.wait()
                except KeyboardInterrupt:  # pulumi got the terminal's SIGINT too: let it finish
                    continue
        finally:
            signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    command = sys.argv[1:] if argv is None else argv
    if not command:
        print("usage: python -m kamaji_hami_platform.tools.private_tmp <command> [args...]", file=sys.stderr)
        return 2
    return run(command)


if __name__ == "__main__":
    sys.exit(main())
