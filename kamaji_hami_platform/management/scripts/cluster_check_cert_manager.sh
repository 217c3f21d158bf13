
if ! out=$(@kubectl@ get crd @crds@ -o name 2>&1); then
  echo "management.certManager.install is false, but cert-manager is not installed on the cluster" \
    "(Kamaji's chart needs it in @cert_manager_namespace@): $out" >&2
  exit 1
fi
echo "cert-manager is installed"
