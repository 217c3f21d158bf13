set -eu
@bounded_docker@
name=@name@
# Only a container this run started is removed on failure: one that was there (stopped, or joined)
# keeps its /var volume, the node's data, and the message says how to recover it.
started_here=false
fail() {
  printf 'worker %s: %s\n' "$name" "$1" | @redact@ >&2
  if [ "$started_here" = true ]; then
    docker rm -f -v "$name" >/dev/null 2>&1 || true
  else
    echo "worker $name: kept with its volume (a joined node's data): see docker logs $name," \
      "start it with docker start $name, then run pulumi up again" >&2
  fi
  exit 1
}
@lookup@
@proxy_flags@
run_container() {
  started_here=true
  # shellcheck disable=SC2086 # flags, split on purpose
  docker run @run_args@ $proxy_flags ${@host_flags_env@:-} \
    @image@ >/dev/null || fail "docker run failed"
}
wait_containerd() {
  for attempt in $(seq 1 60); do
    if docker exec "$name" systemctl is-active --quiet containerd 2>/dev/null; then return 0; fi
    [ "$docker_status" != @timed_out@ ] || fail "Docker did not answer (is the daemon hung?)"
    sleep 2
  done
  fail "containerd did not start in the container within 120s"
}
lookup
if [ -n "$foreign" ]; then
  # Never adopt (or, on failure, remove) a container another stack's kind cluster owns.
  echo "worker $name: a container of that name belongs to kind cluster '$owner'," \
    "not @cluster@; two stacks on one host need different tenant names" >&2
  exit 1
fi
case "$running" in
  absent) run_container ;;
  false) echo "worker $name was stopped; starting it"
         docker start "$name" >/dev/null || fail "docker start failed" ;;
esac
wait_containerd
joined=false
if docker exec "$name" test -f @kubelet_config@; then joined=true
elif [ "$docker_status" = @timed_out@ ]; then fail "Docker did not answer (is the daemon hung?)"
fi
if [ "$joined" = true ]; then
  # The tenant's CA, as PEM without line breaks, from its kubeconfig and from the node. A node
  # whose CA cannot be read is never taken for another control plane's (that would remove it).
  want=$(printf '%s\n' "$@kubeconfig_env@" | sed -n 's/^ *certificate-authority-data: *//p' \
    | head -n 1 | base64 -d 2>/dev/null | tr -d '\r\n' || true)
  have=$(docker exec "$name" cat @node_ca_cert@ 2>/dev/null) || fail "cannot read the node's CA"
  have=$(printf '%s' "$have" | tr -d '\r\n')
  # No CA data in the kubeconfig: nothing to compare, leave the node as it is.
  if [ -z "$want" ] || [ "$want" = "$have" ]; then
    echo "worker $name already joined"; exit 0
  fi
  echo "worker $name was joined to another control plane of tenant @tenant@; creating it again"
  docker rm -f -v "$name" >/dev/null || fail "docker rm failed"
  run_container
  wait_containerd
fi
docker exec "$name" modprobe br_netfilter >/dev/null 2>&1 || true
printf '%s' "$@kubeconfig_env@" | docker exec -i "$name" \
  sh -c 'umask 077; cat > @container_kubeconfig@' || fail "could not hand the kubeconfig to the container"
output=$(docker exec "$name" bash -c @join@ 2>&1) || fail "$output"
printf '%s\n' "$output" | @redact@
