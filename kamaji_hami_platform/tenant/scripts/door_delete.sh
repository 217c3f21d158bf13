set -eu
command -v docker >/dev/null || { echo "docker is not installed or not on PATH" >&2; exit 1; }
@bounded_docker@
name=@name@
@lookup@
lookup
if [ "$running" = absent ]; then echo "door $name is already gone"; exit 0; fi
if [ -n "$foreign" ]; then
  echo "warning: container $name is not this platform's (cluster label '$owner'): left alone" >&2
  exit 0
fi
docker rm -f "$name" >/dev/null
echo "door $name removed"
