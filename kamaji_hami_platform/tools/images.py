"""Every image a stack pulls (the list an air-gapped mirror needs), checked against the verified
Kamaji chart first: `python -m kamaji_hami_platform.tools.images <stack>` (`make images`). With
`images.mirror`, each line also names the reference the stack pulls it as."""

from __future__ import annotations

import sys

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import load_stack
from kamaji_hami_platform.management.kamaji_chart_images import check_against_chart
from kamaji_hami_platform.mirror import mirrored


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m kamaji_hami_platform.tools.images <stack>", file=sys.stderr)
        return 2
    platform = load_stack(argv[0])
    if not check_against_chart(platform.management):
        return 1
    mirror = platform.images.mirror
    for where, image in versions.images([t.kubernetes_version for t in platform.tenants]):
        pulled = f"  (from {mirrored(image, mirror)})" if mirror else ""
        print(f"{image:90} {where}{pulled}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
