"""The credential of a tenant's own admins in kind mode: a client certificate in the tenant admins'
group (tenant/tenant_admin.py bounds what it may do), issued by the tenant's own CA.

Made on Pulumi's host: an EC P-256 key and a certificate request (openssl), a
CertificateSigningRequest for the `kubernetes.io/kube-apiserver-client` signer created and approved
with the platform's credential (Kamaji's admin.conf), signed by the tenant's kube-controller-manager
(its csrsigning controller, with the cluster CA Kamaji gives it), and a kubeconfig of key and
certificate printed on stdout, a Pulumi secret. The request object is deleted once read. A tenant
admin cannot approve a request itself (its role has no approval, tenant/tenant_admin.py), so this is
the only way to the group; `CertificateSubjectRestriction` refuses `system:masters` in any request
(k8s.io/kubernetes v1.35.4 plugin/pkg/admission/certificates/subjectrestriction).

The certificate lives `CERTIFICATE_SECONDS` (kube-controller-manager caps it at its
`--cluster-signing-duration`, one year by default: pkg/controller/certificates/signer/signer.go
`duration`); a new control plane (a new CA) issues a new one, and `pulumi up --replace` on the
credential renews it. A certificate cannot be revoked before it expires: rotate by replacing it and
removing the group's binding only if the tenant's CA is replaced too (docs/design/tenant-admin.md).
"""

from __future__ import annotations

from kamaji_hami_platform.config import ManagementConfig, TenantConfig
from kamaji_hami_platform.management.access import management_access
from kamaji_hami_platform.management.render import KAMAJI_NAMESPACE
from kamaji_hami_platform.shell_templates import Text
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.tenant.admin_access import CALL_TIMEOUT_SECONDS, tenant_access
from kamaji_hami_platform.tenant.tenant_admin import TENANT_ADMINS_GROUP

SIGNER = "kubernetes.io/kube-apiserver-client"
CERTIFICATE_SECONDS = 365 * 24 * 3600
ISSUE_BOUND_SECONDS = 120
_PACKAGE = "kamaji_hami_platform.tenant"


def user_name(tenant: TenantConfig) -> str:
    """The certificate's common name: the tenant admin as the tenant's audit log names it."""
    return f"{tenant.name}-admin"


def request_name(tenant: TenantConfig) -> str:
    return f"kamaji-hami-platform-{user_name(tenant)}"


def subject(tenant: TenantConfig) -> str:
    return f"/O={TENANT_ADMINS_GROUP}/CN={user_name(tenant)}"


def issue_script(tenant: TenantConfig, management: ManagementConfig,
                 bound: int = ISSUE_BOUND_SECONDS) -> str:
    """The script that issues the credential: a kubeconfig on stdout, progress on stderr."""
    preamble, kubectl = tenant_access(tenant, management, CALL_TIMEOUT_SECONDS, purpose="tenant-admin")
    _, with_stdin = tenant_access(tenant, management, CALL_TIMEOUT_SECONDS, purpose="tenant-admin",
                                  stdin=True)
    _, _, hint = management_access(management)
    return render_script(
        _PACKAGE, "tenant_admin_credential.sh", access=preamble, kubectl=kubectl, kubectl_stdin=with_stdin,
        tenant=Text(tenant.name), request=request_name(tenant), subject=subject(tenant), signer=Text(SIGNER),
        seconds=CERTIFICATE_SECONDS, bound=bound, user=Text(user_name(tenant)),
        context=Text(f"{user_name(tenant)}@{tenant.name}"), group=Text(TENANT_ADMINS_GROUP),
        check=Text(f"{hint} -n {tenant.namespace} logs deploy/{tenant.name} -c kube-controller-manager;"
                   f" {hint} -n {KAMAJI_NAMESPACE} logs deploy/kamaji"))


# What the stack's `tenants` output says of each tenant's admin credential, so the next preview can
# tell a stack whose tenants' admins still hold the platform's cluster-admin.
CREDENTIAL_OUTPUT_KEY = "adminCredential"
BOUNDED = "bounded"
CLUSTER_ADMIN = "cluster-admin"


def credential_kind(management: ManagementConfig) -> str:
    return BOUNDED if management.is_kind else CLUSTER_ADMIN


def credential_changes(previous_tenants: object, management: ManagementConfig,
                       tenants: list[TenantConfig]) -> list[str]:
    """What a preview says for each deployed tenant whose admins' credential becomes bounded (a
    stack deployed before this release: its `tenants` output has no `adminCredential`)."""
    if credential_kind(management) != BOUNDED or not isinstance(previous_tenants, dict):
        return []
    changes = []
    for tenant in tenants:
        before = previous_tenants.get(tenant.name)
        if isinstance(before, dict) and before.get(CREDENTIAL_OUTPUT_KEY, CLUSTER_ADMIN) != BOUNDED:
            changes.append(
                f"tenant {tenant.name}: tenantKubeconfigs.{tenant.name} becomes a bounded tenant admin "
                f"({user_name(tenant)}, group {TENANT_ADMINS_GROUP}: no privileged, host-namespace or "
                "hostPath pods, nothing written in kube-system, no changes to nodes or admission policies), "
                "and the "
                f"platform's cluster-admin moves to platformTenantKubeconfigs.{tenant.name}. Hand the new "
                "tenantKubeconfigs to the tenant's people after this up; one taken before stays "
                "cluster-admin until its certificate expires (docs/operations/upgrades.md)")
    return changes
