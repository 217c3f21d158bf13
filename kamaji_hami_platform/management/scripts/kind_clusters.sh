if ! clusters=$(kind get clusters 2>&1); then
  printf 'cannot list kind clusters (is Docker running?); nothing @action@: %s\n' "$clusters" >&2
  exit 1
fi
