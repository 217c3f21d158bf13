#!/usr/bin/env bash
# The live tier's worker host image: the node image built here (systemd, containerd, kubeadm and
# kubelet v1.35.4 with kubeadm's drop-in, the CNI plugins, iptables, the tier mirror's hosts.toml)
# with Debian's sshd added and started by systemd, as an admin prepares a machine to be joined:
# kubeadm and kubelet installed, containerd running, nothing joined (the node image's kubelet
# waits for a config, as a package-installed one does). sshd is toolchain/openssh.sh's unpack of
# bookworm's openssh-server (the node image is bookworm too), with libwrap beside it; its config
# takes root's key only (no password, no PAM). The host key is not in the image: each host gets
# its own when it is created (hosts.sh). Kept in the engine under a tag named after its inputs;
# the build is a container of the node image given those files, run once, committed with the
# node image's entrypoint.
# Usage: host-image.sh <bin folder> <engine folder> <node image tag>. The last line is the tag.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: host-image.sh <bin folder> <engine folder> <node image tag>"
bin=${1:?$usage} engine=${2:?$usage} node=${3:?$usage}
openssh=$(bash "$hosts_here/../../openssh.sh" | tail -n 1)
[ -x "$openssh/usr/sbin/sshd" ] || die "no sshd in $openssh (toolchain/openssh.sh)"
tag=khp-live-host:$({ echo "$node"; basename "$openssh"; cat "$0" "$hosts_here/lib.sh"; } | key_of)
if in_engine "$bin" "$engine" docker image inspect "$tag" >/dev/null 2>&1; then
  say "host image $tag in the engine already"
  echo "$tag"
  exit 0
fi
stage=$(mktemp -d)
builder=khp-live-host-build-$$
trap 'rm -rf "$stage"; in_engine "$bin" "$engine" docker rm -f "$builder" >/dev/null 2>&1 || true' EXIT
mkdir -p "$stage/usr/sbin" "$stage/usr/lib/x86_64-linux-gnu" "$stage/etc/ssh" "$stage/etc/systemd/system"
cp -a "$openssh/usr/sbin/sshd" "$stage/usr/sbin/"
cp -a "$openssh"/usr/lib/x86_64-linux-gnu/libwrap.so.0* "$stage/usr/lib/x86_64-linux-gnu/"
cat > "$stage/etc/ssh/sshd_config" <<CONFIG
# The live tier's worker host: root by key only, one host key of its own.
HostKey $host_key_path
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AuthorizedKeysFile $authorized_keys_path
PidFile /run/sshd.pid
CONFIG
cat > "$stage/etc/systemd/system/ssh.service" <<UNIT
[Unit]
Description=OpenBSD Secure Shell server (the live tier's worker host)
After=network.target
ConditionPathExists=$host_key_path

[Service]
ExecStartPre=/usr/sbin/sshd -t
ExecStart=/usr/sbin/sshd -D -e
RuntimeDirectory=sshd
RuntimeDirectoryMode=0755
Restart=on-failure

[Install]
WantedBy=multi-user.target
UNIT
# The privilege separation user bookworm's sshd runs its pre-auth child as, and the unit enabled.
setup='useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd &&
  mkdir -p /etc/systemd/system/multi-user.target.wants && install -d -m 0700 /root/.ssh &&
  ln -s /etc/systemd/system/ssh.service /etc/systemd/system/multi-user.target.wants/ssh.service &&
  ldconfig && /usr/sbin/sshd -V'
say "host image: $node with sshd ($(basename "$openssh"))..."
in_engine "$bin" "$engine" docker create --name "$builder" --entrypoint /bin/sh "$node" -c "$setup" >/dev/null
(cd "$stage" && tar -c .) | in_engine "$bin" "$engine" docker cp - "$builder:/"
in_engine "$bin" "$engine" docker start -a "$builder" >&2 || die "the host image's setup failed"
entrypoint=$(in_engine "$bin" "$engine" docker image inspect -f '{{json .Config.Entrypoint}}' "$node")
in_engine "$bin" "$engine" docker commit --change "ENTRYPOINT $entrypoint" --change 'CMD []' \
  "$builder" "$tag" >/dev/null
say "host image $tag"
echo "$tag"
