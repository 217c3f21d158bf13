#!/usr/bin/env bash
# The tier's mirror speaks TLS, as a user's mirror usually does, so the live stack pulls images and
# charts as users do (the Kubernetes provider, containerd and the mirror check each verifying the
# certificate against the CA they were given). This makes, once,
# a CA of the tier's own and a server certificate for every name the mirror is reached by
# (localhost, 127.0.0.1, and docker0's address, node-image/lib.sh mirror_address), into
# $toolchain_cache/live-mirror-tls: ca.crt, server.crt, server.key (0600). The CA's key signs the
# server certificate and is deleted: nothing can sign another certificate with this CA.
# Who trusts ca.crt: the kind nodes' containerd (the node image's hosts.toml), the Pulumi engine and
# its providers (stack/env.sh: SSL_CERT_FILE), crane and helm pushing into it (push.sh, build.sh).
# Usage: mirror-tls.sh; the last line printed is the folder.
set -euo pipefail
# shellcheck source=../node-image/lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/../node-image/lib.sh"
out=$toolchain_cache/live-mirror-tls
if [ -f "$out/server.crt" ]; then echo "$out"; exit 0; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(
  cd "$work" && umask 077
  openssl req -x509 -newkey rsa:3072 -nodes -keyout ca.key -out ca.crt -days 3650 \
    -subj "/CN=kamaji-hami-platform live tier mirror CA" 2>/dev/null
  openssl req -newkey rsa:3072 -nodes -keyout server.key -out server.csr -subj "/CN=localhost" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:%s\nextendedKeyUsage=serverAuth\n' "$mirror_address" > san.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 3650 \
    -extfile san.ext 2>/dev/null
  chmod 0644 ca.crt server.crt
)
mkdir -p "$out.tmp"
mv "$work/ca.crt" "$work/server.crt" "$work/server.key" "$out.tmp/"
rm -rf "$out" && mv "$out.tmp" "$out"
say "mirror TLS made: $out (CA $(openssl x509 -in "$out/ca.crt" -noout -fingerprint -sha256 | cut -d= -f2))"
echo "$out"
