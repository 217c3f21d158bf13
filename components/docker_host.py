"""What a worker container needs from the Docker host it runs on, detected as kind detects it.

kind adds these to its own nodes' `docker run` on some hosts (kind v0.31.0
pkg/cluster/internal/providers/docker/provision.go `commonArgs`, util.go):

- `--volume /dev/mapper:/dev/mapper` when Docker's storage driver is btrfs, zfs or
  devicemapper, or its backing filesystem btrfs, zfs or xfs (`mountDevMapper`; without it the
  kubelet dies with "failed to get rootfs info" on Fedora and the RHEL family);
- `--userns=host` under userns-remap (`usernsRemap`: SecurityOptions name=userns);
- `--device /dev/fuse` under rootless Docker (`mountFuse`: SecurityOptions name=rootless);
- the host's proxy variables, with the cluster's own networks added to NO_PROXY
  (`getProxyEnv`, providers/common/proxy.go).

The Docker facts are read once per management cluster by a command (its output is a worker
trigger); the proxy variables come from the environment `pulumi up` runs in, are passed by name
(`docker run -e NAME`: the value never lands on a command line or in the state) and enter the
workers' specification hash as a digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
# Read by the worker's create script: the flags the host needs (this module's command's output).
HOST_FLAGS_ENV = "KHP_HOST_FLAGS"


def host_flags_script() -> str:
    """Print the extra `docker run` flags this Docker host needs, on one line (maybe empty)."""
    return r"""set -eu
if ! security=$(docker info --format '{{json .SecurityOptions}}' 2>&1); then
  echo "cannot ask Docker about this host (is Docker running?): $security" >&2; exit 1
fi
driver=$(docker info --format '{{.Driver}}' | tr '[:upper:]' '[:lower:]')
backing=$(docker info --format '{{json .DriverStatus}}' | tr '[:upper:]' '[:lower:]')
flags=""
filesystem=$(printf '%s' "$backing" | sed -n 's/.*"backing filesystem","\([a-z0-9]*\)".*/\1/p')
case "$driver:$filesystem" in
  btrfs:*|zfs:*|devicemapper:*|*:btrfs|*:zfs|*:xfs) flags="$flags --volume /dev/mapper:/dev/mapper" ;;
esac
case "$security" in *name=userns*) flags="$flags --userns=host" ;; esac
case "$security" in *name=rootless*) flags="$flags --device /dev/fuse" ;; esac
echo "${flags# }"
"""


def proxy_settings(environment: Mapping[str, str]) -> dict[str, str]:
    """The proxy variables kind would pass, upper case winning over lower case."""
    settings = {}
    for name in PROXY_VARIABLES:
        value = environment.get(name) or environment.get(name.lower())
        if value:
            settings[name] = value
    return settings


def proxy_digest(environment: Mapping[str, str]) -> str:
    """Changes when the proxies a new worker would get change; reveals none of them."""
    settings = proxy_settings(environment)
    if not settings:
        return ""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def proxy_script(no_proxy_extra: list[str]) -> str:
    """Shell that sets $proxy_flags: `-e NAME` for each proxy variable (both cases, as kind),
    NO_PROXY extended with the worker's own networks; empty without a proxy."""
    extra = ",".join(no_proxy_extra)
    return f"""proxy_flags=""
HTTP_PROXY=${{HTTP_PROXY:-${{http_proxy:-}}}}; HTTPS_PROXY=${{HTTPS_PROXY:-${{https_proxy:-}}}}
if [ -n "$HTTP_PROXY$HTTPS_PROXY" ]; then
  NO_PROXY=${{NO_PROXY:-${{no_proxy:-}}}}; NO_PROXY="${{NO_PROXY:+$NO_PROXY,}}{extra}"
  http_proxy=$HTTP_PROXY; https_proxy=$HTTPS_PROXY; no_proxy=$NO_PROXY
  export HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy
  for variable in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
    proxy_flags="$proxy_flags -e $variable"
  done
fi
"""
