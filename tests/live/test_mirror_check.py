"""`make up`'s mirror check (kamaji_hami_platform/tools/mirror_check.py) against a real registry:
distribution's registry v3.1.2, built from its module, serving plain HTTP inside the engine's
network namespace, filled by the engine's own `docker push`. It names exactly the references the
mirror lacks, and a reference pinned by digest passes only with that digest."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.live.conftest import ROOT, SCRIPTS, Engine

pytestmark = pytest.mark.live

MIRROR = "127.0.0.1:5599"
# Two references the dev stack pulls, pushed to the mirror (busybox's content under their names).
PUSHED = ("registry.k8s.io/kubectl:v1.35.0", "docker.io/library/busybox:1.36.1")


@pytest.fixture(scope="module")
def registry(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("registry")
    config = folder / "config.yml"
    config.write_text(yaml.safe_dump({
        "version": 0.1, "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(folder / "data")}},
        "http": {"addr": MIRROR}}))
    log = (folder / "registry.log").open("w")
    process = subprocess.Popen(["bash", str(SCRIPTS / "engine-run.sh"), str(engine.bin), str(engine.root),
                                "registry", "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        listening = f"exec 3<>/dev/tcp/{MIRROR.replace(':', '/')}"
        for _ in range(50):
            if engine.run("bash", "-c", listening, check=False).returncode == 0:
                break
            time.sleep(0.2)
        yield MIRROR
    finally:
        process.terminate()
        process.wait(timeout=30)


def _busybox(engine: Engine) -> str:
    built = subprocess.run(["bash", str(ROOT / "toolchain/live/scripts/busybox-rootfs.sh")],
                           capture_output=True, text=True, timeout=300, check=True)
    rootfs = built.stdout.strip().splitlines()[-1]
    image = "khp-live/mirror-busybox:test"
    engine.run("bash", "-c", f'tar -C "{rootfs}" -c . | docker import - {image} >/dev/null')
    return image


def _push(engine: Engine, image: str, reference: str) -> str:
    """Push `image` as `<mirror>/<reference>`; its digest in the mirror."""
    target = f"{MIRROR}/{reference}"
    engine.docker("tag", image, target)
    pushed = engine.docker("push", target)
    return pushed.stdout.strip().splitlines()[-1].split("digest: ")[1].split()[0]


def _check(engine: Engine, project: Path, mode: str) -> subprocess.CompletedProcess:
    return engine.run(sys.executable, "-m", "kamaji_hami_platform.tools.mirror_check", "--stack", "dev",
                      "--mode", mode, "--root", str(project), check=False)


def test_the_check_names_exactly_what_the_mirror_lacks(engine: Engine, registry: str, tmp_path: Path):
    image = _busybox(engine)
    for reference in PUSHED:
        _push(engine, image, reference)
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack["config"]["kamaji-hami-platform:images"] = {"mirror": registry}
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack))

    up = _check(engine, tmp_path, "up")
    assert up.returncode == 1, up.stderr
    lines = [line[4:] for line in up.stderr.splitlines() if line.startswith("  - ")]
    missing = {line.split(" (")[0] for line in lines}
    assert all(line.endswith("not in the mirror") for line in lines), lines
    assert not {f"{registry}/{reference}" for reference in PUSHED} & missing
    assert f"{registry}/registry.k8s.io/kube-apiserver:v1.35.0" in missing
    node_digest = "sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f"
    assert f"{registry}/docker.io/kindest/node@{node_digest}" in missing, "asked for by its digest"
    assert f"{registry}/charts/hami:2.10.0" in missing
    preview = _check(engine, tmp_path, "preview")
    assert preview.returncode == 0 and preview.stderr.startswith("warning: images.mirror")


def test_a_pinned_reference_passes_only_with_the_digest_the_mirror_serves(engine: Engine, registry: str):
    digest = _push(engine, _busybox(engine), "docker.io/library/pinned:1")
    probe = ("import json, sys; from kamaji_hami_platform.tools import mirror_check as m; "
             "host, refs = sys.argv[1], sys.argv[2:]; "
             "items = [m.Wanted(host, 'docker.io/library/pinned', ref, 'test') for ref in refs]; "
             "print(json.dumps([m.status_of(item, m.scheme_of(host)) for item in items]))")
    other = "sha256:" + "0" * 64
    answered = engine.run(sys.executable, "-c", probe, registry, digest, other, "1")
    assert json.loads(answered.stdout) == [200, 404, 200]
