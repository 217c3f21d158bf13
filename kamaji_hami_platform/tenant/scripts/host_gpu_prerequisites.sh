if ! command -v nvidia-smi >/dev/null 2>&1; then
  miss 'nvidia-smi is not on PATH: install the NVIDIA driver (HAMi needs >= 440)'
else
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  [ "${gpus:-0}" -ge @per_worker@ ] || miss "nvidia-smi -L lists ${gpus:-0} GPU(s), \
each worker of the tenant carries @per_worker@ @model@: check the driver (nvidia-smi) and the cards"
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
