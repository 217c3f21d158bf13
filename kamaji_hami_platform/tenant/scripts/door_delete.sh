set -eu
command -v docker >/dev/null || { echo "docker is not installed or not on PATH" >&2; exit 1; }
@bounded_docker@
name=@name@
if ! owner=$(docker container inspect --format '{{ index .Config.Labels "@cluster_label@" }}' "$name" 2>&1); then
  case "$owner" in
    *"No such container"*) echo "door $name is already gone"; exit 0 ;;
  esac
  echo "cannot inspect the door $name (is Docker running?); nothing removed: $owner" >&2
  exit 1
fi
if [ "$owner" != @cluster@ ]; then
  echo "warning: container $name is not this platform's (cluster label '$owner'): left alone" >&2
  exit 0
fi
docker rm -f "$name" >/dev/null
echo "door $name removed"
