"""The policy pack's guarantees the program holds itself before it registers anything
(kamaji_hami_platform/guardrails.py): in every preview, whatever the pack can see there."""

from __future__ import annotations

import re
import textwrap

import pytest

from kamaji_hami_platform import guardrails
from tests.harness import run_program

pytestmark = pytest.mark.unit


def test_hami_s_webhook_must_fail_closed():
    guardrails.hami_webhook_fails_closed({"scheduler": {"admissionWebhook": {"failurePolicy": "Fail"}}}, "x")
    for values in ({"scheduler": {"admissionWebhook": {"failurePolicy": "Ignore"}}}, {}):
        with pytest.raises(ValueError, match=r"scheduler\.admissionWebhook\.failurePolicy is .* not 'Fail'"):
            guardrails.hami_webhook_fails_closed(values, "x")


@pytest.mark.parametrize("override", [{"chart": "hami", "repository": "https://mirror.example/charts"},
                                      {"chart": "oci://registry.example/hami", "version": "latest"}])
def test_a_chart_override_from_a_repository_names_its_version(override):
    with pytest.raises(ValueError, match="has no pinned version"):
        guardrails.chart_pinned(override, "x")


def test_a_pinned_or_local_chart_override_passes():
    guardrails.chart_pinned({"chart": "hami", "version": "2.10.0", "repository": "https://m.example"}, "x")
    guardrails.chart_pinned({"chart": "./charts/hami"}, "x")
    guardrails.chart_pinned(None, "x")


def test_a_program_that_overrides_the_webhook_is_refused_before_anything_is_registered(tmp_path):
    main = tmp_path / "__main__.py"
    main.write_text(textwrap.dedent("""
        from kamaji_hami_platform import HamiNodePool, HamiNodePoolArgs
        import pulumi_kubernetes as kubernetes

        tenant = {"name": "t", "kubernetes_version": "v1.35.0", "pod_cidr": "10.60.0.0/16",
                  "service_cidr": "10.61.0.0/16", "workers": 1, "gpus": {"model": "A100-80GB"}}
        HamiNodePool("t-gpus", HamiNodePoolArgs(
            tenant=tenant, cluster_name="lab", tenant_kubeconfig="apiVersion: v1\\nkind: Config\\n",
            workers=[], helm_values={"scheduler": {"admissionWebhook": {"failurePolicy": "Ignore"}}}))
    """))
    with pytest.raises(Exception, match="failurePolicy is 'Ignore', not 'Fail'"):
        run_program({}, main=main, project="guardrails", stack="lab")


EXCLUDED = ("kube-system", "hami-system")
WEBHOOK = {"failurePolicy": "Fail", "whitelistNamespaces": ["kube-system"]}


@pytest.mark.parametrize(("change", "said"), [
    ({"enabled": False}, "scheduler.admissionWebhook.enabled is False, not true"),
    ({"customURL": {"enabled": True, "host": "10.0.0.9"}}, "customURL.enabled is True, not false"),
    ({"whitelistNamespaces": ["kube-system", "team-a"]}, "whitelistNamespaces adds team-a"),
    ({"namespaceSelector": {"matchLabels": {"gpu": "yes"}}}, "namespaceSelector.matchLabels narrows"),
    ({"objectSelector": {"matchExpressions": [{"key": "x", "operator": "Exists"}]}},
     "objectSelector.matchExpressions narrows"),
])
def test_every_chart_key_that_lets_gpu_pods_past_the_webhook_is_refused(change, said):
    """HAMi chart 2.10.0 values.yaml `scheduler.admissionWebhook`: each of these keys lets a GPU pod
    past HAMi with failurePolicy still Fail (issue 38, item 11)."""
    values = {"scheduler": {"admissionWebhook": {**WEBHOOK, **change}}}
    with pytest.raises(ValueError, match=re.escape(said)):
        guardrails.hami_webhook_fails_closed(values, "x", EXCLUDED)


def test_the_platforms_own_webhook_values_pass():
    from kamaji_hami_platform.config import load_stack
    from kamaji_hami_platform.gpu import render

    values = render.hami_values(load_stack("dev").tenants[0])
    guardrails.hami_webhook_fails_closed(values, "x", render.WEBHOOK_EXCLUDED_NAMESPACES)
    explicit = {**WEBHOOK, "enabled": True, "customURL": {"enabled": False},
                "namespaceSelector": {"matchLabels": None}}
    guardrails.hami_webhook_fails_closed({"scheduler": {"admissionWebhook": explicit}}, "x", EXCLUDED)


def test_helm_values_given_as_an_output_or_with_one_in_the_webhook_are_refused():
    import pulumi

    with pytest.raises(ValueError, match="helm_values is Output, not a dict"):
        guardrails.plain_helm_values(pulumi.Output.from_input({}), "x")
    given = pulumi.Output.from_input("Fail")
    values = {"scheduler": {"admissionWebhook": {**WEBHOOK, "failurePolicy": given}}}
    with pytest.raises(ValueError, match=r"scheduler\.admissionWebhook holds an Output"):
        guardrails.hami_webhook_fails_closed(values, "x", EXCLUDED)
    guardrails.plain_helm_values({"devicePlugin": {"x": pulumi.Output.from_input("y")}}, "x")


@pytest.mark.parametrize("version", ["^2.0", "~2.10", "2.x", ">=2.10.0", "2.10", "*", "2.10.0 - 2.11.0"])
def test_a_chart_version_range_is_not_pinned(version):
    with pytest.raises(ValueError, match="is a range, not one version"):
        guardrails.chart_pinned({"chart": "hami", "version": version, "repository": "https://m.example"}, "x")


@pytest.mark.parametrize("version", ["2.10.0", "v2.10.0", "2.10.0-rc.1", "2.10.0+build.5"])
def test_one_exact_chart_version_is_pinned(version):
    guardrails.chart_pinned({"chart": "hami", "version": version, "repository": "https://m.example"}, "x")


def test_a_refusal_reads_as_its_message_alone_in_the_language_host():
    """pulumi-language-python-exec logs a pulumi.RunError's message alone and any other exception
    as "Program failed with an unhandled exception" with its stack trace (issue 38, item 12):
    every refusal of the program and its components is one, and still a ValueError."""
    import pulumi

    from kamaji_hami_platform.config import ConfigError
    from kamaji_hami_platform.refusal import Refusal

    assert issubclass(Refusal, pulumi.RunError) and issubclass(Refusal, ValueError)
    assert issubclass(ConfigError, Refusal)
    with pytest.raises(Refusal):
        guardrails.chart_pinned({"chart": "hami", "version": "^2.0"}, "x")
    with pytest.raises(Refusal):
        guardrails.hami_webhook_fails_closed({}, "x")
