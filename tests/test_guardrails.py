"""The policy pack's guarantees the program holds itself before it registers anything
(kamaji_hami_platform/guardrails.py): in every preview, whatever the pack can see there."""

from __future__ import annotations

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
