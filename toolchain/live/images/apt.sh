# shellcheck shell=bash disable=SC2154 # apt_suite, apt_dir, apt_roots and apt_skip: set by the family script
# Shared by the family scripts that take Debian packages of another suite than the bookworm rootfs's
# (metallb.sh: trixie's FRR; haproxy.sh: trixie's HAProxy), sourced after lib.sh, never run; a
# family's key holds this file. The suite's package lists live in an apt folder of the family's own
# under the toolchain cache (this machine's sources and status are left alone), fetched when missing
# and refreshed when a pinned version has gone from Debian's mirror. Set first:
#   apt_suite   the suite (trixie)
#   apt_dir     the folder ($toolchain_cache/live-<name>-apt-<suite>)
#   apt_roots   the packages (an array)
#   apt_skip    " names " left out of the closure (a booted system's, install-time helpers)
# then:
#   in_apt TOOL ARGS...  apt-get or apt-cache on that folder alone
#   apt_pin              apt_pinned: name=version of every package of the Depends closure (first
#                        alternatives) of apt_roots less apt_skip, one a line, sorted; the lists are
#                        fetched when missing, and refreshed once when a package has no candidate
#   apt_download DIR     the .debs of apt_pinned into DIR; when one has gone from the mirror, the
#                        lists are refreshed and apt_pinned made again (a family keyed by it keys
#                        again after this)
in_apt() {
  local tool=$1
  shift
  "$tool" -q -o APT::Sandbox::User=root -o Dir::Etc::SourceList="$apt_dir/sources.list" \
    -o Dir::Etc::SourceParts="$apt_dir/none" -o Dir::Etc::Preferences="$apt_dir/none/preferences" \
    -o Dir::Etc::PreferencesParts="$apt_dir/none" -o Dir::State::Lists="$apt_dir/lists" \
    -o Dir::Cache="$apt_dir/cache" -o Dir::State::Status="$apt_dir/status" "$@"
}
apt_refresh() {
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/none"
  : > "$apt_dir/status"
  printf 'deb http://deb.debian.org/debian %s main\n' "$apt_suite" "$apt_suite-updates" > "$apt_dir/sources.list"
  echo "deb http://deb.debian.org/debian-security $apt_suite-security main" >> "$apt_dir/sources.list"
  say "apt: Debian $apt_suite's package lists into $apt_dir..."
  in_apt apt-get update -qq >&2
}
apt_closure() {
  local todo=("${apt_roots[@]}") all=" " p next=()
  while [ "${#todo[@]}" -gt 0 ]; do
    for p in "${todo[@]}"; do all+="$p "; done
    mapfile -t next < <(in_apt apt-cache depends --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances "${todo[@]}" |
      awk '/^[^ ]/ {alt = 0; next} /^ [ |](Pre)?Depends: / {first = !alt; alt = ($1 ~ /^\|/)
        name = $2; gsub(/[<>]/, "", name); sub(/:any$/, "", name); if (first) print name}' | sort -u)
    todo=()
    for p in "${next[@]}"; do
      case "$apt_skip$all" in *" $p "*) ;; *) todo+=("$p") ;; esac
    done
  done
  # shellcheck disable=SC2086 # all is a list of names
  in_apt apt-cache policy $all | awk '/^[^ ]/ {name = $1; sub(/:$/, "", name)}
    /^ *Candidate:/ {if ($2 == "(none)") {print "no candidate: " name > "/dev/stderr"; exit 1}
      print name "=" $2}' | sort
}
apt_pin() {
  mkdir -p "$apt_dir/none"
  [ -f "$apt_dir/sources.list" ] || apt_refresh
  apt_pinned=$(apt_closure) || { apt_refresh; apt_pinned=$(apt_closure); } \
    || die "apt: no $apt_suite closure of ${apt_roots[*]}"
}
apt_download() {
  local dir=$1
  mkdir -p "$dir"
  # shellcheck disable=SC2086 # apt_pinned is a list of name=version
  (cd "$dir" && in_apt apt-get download -qq $apt_pinned >&2) && return 0
  apt_refresh
  apt_pinned=$(apt_closure) || die "apt: no $apt_suite closure of ${apt_roots[*]}"
  rm -f "$dir/"*.deb
  # shellcheck disable=SC2086 # apt_pinned is a list of name=version
  (cd "$dir" && in_apt apt-get download -qq $apt_pinned >&2) || die "apt: cannot download $apt_suite's ${apt_roots[*]}"
}
