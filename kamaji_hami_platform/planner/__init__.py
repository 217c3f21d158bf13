"""The offline capacity planner (`kamaji-hami-plan`): what HAMi would do with a stack's GPU pods,
no cluster and no Pulumi CLI needed. `cli` parses the command line; `workloads_report` plans a
stack's declared workloads; `compare` sets a base branch's plan beside a pull request's."""

from kamaji_hami_platform.planner.cli import main

__all__ = ["main"]
