"""Serving and planning: a replica under a closed loop of clients (closed_loop, the face), the engine simulator (engine_sim), SLO percentiles and goodput (slo), the layout search (layout, operating_point), disaggregation (disagg), cost, prefix-cache tiers (kv_tiers), published frontiers (frontier), workload profiles, launch commands (launch, plan_commands)."""

from core.serving.closed_loop import (
    ReplicaCosts,
    ServingPoint,
    pareto,
    replica_costs,
    serve_closed_loop,
    serve_decode_pool,
    serve_disaggregated,
    serving_sweep,
)

__all__ = [
    "ReplicaCosts",
    "ServingPoint",
    "pareto",
    "replica_costs",
    "serve_closed_loop",
    "serve_decode_pool",
    "serve_disaggregated",
    "serving_sweep",
]
