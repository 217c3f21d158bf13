umask 077
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
kc="$tmp/tenant-admin.conf"
printf '%s' "${@kubeconfig_env@:-}" > "$kc"
redact() { @redact@; }
k() { timeout @call_timeout@ kubectl --kubeconfig "$kc" --request-timeout=@request_timeout@ "$@"; }
