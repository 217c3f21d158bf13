set -u
@access@
# Nothing to do when Kamaji's CRDs are gone already (an uninstall that finished by hand).
if ! @kubectl@ get crd @crd@ >/dev/null 2>&1; then
  echo "no Kamaji DataStores to delete (@crd@ is not installed)"
  exit 0
fi
# Kamaji's DataStore controller keeps a finalizer on each DataStore until no TenantControlPlane
# uses it; Helm's uninstall deletes the controller with the chart's DataStores, and the finalizer
# would never be removed (the uninstall then waits out its timeout). So they go first, while the
# controller runs; the tenants' control planes are gone by now.
if ! output=$(@kubectl@ delete @crd@ -l @selector@ --ignore-not-found --wait=true \
    --timeout=@timeout@s 2>&1); then
  echo "Kamaji's DataStores (@selector@) were not deleted within @timeout@s, before its uninstall: $output" >&2
  echo "check: @check@" >&2
  exit 1
fi
printf '%s\n' "$output"
