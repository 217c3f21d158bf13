"""The management cluster: kind, cert-manager, MetalLB and Kamaji (`ManagementCluster`)."""
