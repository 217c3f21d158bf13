# The kind node is not on the tenant's network: it reaches the tenant API at its Service's cluster
# address, under the name the API server's certificate carries for Kamaji's own clients.
service_ip=$(docker exec "$node" @management_kubectl@ -n @namespace@ get service @service@ -o jsonpath='{.spec.clusterIP}' 2>&1) \
  && [ -n "$service_ip" ] || {
  echo "cannot find the cluster address of tenant @tenant@'s API Service (@namespace@/@service@): $service_ip" >&2; exit 1; }
