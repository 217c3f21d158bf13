"""GPUs: HAMi in each tenant (`HamiNodePool`), the mock cards, and a model of HAMi's placement.

The model: `GpuDevice`, `GpuRequest`, `fit`, `FitResult` (one node, `gpu.fit`), `plan`,
`plan_nodes`, `plan_sequence`, `Plan`, `Placement`, `Span`, `capacity`, `possible_outcomes`
(across nodes, `gpu.plan`: where HAMi may pick any of several tied nodes, the plan lists them and
gives each count as a range over those choices), `plan_any_order`, `Batch`, `OrderPlan` (pods
created together and placed in every order HAMi may take, `gpu.orders`), `plan_tenant` and
`reference_request` (a tenant's config, `gpu.capacity`). The offline planner CLI is
`kamaji_hami_platform.planner`.
"""

from kamaji_hami_platform.gpu.capacity import plan_tenant, reference_request, tenant_capacity_summary
from kamaji_hami_platform.gpu.card_fit import FitResult, GpuRequest, fit
from kamaji_hami_platform.gpu.devices import GpuDevice
from kamaji_hami_platform.gpu.orders import Batch, OrderPlan, plan_any_order
from kamaji_hami_platform.gpu.placement import (
    Placement,
    Plan,
    Span,
    capacity,
    plan,
    plan_nodes,
    plan_sequence,
    pods_that_fit,
    possible_outcomes,
)

__all__ = [
    "Batch",
    "FitResult",
    "GpuDevice",
    "GpuRequest",
    "OrderPlan",
    "Placement",
    "Plan",
    "Span",
    "capacity",
    "fit",
    "plan",
    "plan_any_order",
    "plan_nodes",
    "plan_sequence",
    "plan_tenant",
    "pods_that_fit",
    "possible_outcomes",
    "reference_request",
    "tenant_capacity_summary",
]
