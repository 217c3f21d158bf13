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
echo "${flags# }"
