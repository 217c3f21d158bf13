echo "fetching @name@ from @source@" >&2
download @archive_url@ "$tmp/@name@.tar.gz" || {
  echo "cannot download @archive_url_text@; on a host without access, put the verified chart at" \
    "$dir (make kamaji-chart on a host with access, then copy the folder)" >&2; exit 1; }
mkdir -p "$tmp/unpacked-@name@"
tar -xzf "$tmp/@name@.tar.gz" -C "$tmp/unpacked-@name@"
set -- "$tmp/unpacked-@name@"/*/@path@
if [ ! -d "$1" ]; then
  echo "the archive of @source@ has no @path@: refused." >&2; exit 1
fi
mkdir -p "$(dirname "$tmp/@into@")"
mv "$1" "$tmp/@into@"
found=$(tree_digest "$tmp/@into@")
if [ "$found" != @digest@ ]; then
  echo "the @name@ chart of @source@ (@path@) has content digest" \
    "$found, but the platform pins @digest@ (kamaji_hami_platform/versions.py): refused." >&2
  echo "If you moved to another tag on purpose, review its chart and put that digest in" \
    "versions.py; otherwise the tag's content changed and must not be installed." >&2
  exit 1
fi
