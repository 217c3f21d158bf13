lookup() {
  if info=$(docker container inspect --format '{{ index .Config.Labels "@cluster_label@" }}|{{ .State.Running }}' "$name" 2>&1); then
    owner=${info%|*}; running=${info##*|}
  else
    case "$info" in
      *"No such container"*) owner=""; running=absent ;;
      *) echo "@what@ $name: cannot inspect its container (is Docker running?): $info" >&2; exit 1 ;;
    esac
  fi
  if [ "$running" != absent ] && [ "$owner" != @cluster@ ]; then
    foreign=1
  else
    foreign=""
  fi
}
