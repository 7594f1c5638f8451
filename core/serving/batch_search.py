"""How an operating point's batch (decode sequences per GPU) or prompt chunk (prefill tokens per GPU) is found
(review 3 M3): a coarse grid first, then a bisection between the winner and the next point tried, which
missed the latency target or did not fit, until no batch between them can beat the winner by more than
``GRID_TOLERANCE`` (or they are one sequence / one prompt token per attention rank apart).

Why that bounds the ranking: throughput per GPU is ``b / step(b)``, and the step grows with ``b`` more slowly
than ``b`` (a fixed part: weights, launches), so throughput grows with the batch: any batch ``b'`` between the
winner ``lo`` and the miss ``hi`` gives at most ``hi``'s throughput, itself at most ``hi / step(lo) = (hi / lo)
x lo / step(lo)``. The bisection stops once either bound is within ``GRID_TOLERANCE`` of the winner.
The old grid jumped from 1,024 to 1,536 sequences per GPU: DeepSeek-V3's DP-attn72 · EP72 on a GB200 rack
was held at 1,024 (13,497 output tok/s/GPU) where 1,400 meets 100 ms TPOT (14,083).

The face is :mod:`core.serving.operating_point`; these helpers stay out of ``__all__``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["GRID_TOLERANCE"]

GRID_TOLERANCE = 0.01  # the batch or chunk the search skipped beats the winner by at most this share

Point = tuple[float, Any, float]  # (batch, its step, its latency)


def largest_meeting(
    candidates: Sequence[float], evaluate: Callable[[float], tuple[Any, float]], target_s: float
) -> tuple[Point | None, Point | None]:
    """Binary search for the largest candidate whose latency meets the target (latency grows with the batch):
    (the best (b, step, latency) or None, the smallest evaluated one that misses or None; when both exist the
    miss is the next candidate above the best)."""
    best = miss = None
    lo, hi = 0, len(candidates) - 1
    st, latency = evaluate(candidates[hi])  # most layouts are held by memory, not latency: one evaluation
    if latency <= target_s:
        return (candidates[hi], st, latency), None
    miss, hi = (candidates[hi], st, latency), hi - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        b = candidates[mid]
        st, latency = evaluate(b)
        if latency <= target_s:
            best, lo = (b, st, latency), mid + 1
        else:
            if b < miss[0]:
                miss = (b, st, latency)
            hi = mid - 1
    return best, miss


def refine(
    best: Point,
    above: Point | float,
    evaluate: Callable[[float], tuple[Any, float]],
    target_s: float,
    unit: float,
) -> Point:
    """The largest batch on the lattice of ``unit`` between ``best`` (which meets ``target_s``) and ``above``
    (which misses it or does not fit: a point already evaluated, or a batch), bisected until the batches between
    them cannot beat ``best`` by more than ``GRID_TOLERANCE``: ``above``'s own throughput (their bound) or
    ``above / best`` (the bound before ``above`` is evaluated) within it, or one ``unit`` apart.
    ``evaluate(b)`` returns (the step, its latency); the step's ``tokens_per_s_per_gpu`` is the throughput."""
    lo, hi = best, above if isinstance(above, tuple) else (above, *evaluate(above))
    while hi[0] - lo[0] > unit * (1 + 1e-9) and (
        hi[0] > lo[0] * (1 + GRID_TOLERANCE)
        and hi[1].tokens_per_s_per_gpu > lo[1].tokens_per_s_per_gpu * (1 + GRID_TOLERANCE)
    ):
        mid = math.floor((lo[0] + hi[0]) / 2 / unit + 1e-9) * unit
        if not lo[0] < mid < hi[0]:
            break
        st, latency = evaluate(mid)
        if latency <= target_s:
            lo = (mid, st, latency)
        else:
            hi = (mid, st, latency)
    return lo
