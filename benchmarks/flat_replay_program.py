"""The flat replay for the engine: the program's custom resources registered again from a recording
(`flat.json` next to this file, written by `python -m benchmarks.engine_preview`) as generic
resources: `pulumi.CustomResource` of the recorded type, name and inputs (their wire form, secrets
and unknowns as the engine received them), reads as generic reads, the program's explicit
Kubernetes providers as generic `pulumi.ProviderResource`s that each resource names as its provider.
No components, no typed classes, no Outputs, no dependencies: what the engine costs for the same
resources with nothing of the program's structure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pulumi

DATA = Path(__file__).resolve().parent / "flat.json"
DIY_ORGANIZATION = "organization"


def own_stack_name() -> str:
    organization = pulumi.get_organization()
    if organization == DIY_ORGANIZATION:
        return pulumi.get_stack()
    return f"{organization}/{pulumi.get_project()}/{pulumi.get_stack()}"


data = json.loads(DATA.read_text())
providers = [pulumi.ProviderResource(provider["package"], provider["name"], provider["inputs"])
             for provider in data["providers"]]
for resource in data["resources"]:
    provider = providers[resource["provider"]] if resource["provider"] is not None else None
    inputs, read_id = resource["inputs"], resource["id"]
    if resource["type"] == "pulumi:pulumi:StackReference":
        read_id = own_stack_name()
        inputs = {"name": read_id}
    pulumi.CustomResource(resource["type"], resource["name"], inputs,
                          pulumi.ResourceOptions(provider=provider, id=read_id))
