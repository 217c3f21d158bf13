"""The docs stay true: pins, config keys, the generated configuration reference, toolchain pins and
links match the code, and the README stays an entry point."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kamaji_hami_platform import __version__, config, versions
from kamaji_hami_platform.config import reference

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = sorted((ROOT / "docs").rglob("*.md"))
# Where the sim tier's toolchain pins are listed (tests/sim, toolchain/sim/*/go.mod).
TESTING = ROOT / "docs" / "development" / "testing.md"
README_MAX_LINES = 300


@pytest.mark.parametrize("pin", [
    versions.KIND_NODE_IMAGE, versions.CERT_MANAGER_CHART.version, versions.METALLB_CHART.version,
    versions.KAMAJI_CHART_SOURCE.digest, versions.KAMAJI_ETCD_CHART_SOURCE.digest, versions.KAMAJI_IMAGE_TAG,
    versions.HAMI_CHART.version,
    versions.KINDNET_IMAGE, versions.KUBECTL_IMAGE, versions.E2E_PROBE_IMAGE, versions.KIND_CLI_VERSION,
    versions.KIND_NODE_PAUSE_IMAGE,
])
def test_every_pin_is_listed_in_the_readme(pin):
    assert pin in README


def test_the_configuration_reference_is_the_generated_one():
    published = ROOT / reference.REFERENCE_PATH
    assert published.read_text() == reference.render(), (
        f"{reference.REFERENCE_PATH} is stale: regenerate it with `{reference.REGENERATE}`")


def test_the_configuration_reference_lists_every_key_of_every_section():
    text = (ROOT / reference.REFERENCE_PATH).read_text()
    paths = reference.key_paths()
    for section in (config.ROOT, *config.SECTIONS):
        for key in section.keys:
            assert any(p == key or p.endswith(f".{key}") for p in paths), f"{section.name}.{key}"
    for path in paths:
        assert f"| `{path}` |" in text, path
    for rule in config.CODE_ONLY_RULES:
        assert f"| `{rule}` |" in text, rule


def test_the_example_error_is_the_validators_own():
    assert reference.example_error().startswith("error: invalid stack configuration:\n  - tenants[0].")


def _config_mentions(text: str) -> set[str]:
    """Config key paths written in backticks (`tenants[0].workers`, `management.name`,
    `gpus.perWorker`), numbered list indexes read as `[]`."""
    roots = set(config.ROOT.keys) | {f.key for f in config.TENANT.fields if f.ref}
    found = set()
    for token in re.findall(r"`([A-Za-z][\w./<>\[\]-]*)(?=[`:=\s])", text):
        if token.startswith("hami.io"):  # annotations and labels, not config
            continue
        path = re.sub(r"\[\d+\]", "[]", token)
        head = re.split(r"[.\[]", path, maxsplit=1)[0]
        if head in roots and ("." in path or "[" in path) and not path.startswith("tenants."):
            found.add(path)
    return found


def test_the_readme_mentions_only_config_keys_that_exist():
    paths = reference.key_paths()
    mentioned = _config_mentions(README)
    assert mentioned, "the README's walk-through names config keys"
    for path in mentioned:
        assert any(p == path or p.endswith(f".{path}") or p.startswith(f"{path}.") for p in paths), path


def test_the_readme_is_an_entry_point():
    lines = README.count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("doc", [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *DOCS],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file(doc):
    for target in _links(doc):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        assert "#" not in target, f"{doc.name}: {target}: link files, not anchors (headings move)"
        assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)}: {target} does not exist"


def test_every_doc_is_reachable_from_the_index():
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / t).resolve() for t in _links(index)}
    for doc in DOCS:
        if doc != index and doc.parent.name != "design":
            assert doc.resolve() in linked, f"docs/README.md does not link {doc.relative_to(ROOT)}"
    design = ROOT / "docs" / "design" / "README.md"
    linked = {(design.parent / t).resolve() for t in _links(design)}
    for doc in DOCS:
        if doc.parent.name == "design" and doc != design:
            assert doc.resolve() in linked, f"docs/design/README.md does not link {doc.name}"


def test_license_changelog_and_version_agree():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'license = "Apache-2.0"' in pyproject
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text
    assert f'version = "{__version__}"' in pyproject
    assert re.search(rf"^## \[{re.escape(__version__)}\]", (ROOT / "CHANGELOG.md").read_text(), re.M)


def test_images_cover_charts_kamaji_addons_and_every_tenant_version():
    """`make images` is a mirror list: every chart's images, Kamaji's per-tenant images for
    each tenant version, and the platform's own, each pinned by tag or digest."""
    listed = [image for _, image in versions.images(["v1.35.0", "v1.36.1"])]
    for expected in ("quay.io/jetstack/cert-manager-webhook:" + versions.CERT_MANAGER_CHART.version,
                     f"quay.io/metallb/speaker:v{versions.METALLB_CHART.version}",
                     f"docker.io/clastix/kamaji:{versions.KAMAJI_IMAGE_TAG}",
                     "docker.io/projecthami/hami:v2.10.0",
                     "registry.k8s.io/kas-network-proxy/proxy-agent:v0.36.0",
                     "registry.k8s.io/kube-apiserver:v1.36.1", "kindest/node:v1.36.1",
                     versions.KIND_NODE_IMAGE, versions.KINDNET_IMAGE, versions.COREDNS_IMAGE):
        assert expected in listed, expected
    for image in listed:
        name = image.split("@")[0].rsplit("/", 1)[-1]
        assert ":" in name and not name.endswith(":latest"), image


def test_the_sim_toolchain_pins_are_listed():
    """The Go modules the sim tier builds are pinned in their go.mod files; the testing guide
    names them."""
    text = TESTING.read_text()
    go_mods = sorted(ROOT.glob("toolchain/sim/*/go.mod"))
    assert go_mods
    for go_mod in go_mods:
        for module, version in re.findall(r"^require ([\w./-]+) (v[\w.-]+)$", go_mod.read_text(), re.M):
            assert f"`{module}` `{version}`" in text, (go_mod, module)


def test_the_walk_through_shows_what_the_program_and_the_planner_give(dev_program, capsys):
    """The README's first tenant: the outputs it names are the dev stack's exports, the capacity it
    quotes is the program's, and the planner's output it shows is what the planner prints."""
    import re

    from kamaji_hami_platform.planner import cli

    exports = dev_program.exports
    for name in ("managementKubeconfig", "tenantKubeconfigs", "metallbPoolRange", "tenants"):
        assert f"`{name}`" in README and name in exports, name
    tenant = exports["tenants"]["tenant-a"]
    for key in ("endpoint", "nodes", "gpuCards", "gpuCapacity", "gpuPlan"):
        assert f"`{key}`" in README and key in tenant, key
    capacity = tenant["gpuCapacity"]
    assert f"one card, `{capacity['memoryMiB']}` MiB, `{capacity['cores']}` cores" in README
    assert f"`{capacity['slots']}` slots" in README
    assert f"`referencePodsThatFit: {capacity['referencePodsThatFit']}`" in README
    planner = r"\.venv/bin/python -m kamaji_hami_platform\.planner (plan [^\n]*)\n```\n\n```\n(.*?)```"
    found = re.search(planner, README, re.S)
    assert found, "the planner's command and its output block"
    assert cli.main(found.group(1).split()) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = [line for line in found.group(2).splitlines() if line.strip() != "..."]
    assert shown and all(line in printed for line in shown), [line for line in shown if line not in printed]
