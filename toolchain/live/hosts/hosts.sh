#!/usr/bin/env bash
# Worker hosts of the live tier: containers of the host image (host-image.sh) on a Docker network
# of the engine, each a machine as the platform's `hosts` mode sees one: an address, sshd with a
# host key of its own, root's authorized key, systemd running containerd, kubeadm and kubelet
# installed, nothing joined. Started as kind starts its nodes (privileged, systemd as PID 1, /var a
# volume; kind v0.31.0 pkg/cluster/internal/providers/docker/provision.go), so a real kubeadm
# joins them and a real kubelet runs pods in them. Forwarding is on, as kubeadm's install guide has an
# admin set it (a new network namespace starts with it off; kubeadm's join preflight refuses that).
#   hosts.sh <bin> <engine> network <network> <subnet> <gateway>  the network, made if missing
#   hosts.sh <bin> <engine> create <run> <network> <name> <address> <host key> <authorized key> <image>
#     the private host key file and the public key file are the caller's (made with ssh-keygen), the
#     image host-image.sh's tag;
#     prints when sshd answers; a container of that name is an error (never reused)
#   hosts.sh <bin> <engine> exec <name> <command...>    a command on the host, as root
#   hosts.sh <bin> <engine> delete <run> [network]      every host of the run (and the network)
#   hosts.sh <bin> <engine> left <run>                  the run's hosts still in the engine
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: hosts.sh <bin> <engine> network|create|exec|delete|left ..."
bin=${1:?$usage} engine=${2:?$usage} action=${3:?$usage}
shift 3
docker_() { in_engine "$bin" "$engine" docker "$@"; }

case $action in
  network)
    network=${1:?$usage} subnet=${2:?$usage} gateway=${3:?$usage}
    if ! docker_ network inspect "$network" >/dev/null 2>&1; then
      docker_ network create --driver bridge --subnet "$subnet" --gateway "$gateway" "$network" >/dev/null
      say "network $network ($subnet) created"
    fi
    ;;
  create)
    run=${1:?$usage} network=${2:?$usage} name=${3:?$usage} address=${4:?$usage}
    host_key=${5:?$usage} authorized=${6:?$usage} image=${7:?$usage}
    docker_ image inspect "$image" >/dev/null 2>&1 || die "no image $image in the engine: run host-image.sh first"
    docker_ create --name "$name" --hostname "$name" --network "$network" --ip "$address" \
      --privileged --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
      --tty --init=false --cgroupns=private --tmpfs /tmp --tmpfs /run --volume /var \
      --volume /lib/modules:/lib/modules:ro \
      --sysctl net.ipv4.ip_forward=1 \
      --label "$host_label=$run" "$image" >/dev/null
    # A host that did not come up is removed with its volume: nothing half made is left.
    stage=$(mktemp -d)
    up=""
    trap 'rm -rf "$stage"; [ -n "$up" ] || docker_ rm -f -v "$name" >/dev/null 2>&1 || true' EXIT
    # The keys go in before systemd starts sshd: root-owned, the private one 0600.
    install -D -m 0600 "$host_key" "$stage$host_key_path"
    install -D -m 0644 "$host_key.pub" "$stage$host_key_path.pub"
    install -D -m 0600 "$authorized" "$stage$authorized_keys_path"
    (cd "$stage" && tar --owner=0 --group=0 -c .) | docker_ cp - "$name:/"
    docker_ start "$name" >/dev/null
    for _ in $(seq 1 60); do
      if docker_ exec "$name" systemctl is-active --quiet ssh 2>/dev/null \
          && docker_ exec "$name" systemctl is-active --quiet containerd 2>/dev/null; then
        say "host $name at $address: sshd and containerd running"
        up=1
        exit 0
      fi
      sleep 1
    done
    docker_ exec "$name" systemctl status --no-pager ssh containerd >&2 || true
    die "host $name: sshd or containerd did not start within 60s"
    ;;
  exec)
    name=${1:?$usage}
    shift
    docker_ exec "$name" "$@"
    ;;
  delete)
    run=${1:?$usage} network=${2:-}
    ids=$(docker_ ps -aq --filter "label=$host_label=$run")
    # shellcheck disable=SC2086 # one argument per container id
    [ -z "$ids" ] || docker_ rm -f -v $ids >/dev/null
    [ -z "$network" ] || ! docker_ network inspect "$network" >/dev/null 2>&1 \
      || docker_ network rm "$network" >/dev/null
    say "hosts of $run deleted${network:+ (and network $network)}"
    ;;
  left)
    run=${1:?$usage}
    docker_ ps -a --filter "label=$host_label=$run" --format '{{.Names}}'
    ;;
  *) die "$usage" ;;
esac
