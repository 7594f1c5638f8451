"""A replica under load, as the pages draw it (issue 35, numbers audit 3 B3.7): Poisson arrivals at rates from a
light load to just past what the replica can take, each rate one :func:`~core.serving.engine_sim.loops.simulate_open`
run, and goodput from those runs' percentiles.

Each run starts warm (:func:`~core.serving.engine_sim.loops.simulate_open`'s ``warm``: the steady state's sequences
already decoding), so replicas holding thousands of sequences settle within a run of :data:`SWEEP_REQUESTS`.
The rates are shares of the open loop's capacity, :func:`open_capacity`: by the step model every request costs its
computed prompt tokens x prefill seconds per token of the replica's time plus ``steps`` decode steps shared by the
``n`` sequences running, so ``n`` running sequences serve at most ``n / (steps x t(n) + n x computed x p)``
requests/s, ``steps = (mean output - 1) / accepted_length``; the capacity is that at its best ``n`` up to the
engine's running cap. :data:`SWEEP_SHARES` reach 1.25 of it, where the queue grows (the run says "unstable": a
quarter more arrivals than the replica serves add a fifth of the measured requests to the queue over the run, twice
what the test for it asks).

The lengths of a workload (:func:`workload_lengths`): a workload that is a catalog profile's (the sidebar's preset,
:meth:`core.serving.workload_profiles.WorkloadProfile.workload`) is drawn from the lognormal fitted to that profile's
median and p90; any other is every request ``input_len`` in, ``output_len`` out. The prefix cache serves
``prefix_reuse`` of each prompt (:func:`workload_knobs`).
"""

from __future__ import annotations

from core._util.checks import is_number, whole
from core.deployment.specs import Workload
from core.serving.closed_loop import ReplicaCosts
from core.serving.engine_sim.knobs import DEFAULT_KNOBS, EngineKnobs, Lengths, load_list, resolved
from core.serving.engine_sim.loops import simulate_open
from core.serving.engine_sim.results import Goodput, SimResult, goodput, miss
from core.serving.workload_profiles import WorkloadProfile, load_profiles

__all__ = [
    "SWEEP_REQUESTS",
    "SWEEP_SHARES",
    "load_sweep",
    "open_capacity",
    "sweep_goodput",
    "workload_knobs",
    "workload_lengths",
    "workload_profile",
]

SWEEP_SHARES = (0.01, 0.2, 0.4, 0.6, 0.75, 0.85, 0.95, 1.25)  # of open_capacity
SWEEP_REQUESTS = 1000  # measured requests per rate


def open_capacity(costs: ReplicaCosts, lengths: Lengths, knobs: EngineKnobs = DEFAULT_KNOBS) -> float:
    """Requests/s the replica serves at most under an open loop, by the step model (the module docstring): the
    largest ``n / (steps x t(n) + n x computed x p)`` over ``n`` = the cost grid's batches up to the running cap,
    and the cap itself, with the attention-DP pacing of the steps carrying prompt work
    (:meth:`ReplicaCosts.paced_decode_s`, :meth:`ReplicaCosts.prompt_s`). Means of the lengths (the lognormal's, its
    clip ignored: a slight under-estimate)."""
    res = resolved(costs, lengths, knobs)
    computed = max(1.0, lengths.mean("input") * (1.0 - res.prefix_hit))
    steps = max(0.0, lengths.mean("output") - 1.0) / res.accepted_length
    prompt_s = costs.prompt_s(computed)
    ns = {float(res.cap), *(b for b in costs.batch if 1 <= b <= res.cap)}
    return max(n / (steps * costs.paced_decode_s(n, steps, computed) + n * prompt_s) for n in ns)


def load_sweep(
    costs: ReplicaCosts,
    lengths: Lengths,
    knobs: EngineKnobs = DEFAULT_KNOBS,
    *,
    shares=SWEEP_SHARES,
    requests: int = SWEEP_REQUESTS,
) -> list[SimResult]:
    """:func:`simulate_open`, warm, at each of ``shares`` of :func:`open_capacity` (increasing; the same seed at
    every rate, so the runs differ by their rate only)."""
    top = open_capacity(costs, lengths, knobs)
    fractions = load_list("shares", shares)
    if not all(is_number(f) and 0 < f <= 10 for f in fractions):
        raise ValueError("shares must be numbers in (0, 10]: shares of the replica's capacity")
    n = whole("requests", requests, 1, 1_000_000)
    return [simulate_open(costs, lengths, f * top, knobs, requests=n, warm=True) for f in sorted(fractions)]


def sweep_goodput(
    costs: ReplicaCosts,
    lengths: Lengths,
    sweep: list[SimResult],
    ttft_target_s: float,
    tpot_target_s: float,
    quantile: float = 0.99,
    knobs: EngineKnobs = DEFAULT_KNOBS,
    *,
    requests: int = SWEEP_REQUESTS,
    iterations: int = 2,
) -> Goodput:
    """Goodput over ``sweep`` (:func:`~core.serving.engine_sim.results.goodput`: the last rate whose ``quantile``
    TTFT and TPOT meet the targets before the first that misses), then ``iterations`` more runs bisecting between
    those two rates; "what binds" is what the lowest missing run misses."""
    whole("iterations", iterations, 0, 20)
    g = goodput(sweep, ttft_target_s, tpot_target_s, quantile)
    if g.at is None:
        return g
    above = sorted((r for r in sweep if r.load > g.load), key=lambda r: r.load)
    if not above:
        return g
    best, hi, binding = g.at, above[0].load, g.binding
    for _ in range(iterations):
        r = simulate_open(costs, lengths, (best.load + hi) / 2, knobs, requests=requests, warm=True)
        why = miss(r, ttft_target_s, tpot_target_s, quantile)
        if why is None:
            best = r
        else:
            hi, binding = r.load, why
    return Goodput(best.load, best.requests_per_s, best.output_tokens_per_s_per_gpu, best, binding)


def workload_profile(workload: Workload) -> WorkloadProfile | None:
    """The catalog profile ``workload`` is (its lengths and prefix reuse, any concurrency), or None."""
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload, got {type(workload).__name__}")
    return next((p for p in load_profiles() if p.workload(batch=workload.batch) == workload), None)


def workload_lengths(workload: Workload) -> Lengths:
    """The lengths to simulate ``workload`` with (the module docstring): its profile's fit, else exact."""
    p = workload_profile(workload)
    return Lengths.from_profile(p) if p is not None else Lengths.exact(workload.input_len, workload.output_len)


def workload_knobs(workload: Workload, seed: int = 0) -> EngineKnobs:
    """The engine's knobs for ``workload``: the costs' own scheduling, its prefix-cache hit share."""
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload, got {type(workload).__name__}")
    return EngineKnobs(prefix_hit=workload.prefix_reuse, seed=seed)
