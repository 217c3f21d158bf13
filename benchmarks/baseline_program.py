"""The engine's floor: a trivial program registering BENCH_RESOURCES plain resources."""

import os

import pulumi

for index in range(int(os.environ["BENCH_RESOURCES"])):
    pulumi.CustomResource("bench:index:Plain", f"plain-{index}", {"value": index})
