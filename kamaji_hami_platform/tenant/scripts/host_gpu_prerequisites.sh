if ! command -v nvidia-smi >/dev/null 2>&1; then
  miss 'nvidia-smi is not on PATH: install the NVIDIA driver (HAMi needs >= 440)'
else
  names=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || true)
  gpus=$(printf '%s\n' "$names" | grep -ciF @product@ || true)
  [ "${gpus:-0}" -ge @per_worker@ ] || miss "nvidia-smi lists ${gpus:-0} @model@ card(s) (@product_text@), \
each worker of the tenant carries @per_worker@; it lists: $(printf '%s' "$names" | tr '\n' ';'): \
check the driver (nvidia-smi), the cards and gpus.model"
fi
command -v nvidia-container-runtime >/dev/null 2>&1 \
  || miss 'the NVIDIA container toolkit is not installed (no nvidia-container-runtime on PATH): install nvidia-container-toolkit'
case "$runtime" in
  containerd)
    containerd config dump 2>/dev/null | grep -Eq @containerd_default_runtime@ \
      || miss 'containerd'"'"'s default runtime is not nvidia (HAMi requires it): nvidia-ctk runtime configure --runtime=containerd --set-as-default, then systemctl restart containerd' ;;
  crio)
    crio config 2>/dev/null | grep -Eq @crio_default_runtime@ \
      || miss 'CRI-O'"'"'s default runtime is not nvidia (HAMi requires it): nvidia-ctk runtime configure --runtime=crio --set-as-default, then systemctl restart crio' ;;
esac
