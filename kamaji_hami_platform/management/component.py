"""ManagementCluster: kind, cert-manager, MetalLB and Kamaji (docs/architecture.md)."""

# No `from __future__ import annotations` here: the component-provider analyzer (pulumi
# provider/experimental/analyzer.py) reads these annotations with inspect.get_annotations, unevaluated,
# and postponed ones would be bare strings it cannot follow.

import os
from typing import Any, TypedDict

import pulumi
import pulumi_kubernetes as kubernetes
from pulumi_command import local

from kamaji_hami_platform import cgroup_v1, config, guardrails, local_shell, versions
from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.config.settings import (
    ChartSettings,
    ImageSettings,
    ManagementSettings,
    image_mirror,
    management_config,
)
from kamaji_hami_platform.create_only_guards import create_only_guards, recorded_values
from kamaji_hami_platform.helm import chart_args, deep_merge
from kamaji_hami_platform.management import (
    access,
    docker_host,
    docker_network,
    existing,
    kamaji_chart,
    kamaji_webhook,
    metallb_webhook,
    network_policy,
    policy_engine,
    render,
)
from kamaji_hami_platform.management import kindnet as management_kindnet
from kamaji_hami_platform.manifest_resources import create_objects
from kamaji_hami_platform.providers import ENABLE_PATCH_FORCE
from kamaji_hami_platform.refusal import Refusal

TYPE_TOKEN = "kamaji-hami-platform:index:ManagementCluster"
# Helm's own default (300 s) is too short for kamaji-etcd's three PVC-backed pods.
HELM_TIMEOUT_SECONDS = 900


CERT_MANAGER = "cert-manager"
METALLB = "metallb"
RELEASES = (CERT_MANAGER, METALLB, render.KAMAJI_RELEASE)


# The name the platform's program gives its only ManagementCluster. Before 0.1.0 named every child
# after its component, its Helm releases were named `cert-manager`, `metallb`, `kamaji`.
# A URN holds the parent's type, not its name, so an alias to those names would be the same for
# every ManagementCluster of a stack: only the one that can have such a past carries it.
LEGACY_NAME = "management"


def legacy_aliases(name: str, old_release_name: str) -> list[pulumi.Alias]:
    """The release's name before 0.1.0, for the ManagementCluster that had it."""
    return [pulumi.Alias(name=old_release_name)] if name == LEGACY_NAME else []


class ManagementClusterArgs(TypedDict, total=False):
    """The inputs of a ManagementCluster: its settings, and where to depart from the platform's
    Helm values and pinned charts."""

    management: ManagementSettings
    """The cluster's settings (stack config `management`); each has a default."""
    helm_values: dict[str, dict[str, Any]]
    """Per release (`cert-manager`, `metallb`, `kamaji`): values deep-merged over the platform's."""
    charts: dict[str, ChartSettings]
    """Per release: the chart to install instead of the pinned one (a mirror, an OCI registry, a
    local folder). For `kamaji`, the platform then skips its fetch of Kamaji's tagged source."""
    kubeconfig: pulumi.Input[str]
    """Mode existing: the cluster's kubeconfig (a secret; the stack's `managementKubeconfig`).
    Without it, `management.kubeconfig_context` of `kubeconfig_file` is read."""
    images: ImageSettings
    """Where images come from (stack config `images`): a mirror registry for every image."""


def _helm_release(resource_name: str, release: str, chart: dict[str, Any], namespace: str,
                  values: dict, opts: pulumi.ResourceOptions) -> kubernetes.helm.v3.Release:
    return kubernetes.helm.v3.Release(
        resource_name,
        name=release,
        **chart,
        namespace=namespace,
        create_namespace=True,
        values=values,
        timeout=HELM_TIMEOUT_SECONDS,
        opts=opts,
    )


def _check_release_keys(args: ManagementClusterArgs, where: str) -> None:
    for key in ("helm_values", "charts"):
        unknown = sorted(set(args.get(key) or {}) - set(RELEASES))
        if unknown:
            raise Refusal(f"{where}: {key}: unknown release(s) {', '.join(unknown)} "
                          f"(releases: {', '.join(RELEASES)})")
    for release, override in (args.get("charts") or {}).items():
        guardrails.chart_pinned(override, f"{where}: charts.{release}")


def _existing_kubeconfig(management: ManagementConfig, kubeconfig: pulumi.Input[str] | None,
                         where: str) -> pulumi.Input[str] | None:
    """Mode existing: the kubeconfig given, or the one of management.kubeconfig_context (read now,
    so a missing file or context fails before anything is created); mode kind: none of either."""
    if management.is_kind:
        if kubeconfig is not None:
            raise Refusal(f"{where}: kubeconfig is for management mode existing (kind's is its own)")
        return None
    if (kubeconfig is None) == (management.kubeconfig_context is None):
        raise Refusal(f"{where}: mode existing needs exactly one of kubeconfig and "
                      "management.kubeconfig_context")
    if kubeconfig is not None:
        return kubeconfig
    try:
        return existing.read_context_kubeconfig(management, os.environ)
    except ValueError as error:
        raise config.ConfigError([f"{where}: {error}"]) from None


class ManagementCluster(pulumi.ComponentResource):
    """The management cluster with cert-manager, MetalLB and Kamaji installed in order: a one-node
    kind cluster the component creates (mode `kind`), or a cluster that exists (mode `existing`:
    reached through `kubeconfig`, nothing created outside it, cert-manager and MetalLB optional).

    Its children are named `<name>-...`: two management clusters live in one stack when their
    settings differ (`name`, `docker_network`, `docker_subnet`)."""

    kubeconfig: pulumi.Output[str]
    """The management cluster's kubeconfig (secret)."""
    provider: kubernetes.Provider
    """The Kubernetes provider every management-cluster resource uses."""
    pool_range: pulumi.Output[str | None]
    """The MetalLB address range LoadBalancer services (tenant API servers) draw from (none when
    the platform does not give MetalLB a pool: an existing cluster's own load balancer, NodePort)."""
    host_flags: pulumi.Output[str]
    """The `docker run` flags this Docker host needs for a kind node (kind's own detection; empty
    for an existing cluster)."""
    cluster: local.Command | None
    """The command that runs the kind cluster: a tenant's `deleted_with`, so destroy skips what
    goes with the cluster (None for an existing cluster, which destroy never removes)."""
    network: local.Command | None
    """The command that creates the platform's Docker network (a KamajiTenant's `management_network`;
    None for an existing cluster)."""

    def __init__(self, name: str, args: ManagementClusterArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        where = f"ManagementCluster {name!r}"
        management = management_config(args.get("management"), where)
        mirror = image_mirror(args.get("images"), where)
        _check_release_keys(args, where)
        if management.is_kind:
            guardrails.kamaji_values_keep_policies((args.get("helm_values") or {}).get(render.KAMAJI_RELEASE),
                                                   where)
        given_kubeconfig = _existing_kubeconfig(management, args.get("kubeconfig"), where)
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.settings: ManagementConfig = management
        self._mirror = mirror
        values = args.get("helm_values") or {}
        charts = args.get("charts") or {}
        child = pulumi.ResourceOptions(parent=self)
        guarded = render.management_create_only(management)
        self.create_only = create_only_guards(name, guarded, render.management_create_only_values(management),
                                              render.MANAGEMENT_WAY_OUT, self)
        # Each guard's value as its state holds it, by guard name (the stack program exports it;
        # not a component output: kamaji_hami_platform/create_only_report.py).
        self.create_only_values = recorded_values(name, guarded, self.create_only)
        self._guard_of = {setting.key: guard
                          for setting, guard in zip(guarded, self.create_only, strict=True)}
        if note := cgroup_v1.preview_note(management):
            pulumi.log.info(note, resource=self)
        if management.is_kind:
            on_cluster, before_releases, before_kamaji = self._kind_cluster(name, management, child)
        else:
            on_cluster, before_releases = self._existing_cluster(
                name, management, given_kubeconfig, values.get(render.KAMAJI_RELEASE), child)
            before_kamaji = before_releases

        # Named after the component since 0.1.0; the alias keeps older stacks' releases.
        def release(release_name: str, pinned: versions.HelmChart, namespace: str,
                    platform_values: dict[str, Any]) -> kubernetes.helm.v3.Release:
            chart = chart_args(pinned, charts.get(release_name), self._mirror)
            return _helm_release(
                f"{name}-{release_name}", release_name, chart,
                namespace, deep_merge(platform_values, values.get(release_name)),
                pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(
                    aliases=legacy_aliases(name, release_name), depends_on=before_releases)))

        self.cert_manager = None
        if management.install_cert_manager:
            self.cert_manager = release(CERT_MANAGER, versions.CERT_MANAGER_CHART,
                                        render.CERT_MANAGER_NAMESPACE,
                                        render.cert_manager_values(self._mirror))
        self.metallb = None
        if management.install_metallb:
            self.metallb = release(METALLB, versions.METALLB_CHART, render.METALLB_NAMESPACE,
                                   render.metallb_values(self._mirror))
        self.pool_range = pulumi.Output.from_input(management.pool_range)
        if self.metallb is not None and management.manages_pool:
            self._metallb_pool(name, on_cluster, self.metallb, child, management)
        kamaji_chart_args, fetched = self._kamaji_chart(name, charts.get(render.KAMAJI_RELEASE), child)
        self.kamaji = kubernetes.helm.v3.Release(
            f"{name}-{render.KAMAJI_RELEASE}",
            name=render.KAMAJI_RELEASE,
            **kamaji_chart_args,
            namespace=render.KAMAJI_NAMESPACE,
            create_namespace=True,
            values=deep_merge(render.kamaji_values(management, self._mirror),
                              values.get(render.KAMAJI_RELEASE)),
            timeout=HELM_TIMEOUT_SECONDS,
            opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(
                aliases=legacy_aliases(name, render.KAMAJI_RELEASE),
                depends_on=[*([self.cert_manager] if self.cert_manager else []), *fetched, *before_kamaji,
                            *self.create_only])))

        # Default deny in the platform's own namespaces, once their charts made them (kind only:
        # management/network_policy.py says who is judged there and which flows are admitted).
        self.network_policies = create_objects(
            name, network_policy.platform_network_policies(management),
            pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=[
                release for release in (self.cert_manager, self.metallb, self.kamaji) if release])))

        # Kamaji's TCP webhooks fail closed and its readiness is a bare ping:
        # tenants wait until a dry-run TCP is accepted (management/kamaji_webhook.py).
        self.kamaji_webhook = local.Command(
            f"{name}-kamaji-webhook",
            create=kamaji_webhook.kamaji_webhook_wait_script(management),
            **self._management_access(management),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[self.kamaji])))

        # On an existing cluster the chart's DataStores go just before Kamaji's uninstall, while its
        # controller can still release them (on kind the whole cluster goes instead). A command of
        # its own, with no triggers: the webhook wait is replaced with each Kamaji tag, and a
        # replacement runs the old delete, which would take a DataStore the tenants use.
        self.kamaji_datastores = None
        if not management.is_kind:
            existing_access = self._management_access(management)
            self.kamaji_datastores = local.Command(
                f"{name}-kamaji-datastores",
                create=kamaji_webhook.DATASTORES_NOTE,
                delete=kamaji_webhook.kamaji_datastores_delete_script(management),
                environment=existing_access["environment"], interpreter=existing_access["interpreter"],
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.kamaji])))

        self.register_outputs({
            "kubeconfig": self.kubeconfig,
            "poolRange": self.pool_range,
            "hostFlags": self.host_flags,
        })

    def _management_access(self, management: ManagementConfig) -> dict[str, Any]:
        """How a readiness command reaches the cluster, and when it runs again: through the kind
        node, once per kind cluster; else with the stack's kubeconfig (a secret environment
        variable), once per Kamaji version."""
        if management.is_kind:
            return {"triggers": [self.cluster.id, versions.KAMAJI_IMAGE_TAG]}
        return {"environment": {access.MANAGEMENT_KUBECONFIG_ENV: self.kubeconfig},
                "interpreter": local_shell.SH, "triggers": [management.name, versions.KAMAJI_IMAGE_TAG]}

    def _kind_cluster(self, name: str, management: ManagementConfig, child: pulumi.ResourceOptions,
                      ) -> tuple[pulumi.ResourceOptions, list[pulumi.Resource], list[pulumi.Resource]]:
        """The Docker network, the kind cluster, its kubeconfig and provider, and what kind's node
        needs: the options of everything installed on it, what the releases wait for (kindnetd
        judging NetworkPolicies) and what Kamaji waits for (kindnetd without limits)."""
        kind_config = render.kind_cluster_config(management, self._mirror)
        # kind keeps a network that exists (kind v0.31.0 network.go ensureNetwork): this one has
        # the configured subnet workers take fixed addresses from
        # (kamaji_hami_platform/management/docker_network.py).
        self.network = local.Command(
            f"{name}-network",
            create=docker_network.create_script(management.docker_network, management.docker_subnet,
                                                management.name),
            delete=docker_network.delete_script(management.docker_network, management.name),
            triggers=[management.docker_network, management.docker_subnet],
            # A new network has the same name: the old one goes first, and with it first what is
            # attached to it (kind's node and the workers name it in replace_with).
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=self.create_only, delete_before_replace=True)))
        self.cluster = local.Command(
            f"{name}-{render.KIND_CLUSTER_RESOURCE}",
            create=render.kind_create_script(management),
            delete=render.kind_delete_script(management),
            stdin=kind_config,
            interpreter=["/bin/sh", "-c"],
            # kind attaches its nodes to this Docker network.
            environment={render.KIND_NETWORK_ENV: management.docker_network},
            # What the cluster was created with. The trigger list and the kind config (stdin) are
            # ignored after the create (the engine diffs their old values: pulumi
            # pkg/resource/deploy/step_generator.go `processIgnoreChanges`): no release that
            # changes either replaces or reruns it.
            triggers=[management.name, management.node_image, kind_config,
                      management.docker_network, management.docker_subnet],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                delete_before_replace=True, protect=True, depends_on=[*self.create_only, self.network],
                # Replaced with the network it is attached to and the guards of the settings kind
                # creates it with; the cluster is protected (replacing it deletes every tenant's
                # control plane and data), so a changed setting is refused here as at its guard.
                replace_with=[self.network, *(self._guard_of[key] for key in render.KIND_CLUSTER_SETTINGS)],
                # The same settings kept in the cluster's own state, which every run compares:
                # `replace_with` fires only in the run that replaces a guard (step_generator.go
                # `diff`), so a guard replaced once (after `pulumi state unprotect`) would leave
                # the next runs planning nothing for a cluster that kept its old settings. A state
                # without it (0.1.0's) takes it in its next run, never as a replacement
                # (`shouldTriggerReplace`: an old null is no trigger).
                replacement_trigger=render.kind_cluster_settings(management),
                ignore_changes=["triggers", "stdin"])),
        )
        kubeconfig_cmd = local.Command(
            f"{name}-kubeconfig",
            create=render.kind_kubeconfig_command(management),
            logging=local.Logging.NONE,
            triggers=[self.cluster.id],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[self.cluster], additional_secret_outputs=["stdout", "stderr"])),
        )
        self.kubeconfig = pulumi.Output.secret(kubeconfig_cmd.stdout)
        self.provider = kubernetes.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            # A new kind cluster (new command id) replaces the provider and so
            # everything on it; a changed kubeconfig alone is only an update.
            cluster_identifier=self.cluster.id,
            # A field the platform sets is taken back from a hand that changed it (providers.py).
            enable_patch_force=ENABLE_PATCH_FORCE,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[kubeconfig_cmd])),
        )
        # What kind adds to its nodes on some hosts, read once per kind cluster, as kind reads it
        # for its own node: the workers start with the same (management/docker_host.py). Once: a
        # release that changes the script does not run it again on a running cluster, since every
        # worker's replacement trigger holds its output, which a preview cannot know until it runs
        # (the real engine showed each worker replaced in the upgrade preview from 4dc9ef2).
        host_check = local.Command(
            f"{name}-docker-host",
            create=docker_host.host_flags_script(render.control_plane_container(management)),
            triggers=[self.cluster.id],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[self.cluster], ignore_changes=["create"])))
        self.host_flags = host_check.stdout
        # The management cluster's kindnetd enforces tenant isolation: without kind v0.31.0's
        # limits, as kind itself has it since (kamaji_hami_platform/management/kindnet.py).
        self.kindnet = local.Command(
            f"{name}-kindnet-limits",
            create=management_kindnet.remove_limits_script(management),
            triggers=[self.cluster.id],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.cluster])))
        # Tenant isolation is claimed only where kindnetd judges NetworkPolicies at all (a kernel
        # without nftables' queue leaves it failing open): read back once per kind cluster, before
        # any chart (management/policy_engine.py).
        self.policy_engine = local.Command(
            f"{name}-policy-engine",
            create=policy_engine.policy_engine_check_script(management),
            triggers=[self.cluster.id],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.kindnet])))
        # Everything in the cluster goes with it: destroy skips these deletes (pulumi deleted_with).
        on_cluster = pulumi.ResourceOptions(parent=self, provider=self.provider, deleted_with=self.cluster)
        return on_cluster, [self.policy_engine], [self.kindnet]

    def _existing_cluster(self, name: str, management: ManagementConfig, kubeconfig: pulumi.Input[str],
                          kamaji_values: dict[str, Any] | None, child: pulumi.ResourceOptions,
                          ) -> tuple[pulumi.ResourceOptions, list[pulumi.Resource]]:
        """A provider for the cluster that exists, and a check before anything is installed on it:
        it answers, and has what the platform relies on and does not install (management/existing.py);
        what the check cannot tell is reported as a warning of the check."""
        self.network = None
        self.cluster = None
        self.host_flags = pulumi.Output.from_input("")
        self.kubeconfig = pulumi.Output.secret(kubeconfig)
        self.provider = kubernetes.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            # The cluster is the same one when its credentials rotate: an update, never a replacement
            # of the provider and everything on it.
            cluster_identifier=f"{config.MODE_EXISTING}/{management.name}",
            enable_patch_force=ENABLE_PATCH_FORCE,
            opts=child)
        check = local.Command(
            f"{name}-cluster-check",
            create=existing.cluster_check_script(management, access.MANAGEMENT_KUBECONFIG_ENV,
                                                 existing.etcd_storage_class(kamaji_values)),
            interpreter=local_shell.SH,
            environment={access.MANAGEMENT_KUBECONFIG_ENV: self.kubeconfig},
            triggers=[management.name, management.install_cert_manager],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=self.create_only)))
        # pulumi-command shows a command's output only as passing status lines (v1.2.1
        # provider/pkg/provider/util/util.go `LogOutput`, InfoStatus): what the check could not
        # tell is a warning of the check, kept with the update's diagnostics.
        check.stdout.apply(lambda stdout: [pulumi.log.warn(warning, resource=check)
                                           for warning in existing.check_warnings(stdout)])
        # Nothing outside the cluster goes with it: destroy uninstalls what the platform installed.
        return pulumi.ResourceOptions(parent=self, provider=self.provider), [check]

    def _metallb_pool(self, name: str, on_cluster: pulumi.ResourceOptions,
                      metallb: kubernetes.helm.v3.Release, child: pulumi.ResourceOptions,
                      management: ManagementConfig) -> None:
        # MetalLB's webhook serves after its release counts as ready (management/metallb_webhook.py).
        self.metallb_webhook = local.Command(
            f"{name}-metallb-webhook",
            create=metallb_webhook.metallb_webhook_wait_script(management),
            **self._management_access(management),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[metallb])))
        self.pool = kubernetes.apiextensions.CustomResource(
            f"{name}-metallb-pool",
            api_version=render.METALLB_API_VERSION,
            kind="IPAddressPool",
            metadata={"name": render.METALLB_POOL_NAME, "namespace": render.METALLB_NAMESPACE},
            spec=self.pool_range.apply(render.metallb_pool_spec),
            opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(
                depends_on=[metallb, self.metallb_webhook, *self.create_only])),
        )
        self.l2_advertisement = kubernetes.apiextensions.CustomResource(
            f"{name}-metallb-l2",
            api_version=render.METALLB_API_VERSION,
            kind="L2Advertisement",
            metadata={"name": render.METALLB_POOL_NAME, "namespace": render.METALLB_NAMESPACE},
            spec=render.metallb_l2_advertisement_spec(),
            opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(
                depends_on=[self.pool])),
        )

    @staticmethod
    def _kamaji_chart(name: str, override: ChartSettings | None,
                      child: pulumi.ResourceOptions) -> tuple[dict[str, Any], list[pulumi.Resource]]:
        """The Kamaji chart: the user's, or the one of the Kamaji tag the platform runs, fetched and
        verified by digest (management/kamaji_chart.py)."""
        if override:
            return chart_args(None, override), []
        fetch = local.Command(
            f"{name}-kamaji-chart",
            create=kamaji_chart.fetch_script(),
            triggers=[versions.KAMAJI_CHART_SOURCE.digest, versions.KAMAJI_ETCD_CHART_SOURCE.digest],
            opts=child)
        # Its path: unknown in a fresh preview (nothing fetched yet), so the release does not load
        # it there; then the verified folder, whose name carries the digest.
        return {"chart": fetch.stdout.apply(str.strip)}, [fetch]
