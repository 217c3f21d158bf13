set -eu
@bounded_docker@
node=@node@
container=$(@kubectl@ get daemonset @daemonset@ -o jsonpath='{.spec.template.spec.containers[0].name}')
if [ "$container" != @container@ ]; then
  echo "kube-system/@daemonset@ in the kind cluster does not run @container@ first" \
    "(found '$container'): not the kindnet of the pinned node image; nothing changed" >&2
  exit 1
fi
limits=$(@kubectl@ get daemonset @daemonset@ -o jsonpath='{.spec.template.spec.containers[0].resources.limits}')
if [ -z "$limits" ]; then echo "kindnet runs without limits"; exit 0; fi
@kubectl@ patch daemonset @daemonset@ --type json -p @patch@ >/dev/null
@kubectl@ rollout status daemonset @daemonset@ --timeout=@rollout_timeout@ >/dev/null
echo "kindnet limits removed ($limits), pods rolled"
