"""A Pulumi program that registers recorded custom resources as they were registered, flat, so that
a preview of it hands each to its real provider's `Check`: the inputs a state holds are the checked
ones (pulumi pkg/resource/deploy/step_generator.go: the engine stores what `Check` returned), which
fill in defaults (a Helm release's every option) and drop what a provider does not keep.

Run by the Python language host from a folder holding `resources.json` (tests/engine/
checked_inputs.py writes it): `[{"type", "name", "inputs", "provider"}]`, inputs in the wire form
(secrets marked), providers before what they serve. Imports nothing from the platform.
"""

import json

import pulumi

SECRET_SIG = "4dabf18193072939515e22adb298388d"
SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270"
PROVIDER_PREFIX = "pulumi:providers:"


def value(wire):
    if isinstance(wire, dict):
        if wire.get(SECRET_SIG) == SECRET_VALUE:
            return pulumi.Output.secret(value(wire.get("value")))
        return {key: value(item) for key, item in wire.items()}
    if isinstance(wire, list):
        return [value(item) for item in wire]
    return wire


providers = {}
with open("resources.json") as resources:
    for resource in json.load(resources):
        props = {key: value(item) for key, item in resource["inputs"].items()}
        if resource["type"].startswith(PROVIDER_PREFIX):
            package = resource["type"][len(PROVIDER_PREFIX):]
            providers[resource["name"]] = pulumi.ProviderResource(package, resource["name"], props)
            continue
        provider = providers.get(resource["provider"])
        pulumi.CustomResource(resource["type"], resource["name"], props,
                              opts=pulumi.ResourceOptions(provider=provider))
