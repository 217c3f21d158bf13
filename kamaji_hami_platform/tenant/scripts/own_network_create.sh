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
# IPv4 only: Docker then disables IPv6 on every container's interface to it (a daemon whose
# default network options turn IPv6 on would leave a way around the IPv4 rules).
if [ "$(docker network inspect --format '{{ .EnableIPv6 }}' "$network")" != false ]; then
  echo "Docker network $network has IPv6 enabled (the daemon's default network options?):" \
    "tenant networks must be IPv4 only; remove it and the daemon's IPv6 default, then run again" >&2
  exit 1
fi
# No platform node on a tenant's network: an earlier build attached the kind node here.
attached=$(docker network inspect --format '{{ range $id, $c := .Containers }}{{ $c.Name }} {{ end }}' "$network")
case " $attached " in
  *" $node "*)
    out=$(docker network disconnect --force "$network" "$node" 2>&1) || {
      echo "cannot detach the kind node $node from $network: $out" >&2; exit 1; }
    echo "kind node $node detached from $network (tenants reach their control plane through their door)" ;;
esac
echo "Docker network $network: no platform node on it"
