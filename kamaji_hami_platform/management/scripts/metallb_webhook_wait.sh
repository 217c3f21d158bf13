set -u
@access@
probe=@probe@
output=""
for attempt in $(seq 1 @attempts@); do
  if output=$(printf '%s' "$probe" \
      | @kubectl@ create --dry-run=server -o name -f - 2>&1); then
    echo "MetalLB's IPAddressPool webhook answers (server-side dry run accepted)"
    exit 0
  fi
  # A denial is an answer too: the webhook serves, and judged the probe against the pools there
  # (one that holds the probe's address, say); the platform's own pool is judged when it is made.
  case "$output" in
    *"denied the request"*)
      echo "MetalLB's IPAddressPool webhook answers (it judged the dry run: $output)"
      exit 0 ;;
  esac
  sleep @interval@
done
echo "MetalLB's IPAddressPool webhook did not accept a dry-run IPAddressPool within @bound@s: $output" >&2
echo "check: @check@" >&2
exit 1
