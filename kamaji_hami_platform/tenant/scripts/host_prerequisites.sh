missing=""
miss() { missing="$missing
  - $1"; }
# The minor of a "v1.<minor>.<patch>" in the input ("Kubernetes v1.35.4", "v1.35.4"), else empty.
minor_of() { sed -n 's/^.*v1\.\([0-9][0-9]*\)\.[0-9].*$/\1/p' | head -n 1; }
kubeadm_minor="" kubelet_minor=""
if ! command -v kubeadm >/dev/null 2>&1; then
  miss 'kubeadm is not on PATH: install kubeadm @kubeadm_wanted@ (https://kubernetes.io/docs/setup/production-environment/tools/kubeadm/install-kubeadm/)'
else
  kubeadm_version=$(kubeadm version -o short 2>/dev/null || true)
  kubeadm_minor=$(printf '%s\n' "$kubeadm_version" | minor_of)
  if [ -z "$kubeadm_minor" ] || [ "$kubeadm_minor" -lt @kubeadm_min@ ] \
      || [ "$kubeadm_minor" -gt @kubeadm_max@ ]; then
    miss "kubeadm is ${kubeadm_version:-of unknown version}, the tenant runs @version@: \
install kubeadm @kubeadm_wanted@"
    kubeadm_minor=""
  fi
fi
if ! command -v kubelet >/dev/null 2>&1; then
  miss 'kubelet is not on PATH: install kubelet v1.@kubelet_min@..v1.@kubelet_max@ (the kubelet package, with kubeadm'"'"'s systemd drop-in)'
else
  kubelet_version=$(kubelet --version 2>/dev/null || true)
  kubelet_minor=$(printf '%s\n' "$kubelet_version" | minor_of)
  if [ -z "$kubelet_minor" ] || [ "$kubelet_minor" -lt @kubelet_min@ ] \
      || [ "$kubelet_minor" -gt @kubelet_max@ ]; then
    miss "kubelet is ${kubelet_version:-of unknown version}, the tenant runs @version@: \
install kubelet v1.@kubelet_min@..v1.@kubelet_max@ (never newer than the control plane)"
  elif [ -n "$kubeadm_minor" ] && [ "$kubelet_minor" -lt $((kubeadm_minor - 3)) ]; then
    miss "kubelet v1.$kubelet_minor is older than kubeadm v1.$kubeadm_minor supports (three minors): \
install kubelet v1.$((kubeadm_minor - 3)) or newer, or kubeadm v1.@minor@"
  fi
fi
runtime=""
for unit in @container_runtimes@; do
  if systemctl is-active --quiet "$unit" 2>/dev/null; then runtime=$unit; break; fi
done
[ -n "$runtime" ] || miss 'no container runtime is active: install and start containerd (systemctl enable --now containerd) or CRI-O'
if [ "$runtime" = containerd ]; then
  # containerd 1.x cannot tell the kubelet its cgroup driver (KubeletCgroupDriverFromCRI needs
  # containerd 2.0): runc must use systemd cgroups as the tenant's kubelets do (cgroupDriver
  # systemd, tenant/control_plane.py), or pods fail to start.
  containerd_major=$(containerd --version 2>/dev/null | awk '{print $3}' | sed 's/^v//' | cut -d . -f 1)
  if [ "$containerd_major" = 1 ] && ! containerd config dump 2>/dev/null \
      | grep -Eq @systemd_cgroup@; then
    miss 'containerd 1.x runs runc with cgroupfs, the tenant'"'"'s kubelets use systemd: set SystemdCgroup = true under the runc options in /etc/containerd/config.toml, then systemctl restart containerd'
  fi
fi
if [ "$runtime" = containerd ] && containerd config dump 2>/dev/null \
    | grep -E '^[[:space:]]*disabled_plugins[[:space:]]*=' | grep -Eq @cri_plugin@; then
  miss 'containerd runs without its CRI plugin (disabled_plugins lists it, as some distributions ship it): remove it from disabled_plugins in /etc/containerd/config.toml, then systemctl restart containerd'
fi
systemctl cat kubelet >/dev/null 2>&1 \
  || miss 'the kubelet service is not installed: install the kubelet package (kubelet.service)'
@cgroup_v2_check@
tools_missing=""
for tool in @host_tools@; do
  command -v "$tool" >/dev/null 2>&1 || tools_missing="$tools_missing $tool"
done
[ -z "$tools_missing" ] || miss "not on PATH:$tools_missing (the kubelet and kube-proxy use them): \
install iptables, iproute2 and util-linux"
# The clock against the tenant API server's: its stamp on this join's bootstrap token ($api_time),
# taken just before this session opened. Certificates and the token are judged by both clocks.
now=$(date -u +%s)
if [ "$api_time" -gt $(( now + 1 + @clock_skew_seconds@ )) ]; then
  miss "the clock is $(( api_time - now ))s behind the tenant API server's (at most @clock_skew_seconds@s): its certificates would not be valid yet; set the clock right and keep it synchronized (systemd-timesyncd or chrony)"
elif [ "$now" -gt $(( api_time + @clock_skew_seconds@ + @session_seconds@ )) ]; then
  miss "the clock is $(( now - api_time ))s ahead of the tenant API server's (at most @clock_skew_seconds@s, and @session_seconds@s more for this SSH session to open): the bootstrap token would look expired; set the clock right and keep it synchronized (systemd-timesyncd or chrony)"
fi
@reach_function@
# Not joined by kubeadm, yet a kubelet is set up or listening (another installer's node, at a
# mistyped address?): kubeadm's preflight would refuse it, and nothing here may reset it.
if [ ! -f @kubelet_config@ ]; then
  if [ -f @kubelet_node_config@ ]; then
    miss 'a kubelet is set up on the host (@kubelet_node_config@) that kubeadm did not join here: it may be a node of another cluster; if not, reset it first (kubeadm reset -f)'
  elif reach 127.0.0.1 @kubelet_port@; then
    miss 'something listens on the kubelet'"'"'s port @kubelet_port@: a kubelet of another cluster? Stop it first'
  fi
fi
for target in "$endpoint" "$konnectivity"; do
  reach "${target%:*}" "${target##*:}" && continue
  case $? in
    2) miss "cannot check that the host reaches $target: install bash or nc" ;;
    *) miss "the host does not reach $target (the tenant's API server and Konnectivity): check routes, firewalls and the tenant API's NetworkPolicy (it admits this host's address)" ;;
  esac
done
for module in @kernel_modules@; do
  grep -q "^$module " @proc_modules@ 2>/dev/null && continue
  grep -qs "/$module\.ko" "@modules_builtin@" && continue
  # Built into a kernel that lists no modules (no module support, no modules.builtin): what the
  # module makes is there.
  case $module in
@module_active_cases@
  esac
  miss "kernel module $module is not loaded: modprobe $module, and list it in /etc/modules-load.d/"
done
[ "$(cat @ip_forward@ 2>/dev/null)" = 1 ] \
  || miss 'net.ipv4.ip_forward is not 1 (kubeadm'"'"'s preflight requires it): sysctl -w net.ipv4.ip_forward=1, and set it in /etc/sysctl.d/'
cni_missing=""
for plugin in @cni_plugins@; do
  [ -x @cni_bin_dir@/"$plugin" ] || cni_missing="$cni_missing $plugin"
done
[ -z "$cni_missing" ] || miss "CNI plugins missing from @cni_bin_dir@:$cni_missing (kindnet uses them): \
install the CNI plugins (kubernetes-cni package, or github.com/containernetworking/plugins releases)"
if [ "$(awk 'NR > 1' @proc_swaps@ 2>/dev/null | wc -l)" -gt 0 ]; then
  miss 'swap is on: swapoff -a, and remove the swap entries from /etc/fstab (Kubernetes sizes and evicts pods by memory without swap)'
fi
@gpu_prerequisites@
if [ -n "$missing" ]; then
  printf 'host %s cannot join tenant %s; nothing was changed on it. Missing:%s\n' \
    @host@ @tenant@ "$missing" >&2
  exit 1
fi
# Not a refusal: the clock agrees with the API server's now, but one no daemon keeps right drifts.
if command -v timedatectl >/dev/null 2>&1 \
    && [ "$(timedatectl show -p NTPSynchronized --value 2>/dev/null)" = yes ]; then :
else
  echo "note: host @host@'s clock is not reported synchronized (timedatectl NTPSynchronized); it agrees with the tenant API server's now, but may drift: enable systemd-timesyncd or chrony"
fi
