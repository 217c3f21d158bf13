"""Kubelets on cgroup v1 hosts: what `management.failCgroupV1: false` renders, in one place.

Kubernetes 1.35's kubelet refuses to start on a cgroup v1 host unless its KubeletConfiguration sets
`failCgroupV1: false` (KEP-5573; k8s.io/kubelet v0.35.4 config/v1beta1/types.go, defaulted to true
in kubernetes v1.35.4 pkg/kubelet/apis/config/v1beta1/defaults.go; the field exists since v1.31,
k8s.io/kubelet v0.31.0). kubeadm's preflight SystemVerification fails on such a host with "cgroups v1
support is deprecated ... you must also explicitly skip this validation" (k8s.io/system-validators
v1.12.1 validators/cgroup_validator_linux.go, which kubeadm v1.35.4 uses). RHEL 8 and alike boot
with cgroup v1, and so does this project's CI machine.

The setting is off by default (the kubelet's own default): nothing here renders then, so a stack
that does not set it keeps every script and object it had.
"""

from __future__ import annotations

from typing import Any

from kamaji_hami_platform.config import ManagementConfig

CONFIG_PATH = "management.failCgroupV1"
# The first kubelet that knows the field (an older one runs on cgroup v1 without it).
FIELD_MIN_MINOR = 31
# kubeadm's preflight check that refuses a cgroup v1 host (cmd/kubeadm/app/preflight/checks.go).
SYSTEM_VERIFICATION = "SystemVerification"
# kind applies a patch without apiVersion to every document of its kind (kind v0.31.0
# pkg/internal/patch/kubeyaml.go); kind itself skips kubeadm's preflight (kubeadminit/init.go).
KIND_KUBELET_PATCH = "kind: KubeletConfiguration\nfailCgroupV1: false\n"
# Kamaji applies these to the tenant's kubelet-config (TenantControlPlane
# spec.kubernetes.kubelet.configurationJSONPatches): every kubelet that joins reads it.
TENANT_KUBELET_PATCH = {"op": "add", "path": "/failCgroupV1", "value": False}


def allowed(management: ManagementConfig | None) -> bool:
    """Whether the platform's kubelets may start on cgroup v1 hosts."""
    return management is not None and not management.fail_cgroup_v1


def kind_config_patches(management: ManagementConfig) -> list[str]:
    """kind's `kubeadmConfigPatches` for the management node."""
    return [KIND_KUBELET_PATCH] if allowed(management) else []


def tenant_kubelet_patches(management: ManagementConfig | None, tenant_minor: int) -> list[dict[str, Any]]:
    """The tenant kubelet-config patch, for kubelets that know the field."""
    return [dict(TENANT_KUBELET_PATCH)] if allowed(management) and tenant_minor >= FIELD_MIN_MINOR else []


def preview_note(management: ManagementConfig) -> str | None:
    """What the preview says when the setting is on: what it changes and what it cannot."""
    if not allowed(management):
        return None
    where = ("the kind node (when it is created), the worker containers and worker hosts"
             if management.is_kind else "the worker hosts")
    return (f"{CONFIG_PATH} is false: {where} run their kubelets with failCgroupV1: false, and worker "
            f"hosts' joins skip kubeadm's {SYSTEM_VERIFICATION}, so they start on cgroup v1 hosts. cgroup v1 "
            "is deprecated in Kubernetes 1.35 (KEP-5573); a kind node created before the setting keeps "
            "the kubelet configuration it was created with.")
