"""How the platform's scripts reach the management cluster: through the kind node's own kubectl
and admin kubeconfig (mode kind: the user's host needs no kubectl), or with this host's kubectl and
the stack's kubeconfig in a private temporary file (mode existing). Never an argument, never a
fixed path, never printed.
"""

from __future__ import annotations

import shlex

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.management.render import control_plane_container

# The kind node's own admin kubeconfig (kubeadm writes it; kind reads it there too).
KIND_NODE_ADMIN_KUBECONFIG = "/etc/kubernetes/admin.conf"
# The hints name commands that reach the management cluster whatever the user's kubeconfig says.
KIND_NODE_KUBECTL = f"kubectl --kubeconfig {KIND_NODE_ADMIN_KUBECONFIG}"
MANAGEMENT_KUBECONFIG_ENV = "MANAGEMENT_KUBECONFIG"


def _management_kubectl(node: str) -> str:
    """A kubectl command line that reaches the management cluster, whatever ~/.kube/config says."""
    return f"docker exec {node} {KIND_NODE_KUBECTL}"


def private_kubeconfig(variable: str, shell_var: str) -> str:
    """Shell that writes the kubeconfig in $variable (a Pulumi secret) to a private temporary file
    named by $shell_var, removed when the script ends: never an argument, never a fixed path."""
    return (f"{shell_var}=$(umask 077; mktemp)\n"
            f"trap 'rm -f \"${shell_var}\"' EXIT\n"
            f"printf '%s' \"${variable}\" > \"${shell_var}\"\n")


def management_access(management: ManagementConfig) -> tuple[str, str, str]:
    """(preamble, kube, hint): shell that sets up access to the management cluster, the command
    that runs kubectl against it, and the command line a user runs to look for themselves.
    kind: the kind node's own kubectl and admin kubeconfig (the user's host needs no kubectl).
    existing: this host's kubectl with the kubeconfig the stack holds ($MANAGEMENT_KUBECONFIG)."""
    if management.is_kind:
        node = shlex.quote(control_plane_container(management))
        return f"node={node}\n", f'docker exec -i "$node" {KIND_NODE_KUBECTL}', _management_kubectl(node)
    return (private_kubeconfig(MANAGEMENT_KUBECONFIG_ENV, "management_kc"),
            'kubectl --kubeconfig "$management_kc"', "kubectl --context <the management cluster's>")
