set -eu
command -v docker >/dev/null || { echo "docker is not installed or not on PATH" >&2; exit 1; }
@bounded_docker@
network=@network@
if owner=$(docker network inspect --format '{{ index .Labels "@label@" }}' "$network" 2>&1); then
  if [ "$owner" != @cluster@ ]; then
    echo "Docker network $network exists but was not created by this platform for kind cluster" \
      "@cluster@ (owner: '$owner'); workers need fixed addresses on a network whose subnet the" \
      "platform configured: set management.dockerNetwork to a new name" >&2
    exit 1
  fi
  subnets=$(docker network inspect --format '{{ range .IPAM.Config }}{{ .Subnet }} {{ end }}' "$network")
  case " $subnets " in
    *" @subnet@ "*) echo "Docker network $network (@subnet@) exists"; exit 0 ;;
  esac
  echo "Docker network $network has subnet(s) $subnets, not @subnet@ (management.dockerSubnet)" >&2
  exit 1
fi
case "$owner" in
  *"network $network not found"*|*"No such network"*) ;;
  *) echo "cannot inspect Docker network $network (is Docker running?): $owner" >&2; exit 1 ;;
esac
mtu=$(docker network inspect bridge --format '{{ index .Options "com.docker.network.driver.mtu" }}' \
  2>/dev/null || true)
case "$mtu" in ''|*[!0-9]*) mtu_option="" ;; *) mtu_option="--opt com.docker.network.driver.mtu=$mtu" ;; esac
# Options as kind creates its own network (masquerade on, the default bridge's MTU), plus the
# configured subnet and Docker's own dynamic addresses kept to the first quarter.
if ! out=$(docker network create --driver bridge --opt com.docker.network.bridge.enable_ip_masquerade=true \
    $mtu_option --subnet @subnet@ --ip-range @dynamic_range@ --gateway @gateway@ \
    --label @label@=@cluster@ "$network" 2>&1); then
  echo "cannot create Docker network $network with subnet @subnet@: $out" >&2
  echo "If the subnet overlaps another network of this host, set management.dockerSubnet to a free" \
    "/@min_prefix@../@max_prefix@ (docker network inspect \$(docker network ls -q) lists those in use)." >&2
  exit 1
fi
echo "Docker network $network (@subnet@) created"
