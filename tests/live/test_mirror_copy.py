"""`make mirror FROM=<registry>` (kamaji_hami_platform/tools/mirror_copy.py) between two real
registries in the engine's namespace, with the real crane and helm built by the tier: what the
source holds arrives under the same names with the same digests (so `make up`'s check, asking by
digest, passes for it), charts as OCI artifacts, and what the source lacks is listed as failed."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.live.conftest import ROOT, SCRIPTS, Engine

pytestmark = pytest.mark.live

SOURCE, TARGET = "127.0.0.1:5601", "127.0.0.1:5602"
PUSHED = ("registry.k8s.io/kube-proxy:v1.35.0", "docker.io/library/busybox:1.36.1")


def _serve(engine: Engine, folder: Path, address: str) -> subprocess.Popen:
    config = folder / f"{address.replace(':', '-')}.yml"
    config.write_text(yaml.safe_dump({
        "version": 0.1, "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(folder / address.replace(":", "-"))}},
        "http": {"addr": address}}))
    process = subprocess.Popen(["bash", str(SCRIPTS / "engine-run.sh"), str(engine.bin), str(engine.root),
                                "registry", "serve", str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    listening = f"exec 3<>/dev/tcp/{address.replace(':', '/')}"
    for _ in range(50):
        if engine.run("bash", "-c", listening, check=False).returncode == 0:
            break
        time.sleep(0.2)
    return process


@pytest.fixture(scope="module")
def registries(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    folder = tmp_path_factory.mktemp("registries")
    processes = [_serve(engine, folder, address) for address in (SOURCE, TARGET)]
    try:
        yield
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)


def _digest(engine: Engine, reference: str) -> str:
    return engine.run("crane", "digest", "--insecure", reference).stdout.strip()


def test_make_mirror_copies_from_another_mirror_keeping_digests(engine: Engine, registries: None,
                                                                 tmp_path: Path):
    built = subprocess.run(["bash", str(ROOT / "toolchain/live/scripts/busybox-rootfs.sh")],
                           capture_output=True, text=True, timeout=300, check=True)
    rootfs, image = built.stdout.strip().splitlines()[-1], "khp-live/copy-busybox:test"
    engine.run("bash", "-c", f'tar -C "{rootfs}" -c . | docker import - {image} >/dev/null')
    for reference in PUSHED:
        engine.docker("tag", image, f"{SOURCE}/{reference}")
        engine.docker("push", f"{SOURCE}/{reference}")
    chart = tmp_path / "chart"
    chart.mkdir()
    engine.run("helm", "create", str(chart / "hami"))
    engine.run("bash", "-c", f"sed -i 's/^version: .*/version: 2.10.0/' {chart / 'hami' / 'Chart.yaml'}")
    engine.run("helm", "package", str(chart / "hami"), "--destination", str(chart))
    engine.run("helm", "push", str(chart / "hami-2.10.0.tgz"), f"oci://{SOURCE}/charts", "--plain-http")
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack))

    copied = engine.run(sys.executable, "-m", "kamaji_hami_platform.tools.mirror_copy", "--stack", "dev",
                        "--to", TARGET, "--from", SOURCE, "--root", str(tmp_path), check=False, timeout=600)
    assert copied.returncode == 1, copied.stderr
    failed = [line[4:] for line in copied.stderr.splitlines() if line.startswith("  - ")]
    assert not [line for line in failed if line.startswith(PUSHED) or line.startswith("chart hami 2.10.0")]
    assert any(line.startswith("registry.k8s.io/kube-apiserver:v1.35.0:") for line in failed), failed
    assert any(line.startswith("chart cert-manager v1.21.2:") for line in failed), failed
    for reference in PUSHED:
        assert _digest(engine, f"{TARGET}/{reference}") == _digest(engine, f"{SOURCE}/{reference}")
    assert _digest(engine, f"{TARGET}/charts/hami:2.10.0") == _digest(engine, f"{SOURCE}/charts/hami:2.10.0")
