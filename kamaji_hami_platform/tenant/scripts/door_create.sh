set -eu
command -v docker >/dev/null || { echo "docker is not installed or not on PATH" >&2; exit 1; }
@bounded_docker@
name=@name@
fail() { echo "door $name of tenant @tenant@: $1" >&2; exit 1; }
@lookup@
lookup
[ -z "$foreign" ] || fail "a container of that name exists and is not this platform's (its cluster label: '$owner'): remove or rename it"
# The door keeps no state: from here on a failure removes it, and the next run makes it again.
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
if [ "$running" = absent ]; then
  out=$(docker create @create_args@ 2>&1) || fail "docker create failed (is @image@ pulled or in the mirror?): $out"
  out=$(docker network connect --ip @platform_address@ @platform_network@ "$name" 2>&1) \
    || fail "cannot attach it to @platform_network@ at @platform_address@: $out"
  work=$(mktemp -d)
  printf '%s' @config@ > "$work/@config_file@"
  # docker cp keeps the file's mode: readable by HAProxy's user whatever this shell's umask.
  chmod 0644 "$work/@config_file@"
  out=$(tar -C "$work" -cf - @config_file@ | docker cp - "$name:@config_dir@" 2>&1) || {
    rm -rf "$work"; fail "cannot copy its configuration in: $out"; }
  rm -rf "$work"
fi
if [ "$running" != true ]; then
  out=$(docker start "$name" 2>&1) || fail "docker start failed: $out (docker logs $name)"
fi
# What it must be, read back from the engine and from its network namespace.
# Up, and not in a restart loop (Docker reports a restarting container as running).
for _ in 1 2 3 4 5 6 7 8 9 10; do
  state=$(docker container inspect --format '{{ .State.Running }} {{ .State.Restarting }}' "$name")
  [ "$state" = "true false" ] && break
  sleep 1
done
[ "$state" = "true false" ] || fail "it does not stay up: docker logs $name says: $(docker logs --tail 20 "$name" 2>&1)"
address_on() {
  docker container inspect --format "{{ with index .NetworkSettings.Networks \"$1\" }}{{ .IPAddress }}{{ end }}" "$name"
}
[ "$(address_on @tenant_network@)" = @tenant_address@ ] || fail "it is not at @tenant_address@ on @tenant_network@"
[ "$(address_on @platform_network@)" = @platform_address@ ] || fail "it is not at @platform_address@ on @platform_network@"
attached=$(docker container inspect --format '{{ range $net, $e := .NetworkSettings.Networks }}{{ $net }} {{ end }}' "$name")
[ "$attached" = "@platform_network@ @tenant_network@ " ] || [ "$attached" = "@tenant_network@ @platform_network@ " ] \
  || fail "it is on other networks than @tenant_network@ and @platform_network@: $attached"
forwarding=$(docker exec "$name" cat /proc/sys/net/ipv4/ip_forward)
[ "$forwarding" = 0 ] || fail "it forwards IP packets (net.ipv4.ip_forward $forwarding)"
# Strict on each interface: the kernel takes the larger of `all` and the interface's value.
all=$(docker exec "$name" cat /proc/sys/net/ipv4/conf/all/rp_filter)
each=$(docker exec "$name" sh -c 'for f in /proc/sys/net/ipv4/conf/eth*/rp_filter; do cat "$f"; done' | tr '\n' ' ')
[ "$all" = 1 ] || fail "it does not filter by reverse path (net.ipv4.conf.all.rp_filter $all)"
case " $each" in
  *" 2 "*) fail "an interface of it filters loosely by reverse path (rp_filter of each: $each)" ;;
esac
# IPv6 off on each of its interfaces (none at all on a host without IPv6).
ipv6=$(docker exec "$name" sh -c 'for f in /proc/sys/net/ipv6/conf/eth*/disable_ipv6; do [ -e "$f" ] && cat "$f"; done; true')
case "$ipv6" in
  *0*) fail "IPv6 is on on one of its interfaces: this Docker Engine does not disable it on IPv4-only networks" ;;
esac
trap - EXIT
echo "door $name: @tenant_address@ on @tenant_network@ to the control plane through @platform_address@ on @platform_network@ (no forwarding, rp_filter 1, no IPv6)"
