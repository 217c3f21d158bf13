set -eu
command -v docker >/dev/null || { echo "docker is not installed or not on PATH" >&2; exit 1; }
@bounded_docker@
network=@network@
if ! owner=$(docker network inspect --format '{{ index .Labels "@label@" }}' "$network" 2>&1); then
  case "$owner" in
    *"network $network not found"*|*"No such network"*) echo "Docker network $network is already gone"; exit 0 ;;
  esac
  echo "cannot inspect Docker network $network (is Docker running?); nothing removed: $owner" >&2
  exit 1
fi
if [ "$owner" != @cluster@ ]; then
  echo "warning: Docker network $network was not created for kind cluster @cluster@: left alone" >&2
  exit 0
fi
attached=$(docker network inspect --format '{{ range $id, $c := .Containers }}{{ $c.Name }} {{ end }}' "$network")
if [ -n "$(printf '%s' "$attached" | tr -d ' ')" ]; then
  echo "Docker network $network still has containers attached: $attached; remove them" \
    "(they are not this stack's), then run the destroy again" >&2
  exit 1
fi
docker network rm "$network" >/dev/null
echo "Docker network $network removed"
