# Every docker call bounded (kamaji_hami_platform/docker_calls.py): a daemon that hangs fails here.
docker_status=0
docker() {
  # -k: a docker client that ignores the TERM is killed a little later.
  if timeout -k @kill_after@ "${@timeout_env@:-@default@}" docker "$@"; then docker_status=0; return 0
  else docker_status=$?; fi
  if [ "$docker_status" = @timed_out@ ]; then
    echo "docker $1 did not finish within ${@timeout_env@:-@default@} s: is the Docker daemon hung?" \
      "(systemctl status docker; @timeout_env@ sets the bound in seconds)" >&2
  fi
  return "$docker_status"
}
