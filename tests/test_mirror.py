"""`images.mirror` (kamaji_hami_platform/mirror.py): one rule rewrites every reference, the whole
program under mocks pulls nothing from anywhere else, and without a mirror nothing changes."""

from __future__ import annotations

import copy
import json
import re

import pytest

from kamaji_hami_platform import versions
from kamaji_hami_platform.config import ConfigError, parse_config
from kamaji_hami_platform.mirror import mirrored, mirrored_registry, mirrored_repository, parse
from kamaji_hami_platform.tools import mirror_check
from tests.harness import run_program

pytestmark = pytest.mark.unit

MIRROR = "mirror.example:5000/platform"
DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(("reference", "pulled"), [
    ("busybox", f"{MIRROR}/docker.io/library/busybox"),
    ("docker.io/library/busybox:1.36.1", f"{MIRROR}/docker.io/library/busybox:1.36.1"),
    (f"kindest/node:v1.35.0@{DIGEST}", f"{MIRROR}/docker.io/kindest/node:v1.35.0@{DIGEST}"),
    ("registry.k8s.io/kube-apiserver:v1.35.0", f"{MIRROR}/registry.k8s.io/kube-apiserver:v1.35.0"),
    ("quay.io/jetstack/cert-manager-controller:v1.21.2",
     f"{MIRROR}/quay.io/jetstack/cert-manager-controller:v1.21.2"),
    ("localhost:5000/team/app:1", f"{MIRROR}/localhost_5000/team/app:1"),
    (f"registry.example:443/app@{DIGEST}", f"{MIRROR}/registry.example_443/app@{DIGEST}"),
])
def test_a_reference_keeps_its_registry_path_tag_and_digest_under_the_mirror(reference, pulled):
    assert mirrored(reference, MIRROR) == pulled
    assert mirrored(reference, None) == reference
    # A valid reference: every path component as distribution/reference's regexp.go allows.
    path = parse(pulled).path
    component = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
    assert all(re.fullmatch(component, part) for part in path.split("/")), path


def test_registry_and_repository_forms_follow_the_same_rule():
    assert mirrored_registry("registry.k8s.io", MIRROR) + "/kube-scheduler:v1.35.0" == \
        mirrored("registry.k8s.io/kube-scheduler:v1.35.0", MIRROR)
    assert mirrored_repository("clastix/kamaji", MIRROR) + ":26.8.2-edge" == \
        mirrored("docker.io/clastix/kamaji:26.8.2-edge", MIRROR)
    assert mirrored_registry("quay.io", None) == "quay.io"


@pytest.mark.parametrize("mirror", ["https://mirror.example", "Mirror.example", "mirror", "mirror.example/A"])
def test_a_mirror_that_is_no_registry_is_refused_naming_the_key(dev_config, mirror):
    dev_config["images"] = {"mirror": mirror}
    with pytest.raises(ConfigError) as caught:
        parse_config(dev_config)
    assert [problem for problem in caught.value.problems if problem.startswith("images.mirror: ")]


# Registries and Docker Hub namespaces the platform's own references name.
UPSTREAM = re.compile(r"(?<![\w.:/-])(registry\.k8s\.io|quay\.io|docker\.io|kindest/|clastix/|projecthami/)")


def _inputs_text(program, skip_types: tuple[str, ...] = ()) -> dict[str, str]:
    return {reg.name: json.dumps(reg.inputs) for reg in program.registrations
            if not reg.type.startswith(skip_types)}


@pytest.fixture(scope="module")
def mirrored_program(request):
    from tests.conftest import dev_stack_config
    config = copy.deepcopy(dev_stack_config())
    config["images"] = {"mirror": MIRROR}
    return run_program(config)


def test_with_a_mirror_nothing_is_pulled_from_anywhere_else(mirrored_program):
    """Every upstream name in any resource's inputs stands right after the mirror, but where a
    create-only guard or the kind cluster's trigger records the configured node image (a value,
    not a pull) and where the Kamaji chart is fetched from its tagged source (kamaji_chart.py)."""
    outside = {name for name, text in _inputs_text(mirrored_program).items() if UPSTREAM.search(text)}
    assert outside == {"management-create-only-nodeImage", "management-kind", "management-kamaji-chart"}
    kind = mirrored_program.named("management-kind").inputs
    assert f"image: {MIRROR}/docker.io/kindest/node:{versions.KIND_NODE_VERSION}@" in kind["stdin"]


def test_every_image_the_program_names_in_full_is_one_the_mirror_check_asks_for(mirrored_program,
                                                                               dev_config):
    """What `make up` checks (mirror_check.wanted) covers every full image reference the program
    renders (the charts' own images are covered by the same list: versions.images), and every
    chart it installs from a Helm repository."""
    dev_config["images"] = {"mirror": MIRROR}
    items = mirror_check.wanted(parse_config(dev_config))
    asked = {str(parse(item.source)) for item in items if not item.source.startswith("chart ")}
    full = re.compile(re.escape(MIRROR) + r"/([a-z0-9._/-]+(?::[\w.-]+)(?:@sha256:[0-9a-f]{64})?)")
    rendered = {str(parse(match)) for text in _inputs_text(mirrored_program).values()
                for match in full.findall(text) if "/" in match.split(":")[0]}
    assert len(rendered) >= 4 and rendered <= asked, (len(rendered), rendered - asked)
    assert f"{MIRROR.split('/')[0]}/platform/charts/hami:2.10.0" in {item.pulled_as for item in items}
    releases = {reg.inputs["chart"] for reg in mirrored_program.of_type("kubernetes:helm.sh/v3:Release")}
    assert {f"oci://{MIRROR}/charts/{chart.name}" for chart in mirror_check.HELM_CHARTS} <= releases


def test_without_a_mirror_the_program_renders_what_it_did(dev_program):
    """The recorded stack resources (tests/fixtures/stack-resources) are the judge of that in
    tests/project; here: no reference anywhere names a mirror's charts path."""
    assert not any("oci://" in text for text in _inputs_text(dev_program).values())


def test_the_check_asks_for_the_stacks_own_node_image_instead_of_the_default(dev_config):
    """A stack that names its management node image pulls that one, not the default (found by the
    live tier: its stack on a locally built node image was refused for the default's digest); the
    workers still pull their tenant version's node image."""
    own = "kindest/node:v1.35.4-khp-0123456789abcdef"
    dev_config["management"]["nodeImage"] = own
    for tenant in dev_config["tenants"]:
        tenant["kubernetesVersion"] = "v1.35.4"
    images = mirror_check.stack_images(parse_config(dev_config))
    assert own in images and versions.KIND_NODE_IMAGE not in images
    assert versions.kind_node_image("v1.35.4") in images
    assert "registry.k8s.io/kubectl:v1.35.4" in images and versions.KUBECTL_IMAGE not in images


def test_the_capacity_agent_runs_the_kubectl_of_its_tenants_version(dev_config):
    """kubectl within its version skew of the tenant's API server, and one Kubernetes release per
    tenant version in a mirror: a v1.35.4 tenant's CronJobs run registry.k8s.io/kubectl:v1.35.4."""
    dev_config["images"] = {"mirror": MIRROR}
    dev_config["tenants"][0]["kubernetesVersion"] = "v1.35.4"
    program = run_program(dev_config)
    images = {reg.name: container["image"]
              for reg in program.of_type("kubernetes:batch/v1:CronJob")
              for container in reg.inputs["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]}
    first, second = (dev_config["tenants"][i]["name"] for i in (0, 1))
    assert {name.split("-gpus-")[0] for name in images} == {first, second}, images
    assert images and all(image == f"{MIRROR}/registry.k8s.io/kubectl:v1.35.4"
                          for name, image in images.items() if name.startswith(first)), images
    assert all(image == f"{MIRROR}/{versions.KUBECTL_IMAGE}"
               for name, image in images.items() if name.startswith(second)), images
