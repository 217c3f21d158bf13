proxy_flags="-e @snapshotter_variable@"
HTTP_PROXY=${HTTP_PROXY:-${http_proxy:-}}; HTTPS_PROXY=${HTTPS_PROXY:-${https_proxy:-}}
NO_PROXY=${NO_PROXY:-${no_proxy:-}}
if [ -n "$HTTP_PROXY$HTTPS_PROXY$NO_PROXY" ]; then
  NO_PROXY="${NO_PROXY:+$NO_PROXY,}@no_proxy_extra@"
  http_proxy=$HTTP_PROXY; https_proxy=$HTTPS_PROXY; no_proxy=$NO_PROXY
  export HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy
  [ -z "$HTTP_PROXY" ] || proxy_flags="$proxy_flags -e HTTP_PROXY -e http_proxy"
  [ -z "$HTTPS_PROXY" ] || proxy_flags="$proxy_flags -e HTTPS_PROXY -e https_proxy"
  proxy_flags="$proxy_flags -e NO_PROXY -e no_proxy"
fi
