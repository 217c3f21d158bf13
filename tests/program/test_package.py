"""The component package: the dev stack's resources kept through aliases, components
composed by another program, two platforms in one stack, overrides, bad arguments, and a real
`pip install .` into a fresh virtualenv running the example program under mocks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

import pulumi
import pytest

from kamaji_hami_platform.config import ConfigError
from tests.harness import ROOT, Program, Registration, dev_stack_config, is_secret, run_program
from tests.stack_resources import BOUNDED_ADMIN_RESOURCES, LOCK_RELEASE_RESOURCES, PLATFORM_POLICIES

pytestmark = pytest.mark.unit

EXAMPLE = ROOT / "examples" / "two-tenants"
STACK_TYPE = "pulumi:pulumi:Stack"
TCP_TYPE = "kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane"


ROOT_STACK_PREFIX = f"{STACK_TYPE}$"


def engine_urn(urn: str) -> str:
    """A URN as the engine writes it: the root stack is no part of a type chain (the mock monitor
    puts it in front of top-level resources' types)."""
    head, project, chain, name = urn.split("::")
    return "::".join((head, project, chain.removeprefix(ROOT_STACK_PREFIX), name))


def _type_chain(urn: str) -> str:
    """The qualified type of a URN: `parent$...$type` (sdk/go/common/resource/urn.go)."""
    return engine_urn(urn).split("::")[2]


def alias_urn(reg: Registration, spec: dict[str, Any], program: Program, stack: str, project: str) -> str:
    """The URN an alias spec stands for, as the engine collapses it (pulumi v3.276.0
    pkg/resource/deploy/step_generator.go `collapseAliasToUrn`): unset fields are the resource's
    own; an empty parentUrn is its current parent; the root stack as parent means none."""
    name = spec.get("name") or reg.name
    typ = spec.get("type") or reg.type
    parent = spec.get("parentUrn") or reg.parent
    if spec.get("noParent") or (parent and _type_chain(parent) == STACK_TYPE):
        parent = ""
    chain = f"{_type_chain(parent)}${typ}" if parent else typ
    return f"urn:pulumi:{spec.get('stack') or stack}::{spec.get('project') or project}::{chain}::{name}"


def reachable_urns(program: Program, stack: str = "dev",
                   project: str = "kamaji-hami-platform") -> dict[str, str]:
    """Every URN the engine matches to a registration (its own and its aliases') -> its URN."""
    found = {}
    for reg in program.registrations:
        urn = engine_urn(reg.urn)
        found[urn] = urn
        for alias in reg.options.get("aliases", []):
            if isinstance(alias, str):
                found[engine_urn(alias)] = urn
            else:
                found[alias_urn(reg, alias["spec"], program, stack, project)] = urn
    return found


# Resources new since the restructure, each created by an existing stack's next `up` (CHANGELOG.md,
# upgrade notes): the node admission policy and its binding in each tenant.
ADDED_SINCE = sorted([*(f"{tenant}-{kind}-kamaji-hami-platform-nodes" for tenant in ("tenant-a", "tenant-b")
                       for kind in ("validatingadmissionpolicy", "validatingadmissionpolicybinding")),
                      # each tenant's own network (0.2.0): created for a new stack; an upgraded
                      # stack's tenants keep workerNetwork shared (docs/operations/upgrades.md)
                      *(f"{tenant}-{name}" for tenant in ("tenant-a", "tenant-b")
                        for name in ("network", "ipaddresspool", "l2advertisement", "worker-0-leave")),
                      # each tenant's door (issue 40): the only container on its network and the platform's
                      *(f"{tenant}-door" for tenant in ("tenant-a", "tenant-b")),
                      # default deny in the platform's own namespaces (issue 40)
                      *(f"management-networkpolicy-{policy}" for policy in PLATFORM_POLICIES),
                      # the read-back that kindnetd judges NetworkPolicies at all (issue 40)
                      "management-policy-engine",
                      # the bounded tenant admin and its credential (kind mode): created by the next up
                      *(f"{tenant}-{name}" for tenant in ("tenant-a", "tenant-b")
                        for name in BOUNDED_ADMIN_RESOURCES),
                      # mock mode's node-lock release (issue 41): created by the next up
                      *(f"{tenant}-gpus-lock-release-{name}" for tenant in ("tenant-a", "tenant-b")
                        for name in LOCK_RELEASE_RESOURCES),
                      # the wait for MetalLB's webhook before the pool (issue 42): created by the
                      # next up, which changes nothing else of MetalLB's
                      "management-metallb-webhook"])


def test_the_dev_stacks_resources_are_kept_through_aliases():
    """Every URN of the dev stack as it was before the restructure (recorded in
    tests/fixtures/dev-stack-urns.json) is reached by exactly one resource of today's program,
    directly or through an alias, and today's program has no resource the old one did not but
    those added since (ADDED_SINCE): a `pulumi up` after upgrading plans no replacement, only
    renames and those creates."""
    before = [engine_urn(urn) for urn in
              json.loads((ROOT / "tests/fixtures/dev-stack-urns.json").read_text())["urns"]]
    program = run_program(dev_stack_config())
    reachable = reachable_urns(program)
    missing = [urn for urn in before if urn not in reachable]
    assert missing == [], f"old URNs no resource answers to: {missing}"
    successors = [reachable[urn] for urn in before]
    assert len(set(successors)) == len(before), "two old resources map to one new one"
    added = {engine_urn(reg.urn) for reg in program.registrations} - set(successors)
    assert set(successors) <= {engine_urn(reg.urn) for reg in program.registrations}
    assert sorted(urn.rsplit("::", 1)[1] for urn in added) == ADDED_SINCE, "resources without a predecessor"
    renamed = {urn.rsplit("::", 1)[1]: new.rsplit("::", 1)[1]
               for urn, new in zip(before, successors, strict=True) if urn != new}
    assert renamed == {"cert-manager": "management-cert-manager", "metallb": "management-metallb",
                       "kamaji": "management-kamaji",
                       "tenant-a-worker-0-gpus": "tenant-a-gpus-tenant-a-worker-0",
                       "tenant-b-worker-0-gpus": "tenant-b-gpus-tenant-b-worker-0"}


def test_the_alias_resolution_is_the_engines():
    """A rename that forgot its alias is caught: the engine would create and delete."""
    program = run_program(dev_stack_config())
    release = program.named("management-cert-manager")
    assert alias_urn(release, {"name": "cert-manager", "parentUrn": ""}, program, "dev",
                     "kamaji-hami-platform").endswith(
        "::kamaji-hami-platform:index:ManagementCluster$kubernetes:helm.sh/v3:Release::cert-manager")


def _program_file(tmp_path: Path, body: str) -> Path:
    main = tmp_path / "__main__.py"
    main.write_text(textwrap.dedent(body))
    return main


def test_two_platforms_live_in_one_stack(tmp_path):
    main = _program_file(tmp_path, """
        import pulumi
        from kamaji_hami_platform import (KamajiTenant, KamajiTenantArgs, ManagementCluster,
                                          ManagementClusterArgs)

        for name, subnet in (("blue", "172.26.0.0/16"), ("green", "172.27.0.0/16")):
            settings = {"name": name, "docker_network": name, "docker_subnet": subnet}
            management = ManagementCluster(name, ManagementClusterArgs(management=settings))
            KamajiTenant(f"{name}-team", KamajiTenantArgs(
                tenant={"name": f"{name}-team", "kubernetes_version": "v1.35.0", "pod_cidr": "10.60.0.0/16",
                        "service_cidr": "10.61.0.0/16"},
                management=settings, management_provider=management.provider,
                management_cluster=management.cluster),
                opts=pulumi.ResourceOptions(depends_on=[management]))
    """)
    program = run_program({}, main=main, project="platforms", stack="lab")
    urns = [reg.urn for reg in program.registrations]
    assert len(urns) == len(set(urns)), "two components registered one URN"
    releases = sorted(reg.name for reg in program.of_type("kubernetes:helm.sh/v3:Release"))
    assert releases == ["blue-cert-manager", "blue-kamaji", "blue-metallb",
                        "green-cert-manager", "green-kamaji", "green-metallb"]
    assert {r.inputs["name"] for r in program.of_type("kubernetes:helm.sh/v3:Release")} == \
        {"cert-manager", "kamaji", "metallb"}, "the in-cluster release names stay Helm's"


class TestExampleProgram:
    """examples/two-tenants: another program composing the package, with overrides."""

    @pytest.fixture(scope="class")
    def example(self) -> Program:
        return run_program({}, main=EXAMPLE / "__main__.py", project="two-tenants", stack="lab")

    def test_two_tenants_with_their_workers_and_gpus(self, example):
        tcps = sorted(r.name for r in example.of_type(TCP_TYPE))
        assert tcps == ["team-a-control-plane", "team-b-control-plane"]
        workers = sorted(r.name for r in example.of_type("command:local:Command")
                         if re.search(r"-worker-\d+$", r.name))
        assert workers == ["team-a-worker-0", "team-b-worker-0", "team-b-worker-1"]
        assert len(example.of_type("kubernetes:core/v1:NodePatch")) == 3

    def test_values_override_is_merged_over_the_platforms(self, example):
        from kamaji_hami_platform.management import render

        values = example.named("lab-cert-manager").inputs["values"]
        assert values["resources"] == {"requests": {"cpu": "20m"}}
        platform = render.cert_manager_values()
        assert {key: values[key] for key in platform if key != "resources"} == \
            {key: value for key, value in platform.items() if key != "resources"}

    def test_chart_from_a_mirror(self, example):
        release = example.named("team-a-gpus-hami")
        assert release.inputs["repositoryOpts"]["repo"] == "https://charts.example.internal/hami"
        assert (release.inputs["chart"], release.inputs["version"]) == ("hami", "2.10.0")

    def test_kubeconfigs_stay_secret(self, example):
        assert {"team-aKubeconfig", "team-bKubeconfig", "team-aPlatformKubeconfig",
                "team-bPlatformKubeconfig"} <= example.secret_exports


def test_a_local_kamaji_chart_replaces_the_fetch(tmp_path):
    main = _program_file(tmp_path, """
        from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs
        ManagementCluster("m", ManagementClusterArgs(charts={"kamaji": {"chart": "/srv/charts/kamaji"}}))
    """)
    program = run_program({}, main=main, project="p", stack="s")
    assert program.named("m-kamaji").inputs["chart"] == "/srv/charts/kamaji"
    assert not [r for r in program.registrations if r.name == "m-kamaji-chart"], "no fetch of Kamaji's tag"


@pytest.mark.parametrize(("body", "message"), [
    ("""KamajiTenant("t", KamajiTenantArgs(tenant={"name": "t", "kubernetes_version": "v1.35.0",
            "pod_cidr": "10.0.0.0/33", "service_cidr": "10.1.0.0/16", "workers": -1},
            management_provider=None))""",
     ["KamajiTenant 't': tenant.podCidr: '10.0.0.0/33' is not a valid CIDR",
      "KamajiTenant 't': tenant.workers: must be between 0 and 99, got -1"]),
    ("""ManagementCluster("m", ManagementClusterArgs(management={"docker_subnet": "300.0.0.0/16"}))""",
     ["ManagementCluster 'm': management.dockerSubnet: '300.0.0.0/16' is not a valid CIDR"]),
])
def test_bad_arguments_name_the_component_and_the_key_before_anything_exists(tmp_path, body, message):
    main = _program_file(tmp_path, f"""
        from kamaji_hami_platform import (KamajiTenant, KamajiTenantArgs, ManagementCluster,
                                          ManagementClusterArgs)
        {body}
    """)
    with pytest.raises(Exception) as caught:
        run_program({}, main=main, project="p", stack="s")
    error = caught.value
    while error is not None and not isinstance(error, ConfigError):
        error = error.__cause__ or error.__context__
    assert isinstance(error, ConfigError), caught.value
    for line in message:
        assert any(problem.startswith(line) for problem in error.problems), (line, error.problems)


def test_an_unknown_release_in_overrides_is_refused(tmp_path):
    main = _program_file(tmp_path, """
        from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs
        ManagementCluster("m", ManagementClusterArgs(helm_values={"metal-lb": {}}))
    """)
    with pytest.raises(Exception, match=r"unknown release.*metal-lb.*cert-manager, metallb, kamaji"):
        run_program({}, main=main, project="p", stack="s")


@pytest.mark.parametrize("kamaji", [{"nameOverride": "k"}, {"kamaji-etcd": {"clientPort": 2479}},
                                    {"kamaji-etcd": {"peerApiPort": 2480}},
                                    {"kamaji-etcd": {"nameOverride": "e"}}])
def test_a_kamaji_value_the_platform_s_policies_select_by_is_refused_on_kind(tmp_path, kamaji):
    main = _program_file(tmp_path, f"""
        from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs
        ManagementCluster("m", ManagementClusterArgs(helm_values={{"kamaji": {kamaji!r}}}))
    """)
    with pytest.raises(Exception, match=r"helm_values kamaji .*NetworkPolicies in kamaji-system"):
        run_program({}, main=main, project="p", stack="s")


def test_transformations_and_transforms_pass_through_opts(tmp_path):
    """`transformations` are applied by the SDK to every child (pulumi sdk/python resource.py
    inherits the parent's); `transforms` go to the engine with the component, which runs a parent's
    transforms on its children (pulumi v3.276.0 pkg/resource/deploy/source_eval.go, transforms
    collected from the resource's ancestors)."""
    main = _program_file(tmp_path, """
        import pulumi
        from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs

        def label_releases(args):
            if args.type_ == "kubernetes:helm.sh/v3:Release":
                props = dict(args.props)
                props["description"] = "audited"
                return pulumi.ResourceTransformationResult(props, args.opts)
            return None

        def noop(args):
            return None

        ManagementCluster("m", ManagementClusterArgs(),
                          opts=pulumi.ResourceOptions(transformations=[label_releases], transforms=[noop]))
    """)
    program = run_program({}, main=main, project="p", stack="s")
    releases = program.of_type("kubernetes:helm.sh/v3:Release")
    assert len(releases) == 3 and all(r.inputs.get("description") == "audited" for r in releases)
    assert program.named("m").options["transforms"] == 1


def test_the_public_api_is_documented_at_the_package_root():
    import kamaji_hami_platform as package

    for name in package.__all__:
        exported = getattr(package, name)
        assert exported.__doc__ and exported.__doc__.strip(), f"{name} has no docstring"
    for component in (package.ManagementCluster, package.KamajiTenant, package.HamiNodePool):
        assert issubclass(component, pulumi.ComponentResource)


def test_pure_modules_import_without_pulumi():
    """The Makefile reads pins with a bare python3: the package root must not pull in Pulumi."""
    code = ("import sys, builtins\n"
            "real = builtins.__import__\n"
            "def guard(name, *a, **k):\n"
            "    if name.split('.')[0] in ('pulumi', 'pulumi_kubernetes', 'pulumi_command'):\n"
            "        raise ImportError('pulumi imported: ' + name)\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = guard\n"
            "import kamaji_hami_platform.versions, kamaji_hami_platform.config\n"
            "import kamaji_hami_platform.planner\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr


RUNNER = """
import json, runpy, sys
import pulumi
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args):
        outputs = dict(args.inputs)
        if args.typ == "command:local:Command":
            outputs["stdout"] = ""
        return f"{args.name}_id", outputs
    def call(self, args):
        return {}, []

seen = []
class Monitor(pulumi.runtime.mocks.MockMonitor):
    def RegisterResource(self, request):
        seen.append(request.type)
        return super().RegisterResource(request)

mocks = Mocks()
pulumi.runtime.set_mocks(mocks, project="two-tenants", stack="lab", preview=True, monitor=Monitor(mocks))
_sync_await(run_pulumi_func(lambda: runpy.run_path(sys.argv[1], run_name="__main__")))
import kamaji_hami_platform
print(json.dumps({"package": kamaji_hami_platform.__file__, "types": seen}))
"""


def test_pip_install_into_a_fresh_venv_runs_the_example(tmp_path):
    """`pip install .` (the pyproject's build backend and dependencies, nothing from this checkout
    on the path) gives a package that the example program composes, its shell templates included,
    and the planner's console script. The new virtualenv sees the test virtualenv's packages (the
    exact pins of requirements.txt) through a .pth file, so pip resolves the pyproject's
    dependencies against them instead of downloading them again, and `pip check` holds them to it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    pinned = sysconfig.get_paths()["purelib"]
    Path(site, "pinned-requirements.pth").write_text(pinned + "\n")
    # From a copy of what the package is made of: setuptools writes build/ and *.egg-info beside
    # the sources, never into this checkout.
    source = tmp_path / "source"
    shutil.copytree(ROOT / "kamaji_hami_platform", source / "kamaji_hami_platform",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(source)],
                             capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    check = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    workdir = tmp_path / "program"
    workdir.mkdir()
    (workdir / "__main__.py").write_text((EXAMPLE / "__main__.py").read_text())
    (workdir / "runner.py").write_text(RUNNER)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    run = subprocess.run([str(python), "runner.py", "__main__.py"], cwd=workdir, capture_output=True,
                         text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["package"].startswith(str(venv)), result["package"]
    assert result["types"].count("kubernetes:kamaji.clastix.io/v1alpha1:TenantControlPlane") == 2
    assert result["types"].count("kamaji-hami-platform:index:HamiNodePool") == 2
    plan = subprocess.run([str(venv / "bin" / "kamaji-hami-plan"), "plan", "--stack-file",
                           str(ROOT / "Pulumi.dev.yaml"), "--count", "4"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert "refused: 1/1 CardInsufficientCore" in plan.stdout


class TestReviewFindings:
    """What a real engine or another language's program does that the mocks alone would not show."""

    def test_the_workers_are_not_deleted_with_the_management_cluster(self):
        """The engine gives a component's deleted_with to every child (pulumi v3.276.0
        source_eval.go inheritFromParent; tests/harness.py applies it): the tenant takes the kind
        cluster as an argument and gives it to its management-side children only, so the workers'
        delete scripts still run on destroy."""
        program = run_program(dev_stack_config())
        kind = program.named("management-kind").urn
        assert program.named("tenant-a").options["deletedWith"] == ""
        assert program.named("tenant-a-namespace").options["deletedWith"] == kind
        assert program.named("tenant-a-control-plane").options["deletedWith"] == kind
        for name in ("tenant-a-worker-0", "tenant-a-worker-image", "tenant-a-admin-access", "tenant-a-k8s"):
            assert program.named(name).options["deletedWith"] == "", name

    def test_deleted_with_in_a_tenants_opts_is_refused(self, tmp_path):
        main = _program_file(tmp_path, """
            import pulumi
            from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs, KamajiTenant
            m = ManagementCluster("m", ManagementClusterArgs())
            tenant = {"name": "t", "kubernetes_version": "v1.35.0", "pod_cidr": "10.60.0.0/16",
                      "service_cidr": "10.61.0.0/16"}
            KamajiTenant("t", {"tenant": tenant, "management_provider": m.provider},
                         opts=pulumi.ResourceOptions(deleted_with=m.cluster))
        """)
        with pytest.raises(Exception, match="deleted_with in opts would reach every child"):
            run_program({}, main=main, project="p", stack="s")

    def test_a_provider_that_arrives_as_an_output_is_refused_and_a_kubeconfig_works(self, tmp_path):
        """Another language's program hands a component's output provider over as an Output, which
        a resource option would drop silently (pulumi resource.py _get_providers)."""
        main = _program_file(tmp_path, """
            import pulumi
            from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs, KamajiTenant
            m = ManagementCluster("m", ManagementClusterArgs())
            tenant = {"name": "t", "kubernetes_version": "v1.35.0", "pod_cidr": "10.60.0.0/16",
                      "service_cidr": "10.61.0.0/16"}
            KamajiTenant("t", {"tenant": tenant, "management_kubeconfig": m.kubeconfig})
            other = {**tenant, "name": "u", "address_block": 1, "pod_cidr": "10.62.0.0/16",
                     "service_cidr": "10.63.0.0/16"}
            KamajiTenant("u", {"tenant": other,
                               "management_provider": pulumi.Output.from_input(m.provider)})
        """)
        with pytest.raises(Exception, match=r"management_provider arrived as Output.*management_kubeconfig"):
            run_program({}, main=main, project="p", stack="s")

    def test_a_kubeconfig_gives_the_tenant_a_provider_of_its_own(self, tmp_path):
        main = _program_file(tmp_path, """
            from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs, KamajiTenant
            m = ManagementCluster("m", ManagementClusterArgs())
            tenant = {"name": "t", "kubernetes_version": "v1.35.0", "pod_cidr": "10.60.0.0/16",
                      "service_cidr": "10.61.0.0/16"}
            KamajiTenant("t", {"tenant": tenant, "management_kubeconfig": m.kubeconfig})
        """)
        program = run_program({}, main=main, project="p", stack="s")
        own = program.named("t-management-k8s")
        assert program.named("t-control-plane").provider.startswith(own.urn)
        assert program.named("t-namespace").provider.startswith(own.urn)

    def test_integers_from_the_wire_are_read_as_integers(self):
        """Pulumi's wire has one number type: another language's `workers: 1` arrives as 1.0."""
        from kamaji_hami_platform.config.settings import tenant_config

        tenant = tenant_config({"name": "t", "kubernetes_version": "v1.35.0", "pod_cidr": "10.60.0.0/16",
                                "service_cidr": "10.61.0.0/16", "workers": 2.0, "gpus": {
                                    "model": "A100-80GB", "per_worker": 1.0},
                                "gpu_quotas": {"team": {"limits.nvidia.com/gpumem": 40000.0}}},
                               "KamajiTenant 't'")
        assert tenant.workers == 2 and isinstance(tenant.workers, int)
        assert tenant.gpus is not None and tenant.gpus.per_worker == 1
        assert tenant.gpu_quotas["team"]["limits.nvidia.com/gpumem"] == 40000
        with pytest.raises(ConfigError, match=r"tenant\.workers: must be an integer, got 1\.5"):
            tenant_config({"name": "t", "kubernetes_version": "v1.35.0", "pod_cidr": "10.60.0.0/16",
                           "service_cidr": "10.61.0.0/16", "workers": 1.5}, "KamajiTenant 't'")

    def test_two_tenants_on_one_cluster_cannot_share_addresses_or_networks(self, tmp_path):
        main = _program_file(tmp_path, """
            from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs, KamajiTenant
            m = ManagementCluster("m", ManagementClusterArgs())
            for name in ("a", "b"):
                service = "10.61.0.0/16" if name == "a" else "10.62.0.0/16"
                KamajiTenant(name, {"tenant": {"name": name, "kubernetes_version": "v1.35.0",
                                               "pod_cidr": "10.60.0.0/16", "service_cidr": service},
                                    "management_provider": m.provider})
        """)
        with pytest.raises(Exception) as caught:
            run_program({}, main=main, project="p", stack="s")
        text = str(caught.value)
        assert "KamajiTenant 'b': tenant.addressBlock: 0 is also tenants[0] (a)'s" in text
        assert "KamajiTenant 'b': tenant.podCidr: 10.60.0.0/16 overlaps tenants[0].podCidr" in text

    def test_only_the_platforms_own_management_cluster_carries_the_old_release_names(self, tmp_path):
        """A URN holds the parent's type, not its name: an alias to `cert-manager` would be the same
        for every ManagementCluster of a stack (step_generator.go collapseAliasToUrn)."""
        main = _program_file(tmp_path, """
            from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs
            ManagementCluster("management", ManagementClusterArgs())
            blue = {"name": "blue", "docker_network": "blue", "docker_subnet": "172.26.0.0/16"}
            ManagementCluster("blue", ManagementClusterArgs(management=blue))
        """)
        program = run_program({}, main=main, project="p", stack="s")
        assert program.named("management-cert-manager").options["aliases"]
        assert not program.named("blue-cert-manager").options["aliases"]
        reachable = reachable_urns(program, "s", "p")
        assert len(reachable) == len(set(reachable)), "one old URN claimed twice"


EXISTING = """
import pulumi
import pulumi_kubernetes as kubernetes
from kamaji_hami_platform import KamajiTenant, KamajiTenantArgs, ManagementCluster, ManagementClusterArgs
management = {"mode": "existing", "kubeconfig_context": "unused", "api_client_cidrs": ["10.0.0.0/24"],
              "metallb": {"install": False}}
provider = kubernetes.Provider("mine", kubeconfig="{}")
HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
def tenant(name, pod, hosts):
    hosts = [{"name": h, "address": f"10.0.1.{i + 1}", "private_key": "k", "host_key": HOST_KEY}
             for i, h in enumerate(hosts)]
    service = "10.99.0.0/16" if name == "a" else "10.98.0.0/16"
    return {"name": name, "kubernetes_version": "v1.35.0", "pod_cidr": pod, "service_cidr": service,
            "hosts": hosts}
"""


@pytest.mark.parametrize(("body", "message"), [
    ("""KamajiTenant("a", KamajiTenantArgs(tenant=tenant("a", "10.40.0.0/16", ["h1"]), management=management,
            management_provider=provider))""",
     "KamajiTenant 'a': ssh_private_keys must be a mapping of key names to private keys (the hosts name k)"),
    ("""KamajiTenant("a", KamajiTenantArgs(tenant=tenant("a", "10.40.0.0/16", ["h1"]), management=management,
            management_provider=provider, ssh_private_keys={"other": "x"}))""",
     "KamajiTenant 'a': ssh_private_keys has no k (given: other)"),
    ("""KamajiTenant("a", KamajiTenantArgs(tenant=tenant("a", "10.40.0.0/16", ["h1"]),
            management_provider=provider, ssh_private_keys={"k": "x"}))""",
     "KamajiTenant 'a': hosts need management mode existing"),
    ("""for name in ("a", "b"):
    KamajiTenant(name, KamajiTenantArgs(tenant=tenant(name, "10.40.0.0/16", [name + "-h"]),
        management=management, management_provider=provider, ssh_private_keys={"k": "x"}))""",
     "KamajiTenant 'b': tenant.podCidr: 10.40.0.0/16 overlaps tenants[0].podCidr"),
])
def test_host_tenants_as_components_are_checked_before_anything_exists(tmp_path, body, message):
    """A KamajiTenant with hosts, outside the stack program: the keys its hosts name, the mode, and
    another tenant of the same program on the same existing cluster."""
    main = tmp_path / "__main__.py"
    main.write_text(EXISTING + body + "\n")
    with pytest.raises(Exception) as caught:
        run_program({}, main=main, project="p", stack="s")
    assert message in str(caught.value)


def test_ssh_keys_as_one_secret_output_as_another_language_passes_them(tmp_path):
    main = tmp_path / "__main__.py"
    main.write_text(EXISTING + """
KamajiTenant("a", KamajiTenantArgs(tenant=tenant("a", "10.40.0.0/16", ["h1"]),
    management=management, management_provider=provider,
    ssh_private_keys=pulumi.Output.secret({"k": "sentinel-output-key"})))
""")
    program = run_program({}, main=main, project="p", stack="s")
    join = program.named("a-h1-join")
    assert join.inputs["environment"]["KHP_SSH_KEY"] == "sentinel-output-key"
    assert is_secret(join.wire["environment"]["KHP_SSH_KEY"])
    assert is_secret(program.named("a-h1-leave").wire["environment"]["KHP_SSH_KEY"])


def test_the_cluster_check_looks_for_the_storage_class_the_kamaji_values_name(tmp_path):
    """A component's helm_values may name kamaji-etcd's StorageClass: the check looks for that class
    instead of a default one, and for none when no kamaji-etcd is deployed."""
    main = _program_file(tmp_path, """
        from kamaji_hami_platform import ManagementCluster, ManagementClusterArgs
        def existing(name):
            return {"mode": "existing", "name": name, "api_client_cidrs": ["10.0.0.0/24"],
                    "metallb": {"install": False}}
        ManagementCluster("named", ManagementClusterArgs(management=existing("named"), kubeconfig="{}",
            helm_values={"kamaji": {"kamaji-etcd": {"persistentVolumeClaim": {"storageClassName": "fast"}}}}))
        ManagementCluster("none", ManagementClusterArgs(management=existing("none"), kubeconfig="{}",
            helm_values={"kamaji": {"kamaji-etcd": {"deploy": False}}}))
        ManagementCluster("default", ManagementClusterArgs(management=existing("default"), kubeconfig="{}"))
    """)
    program = run_program({}, main=main, project="p", stack="s")
    named = program.named("named-cluster-check").inputs["create"]
    assert "get storageclass fast -o name" in named and "get storageclasses" not in named
    assert "storageclass" not in program.named("none-cluster-check").inputs["create"]
    assert "get storageclasses" in program.named("default-cluster-check").inputs["create"]
