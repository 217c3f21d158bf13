@file@=$(umask 077; mktemp)
trap 'rm -f "$@file@"' EXIT
printf '%s' "$@secret@" > "$@file@"
