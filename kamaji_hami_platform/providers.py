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

# The fields the platform sets are the platform's: each apply takes them back from whoever changed
# them by hand. A `kubectl edit`, `patch` or `scale` owns what it wrote, and without force the next
# apply of that field fails (`Server-Side Apply field conflict detected ... conflict with
# "kubectl-patch"`: the real engine and provider showed `make up REFRESH=1` failing so before,
# tests/engine/test_refresh.py). Fields the platform never set stay whoever's they are.
# pulumi-kubernetes v4.32.0 provider/pkg/await/await.go `patchForce`; the provider's `DiffConfig`
# makes a change of it an update of the provider, never a replacement of what it manages.
ENABLE_PATCH_FORCE = True
# What the provider reads instead where it is older than its `enablePatchForce` setting: the
# pseudo-version the module proxy serves to this project's engine and live tiers (4.25.0's code,
# toolchain/pulumi/build.sh) reads only this, in the provider's own process (provider/pkg/await/
# await.go `patchForce`). The tiers set it from ENABLE_PATCH_FORCE; a user's 4.34.2 reads the setting.
PATCH_FORCE_ENV = "PULUMI_K8S_ENABLE_PATCH_FORCE"


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
        # As the platform's own providers: a changed ConfigMap is updated in place, and a field the
        # platform sets is taken back from a hand that changed it.
        enable_config_map_mutable=True,
        enable_patch_force=ENABLE_PATCH_FORCE,
        opts=pulumi.ResourceOptions(parent=parent))
