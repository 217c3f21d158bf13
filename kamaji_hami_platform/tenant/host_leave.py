"""A worker host leaves its tenant: the delete of `<host>-leave` drains the node and deletes it
from the tenant, then resets the host over SSH, but only a host that is still this stack's node
of the tenant. It lives in a local Command, not in the join's, because a remote delete whose SSH
dial fails fails (pulumi-command v1.2.1 provider/pkg/provider/remote/commandOutputs.go), which
would block `pulumi destroy` for as long as the host is gone; a local one warns and goes on.

Rationale: docs/design/worker-hosts.md.
"""

from __future__ import annotations

import shlex

from kamaji_hami_platform.config import HostConfig, TenantConfig
from kamaji_hami_platform.shell_templates import Shell, Text
from kamaji_hami_platform.shell_templates import render as render_script
from kamaji_hami_platform.tenant import host_join, host_ssh, node_join

_PACKAGE = "kamaji_hami_platform.tenant"
SKIP_DRAIN_ENV = node_join.SKIP_DRAIN_ENV
DRAIN_TIMEOUT_SECONDS = 120
# A node that does not answer: pods its drain evicted are gone after this long, whatever their
# state (kubectl drain --skip-wait-for-delete-timeout; a silent kubelet never confirms them).
SKIP_WAIT_FOR_DELETE_SECONDS = 30
# kubeadm reset stops the kubelet and removes containers: bounded as a whole.
HOST_RESET_TIMEOUT_SECONDS = 300
# Exit codes of the remote reset.
HOST_RESET, HOST_RESET_FAILED, HOST_FOREIGN = 0, 3, 4


def manual_reset_command(host: HostConfig) -> str:
    """What an operator runs when the leave could not reach the host."""
    sudo = "" if host.ssh.user == "root" else "sudo "
    jump = ""
    if host.bastion is not None:
        jump = f"-J {host_ssh.destination(host.bastion)}:{host.bastion.port} "
    reset = f"{sudo}kubeadm reset -f && {sudo}rm -f {host_join.KINDNET_CNI_CONFIG} {host_join.JOIN_MARKER}"
    return f"ssh {jump}-p {host.ssh.port} {host_ssh.destination(host.ssh)} {shlex.quote(reset)}"


def host_reset_script(tenant: TenantConfig, owner: host_join.Ownership) -> str:
    """POSIX sh on the host: `kubeadm reset -f` and kindnet's CNI config, only on a host that is
    this stack's node of the tenant by its marker, joined to the control plane the leave knows ($1:
    its CA pin, or `none` when the leave has no kubeconfig) or, marked by 0.1.0 and joined, whose
    CA digest is $2. A host without such a marker (another stack's mid-join, another installer's
    node), one that joined something else meanwhile (another tenant, another stack, a replaced
    control plane), and a marked one whose kubeadm credentials are gone while a kubelet is set up
    or listening (the join's guards) are left as they are."""
    return render_script(
        _PACKAGE, "host_reset.sh", path_extra=Text(host_join.HOST_PATH_EXTRA),
        kubelet_config=host_join.KUBELET_CONFIG, node_ca_cert=host_join.NODE_CA_CERT,
        kubelet_node_config=host_join.KUBELET_NODE_CONFIG, kubelet_port=host_join.KUBELET_PORT,
        reach_function=host_join.reach_function(),
        join_marker=host_join.JOIN_MARKER, marker=owner.marker(tenant),
        legacy_marker=host_join.legacy_marker(tenant), foreign=HOST_FOREIGN, reset_failed=HOST_RESET_FAILED,
        tenant=Text(tenant.name),
        kindnet_cni_config=host_join.KINDNET_CNI_CONFIG,
        kindnet_cni_config_text=Text(host_join.KINDNET_CNI_CONFIG), reset=HOST_RESET)


def leave_script(tenant: TenantConfig, host: HostConfig, owner: host_join.Ownership) -> str:
    """bash on the Pulumi host, the stdin of `<host>-leave`'s delete (host_join.RUN_STDIN_SCRIPT):
    drain the node and delete it from the tenant, then reset the host over SSH.

    A failed drain (a PodDisruptionBudget, a pod that will not go) stops here: the node is
    uncordoned again and stays, the host is not reset, the delete fails. `KHP_SKIP_DRAIN=1`
    skips the drain (`make down`). A tenant API that does not answer, a node already gone, a
    host that cannot be reached or whose reset fails each give a warning (with the command to
    run by hand) and the leave goes on: a machine that is gone must not block `pulumi destroy`.
    """
    return render_script(
        _PACKAGE, "host_leave.bash", tenant_kubectl=host_join.tenant_kubectl(), node=host.name,
        kubeconfig_env=Text(host_join.KUBECONFIG_ENV), ca_hash_env=Text(host_join.CA_HASH_ENV),
        tenant=Text(tenant.name), skip_drain_env=Text(SKIP_DRAIN_ENV),
        drain_bound=DRAIN_TIMEOUT_SECONDS + host_join.API_CALL_TIMEOUT_SECONDS,
        request_timeout=Text(host_join.API_REQUEST_TIMEOUT),
        skip_wait_for_delete=SKIP_WAIT_FOR_DELETE_SECONDS,
        drain_timeout=DRAIN_TIMEOUT_SECONDS, ssh_dir_env=Text(host_ssh.SSH_DIR_ENV),
        key_files=Shell(host_ssh.key_files(host)),
        # The remote command in a quoted heredoc: its line, then the heredoc's end.
        remote=Shell(host_ssh.remote_command(host, host_reset_script(tenant, owner)) + "\n"),
        reset_timeout=HOST_RESET_TIMEOUT_SECONDS, ssh=Shell(" ".join(host_ssh.ssh_words(host))),
        reset=HOST_RESET, foreign=HOST_FOREIGN, ssh_failed=host_ssh.SSH_FAILED,
        timed_out=host_ssh.TIMED_OUT, where=Text(host_ssh.where(host)), manual=manual_reset_command(host))
