"""Write the live stack's file (Pulumi.live.yaml): the dev stack as shipped, with the tier's mirror
(images.mirror), the node image built here (by its tag in the mirror) and its tenants on the
Kubernetes version the tier's images are built for; on an engine with cgroup v1 also
management.failCgroupV1: false, as `make up`'s cgroup check tells a user on such a host to set.
Nothing else differs from the dev stack, so the live tier runs the stack users start with.

    python toolchain/live/stack/config.py <node image tag> <engine's cgroup version> [<project folder>]
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

MIRROR = "localhost:5001"  # images/registry.sh
KUBERNETES = "v1.35.4"  # node-image/lib.sh: the version the tier builds
PROJECT = "kamaji-hami-platform"


def live_stack(dev: dict, node_image: str, cgroup_version: str) -> dict:
    """The dev stack's settings with the tier's mirror, node image and Kubernetes version."""
    settings = dev["config"]
    settings[f"{PROJECT}:images"] = {"mirror": MIRROR}
    settings[f"{PROJECT}:management"]["nodeImage"] = node_image
    if cgroup_version == "1":  # kamaji_hami_platform/tools/cgroup_check.py's advice on such a host
        settings[f"{PROJECT}:management"]["failCgroupV1"] = False
    for tenant in settings[f"{PROJECT}:tenants"]:
        tenant["kubernetesVersion"] = KUBERNETES
    return dev


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4) or argv[2] not in ("1", "2"):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    project = Path(argv[3] if len(argv) == 4 else ".")
    dev = yaml.safe_load((project / "Pulumi.dev.yaml").read_text())
    target = project / "Pulumi.live.yaml"
    target.write_text("# Written by toolchain/live/stack/config.py: the dev stack on the live tier.\n"
                      + yaml.safe_dump(live_stack(dev, argv[1], argv[2]), sort_keys=False))
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
