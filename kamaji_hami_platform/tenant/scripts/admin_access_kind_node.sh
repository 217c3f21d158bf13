@bounded_docker@
node=@node@
file=@file@
trap 'docker exec "$node" rm -f "$file" >/dev/null 2>&1 || true' EXIT
printf '%s' "$@kubeconfig_env@" | docker exec -i "$node" sh -c "umask 077; cat > $file" || {
  echo "cannot reach the kind node container $node to check tenant @tenant@" >&2; exit 1; }
