[ "$(stat -fc %T @cgroup_root@ 2>/dev/null)" = cgroup2fs ] \
  || miss 'the host runs cgroup v1 (@cgroup_root@ is not cgroup2fs): the kubelet since v1.35 refuses it; boot with systemd.unified_cgroup_hierarchy=1'
