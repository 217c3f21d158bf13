# A TCP connection, bounded: bash's /dev/tcp, else nc; 2: neither is here.
reach() {
  if command -v bash >/dev/null 2>&1; then
    # shellcheck disable=SC2016 # bash expands its own $1 and $2, the arguments after the script
    timeout @connect_timeout@ bash -c 'exec 3<>"/dev/tcp/$1/$2"' reach "$1" "$2" 2>/dev/null
  elif command -v nc >/dev/null 2>&1; then
    nc -z -w @connect_timeout@ "$1" "$2" 2>/dev/null
  else
    return 2
  fi
}
