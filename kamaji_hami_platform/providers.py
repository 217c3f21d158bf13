"""The Kubernetes provider a component works through: the one it is given, or one it makes from a
kubeconfig it is given.

A provider that arrives as an Output (another language's component output) is refused: a
resource option would drop it silently and the children would reach the ambient cluster.

Upstream: pulumi sdk/python/lib/pulumi/provider/server.py `_is_resource_reference`;
pulumi/resource.py `_get_providers` (reads `opts.provider.package`).
Rationale: docs/design/component-inputs.md.
"""

from typing import Any

import pulumi
import pulumi_kubernetes as kubernetes

from kamaji_hami_platform.refusal import Refusal


def check_provider_args(args: Any, cluster: str, where: str) -> None:
    """Exactly one usable way to reach `cluster`, checked before the component creates anything."""
    provider, kubeconfig = args.get(f"{cluster}_provider"), args.get(f"{cluster}_kubeconfig")
    if (provider is None) == (kubeconfig is None):
        raise Refusal(f"{where}: give exactly one of {cluster}_provider and {cluster}_kubeconfig")
    if provider is not None and not isinstance(provider, pulumi.ProviderResource):
        raise Refusal(
            f"{where}: {cluster}_provider arrived as {type(provider).__name__}, not a provider resource "
            f"(another language's program passes a component's output provider as an Output): pass "
            f"{cluster}_kubeconfig instead, e.g. the component's `kubeconfig` output")


def cluster_provider(args: Any, cluster: str, name: str,
                     parent: pulumi.Resource) -> pulumi.ProviderResource:
    """The provider given, or a child provider made from the kubeconfig given."""
    provider = args.get(f"{cluster}_provider")
    if provider is not None:
        return provider
    return kubernetes.Provider(
        name, kubeconfig=args[f"{cluster}_kubeconfig"],
        # As the platform's own providers: a changed ConfigMap is updated in place.
        enable_config_map_mutable=True,
        opts=pulumi.ResourceOptions(parent=parent))
