"""A tenant cluster: its Kamaji control plane, isolation and kubeadm-joined workers (`KamajiTenant`)."""
