"""`make mirror` (kamaji_hami_platform/tools/mirror_copy.py) with stand-in crane and helm that record
their calls: every image the stack pulls is copied to its mirror name, by tag (the digest comes with
the content), every chart pulled and pushed as an OCI artifact, and a failure is listed without
stopping the rest. The live tier copies between two real registries (tests/live/test_mirror_copy.py)."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from kamaji_hami_platform.config import parse_config
from kamaji_hami_platform.tools import mirror_check
from kamaji_hami_platform.tools.mirror_copy import copies
from tests.standins import stand_in

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
NODE = "kindest/node:v1.35.0@sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f"


def test_each_image_goes_to_its_mirror_name_by_tag_and_each_chart_as_oci(dev_config, tmp_path):
    images = mirror_check.stack_images(parse_config(dev_config))
    steps = copies(images, "to.example:5000", None, False, False, tmp_path)
    node = next(step.command for step in steps if step.what == NODE)
    assert node == ["crane", "copy", NODE, "to.example:5000/docker.io/kindest/node:v1.35.0"]
    hami = [step.command for step in steps if step.what.startswith("chart hami")]
    assert hami == [["helm", "pull", "hami", "--repo", "https://project-hami.github.io/HAMi/", "--version",
                     "2.10.0", "--destination", str(tmp_path)],
                    ["helm", "push", str(tmp_path / "hami-2.10.0.tgz"), "oci://to.example:5000/charts"]]
    assert len([step for step in steps if step.command[0] == "crane"]) == len(images)


def test_from_another_mirror_over_plain_http(dev_config, tmp_path):
    images = mirror_check.stack_images(parse_config(dev_config))
    steps = copies(images, "127.0.0.1:5001", "127.0.0.1:5000", True, True, tmp_path)
    node = next(step.command for step in steps if step.what == NODE)
    assert node == ["crane", "copy", "--insecure", f"127.0.0.1:5000/docker.io/{NODE}",
                    "127.0.0.1:5001/docker.io/kindest/node:v1.35.0"]
    chart = next(step.command for step in steps if step.what == "chart metallb 0.15.3")
    assert chart == ["crane", "copy", "--insecure", "127.0.0.1:5000/charts/metallb:0.15.3",
                     "127.0.0.1:5001/charts/metallb:0.15.3"]
    assert not [step for step in steps if step.command[0] == "helm"]


def test_a_failed_copy_is_listed_and_the_rest_go_on(tmp_path):
    tools = tmp_path / "bin"
    log = tmp_path / "calls"
    stand_in(tools, "crane", f'#!/bin/sh\necho "crane $*" >> {log}\ncase "$*" in *kube-apiserver*) '
                             'echo "MANIFEST_UNKNOWN: not found" >&2; exit 1;; esac\n')
    stand_in(tools, "helm", f'#!/bin/sh\necho "helm $*" >> {log}\n')
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack))
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    # A registry that answers plain HTTP (the scheme probe's GET /v2/): the copies go --insecure.
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = subprocess.run([sys.executable, "-m", "kamaji_hami_platform.tools.mirror_copy", "--stack",
                                 "dev", "--to", f"127.0.0.1:{server.server_port}", "--root", str(tmp_path)],
                                env=env, capture_output=True, text=True, timeout=120, check=False)
    finally:
        server.shutdown()
    assert result.returncode == 1, result.stderr
    assert "error: 1 of " in result.stderr and "registry.k8s.io/kube-apiserver:v1.35.0:" in result.stderr
    calls = log.read_text().splitlines()
    assert any("kube-scheduler" in call for call in calls), "the copies after the failed one ran"
    assert sum(call.startswith("helm push") for call in calls) == 3
    assert "[1/" in result.stderr, "progress is shown"
    assert all(call.startswith(("crane copy --insecure", "helm pull", "helm push")) for call in calls), calls


def test_a_mirror_that_does_not_answer_is_one_clear_error(tmp_path):
    stand_in(tmp_path / "bin", "crane", "#!/bin/sh\nexit 0\n")
    stand_in(tmp_path / "bin", "helm", "#!/bin/sh\nexit 0\n")
    (tmp_path / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "kamaji_hami_platform.tools.mirror_copy", "--stack", "dev",
                             "--to", "127.0.0.1:9", "--root", str(tmp_path)], env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("error: a registry does not answer (127.0.0.1:9)")
    assert "Traceback" not in result.stderr


def test_make_images_names_each_image_as_the_stack_pulls_it_from_the_mirror(tmp_path):
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack["config"]["kamaji-hami-platform:images"] = {"mirror": "to.example:5000"}
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack))
    listed = subprocess.run([sys.executable, "-m", "kamaji_hami_platform.tools.images", "dev"], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                            timeout=60, check=True).stdout.splitlines()
    (line,) = [line for line in listed if line.startswith("registry.k8s.io/kube-apiserver:v1.35.0 ")]
    assert line.endswith("(from to.example:5000/registry.k8s.io/kube-apiserver:v1.35.0)")
    assert all(" (from to.example:5000/" in line for line in listed)
