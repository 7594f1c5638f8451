"""What a simulated run yields (issue 35): per-request TTFT, TPOT and end-to-end latency, every inter-token gap,
the rates over the measured window, their percentiles, and goodput over a sweep.

Definitions, as the benchmarks' (vLLM ``bench serve``, AIPerf): TTFT = first token - arrival; TPOT = (finish -
first token) / (output - 1), requests of one output token excluded; ITL = the gap between two emissions of one
request (a speculative step emits several tokens at once: one gap). Percentiles are numpy's linear ones over
requests, the ITL's over gaps (weighted by how many sequences shared a step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core._util.checks import amount, is_number

__all__ = ["PERCENTILES", "Goodput", "SimResult", "Summary", "goodput", "miss", "weighted_quantile"]

PERCENTILES = {"P50": 0.50, "P90": 0.90, "P99": 0.99}


@dataclass(frozen=True, eq=False)
class SimResult:
    """One simulated load point of one replica (or pool pair). ``load``: clients (closed loop) or requests/s
    (open loop). ``window_s``: the measured span the rates divide by. ``stable`` False (open loop): the queue
    grew through the run, arrivals outpacing the engine."""

    mode: str  # "closed" or "open"
    load: float
    ttft_s: np.ndarray
    tpot_s: np.ndarray  # NaN for one-token outputs
    e2e_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    gap_s: np.ndarray
    gap_count: np.ndarray
    finished_in_window: int  # requests finished in the window (the rates' numerator)
    output_in_window: int  # their output tokens
    window_s: float
    gpus: int
    stable: bool = True

    @property
    def requests_per_s(self) -> float:
        return self.finished_in_window / self.window_s if self.window_s > 0 else 0.0

    @property
    def output_tokens_per_s(self) -> float:
        """Output tokens per second of the replica (all of its GPUs)."""
        return self.output_in_window / self.window_s if self.window_s > 0 else 0.0

    @property
    def output_tokens_per_s_per_gpu(self) -> float:
        return self.output_tokens_per_s / self.gpus

    def percentile(self, metric: str, q: float) -> float:
        """The ``q`` quantile (0..1) of ``metric``: "ttft", "tpot", "e2e" or "itl"; infinite when unstable."""
        amount("q", q, 0.0, 1.0)
        if not self.stable:
            return math.inf
        if metric == "itl":
            return weighted_quantile(self.gap_s, self.gap_count, q)
        if metric not in ("ttft", "tpot", "e2e"):
            raise ValueError(f"metric must be one of ttft, tpot, e2e, itl, got {str(metric)[:20]!r}")
        x = getattr(self, f"{metric}_s")
        x = x[~np.isnan(x)]
        return float(np.quantile(x, q)) if len(x) else math.nan

    def summary(self) -> Summary:
        def pcts(metric: str) -> dict[str, float]:
            return {name: self.percentile(metric, q) for name, q in PERCENTILES.items()}

        return Summary(
            self.mode,
            self.load,
            self.stable,
            self.requests_per_s,
            self.output_tokens_per_s,
            self.output_tokens_per_s_per_gpu,
            pcts("ttft"),
            pcts("tpot"),
            pcts("itl"),
            float(np.mean(self.ttft_s)) if self.stable and len(self.ttft_s) else math.inf,
            float(np.nanmean(self.tpot_s)) if self.stable and np.any(~np.isnan(self.tpot_s)) else math.inf,
        )


@dataclass(frozen=True)
class Summary:
    """A run's rates and its P50 / P90 / P99 (keys of :data:`PERCENTILES`) of TTFT, TPOT and ITL, in seconds."""

    mode: str
    load: float
    stable: bool
    requests_per_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]
    itl_s: dict[str, float]
    mean_ttft_s: float
    mean_tpot_s: float


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value whose cumulative weight reaches ``q`` of the total (NaN when empty or weightless).
    ``values``: finite numbers; ``weights``: as many, each in [0, 10^12]; ``q`` in [0, 1]."""
    v, w = np.asarray(values, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    if v.ndim != 1 or w.shape != v.shape:
        raise ValueError(f"values and weights must be 1-D and as long, got shapes {v.shape} and {w.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite numbers")
    if not np.all((w >= 0) & (w <= 1e12)):  # NaN fails too
        raise ValueError("weights must be numbers in [0, 1e12]")
    amount("q", q, 0.0, 1.0)
    if len(v) == 0 or w.sum() <= 0:
        return math.nan
    order = np.argsort(v, kind="stable")
    cum = np.cumsum(w[order])
    i = int(np.searchsorted(cum, q * cum[-1], side="left"))
    return float(v[order][min(i, len(v) - 1)])


@dataclass(frozen=True, eq=False)
class Goodput:
    """The highest load of a sweep whose ``quantile`` TTFT and TPOT both meet their targets, and what binds at
    the next load: "TTFT", "TPOT", "unstable", "none met" (not even the lightest load) or "sweep end"."""

    load: float  # clients or requests/s; 0 when none met
    requests_per_s: float
    output_tokens_per_s_per_gpu: float
    at: SimResult | None
    binding: str


def goodput(results: list[SimResult], ttft_target_s: float, tpot_target_s: float, quantile: float = 0.99) -> Goodput:
    """Goodput over a sweep (DistServe's definition at the chosen percentile): walking up the loads, the last one
    meeting both targets before the first that misses."""
    _targets(ttft_target_s, tpot_target_s, quantile)
    if not isinstance(results, (list, tuple)):
        raise TypeError(f"results must be a list of SimResult, got {type(results).__name__}")
    if not all(isinstance(r, SimResult) for r in results):
        raise ValueError("results must be a list of SimResult: every run of the sweep")
    best: SimResult | None = None
    binding = "sweep end"
    for r in sorted(results, key=lambda r: r.load):
        why = miss(r, ttft_target_s, tpot_target_s, quantile)
        if why is not None:
            binding = why
            break
        best = r
    if best is None:
        return Goodput(0.0, 0.0, 0.0, None, "none met")
    return Goodput(best.load, best.requests_per_s, best.output_tokens_per_s_per_gpu, best, binding)


def miss(result: SimResult, ttft_target_s: float, tpot_target_s: float, quantile: float = 0.99) -> str | None:
    """What a run misses at the ``quantile``: "unstable", "TTFT" or "TPOT" (the first that fails), or None."""
    _targets(ttft_target_s, tpot_target_s, quantile)
    if not isinstance(result, SimResult):
        raise TypeError(f"result must be a SimResult, got {type(result).__name__}")
    if not result.stable:
        return "unstable"
    if result.percentile("ttft", quantile) > ttft_target_s:
        return "TTFT"
    if result.percentile("tpot", quantile) > tpot_target_s:  # NaN (one-token outputs only) meets it
        return "TPOT"
    return None


def _targets(ttft_target_s: float, tpot_target_s: float, quantile: float) -> None:
    amount("ttft_target_s", ttft_target_s, 0.0, 3600.0, open_lo=True)
    amount("tpot_target_s", tpot_target_s, 0.0, 3600.0, open_lo=True)
    if not (is_number(quantile) and 0.0 < quantile < 1.0):
        raise ValueError(f"quantile must be in (0, 1), e.g. 0.99 for P99, got {quantile!r}")
