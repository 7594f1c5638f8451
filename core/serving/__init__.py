"""Serving and planning: a replica under a closed loop of clients (closed_loop, the face), the engine simulator (engine_sim), SLO percentiles and goodput (slo), the layout search (layout, operating_point), disaggregation (disagg), cost, prefix-cache tiers (kv_tiers), published frontiers (frontier), workload profiles, launch commands (launch, plan_commands)."""

# the face is closed_loop's public API (its __all__); names defined elsewhere in the package are imported from their module
from core.serving.closed_loop import *  # noqa: F403
from core.serving.closed_loop import __all__  # noqa: F401
