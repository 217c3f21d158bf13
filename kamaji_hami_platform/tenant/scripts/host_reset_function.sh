reset_host() {
  if ! reset_output=$(kubeadm reset -f 2>&1); then
    printf 'kubeadm reset -f failed: %s\n' "$reset_output"; return 1
  fi
  rm -f @kindnet_cni_config@ @join_marker@
}
