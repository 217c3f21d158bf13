set -eu
command -v docker >/dev/null || { echo "docker is not installed or not on PATH" >&2; exit 1; }
@bounded_docker@
network=@network@
node=@node@
if owner=$(docker network inspect --format '{{ index .Labels "@label@" }}' "$network" 2>&1); then
  if [ "$owner" != @owner@ ]; then
    echo "Docker network $network exists but is not tenant @tenant@'s network (owner: '$owner'):" \
      "remove it if nothing uses it, or give the tenant or management.dockerNetwork another name" >&2
    exit 1
  fi
  subnets=$(docker network inspect --format '{{ range .IPAM.Config }}{{ .Subnet }} {{ end }}' "$network")
  case " $subnets " in
    *" @subnet@ "*) echo "Docker network $network (@subnet@) exists" ;;
    *) echo "Docker network $network has subnet(s) $subnets, not @subnet@ (management.tenantSubnet," \
         "tenants[name=@tenant@].addressBlock)" >&2
       exit 1 ;;
  esac
else
  case "$owner" in
    *"network $network not found"*|*"No such network"*) ;;
    *) echo "cannot inspect Docker network $network (is Docker running?): $owner" >&2; exit 1 ;;
  esac
@bridge_create@
fi
docker container inspect --format '{{ .Name }}' "$node" >/dev/null 2>&1 || {
  echo "the kind node $node does not exist: the management cluster must be up before its tenants" >&2
  exit 1
}
format=$(printf '{{ with index .NetworkSettings.Networks "%s" }}{{ .IPAddress }}{{ end }}' "$network")
address=$(docker container inspect --format "$format" "$node")
if [ -z "$address" ]; then
  # Strict reverse-path filtering on the node's interface there, applied again on every start.
  if ! out=$(docker network connect --driver-opt @sysctls@ "$network" "$node" 2>&1); then
    echo "cannot attach the kind node $node to $network: $out" >&2
    exit 1
  fi
  address=$(docker container inspect --format "$format" "$node")
fi
line=$(docker exec "$node" ip -o -4 addr show to "$address/32")
# "<index>: <interface> inet <address>/<prefix> ...": the second word.
# shellcheck disable=SC2086 # split on purpose
set -- $line
if [ $# -lt 2 ]; then
  echo "the kind node $node has no interface with its address $address on $network" >&2
  exit 1
fi
interface=${2%%@*}
# The kernel uses the larger of the interface's value and `all` (2, loose, would let another
# tenant's network claim this one's addresses); the kind node image sets `all` to 1 at boot.
filter=$(docker exec "$node" cat "/proc/sys/net/ipv4/conf/$interface/rp_filter")
all=$(docker exec "$node" cat /proc/sys/net/ipv4/conf/all/rp_filter)
if [ "$filter" != 1 ]; then
  echo "the kind node's interface $interface on $network filters by reverse path at $filter, not 1:" \
    "this Docker Engine ignored the endpoint sysctl (it needs 27.0 or newer; docker version shows it)," \
    "and without it another tenant could send from this tenant's addresses" >&2
  exit 1
fi
if [ "$all" -gt 1 ]; then
  echo "the kind node filters by reverse path at $all on all interfaces (net.ipv4.conf.all.rp_filter)," \
    "which overrides the strict 1 of $interface: another tenant could send from this tenant's" \
    "addresses; the node image (management.nodeImage) must boot with it at 0 or 1, as kind's node image does" >&2
  exit 1
fi
echo "kind node $node on $network at $address ($interface, rp_filter 1)"
