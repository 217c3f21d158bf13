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
@bridge_create@
