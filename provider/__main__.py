"""The component provider of kamaji-hami-platform: ManagementCluster, KamajiTenant and HamiNodePool
for Pulumi programs in any language. Kept thin: the schema is inferred from the components' own
annotations and docstrings (pulumi provider/experimental/analyzer.py)."""

from pulumi.provider.experimental import component_provider_host

from kamaji_hami_platform import HamiNodePool, KamajiTenant, ManagementCluster, __version__

# The package name makes the type tokens `kamaji-hami-platform:index:<Component>`: the TYPE_TOKENs
# the components register with.
PACKAGE = "kamaji-hami-platform"

if __name__ == "__main__":
    component_provider_host([ManagementCluster, KamajiTenant, HamiNodePool], name=PACKAGE,
                            version=__version__)
