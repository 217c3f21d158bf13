set -eu
@bounded_docker@
if ! security=$(docker info --format '{{json .SecurityOptions}}' 2>&1); then
  echo "cannot ask Docker about this host (is Docker running?): $security" >&2; exit 1
fi
driver=$(docker info --format '{{.Driver}}' | tr '[:upper:]' '[:lower:]')
backing=$(docker info --format '{{json .DriverStatus}}' | tr '[:upper:]' '[:lower:]')
flags=""
filesystem=$(printf '%s' "$backing" | sed -n 's/.*"backing filesystem","\([a-z0-9]*\)".*/\1/p')
case "$driver:$filesystem" in
  btrfs:*|zfs:*|devicemapper:*|*:btrfs|*:zfs|*:xfs) flags="$flags --volume /dev/mapper:/dev/mapper" ;;
esac
case "$security" in *name=userns*) flags="$flags --userns=host" ;; esac
case "$security" in *name=rootless*) flags="$flags --device /dev/fuse" ;; esac
# IPv4 forwarding in a new container's network namespace, as a worker's would be: a namespace takes
# it from the host's initial one (net.core.devconf_inherit_init_net 0), where Docker usually turned
# it on; where it is off (a Docker in a network namespace of its own, a host that turned it off),
# kubeadm join's preflight refuses the worker (FileContent--proc-sys-net-ipv4-ip_forward) and its
# pods could not be routed. kind's own node never meets it: kind skips kubeadm's preflight.
# The probe is the kind node's image, with no network, removed at once.
image=$(docker inspect --format '{{.Image}}' @node@)
forwarding=$(docker run --rm --network none --entrypoint cat "$image" /proc/sys/net/ipv4/ip_forward)
[ "$forwarding" = 1 ] || flags="$flags --sysctl net.ipv4.ip_forward=1"
echo "${flags# }"
