# shellcheck shell=bash disable=SC2034 # its variables are used by the scripts that source it
# Shared by toolchain/live/hosts/*.sh (sourced, never run): the live tier's worker hosts, machines
# the platform joins over SSH in mode existing (docs/development/live-hosts.md), stood in for by
# containers of the node image with Debian's sshd, on the tier's engine.
# shellcheck source=../node-image/lib.sh source-path=SCRIPTDIR
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../node-image" && pwd)/lib.sh"
hosts_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Every host container carries this label, valued with the run's name: delete and the leftover
# check find them by it, and nothing else in the engine has it.
host_label=io.kamaji-hami-platform.live-host
# The host's SSH host key, and the key root's sessions authenticate with (its public half).
host_key_path=/etc/ssh/ssh_host_ed25519_key
authorized_keys_path=/root/.ssh/authorized_keys
