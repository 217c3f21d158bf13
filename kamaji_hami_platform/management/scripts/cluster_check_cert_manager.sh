if out=$(@kubectl@ get crd @crds@ -o name 2>&1); then
  echo "cert-manager is installed"
else
  lacks "cert-manager: management.certManager.install is false, but cert-manager is not installed" \
    "(Kamaji's chart needs it in @cert_manager_namespace@): $out." \
    "Fix: install cert-manager, or set management.certManager.install: true"
fi
