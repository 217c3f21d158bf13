# k3s's ServiceLB answers every LoadBalancer Service that names no loadBalancerClass, the tenant
# APIs' too, beside the MetalLB the platform installs. It runs one DaemonSet per such Service,
# labelled @svcname_label@, and makes a ServiceAccount @service_account@ when it starts; nodes
# labelled @enablelb_label@ are the ones it uses (k3s pkg/cloudprovider/servicelb.go).
if ! servicelb=$(@kubectl@ get daemonsets --all-namespaces -l @svcname_label@ -o jsonpath='{range .items[*]}{" "}{.metadata.namespace}/{.metadata.name}{end}' 2>&1); then
  warn "cannot tell whether k3s's ServiceLB runs: listing DaemonSets failed ($servicelb)"
elif [ -n "$servicelb" ]; then
  lacks "no other LoadBalancer controller beside the platform's MetalLB (pool @pool@): k3s's ServiceLB runs" \
    "(DaemonSets$servicelb) and would answer the tenant APIs' Services too." \
    "Fix: start every k3s server with --disable=servicelb"
else
  signs=$({ @kubectl@ get serviceaccounts --all-namespaces --field-selector metadata.name=@service_account@ \
              -o name 2>/dev/null; @kubectl@ get nodes -l @enablelb_label@ -o name 2>/dev/null; } | awk 'NF { printf " %s", $1 }')
  if [ -n "$signs" ]; then
    warn "k3s's ServiceLB serves no Service now but was set up on this cluster ($signs): if it is" \
      "still enabled it will answer the tenant APIs' Services beside MetalLB; start every k3s server" \
      "with --disable=servicelb"
  else
    echo "no k3s ServiceLB: MetalLB alone gives the pool @pool@"
  fi
fi
