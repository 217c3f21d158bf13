#!/usr/bin/env bash
# The live tier's mirror: distribution's registry (toolchain/live/build.sh builds it from
# github.com/distribution/distribution/v3 v3.1.2) in a container on the tier's engine, laid out as
# that tag's Dockerfile (/bin/registry, /etc/distribution/config.yml from cmd/registry/config-dev.yml,
# /var/lib/registry, EXPOSE 5000, ENTRYPOINT ["registry"], CMD ["serve", ...], OTEL exporter off)
# with TLS (mirror-tls.sh: its certificate and key mounted read-only) and run in the engine
# namespace's own network (--network host), listening on port 5001 of every address there: the mirror is "localhost:5001" for crane, the engine and the platform, and every
# container of the engine, on whatever bridge (the platform's network, each tenant's), reaches it
# at docker0's address through a containerd hosts.toml for localhost:5001 that the node image
# carries (node-image/lib.sh mirror_hosts_toml). kind's local-registry guide
# (site/static/examples/kind-with-registry.sh, kind v0.31.0) instead connects the registry to the
# `kind` network, which would put it on every tenant's network; the namespace has no uplink, so
# listening on all of its addresses reaches nothing beyond the engine. Its storage is a folder of
# the toolchain cache: images pushed once stay for every later engine.
# Usage: registry.sh <bin folder> <engine folder>. Starting a running mirror is a no-op. The last
# line printed is the mirror's address.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
usage="usage: registry.sh <bin folder> <engine folder>"
bin=${1:?$usage} engine=${2:?$usage}
name=khp-mirror port=$mirror_port
storage=$toolchain_cache/live-mirror
registry=$(program_dir "$bin" registry)
source=$(module_dir registry github.com/distribution/distribution/v3)
key=$({ cat "$0" "$images_here/lib.sh"; basename "$registry"; } | key_of)
image=khp/registry:$key
docker_() { in_engine "$bin" "$engine" docker "$@"; }

if [ "$(docker_ inspect -f '{{.State.Running}} {{.Config.Image}}' "$name" 2>/dev/null || true)" = "true $image" ]; then
  say "mirror running (localhost:$port, storage $storage)"
  echo "localhost:$port"; exit 0
fi
docker_ rm -f "$name" >/dev/null 2>&1 || true
if ! docker_ image inspect "$image" >/dev/null 2>&1; then
  work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/bin" "$work/etc/distribution" "$work/var/lib/registry" "$work/tmp" "$work/etc/ssl/certs"
  install -m 0755 "$registry/registry" "$work/bin/registry"
  cp "$source/cmd/registry/config-dev.yml" "$work/etc/distribution/config.yml"
  tar --sort=name --numeric-owner --mtime=@0 -C "$work" -cf "$work.tar" .
  docker_ import --change 'VOLUME ["/var/lib/registry"]' --change 'ENV OTEL_TRACES_EXPORTER=none' \
    --change 'ENV PATH=/bin' --change 'EXPOSE 5000' --change 'ENTRYPOINT ["registry"]' \
    --change 'CMD ["serve", "/etc/distribution/config.yml"]' "$work.tar" "$image" >/dev/null
  rm -f "$work.tar"
fi
mkdir -p "$storage"
tls=$(mirror_tls)
# config-dev.yml's debug server (metrics) listens on :5001 too: moved to loopback, beside it.
docker_ run -d --restart=always --name "$name" --network host -e "REGISTRY_HTTP_ADDR=:$port" \
  -e "REGISTRY_HTTP_DEBUG_ADDR=127.0.0.1:$((port + 1))" \
  -e REGISTRY_HTTP_TLS_CERTIFICATE=/etc/distribution/tls/server.crt \
  -e REGISTRY_HTTP_TLS_KEY=/etc/distribution/tls/server.key \
  -v "$tls:/etc/distribution/tls:ro" -v "$storage:/var/lib/registry" "$image" >/dev/null
for _ in $(seq 30); do
  if in_engine "$bin" "$engine" env SSL_CERT_FILE="$tls/ca.crt" crane catalog "localhost:$port" >/dev/null 2>&1; then
    say "mirror up: localhost:$port (distribution $(basename "$source" | sed 's/.*@//'), storage $storage)"
    echo "localhost:$port"; exit 0
  fi
  sleep 1
done
docker_ logs "$name" 2>&1 | tail -n 20 >&2
die "the mirror did not answer on localhost:$port within 30 s"
