"""Resource inputs that may arrive as Outputs.

A Python program hands the components resources. A program in another language reaches them
through Pulumi's component provider (provider/), which passes any input that carries dependencies
as an Output (pulumi sdk/python/lib/pulumi/provider/server.py `_select_value`): a list of workers
is then one Output of the list. `depends_on` takes Outputs of resources; `replace_with` takes
resources only (pulumi/resource.py `ResourceOptions.replace_with`), so an Output there only orders.
"""

from collections.abc import Sequence
from typing import TypeVar

import pulumi

R = TypeVar("R", bound=pulumi.Resource)


def by_name(names: Sequence[str], resources: pulumi.Input[Sequence[R]],
            where: str) -> dict[str, R | pulumi.Output[R]]:
    """One resource per name, in order: the resources themselves, or Outputs of each."""
    if not isinstance(resources, pulumi.Output):
        return dict(zip(names, resources, strict=True))  # type: ignore[arg-type]

    def pick(items: Sequence[R], index: int) -> R:
        if len(items) != len(names):
            raise ValueError(f"{where}: {len(items)} workers for {len(names)} nodes ({', '.join(names)})")
        return items[index]

    return {name: resources.apply(lambda items, i=index: pick(items, i)) for index, name in enumerate(names)}


def replaceable(*resources: pulumi.Input[pulumi.Resource] | None) -> list[pulumi.Resource] | None:
    """The resources `replace_with` can name: those given as resources, not as Outputs."""
    plain = [resource for resource in resources if isinstance(resource, pulumi.Resource)]
    return plain or None


def resource_or_none(resource: pulumi.Input[pulumi.Resource] | None) -> pulumi.Resource | None:
    """A resource `deleted_with` can name: given as a resource, not as an Output (which only
    another language's program passes; the option is then left out)."""
    return resource if isinstance(resource, pulumi.Resource) else None
