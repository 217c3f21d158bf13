mtu=$(docker network inspect bridge --format '{{ index .Options "com.docker.network.driver.mtu" }}' \
  2>/dev/null || true)
case "$mtu" in ''|*[!0-9]*) mtu_option="" ;; *) mtu_option="--opt com.docker.network.driver.mtu=$mtu" ;; esac
# As kind creates its own network (masquerade on, the default bridge's MTU), with the configured
# subnet, Docker's own dynamic addresses kept to @dynamic_range@, and its owner's label.
# shellcheck disable=SC2086 # the MTU option, split on purpose
if ! out=$(docker network create --driver bridge --opt com.docker.network.bridge.enable_ip_masquerade=true \
    $mtu_option --subnet @subnet@ --ip-range @dynamic_range@ --gateway @gateway@ \
    --label @label@=@owner@ "$network" 2>&1); then
  echo "cannot create Docker network $network with subnet @subnet@: $out" >&2
  echo "If the subnet overlaps another network of this host, set @setting@ to a free range" \
    "(docker network inspect \$(docker network ls -q) lists those in use)." >&2
  exit 1
fi
echo "Docker network $network (@subnet@) created"
