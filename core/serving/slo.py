"""Latency targets as percentiles under load, and goodput (issue 23): a colocated replica (chunked prefill, the costs
of :class:`core.serving.ReplicaCosts`) fed by requests arriving at random (a Poisson process: the assumption, as
vLLM's ``bench serve --request-rate`` sends them), one workload's lengths.

At ``rate`` requests/s, with ``n`` sequences in decode (Little's law, as :mod:`core.serving`):

* the prompts' own work takes a share ``a = rate x computed x prefill seconds per token`` of the time and
  stretches the decode steps to ``t(n) / (1 - a)`` on average;
* a prompt needs ``computed / (budget - n)`` steps' worth of the token budget left by the decodes, each such step
  ``t_mix = t(n) + (budget - n) x prefill seconds per token``; the prompts queue for the budget, each holding it
  ``S = max(1, computed / (budget - n)) x t_mix``, at load ``rho = rate x computed x t_mix / (budget - n)``;
* waiting for the prefill budget: an M/D/1 queue (random arrivals, equal prompts) at load ``rho``:
  mean wait ``rho S / (2 (1 - rho))`` (Pollaczek-Khinchine) and a tail taken as exponential with that mean,
  ``P(W > t) = rho exp(-rho t / mean)`` (exact for M/M/1; an approximation here): the q-th percentile is
  ``mean / rho x ln(rho / (1 - q))`` where ``rho > 1 - q``, else 0. TTFT_q = S + that wait;
* chunked-prefill interference: a share ``f = rho t / (t + (1 - rho)(t_mix - t))`` of the steps carries a prompt
  chunk and takes ``t_mix`` instead of ``t(n)``; a request's TPOT is the mean over its ``output / accepted`` steps
  (binomial: its percentiles from the normal approximation), the inter-token latency's percentile is ``t_mix`` when
  ``f > 1 - q``.

Goodput: the highest rate at which the q-th percentile TTFT and TPOT both meet their targets (DistServe's
definition, with the percentile the user picks).

Where this model and the engine simulator (:mod:`core.serving.engine_sim`) disagree, the simulator is the reference
and the pages draw it (issue 35): here every prompt holds a full token-budget step ``t_mix`` however short it is,
so a lone 2,048-token prompt of DeepSeek-V3 on DP-attn8 x EP8 (8 x H200) "waits" 0.93 s where the engine runs it in
one step carrying its own 2,048 tokens, 0.040 s (numbers audit 3 B3.7). :func:`queued_ttft_s` (a prefill worker's
queue, served at its measured prompt rate) does not have that flaw and stays in use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from core._util.checks import is_number
from core.deployment.specs import Workload
from core.serving.closed_loop import ReplicaCosts

__all__ = ["PERCENTILES", "Goodput", "LoadPoint", "goodput", "load_point", "queued_ttft_s", "rate_sweep"]

PERCENTILES = {"P50": 0.50, "P90": 0.90, "P99": 0.99}


@dataclass(frozen=True)
class LoadPoint:
    """The replica at one arrival rate; ``stable`` False when the rate is beyond what it can serve (the queue
    grows without bound: every latency is infinite)."""

    rate: float  # requests/s arriving at the replica
    stable: bool
    decoding: float  # sequences in decode, on average
    prefill_load: float  # rho: the share of the token budget's prompt capacity in use
    ttft_s: float  # at the percentile
    tpot_s: float  # per output token, at the percentile (a request's mean over its tokens)
    itl_s: float  # inter-token latency at the percentile (one step)
    quantile: float
    output_tokens_per_s_per_gpu: float


def _check(costs: ReplicaCosts, workload: Workload, quantile: float) -> None:
    if not isinstance(costs, ReplicaCosts):
        raise TypeError(f"costs must be a ReplicaCosts, got {type(costs).__name__}")
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload, got {type(workload).__name__}")
    if not (is_number(quantile) and 0.0 < quantile < 1.0):
        raise ValueError(f"quantile must be in (0, 1), e.g. 0.99 for P99, got {quantile!r}")


def _unstable(rate: float, q: float) -> LoadPoint:
    return LoadPoint(rate, False, math.inf, math.inf, math.inf, math.inf, math.inf, q, 0.0)


def load_point(costs: ReplicaCosts, workload: Workload, rate: float, quantile: float = 0.99) -> LoadPoint:
    """The replica at ``rate`` requests/s (see the module docstring)."""
    _check(costs, workload, quantile)
    if not (is_number(rate) and 0 < rate <= 1e9):
        raise ValueError(f"rate must be requests per second in (0, 1e9], got {rate!r}")
    computed, width = workload.computed_prompt_tokens, costs.draft_tokens + 1
    steps = workload.output_len / costs.accepted_length  # decode steps per request
    p = costs.prefill_s_per_token

    a = rate * computed * p  # the share of time the prompts' own work takes
    if not a < 1.0:
        return _unstable(rate, quantile)

    def mean_step(n: float) -> float:  # prompt work stretches the decode steps: t(n) / (1 - a)
        return costs.decode_s(n) / (1.0 - a)

    # n sequences in decode: n = rate x steps x mean step (Little's law), at most what the cache holds
    lo, hi = 0.0, float(costs.kv_capacity)
    if hi - rate * steps * mean_step(hi) < 0:
        return _unstable(rate, quantile)
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid - rate * steps * mean_step(mid) < 0 else (lo, mid)
    n = hi
    room = costs.budget_tokens - n * width
    if room < 1:
        return _unstable(rate, quantile)
    t = costs.decode_s(n)
    t_mix = t + room * p
    rho = rate * computed * t_mix / room  # the prompt queue's load: time its chunks occupy the budget
    if not rho < 1.0:
        return _unstable(rate, quantile)
    f = rho * t / (t + (1.0 - rho) * (t_mix - t))  # the share of steps carrying a chunk
    service = max(1.0, computed / room) * t_mix
    wait = _md1_wait_s(rho, service, quantile)
    k = max(1.0, steps)
    z = NormalDist().inv_cdf(quantile)
    per_request = t + f * (t_mix - t) + z * (t_mix - t) * math.sqrt(f * (1.0 - f) / k)
    itl = t_mix if f > 1.0 - quantile else t
    return LoadPoint(
        rate,
        True,
        n,
        rho,
        service + wait,
        max(per_request, t) / costs.accepted_length,
        itl,
        quantile,
        rate * workload.output_len / costs.gpus,
    )


def rate_sweep(costs: ReplicaCosts, workload: Workload, quantile: float = 0.99, points: int = 24) -> list[LoadPoint]:
    """:func:`load_point` from a light load to just below the highest stable rate (found by bisection), evenly."""
    _check(costs, workload, quantile)
    if not (isinstance(points, int) and 2 <= points <= 1000):
        raise ValueError(f"points must be a whole number in 2..1000, got {points!r}")
    top = _max_rate(costs, workload, quantile)
    return [load_point(costs, workload, top * (i + 1) / (points + 1), quantile) for i in range(points)]


def _max_rate(costs: ReplicaCosts, workload: Workload, quantile: float) -> float:
    lo, hi = 0.0, 1.0
    while load_point(costs, workload, hi, quantile).stable and hi < 1e9:
        lo, hi = hi, hi * 2
    for _ in range(32):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if load_point(costs, workload, mid, quantile).stable else (lo, mid)
    return lo


@dataclass(frozen=True)
class Goodput:
    """The highest rate meeting both targets at the percentile, and what binds there ("TTFT", "TPOT", "capacity":
    the replica saturates first, or "none met": not even a light load meets them)."""

    rate: float  # requests/s per replica
    at: LoadPoint | None
    binding: str

    def tokens_per_s_per_gpu(self) -> float:
        return self.at.output_tokens_per_s_per_gpu if self.at is not None else 0.0


def goodput(
    costs: ReplicaCosts, workload: Workload, ttft_target_s: float, tpot_target_s: float, quantile: float = 0.99
) -> Goodput:
    """Requests/s per replica whose ``quantile`` TTFT and TPOT meet the targets (see the module docstring)."""
    _check(costs, workload, quantile)
    for name, v in (("ttft_target_s", ttft_target_s), ("tpot_target_s", tpot_target_s)):
        if not (is_number(v) and 0 < v <= 3600):
            raise ValueError(f"{name} must be seconds in (0, 3600], got {v!r}")

    def ok(pt: LoadPoint) -> bool:
        return pt.stable and pt.ttft_s <= ttft_target_s and pt.tpot_s <= tpot_target_s

    top = _max_rate(costs, workload, quantile)
    light = load_point(costs, workload, max(top * 1e-6, 1e-9), quantile)
    if not ok(light):
        return Goodput(0.0, None, "none met")
    lo, hi = top * 1e-6, top
    if ok(load_point(costs, workload, top, quantile)):
        return Goodput(top, load_point(costs, workload, top, quantile), "capacity")
    for _ in range(32):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ok(load_point(costs, workload, mid, quantile)) else (lo, mid)
    beyond = load_point(costs, workload, hi, quantile)
    binding = "TTFT" if not beyond.stable or beyond.ttft_s > ttft_target_s else "TPOT"
    return Goodput(lo, load_point(costs, workload, lo, quantile), binding)


def queued_ttft_s(lone_s: float, capacity_per_s: float, rate_per_s: float, quantile: float = 0.99) -> float:
    """A prefill worker's time to first token at a percentile under random arrivals: one prompt's own time
    ``lone_s`` plus its wait in an M/D/1 queue served at ``capacity_per_s`` prompts/s (each ``1 / capacity`` of the
    worker) at ``rate_per_s`` (tail as in :func:`load_point`); infinite at or beyond capacity (the queue grows)."""
    for name, v in (("lone_s", lone_s), ("capacity_per_s", capacity_per_s), ("rate_per_s", rate_per_s)):
        if not (is_number(v) and 0 <= v <= 1e9):
            raise ValueError(f"{name} must be a number in [0, 1e9], got {v!r}")
    if not (is_number(quantile) and 0.0 < quantile < 1.0):
        raise ValueError(f"quantile must be in (0, 1), e.g. 0.99 for P99, got {quantile!r}")
    if capacity_per_s <= 0:
        raise ValueError("capacity_per_s must be > 0 prompts per second")
    rho = rate_per_s / capacity_per_s
    return math.inf if rho >= 1.0 else float(lone_s) + _md1_wait_s(rho, 1.0 / capacity_per_s, quantile)


def _md1_wait_s(rho: float, service_s: float, quantile: float) -> float:
    """The ``quantile`` wait of an M/D/1 queue at load ``rho`` < 1 with service ``service_s``: Pollaczek-Khinchine's
    mean ``rho S / (2 (1 - rho))``, the tail taken as exponential, ``P(W > t) = rho exp(-rho t / mean)``."""
    if rho <= 1.0 - quantile:
        return 0.0
    mean = rho * service_s / (2.0 * (1.0 - rho))
    return mean / rho * math.log(rho / (1.0 - quantile))
