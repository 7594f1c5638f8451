"""An engine simulator for one replica (issue 35): continuous batching with the engine's knobs, requests drawn
from a workload's length distributions, a closed loop of clients or Poisson arrivals, per-request TTFT, TPOT and
inter-token gaps, so P50 / P90 / P99 and goodput come from one model.

The step model is :mod:`core.serving`'s (its :class:`~core.serving.ReplicaCosts`): a step that decodes ``n``
sequences and prefills ``p`` prompt tokens costs ``decode_s(n) + p x prefill_s_per_token``; a step carries at
most the token budget, ``n x (draft + 1)`` of it for the decodes; running sequences are at most
min(max_running_requests, the KV cache's sequences at the full context, budget // (draft + 1)). Where the
analytical models and this one disagree (a lone prompt's TTFT under :mod:`core.serving.slo`'s full-budget step, numbers
audit 3 B3.7), this one is the reference. Pure Python + numpy.

    from core.serving.engine_sim import EngineKnobs, Lengths, closed_frontier, simulate_open
    pts = closed_frontier(costs, Lengths.exact(1024, 1024))   # 1, 2, 4 .. 512 clients, 2,000 requests each
    r = simulate_open(costs, Lengths.from_profile(chat), rate=4.0, knobs=EngineKnobs(prefix_hit=0.4))
    r.summary().ttft_s["P99"]

    sweep = load_sweep(costs, workload_lengths(wl), workload_knobs(wl))   # 1% .. 110% of open_capacity
    sweep_goodput(costs, workload_lengths(wl), sweep, 3.0, 0.1, 0.99)   # the Layouts page's goodput

Modules: :mod:`.knobs` (the knobs, the lengths), :mod:`.engine` (the batching loop), :mod:`.loops` (closed,
open, disaggregated), :mod:`.results` (percentiles, goodput), :mod:`.sweep` (a replica under load as the pages
draw it: the rates, the workload's lengths, goodput refined).
"""

from core.serving.engine_sim.knobs import POLICIES, EngineKnobs, Lengths, acceptance_rate, emitted_per_step
from core.serving.engine_sim.loops import (
    FRONTIER,
    closed_frontier,
    goodput_rate,
    open_sweep,
    simulate_closed,
    simulate_disaggregated,
    simulate_open,
)
from core.serving.engine_sim.results import PERCENTILES, Goodput, SimResult, Summary, goodput, miss, weighted_quantile
from core.serving.engine_sim.sweep import (
    SWEEP_REQUESTS,
    SWEEP_SHARES,
    load_sweep,
    open_capacity,
    sweep_goodput,
    workload_knobs,
    workload_lengths,
    workload_profile,
)

__all__ = [
    "FRONTIER",
    "PERCENTILES",
    "POLICIES",
    "SWEEP_REQUESTS",
    "SWEEP_SHARES",
    "EngineKnobs",
    "Goodput",
    "Lengths",
    "SimResult",
    "Summary",
    "acceptance_rate",
    "closed_frontier",
    "emitted_per_step",
    "goodput",
    "goodput_rate",
    "load_sweep",
    "miss",
    "open_capacity",
    "open_sweep",
    "simulate_closed",
    "simulate_disaggregated",
    "simulate_open",
    "sweep_goodput",
    "weighted_quantile",
    "workload_knobs",
    "workload_lengths",
    "workload_profile",
]
