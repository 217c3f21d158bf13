"""How the platform's local commands start their shell: without what the caller's environment
would make it run or print before the script.

Bash sources `$BASH_ENV` before a non-interactive script and turns on the options `SHELLOPTS`
and `BASHOPTS` list when it finds them in its environment (bash(1), INVOCATION and Shell
Variables), also when started as `sh`; a POSIX shell reads `$ENV` when interactive. An exported
`SHELLOPTS=xtrace` would print every expanded command of a script that handles a bootstrap
token or a kubeconfig, and pulumi-command logs what it prints. `env -u` drops them first.
"""

from __future__ import annotations

CLEARED_VARIABLES = ("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS")
_WITHOUT_THEM = ["/usr/bin/env", *(arg for name in CLEARED_VARIABLES for arg in ("-u", name))]

BASH = [*_WITHOUT_THEM, "/bin/bash", "-c"]
"""The interpreter of a local bash script."""
SH = [*_WITHOUT_THEM, "/bin/sh", "-c"]
"""The interpreter of a local POSIX sh script (pulumi-command's default is `/bin/sh -c`)."""
