set -eu
@bounded_docker@
@list_clusters@
if printf '%s\n' "$clusters" | grep -qx @cluster@; then
  echo 'kind cluster @cluster@ already exists'
else
  umask 077; mkdir -p @kubeconfig_dir@
  kind create cluster --name @cluster@ --config - --kubeconfig @kubeconfig@ --wait 120s
fi
if ! networks=$(docker container inspect --format '{{ range $name, $e := .NetworkSettings.Networks }}{{ $name }} {{ end }}' @node@ 2>&1); then
  echo "cannot inspect the kind node @node@: $networks" >&2; exit 1
fi
networks=$(echo $networks)
case " $networks " in *' @network@ '*) ;; *)
  echo "the kind node @node@ is on Docker network(s) $networks, not @network@: this kind" \
    "release ignores @network_env@. Delete it" \
    "(kind delete cluster --name @cluster@)," \
    "install kind @kind_version@ and run make up again." >&2
  exit 1 ;;
esac
