"""How the platform's scripts reach the management cluster: through the kind node's own kubectl
and admin kubeconfig (mode kind: the user's host needs no kubectl), or with this host's kubectl and
the stack's kubeconfig in a private temporary file (mode existing). Never an argument, never a
fixed path, never printed.
"""

from __future__ import annotations

import shlex

from kamaji_hami_platform.config import ManagementConfig
from kamaji_hami_platform.docker_calls import bounded_docker
from kamaji_hami_platform.management.render import control_plane_container
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script

# The kind node's own admin kubeconfig (kubeadm writes it; kind reads it there too).
KIND_NODE_ADMIN_KUBECONFIG = "/etc/kubernetes/admin.conf"
# The hints name commands that reach the management cluster whatever the user's kubeconfig says.
KIND_NODE_KUBECTL = f"kubectl --kubeconfig {KIND_NODE_ADMIN_KUBECONFIG}"
MANAGEMENT_KUBECONFIG_ENV = "MANAGEMENT_KUBECONFIG"
_PACKAGE = "kamaji_hami_platform.management"


def _management_kubectl(node: str) -> str:
    """A kubectl command line that reaches the management cluster, whatever ~/.kube/config says."""
    return f"docker exec {node} {KIND_NODE_KUBECTL}"


def private_kubeconfig(variable: str, shell_var: str) -> Shell:
    """Shell that writes the kubeconfig in $variable (a Pulumi secret) to a private temporary file
    named by $shell_var, removed when the script ends: never an argument, never a fixed path."""
    return Shell(render_script(_PACKAGE, "private_kubeconfig.sh", file=Text(shell_var),
                               secret=Text(variable)))


def management_access(management: ManagementConfig) -> tuple[Shell, Shell, str]:
    """(preamble, kube, hint): shell that sets up access to the management cluster, the command
    that runs kubectl against it, and the command line a user runs to look for themselves.
    kind: the kind node's own kubectl and admin kubeconfig (the user's host needs no kubectl).
    existing: this host's kubectl with the kubeconfig the stack holds ($MANAGEMENT_KUBECONFIG)."""
    if management.is_kind:
        node = control_plane_container(management)
        preamble = render_script(_PACKAGE, "kind_node_access.sh", node=node, bounded_docker=bounded_docker())
        return (Shell(preamble),
                Shell(f'docker exec -i "$node" {KIND_NODE_KUBECTL}'), _management_kubectl(shlex.quote(node)))
    return (private_kubeconfig(MANAGEMENT_KUBECONFIG_ENV, "management_kc"),
            Shell('kubectl --kubeconfig "$management_kc"'), "kubectl --context <the management cluster's>")
