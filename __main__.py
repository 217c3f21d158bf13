"""kamaji-hami-platform: read config, build components, export outputs."""

import pulumi

from components.config import load_config
from components.management_cluster import ManagementCluster

platform = load_config()

management = ManagementCluster("management", platform.management)

pulumi.export("managementKubeconfig", management.kubeconfig)
pulumi.export("metallbPoolRange", management.pool_range)
