"""KamajiTenant: one tenant cluster (docs/architecture.md).

Namespace and NetworkPolicies in the management cluster, the TenantControlPlane,
its admin kubeconfig and a provider for the tenant, kubeadm-joined workers (containers on
the kind network, or hosts over SSH: host_join.py), and the tenant's CNI (kindnet) and
kube-proxy.
"""

# No `from __future__ import annotations` here: the component-provider analyzer (pulumi
# provider/experimental/analyzer.py) reads these annotations with inspect.get_annotations, unevaluated,
# and postponed ones would be bare strings it cannot follow.

import base64
import os
from typing import NotRequired, TypedDict
from urllib.parse import urlparse

import pulumi
import pulumi_kubernetes as kubernetes
import yaml
from pulumi_command import local

from kamaji_hami_platform import cgroup_v1, local_shell, names, resource_inputs
from kamaji_hami_platform.config import HostConfig, ManagementConfig, TenantConfig
from kamaji_hami_platform.config.settings import (
    ImageSettings,
    ManagementSettings,
    TenantSettings,
    image_mirror,
    management_config,
    tenant_config,
)
from kamaji_hami_platform.create_only_guards import create_only_guards, recorded_values
from kamaji_hami_platform.management import docker_host
from kamaji_hami_platform.manifest_resources import create_objects, create_objects_with
from kamaji_hami_platform.providers import ENABLE_PATCH_FORCE, check_provider_args, cluster_provider
from kamaji_hami_platform.refusal import Refusal
from kamaji_hami_platform.tenant import addons as tenant_addons
from kamaji_hami_platform.tenant import (
    admin_access,
    admin_credential,
    ca_pin,
    door,
    host_join,
    host_join_access,
    host_leave,
    host_ssh,
    node_admission,
    node_join,
    own_network,
    tenant_admin,
)
from kamaji_hami_platform.tenant import control_plane as tcp_render
from kamaji_hami_platform.tenant.addresses import claim_worker_addresses
from kamaji_hami_platform.tenant.network_policy import network_policies

TYPE_TOKEN = "kamaji-hami-platform:index:KamajiTenant"
ADMIN_KUBECONFIG_KEY = "admin.conf"


def decode_admin_kubeconfig(secret_data: dict[str, str] | None) -> str:
    """The admin kubeconfig; unknown when the Secret was not read (a read of an unknown id, which
    an `up` leaves empty: pulumi pkg/resource/deploy/step.go ReadStep.Apply)."""
    if secret_data is None:
        return pulumi.output.UNKNOWN  # type: ignore[return-value]
    return base64.b64decode(secret_data[ADMIN_KUBECONFIG_KEY]).decode()


def api_server_url(kubeconfig: str) -> str:
    """The server of the kubeconfig's current context (not secret: an address)."""
    document = yaml.safe_load(kubeconfig)
    contexts = {c["name"]: c["context"] for c in document.get("contexts", [])}
    cluster_name = contexts[document["current-context"]]["cluster"]
    clusters = {c["name"]: c["cluster"] for c in document.get("clusters", [])}
    return clusters[cluster_name]["server"]


def host_port(url: str) -> str:
    return urlparse(url).netloc


def uid_unknown_warning(tenant: str) -> str:
    """What a preview says when it read the admin Secret but found no control plane UID in it."""
    return (f"tenant {tenant}: this preview could not read its control plane's UID (the admin kubeconfig "
            "Secret has no TenantControlPlane controller reference), so it shows a new tenant provider, "
            "everything inside the tenant and every worker replaced; `up` reads the UID again and fails "
            f"rather than replace them. Check the Secret: kubectl -n {tenant} get secret "
            f"{names.admin_kubeconfig_secret(tenant)} -o yaml")


def control_plane_uid(secret_metadata: object, dry_run: bool, tenant: str = "") -> str:
    """The TenantControlPlane's UID: what tells a new control plane from the one workers joined.

    Read from the admin kubeconfig Secret's controller reference (read for real in a preview
    unless the TCP is new or replaced), not from the TCP's outputs, which lack it when
    pulumi-kubernetes cannot dry-run an update. Missing: unknown in preview (never ""), an error
    in `up`.
    Rationale and sources: docs/design/tenant-control-plane.md.
    """
    if secret_metadata is None:  # not read: the control plane does not exist yet (a targeted up)
        return pulumi.output.UNKNOWN  # type: ignore[return-value]
    owners = getattr(secret_metadata, "owner_references", None) or []
    uid = next((o.uid for o in owners if o.kind == tcp_render.KIND and o.controller), None)
    if uid:
        return uid
    if dry_run:
        # The Secret was read (an unread one never reaches here): an existing control plane whose
        # UID is missing, so the preview's replacements are not what `up` would do.
        pulumi.log.warn(uid_unknown_warning(tenant))
        return pulumi.output.UNKNOWN  # type: ignore[return-value]
    raise Refusal("the admin kubeconfig Secret has no TenantControlPlane controller reference; "
                  "check it with kubectl -n <tenant> get secret <tenant>-admin-kubeconfig -o yaml")


def read_secret(resource_name: str, namespace: str, secret: str,
                opts: pulumi.ResourceOptions) -> kubernetes.core.v1.Secret:
    """A read of an existing Secret (`Secret.get`) that names what it reads in its inputs, so that
    `pulumi refresh` reads it as `up` did and finds no drift.

    A bare `Secret.get` registers a read with no inputs. pulumi-kubernetes then rebuilds the inputs
    from the whole live object in `up`'s read (no old state: `readFromCluster`), but in refresh's
    (old state given) it keeps only apiVersion, kind, name and namespace: the checkpoint's
    `__inputs` differ, so every refresh reported the read as updated (`[diff: +apiVersion,kind,
    metadata]`, measured live). pulumi-kubernetes v4.32.0 provider/pkg/provider/provider.go `Read`
    (readFromCluster, pruneLiveState, checkpointObject); pulumi v3.276.0 pkg/resource/deploy/
    step.go (ReadStep.Apply keeps the program's inputs; RefreshStep.ResultOp compares an external
    resource's outputs). Given these four inputs, both reads prune the live object to them.
    tests/engine/test_refresh.py runs it through the real engine and provider."""
    props = kubernetes.core.v1.SecretInitArgs.__new__(kubernetes.core.v1.SecretInitArgs)
    props.__dict__.update(
        api_version="v1", kind="Secret", data=None, immutable=None, string_data=None, type=None,
        metadata=kubernetes.meta.v1.ObjectMetaArgs(name=secret, namespace=namespace))
    read = pulumi.ResourceOptions(id=f"{namespace}/{secret}")
    return kubernetes.core.v1.Secret(resource_name, opts=pulumi.ResourceOptions.merge(opts, read),
                                     __props__=props)


def _ssh_keys_for(tenant: TenantConfig, keys: object, where: str) -> dict[str, pulumi.Input[str]]:
    """The private keys the tenant's hosts and bastions name; each must be given (by name)."""
    wanted = sorted({endpoint.private_key for host in tenant.hosts
                     for endpoint in (host.ssh, host.bastion) if endpoint is not None})
    if not wanted:
        return {}
    if isinstance(keys, pulumi.Output):
        # One secret Output of the whole mapping, as another language's program passes it: each
        # key is picked when it is known (a missing one fails `up` then, naming it).
        def pick(given: dict, name: str) -> str:
            if name not in (given or {}):
                raise Refusal(f"{where}: ssh_private_keys has no {name} (given: "
                              f"{', '.join(sorted(given or {})) or 'none'})")
            return given[name]

        return {name: keys.apply(lambda given, n=name: pick(given, n)) for name in wanted}
    if not isinstance(keys, dict):
        raise Refusal(f"{where}: ssh_private_keys must be a mapping of key names to private keys "
                      f"(the hosts name {', '.join(wanted)})")
    missing = [key for key in wanted if key not in keys]
    if missing:
        raise Refusal(f"{where}: ssh_private_keys has no {', '.join(missing)} (given: "
                      f"{', '.join(sorted(keys)) or 'none'})")
    return {key: keys[key] for key in wanted}


class KamajiTenantArgs(TypedDict):
    """The inputs of a KamajiTenant."""

    tenant: TenantSettings
    """The tenant's settings (stack config `tenants[i]`)."""
    management_provider: NotRequired[kubernetes.Provider]
    """A provider for the management cluster, where Kamaji runs (`ManagementCluster.provider`, or
    your own for a cluster you manage). Or give `management_kubeconfig`."""
    management_kubeconfig: NotRequired[pulumi.Input[str]]
    """The management cluster's kubeconfig (`ManagementCluster.kubeconfig`, secret): the tenant then
    makes its own provider (`<name>-management-k8s`). The way in from another language."""
    management_cluster: NotRequired[pulumi.Input[local.Command]]
    """The resource whose deletion takes the management cluster with it (`ManagementCluster.cluster`):
    what the tenant creates in the management cluster is skipped by a destroy that deletes it."""
    management: NotRequired[ManagementSettings]
    """The management cluster's settings: its name labels the workers, its Docker network and subnet
    give them their addresses (defaults as a ManagementCluster's)."""
    host_flags: NotRequired[pulumi.Input[str]]
    """`docker run` flags this Docker host needs for a kind node (`ManagementCluster.host_flags`)."""
    management_network: NotRequired[pulumi.Input[local.Command]]
    """The command that creates the Docker network (`ManagementCluster.network`): a new network
    replaces the workers attached to it."""
    ssh_private_keys: NotRequired[pulumi.Input[dict[str, pulumi.Input[str]]]]
    """SSH private keys by name (secrets), for the tenant's `hosts` and their bastions: each host
    names its key (`private_key`). The stack's `sshPrivateKeys`."""
    images: NotRequired[ImageSettings]
    """Where images come from (stack config `images`): a mirror registry for every image."""


class KamajiTenant(pulumi.ComponentResource):
    """A tenant cluster: control plane in the management cluster, workers in Docker or on hosts.

    Pass `opts=ResourceOptions(depends_on=[management])`: the tenant waits for the management
    cluster (Kamaji's webhooks fail closed). Do not pass `deleted_with` in `opts`: the engine gives
    a component's `deleted_with` to every child (pulumi v3.276.0 pkg/resource/deploy/source_eval.go
    `inheritFromParent`), the workers included, whose delete would then never run; pass
    `management_cluster` instead, which the tenant applies to its management-side children only.
    """

    endpoint: pulumi.Output[str]
    """The tenant API server URL (MetalLB address, port 6443)."""
    kubeconfig: pulumi.Output[str]
    """The platform's admin kubeconfig of the tenant (secret): cluster-admin (Kamaji's admin.conf)."""
    admin_kubeconfig: pulumi.Output[str]
    """The kubeconfig for the tenant's own admins (secret). kind: a bounded tenant admin
    (docs/design/tenant-admin.md); an existing cluster: the same as `kubeconfig`."""
    provider: kubernetes.Provider
    """Provider for resources inside the tenant cluster."""
    node_names: list[str]
    """Names of the tenant's worker nodes (= container names, or the hosts' names)."""
    workers: list[local.Command]
    """The tenant's workers, in order (a HamiNodePool's `workers`): each worker container, or for
    hosts the command that waits until the host's node is Ready."""

    def __init__(self, name: str, args: KamajiTenantArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        where = f"KamajiTenant {name!r}"
        tenant = tenant_config(args["tenant"], where)
        management_settings = management_config(args.get("management"), where)
        mirror = image_mirror(args.get("images"), where)
        check_provider_args(args, "management", where)
        if opts is not None and opts.deleted_with is not None:
            raise Refusal(f"{where}: deleted_with in opts would reach every child, the workers too "
                          "(whose delete must run): pass management_cluster instead")
        ssh_keys = _ssh_keys_for(tenant, args.get("ssh_private_keys"), where)
        if not management_settings.is_kind and tenant.workers and not tenant.on_hosts:
            raise Refusal(f"{where}: container workers need a kind management cluster: give hosts")
        if management_settings.is_kind and tenant.on_hosts:
            raise Refusal(f"{where}: hosts need management mode existing (a kind cluster's tenant APIs "
                          "are on this machine's Docker network)")
        # Resources, or from another language stand-ins carrying their URNs (resource_inputs.py); only
        # container workers are attached to the network.
        cluster = resource_inputs.resource_input(args.get("management_cluster"), resource_inputs.COMMAND,
                                                 where, "management_cluster")
        platform_network = resource_inputs.resource_input(
            args.get("management_network"), resource_inputs.COMMAND, where, "management_network")
        network = platform_network if tenant.workers and not tenant.on_hosts else None
        claim_worker_addresses(tenant, management_settings, where)
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.tenant: TenantConfig = tenant
        management_provider = cluster_provider(args, "management", f"{name}-management-k8s", self)
        # Everything in the management cluster goes with the kind cluster: destroy skips its
        # deletes instead of failing on an API that is gone (pulumi deleted_with).
        on_management = pulumi.ResourceOptions(
            parent=self, provider=management_provider,
            deleted_with=cluster.resource if cluster is not None else None)
        host_flags = args.get("host_flags", "")

        namespace = kubernetes.core.v1.Namespace(
            f"{name}-namespace", metadata={"name": tenant.namespace}, opts=on_management)
        self.network_policies = create_objects(
            name, network_policies(tenant, management_settings),
            pulumi.ResourceOptions.merge(on_management, pulumi.ResourceOptions(depends_on=[namespace])))
        # Settings the tenant's running nodes keep from their join: refused in preview.
        guarded = tcp_render.create_only_settings(tenant)
        self.create_only = create_only_guards(
            name, guarded, tcp_render.create_only_values(tenant, management_settings),
            tcp_render.create_only_way_out(tenant), self)
        # Each guard's value as its state holds it (exported by the stack program).
        self.create_only_values = recorded_values(name, guarded, self.create_only)
        # kind: the tenant's own Docker network, the kind node on it, and its API address there.
        self.own_network: local.Command | None = None
        self.api_address_pool: list[pulumi.CustomResource] = []
        self.door: local.Command | None = None
        if management_settings.is_kind and tenant.own_network:
            self.own_network, self.api_address_pool = self._own_network(
                name, management_settings, on_management, after=self.create_only)
            # On the platform's network too: after it when given (else after the component's own
            # depends_on, the management cluster, as every child).
            on_platform = ((platform_network.ordering or (platform_network.resource,))
                           if platform_network else ())
            self.door = self._door(name, management_settings, mirror, [self.own_network, *on_platform])
            network = resource_inputs.ResourceInput(self.own_network, (self.own_network, self.door))
        self.control_plane = self._control_plane(
            name, management_settings, mirror, on_management,
            [namespace, *self.network_policies, *self.create_only, *self.api_address_pool])
        admin_secret = self._admin_kubeconfig_secret(name, management_provider)
        self.kubeconfig = pulumi.Output.secret(
            admin_secret.apply(lambda secret: secret.data if secret else None).apply(decode_admin_kubeconfig))
        self.endpoint = pulumi.Output.unsecret(self.kubeconfig.apply(api_server_url))
        self.control_plane_uid = admin_secret.apply(lambda secret: secret.metadata if secret else None).apply(
            lambda meta: control_plane_uid(meta, pulumi.runtime.is_dry_run(), tenant.name))
        # Kamaji authorizes the admin credentials a while after the TCP is Ready;
        # nothing is created inside the tenant before they are (tenant/admin_access.py).
        self.admin_access = local.Command(
            f"{name}-admin-access",
            create=admin_access.tenant_admin_access_script(tenant, management_settings),
            interpreter=local_shell.SH,
            environment={node_join.KUBECONFIG_ENV: self.kubeconfig},
            triggers=[self.control_plane_uid],
            # The tenant provider below reaches the API through the door (kind, own network).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.control_plane,
                                                                 *([self.door] if self.door else [])]))
        self.provider = kubernetes.Provider(
            f"{name}-k8s", kubeconfig=self.kubeconfig,
            # A changed ConfigMap is updated in place, never deleted and re-created under its
            # fixed name (the provider's default; provider/pkg/provider/diff.go, stable since
            # pulumi-kubernetes 4.24.0): kube-proxy's keeps existing while its pods roll.
            enable_config_map_mutable=True,
            # A field the platform sets is taken back from a hand that changed it (providers.py).
            enable_patch_force=ENABLE_PATCH_FORCE,
            # Rotated admin certificates update the provider; only a new control
            # plane (new UID) replaces it and the objects inside the tenant.
            cluster_identifier=self.control_plane_uid.apply(lambda uid: f"{tenant.name}/{uid}"),
            # Every resource of the tenant uses this provider, so all of them wait.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.admin_access]))
        # Everything inside the tenant goes with its control plane (its API and datastore).
        self.on_tenant = pulumi.ResourceOptions(parent=self, provider=self.provider,
                                                deleted_with=self.control_plane)
        on_tenant = self.on_tenant
        # Only the nodes the config lists may register (tenant/node_admission.py): in place before
        # any node joins, so every join waits for it; a removed node's leave needs no order.
        self.node_admission = create_objects(
            name, node_admission.node_admission_objects(tenant, management_settings), on_tenant)

        # What a host's join token may do: kubeadm join, and no certificate the join did not
        # approve (tenant/host_join_access.py); none for containers.
        self.join_access = create_objects(name, host_join_access.join_access_objects(tenant), on_tenant)

        # kind: the tenant's people get a bounded tenant admin, never the platform's cluster-admin
        # (tenant/tenant_admin.py); on an existing cluster the workers are the tenant's own hosts.
        self.admin_kubeconfig = self.kubeconfig
        if management_settings.is_kind:
            self.admin_kubeconfig = self._bounded_admin(name, management_settings)

        self.node_names = tenant.worker_names()
        self.workers: list[local.Command] = []
        self.kubelet_skew_checks: list[pulumi.Output[str]] = []
        if tenant.on_hosts:
            # The CA's pin for kubeadm (public), and whose node a joined host is.
            self.ca_hash = pulumi.Output.unsecret(self.kubeconfig.apply(ca_pin.kubeconfig_ca_hash))
            owner = host_join.Ownership(pulumi.get_project(), pulumi.get_stack(), management_settings.name)
            for host in tenant.hosts:
                # One at a time, as the containers: a new control plane re-joins host after host.
                self.workers.append(self._host_worker(name, host, ssh_keys, owner,
                                                      previous=self.workers[-1:],
                                                      cgroup_v1_allowed=cgroup_v1.allowed(management_settings)))
        elif tenant.workers:
            self.worker_image = self._worker_image(name, management_settings, mirror)
        for index in range(0 if tenant.on_hosts else tenant.workers):
            # One at a time: each worker waits for the one before it, so a change that
            # replaces workers (version, spec, control plane) rolls through them and the
            # tenant keeps its other nodes meanwhile.
            self.workers.append(self._worker(node_join.Worker(tenant, index, management_settings, mirror),
                                             previous=self.workers[-1:], network=network,
                                             host_flags=host_flags))
        api_host_port = self.endpoint.apply(host_port)
        self.cni = create_objects_with(
            f"{name}-kindnet", lambda ep: tenant_addons.kindnet_objects(tenant, ep, mirror),
            api_host_port, on_tenant)
        self.kube_proxy = create_objects_with(
            f"{name}-kube-proxy", lambda ep: tenant_addons.kube_proxy_objects(tenant, ep, mirror),
            api_host_port, on_tenant)

        self.register_outputs({
            "endpoint": self.endpoint,
            "kubeconfig": self.kubeconfig,
            "adminKubeconfig": self.admin_kubeconfig,
            "nodeNames": self.node_names,
            # Awaited here, so a host's kubelet out of the version-skew policy fails the preview.
            **({"kubeletSkew": pulumi.Output.all(*self.kubelet_skew_checks)}
               if self.kubelet_skew_checks else {}),
        })

    def _bounded_admin(self, name: str, management: ManagementConfig) -> pulumi.Output[str]:
        """The bounds (admission policies first, then the tenant admins' roles) and the credential
        issued after them: its kubeconfig (secret). A new control plane issues a new one."""
        policies = create_objects(name, tenant_admin.admission_policies(), self.on_tenant)
        roles = create_objects(name, tenant_admin.rbac_objects(), pulumi.ResourceOptions.merge(
            self.on_tenant, pulumi.ResourceOptions(depends_on=policies)))
        self.tenant_admin_bounds = [*policies, *roles]
        self.admin_credential = local.Command(
            f"{name}-tenant-admin-credential",
            create=admin_credential.issue_script(self.tenant, management),
            interpreter=local_shell.SH,
            environment={node_join.KUBECONFIG_ENV: self.kubeconfig},
            # stdout is the kubeconfig: secret, and never logged; stderr is progress.
            logging=local.Logging.STDERR,
            triggers=[self.control_plane_uid],
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["stdout"],
                                        depends_on=[self.admin_access, *self.tenant_admin_bounds]))
        return pulumi.Output.secret(self.admin_credential.stdout)

    def _control_plane(self, name: str, management: ManagementConfig, mirror: str | None,
                       on_management: pulumi.ResourceOptions,
                       after: list[pulumi.Resource]) -> kubernetes.apiextensions.CustomResource:
        tcp = tcp_render.tenant_control_plane(self.tenant, management, mirror)
        timeout = f"{tcp_render.READY_TIMEOUT_MINUTES}m"
        return kubernetes.apiextensions.CustomResource(
            f"{name}-control-plane",
            api_version=tcp["apiVersion"],
            kind=tcp["kind"],
            metadata=tcp["metadata"],
            spec=tcp["spec"],
            opts=pulumi.ResourceOptions.merge(on_management, pulumi.ResourceOptions(
                # Kamaji's webhooks fail closed, and the LoadBalancer address comes from MetalLB's
                # pool: the component's own depends_on (the management cluster) makes it wait.
                depends_on=after,
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
                # Replacing or deleting it deletes the tenant's datastore (Kamaji's finalizer):
                # the engine refuses both, in preview too, until it is unprotected on purpose.
                protect=True)),
        )

    def _own_network(self, name: str, management: ManagementConfig, on_management: pulumi.ResourceOptions,
                     after: list[local.Command]) -> tuple[local.Command, list[pulumi.CustomResource]]:
        """`<tenant>-network`: the tenant's Docker network with the kind node on it (removed after
        every worker, the kind node detached first), and the MetalLB pool and announcement of the
        tenant API's address on it (tenant/own_network.py). A new network replaces the workers."""
        tenant = self.tenant
        command = local.Command(
            f"{name}-network",
            create=own_network.create_script(tenant, management),
            delete=own_network.delete_script(tenant, management),
            triggers=[own_network.network_name(tenant, management),
                      str(own_network.tenant_network(tenant, management).subnet)],
            # The guards first: a refused change of network stops before anything is touched.
            opts=pulumi.ResourceOptions(parent=self, depends_on=after))
        pool = [kubernetes.apiextensions.CustomResource(
            f"{name}-{obj['kind'].lower()}",
            api_version=obj["apiVersion"], kind=obj["kind"], metadata=obj["metadata"], spec=obj["spec"],
            opts=pulumi.ResourceOptions.merge(on_management, pulumi.ResourceOptions(depends_on=[command])))
            for obj in own_network.metallb_objects(tenant, management)]
        return command, pool

    def _door(self, name: str, management: ManagementConfig, mirror: str | None,
              networks: list[pulumi.Resource]) -> local.Command:
        """`<tenant>-door`: the one container on the tenant's network and the platform's, forwarding
        the API and Konnectivity to the control plane (tenant/door.py); after the network's create,
        which detaches the kind node an earlier build attached there, and the platform's network (it
        is on both: `networks`, the tenant's first). Stateless: any change of it replaces it, the old
        one first (same name, same addresses)."""
        return local.Command(
            f"{name}-door",
            create=door.create_script(self.tenant, management, mirror),
            delete=door.delete_script(self.tenant, management),
            triggers=[door.container_name(self.tenant, management),
                      door.spec_hash(self.tenant, management, mirror)],
            opts=pulumi.ResourceOptions(parent=self, depends_on=networks, delete_before_replace=True,
                                        replace_with=networks[:1]))

    def _admin_kubeconfig_secret(self, name: str, provider: pulumi.Input[kubernetes.Provider],
                                 ) -> pulumi.Output[kubernetes.core.v1.Secret | None]:
        """The admin Secret Kamaji writes, read once the control plane exists, and only then
        registered: a targeted `up` that leaves a new control plane uncreated gives it no id (""
        in an update, unknown in a preview), and a read registered then, even one the engine
        skips (pulumi v3.276.0 pkg/resource/deploy/step.go ReadStep.Apply, an unknown id), is
        saved under a tenant component the update never created: the real engine refuses that
        state (`snapshot integrity failure ... refers to missing parent`, tests/engine/
        test_targeted_up.py). A preview of a new tenant shows no read, and the kubeconfig is
        unknown until `up` reads it."""
        namespace, secret = self.tenant.namespace, tcp_render.admin_kubeconfig_secret(self.tenant)

        def read(control_plane_id: str) -> kubernetes.core.v1.Secret | None:
            if not control_plane_id:
                return None
            return read_secret(
                f"{name}-admin-kubeconfig", namespace, secret,
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.control_plane]))

        return self.control_plane.id.apply(read)

    def _worker_image(self, name: str, management: ManagementConfig, mirror: str | None) -> local.Command:
        """The workers' image, pulled before any worker is replaced (a new version's image that
        cannot be pulled fails here, with every old worker still running)."""
        image = node_join.Worker(self.tenant, 0, management, mirror).image
        return local.Command(
            f"{name}-worker-image",
            create=node_join.image_pull_script(image),
            triggers=[image],
            opts=pulumi.ResourceOptions(parent=self))

    def _worker(self, worker: node_join.Worker, previous: list[local.Command],
                network: resource_inputs.ResourceInput | None,
                host_flags: pulumi.Input[str]) -> local.Command:
        """`<worker>-leave`, whose delete drains the node, then the worker container. Both are
        replaced together (the same triggers), the leave first: the worker's replacement releases
        its GPU registration before the worker's own delete (the registration names the worker in
        `replace_with`), so the drain that may fail runs before, in the leave's, and a failed one
        stops the rolling replacement with the node uncordoned and still registered."""
        triggers = [worker.name, worker.image, worker.network, self.control_plane_uid,
                    node_join.container_spec_hash(worker, docker_host.environment_digest(os.environ)),
                    host_flags]
        ordering = [self.control_plane, self.admin_access, self.worker_image, *self.node_admission,
                    *previous, *(network.ordering if network is not None else ())]
        replace_with = [network.resource] if network is not None else None
        leave = local.Command(
            f"{worker.name}-leave",
            create=node_join.LEAVE_CREATE,
            delete=node_join.drain_script(worker),
            interpreter=local_shell.BASH,
            environment={node_join.KUBECONFIG_ENV: self.kubeconfig},
            logging=local.Logging.STDERR,
            triggers=triggers,
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True, depends_on=ordering,
                                        replace_with=replace_with))
        return local.Command(
            worker.name,
            create=node_join.create_script(worker),
            delete=node_join.delete_script(worker),
            interpreter=local_shell.BASH,
            environment={node_join.KUBECONFIG_ENV: self.kubeconfig,
                         docker_host.HOST_FLAGS_ENV: host_flags},
            # stdout and stderr carry only redacted text; stdout is secret anyway.
            logging=local.Logging.STDERR,
            # A new control plane (new UID, new CA) replaces the worker: it joins
            # the new one instead of staying "already joined" to the old.
            # A changed container specification (flags, image, network) replaces it too:
            # for a joined worker the create script alone changes nothing.
            triggers=triggers,
            opts=pulumi.ResourceOptions(
                parent=self, delete_before_replace=True,
                additional_secret_outputs=["stdout"],
                depends_on=[*ordering, leave],
                # Attached to the network: a new network (same name) needs it gone first.
                replace_with=replace_with),
        )

    def _host_worker(self, name: str, host: HostConfig, keys: dict[str, pulumi.Input[str]],
                     owner: host_join.Ownership, previous: list[local.Command],
                     cgroup_v1_allowed: bool = False) -> local.Command:
        """A machine joined over SSH: `-leave` (its delete drains and deletes the node, then resets
        the host over SSH, warning when the host does not answer), `-join` (from this host: a
        bootstrap token minted for minutes, the host joined over SSH with it, the token deleted)
        and the returned command that waits until the node is Ready. A new control plane (its UID)
        or another address replaces all three in that order: the host is reset, then joins again.
        Every script runs here, with this host's OpenSSH client and kubectl; the host gets the API
        endpoint, the token and the CA, never a kubeconfig (tenant/host_join.py)."""
        # The API endpoint too: a new LoadBalancer address, node port or nodePortAddress leaves a
        # joined kubelet talking to the old one (its kubelet.conf), so the host joins again.
        triggers = [host.name, host.address, self.control_plane_uid, self.endpoint]
        environment = {node_join.KUBECONFIG_ENV: self.kubeconfig,
                       host_join.CA_HASH_ENV: self.ca_hash,
                       host_ssh.HOST_SSH_KEY_ENV: pulumi.Output.secret(keys[host.ssh.private_key])}
        if host.bastion is not None:
            environment[host_ssh.BASTION_SSH_KEY_ENV] = pulumi.Output.secret(keys[host.bastion.private_key])
        unchecked = host_ssh.unchecked_hops(host)
        if unchecked:
            # Visible in every preview and to the policy pack (worker-host-keys-pinned).
            environment[host_ssh.INSECURE_HOST_KEY_ENV] = ", ".join(unchecked)
            pulumi.log.warn(f"host {host.name} of tenant {self.tenant.name}: the host key of "
                            f"{', '.join(unchecked)} is not checked (insecureSkipHostKeyCheck): whoever "
                            "answers at that address gets the join", resource=self)
        leave = local.Command(
            f"{name}-{host.name}-leave",
            create=host_join.worker_script(self.tenant, host),
            delete=host_join.RUN_STDIN_SCRIPT,
            stdin=host_leave.leave_script(self.tenant, host, owner),
            interpreter=local_shell.BASH,
            environment=environment,
            logging=local.Logging.STDOUT_AND_STDERR,  # redacted by the script
            triggers=triggers,
            opts=pulumi.ResourceOptions(
                parent=self, delete_before_replace=True,
                # The join follows the leave: it waits for the node admission policy and the
                # bindings of its token group too.
                depends_on=[self.control_plane, self.admin_access, *self.node_admission,
                            *self.join_access, *previous]))
        join = local.Command(
            f"{name}-{host.name}-join",
            create=host_join.RUN_STDIN_SCRIPT,
            stdin=host_join.join_script(self.tenant, host, owner, tcp_render.konnectivity_port(self.tenant),
                                        cgroup_v1_allowed),
            interpreter=local_shell.BASH,
            environment=environment,
            logging=local.Logging.STDOUT_AND_STDERR,  # progress and prerequisites, redacted
            triggers=triggers,
            opts=pulumi.ResourceOptions(
                parent=self, delete_before_replace=True, depends_on=[leave],
                additional_secret_outputs=["stdout", "stderr"]))
        # The join's id: a host joined again (its Node lost) is a new Node, which the Ready wait,
        # and through it the GPU registration, must see again. An update, not a replacement: a
        # preview of an updated join (a release with a new join script) knows none of its output
        # (pulumi-go-provider infer/resource.go), and as a trigger the id showed every Ready wait
        # and GPU registration replaced, which `up` then did not do (issue 38).
        joined = pulumi.Output.unsecret(join.stdout.apply(host_join.join_id))
        ready = local.Command(
            f"{name}-{host.name}",
            create=host_join.ready_script(self.tenant, host),
            interpreter=local_shell.BASH,
            environment={node_join.KUBECONFIG_ENV: self.kubeconfig, host_join.JOIN_ID_ENV: joined},
            # Recorded as before and ignored once created (an earlier release's state holds the
            # join id there): the wait is replaced, and with it the GPU registration
            # (replace_with), when the host or its control plane changes (replacement_trigger; a
            # state without one takes it in its next run, never as a replacement).
            triggers=[*triggers, joined],
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True, depends_on=[join],
                                        ignore_changes=["triggers"], replacement_trigger=triggers))
        # A tenant version the host's kubelet cannot serve is refused in preview (the kubelet's
        # version as the last `up` reported it).
        self.kubelet_skew_checks.append(ready.stdout.apply(
            lambda output: _refuse_skew(host_join.kubelet_skew_problem(self.tenant, host, output))))
        return ready


def _refuse_skew(problem: str | None) -> str:
    if problem is not None:
        raise Refusal(problem)
    return "ok"
