"""CrossGuard policy pack: `pulumi preview --policy-pack policy`."""

from pack import PACK_NAME, policies
from pulumi_policy import EnforcementLevel, PolicyPack

PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=policies())
