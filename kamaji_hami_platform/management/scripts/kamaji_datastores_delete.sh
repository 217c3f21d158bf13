set -u
@access@
# Nothing to do when Kamaji's CRDs are gone already (an uninstall that finished by hand); a cluster
# that does not answer is said, and the destroy goes on (Kamaji's uninstall then fails or waits).
if ! found=$(@kubectl@ get crd @crd@ -o name 2>&1); then
  case "$found" in
    *NotFound*) echo "no Kamaji DataStores to delete (@crd@ is not installed)" ;;
    *) echo "warning: Kamaji's DataStores could not be looked up before its uninstall ($found);" \
         "if the uninstall waits on one, remove its finalizer: @kubectl_hint@ patch @crd@ default" \
         "--type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]'" >&2 ;;
  esac
  exit 0
fi
# Kamaji's DataStore controller keeps a finalizer on each DataStore until no TenantControlPlane
# uses it; Helm's uninstall deletes the controller with the chart's DataStores, and the finalizer
# would never be removed (the uninstall then waits out its timeout). So they go first, while the
# controller runs; the tenants' control planes are gone by now.
if ! output=$(@kubectl@ delete @crd@ -l @selector@ --ignore-not-found --wait=true \
    --timeout=@timeout@s 2>&1); then
  echo "Kamaji's DataStores (@selector@) were not deleted within @timeout@s, before its uninstall: $output" >&2
  echo "check: @check@ (with Kamaji's controller gone, only removing the finalizer by hand releases one)" >&2
  exit 1
fi
printf '%s\n' "$output"
