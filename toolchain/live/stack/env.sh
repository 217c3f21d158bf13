#!/usr/bin/env bash
# Run a command as `make up` runs for the live stack: in the live engine's network namespace
# (engine-run.sh: DOCKER_HOST, the tier's docker, kind, kubectl and helm on PATH), with the real
# Pulumi CLI and language hosts (toolchain/pulumi/build.sh) on PATH, and a Pulumi home, file backend
# and passphrase file of the live stack's own under <stack folder> (the providers installed there as
# plugins from the same build, never downloaded). The passphrase is made once (0600) and never
# printed or put on a command line. The mirror's CA is trusted (SSL_CERT_FILE).
# Usage: env.sh <live bin> <pulumi bin> <engine folder> <stack folder> <command> [args...]
set -euo pipefail
usage="usage: env.sh <live bin> <pulumi bin> <engine folder> <stack folder> <command> [args...]"
live_bin=${1:?$usage} pulumi_bin=${2:?$usage} engine=${3:?$usage} stack=${4:?$usage}
shift 4
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=plugins.sh source-path=SCRIPTDIR
. "$here/plugins.sh"

mkdir -p "$stack/state" "$stack/home" "$stack/path"
chmod 0700 "$stack"
passphrase=$stack/passphrase
if [ ! -s "$passphrase" ]; then
  (umask 077 && head -c 32 /dev/urandom | base64 > "$passphrase.tmp" && mv "$passphrase.tmp" "$passphrase")
fi
# Only the CLI and the language hosts on PATH; the providers are plugins of the stack's home.
for name in pulumi pulumi-language-python pulumi-language-python-exec; do
  ln -sfn "$pulumi_bin/$name" "$stack/path/$name"
done
# The mirror's CA beside the machine's (the providers pull charts from the mirror over TLS; Go and
# OpenSSL both read SSL_CERT_FILE).
{ cat /etc/ssl/certs/ca-certificates.crt 2>/dev/null || true
  cat "$(bash "$here/../images/mirror-tls.sh" | tail -n 1)/ca.crt"; } > "$stack/trust.pem"
export SSL_CERT_FILE=$stack/trust.pem
export PULUMI_HOME=$stack/home PULUMI_BACKEND_URL=file://$stack/state PULUMI_CONFIG_PASSPHRASE_FILE=$passphrase
export PULUMI_SKIP_UPDATE_CHECK=true PULUMI_IGNORE_AMBIENT_PLUGINS=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
# The program asks its Kubernetes providers to force (kamaji_hami_platform/providers.py
# ENABLE_PATCH_FORCE); the tier's provider, older than that setting, reads it only from here.
export PULUMI_K8S_ENABLE_PATCH_FORCE=true
unset PULUMI_CONFIG_PASSPHRASE PULUMI_ACCESS_TOKEN KUBECONFIG
install_plugins "$pulumi_bin" "$stack/path/pulumi" "$here/../../../requirements.txt"
exec bash "$here/../scripts/engine-run.sh" "$live_bin" "$engine" env PATH="$stack/path:$live_bin:$PATH" "$@"
