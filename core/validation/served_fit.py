"""Predicted against measured for benchmark runs on one's own cluster, and the served calibration that closes the
gap (issue 36): a decode and a prefill multiplier on the step-time model's step times and a per-request TTFT
offset (:class:`core.deployment.calibration.ServedCalibration`).

The prediction is a function argument, ``predict(run) -> {"ttft_ms", "tpot_ms", "output_tokens_per_s"}`` (a value
may be None where the model says nothing), so this module does not depend on how the planner predicts a run
(the pages pass an adapter over the serving model; the tests a hand-made one).

The decode scale is least squares in log space over the runs: the ``s`` minimising ``sum_i (ln r_i - ln s)^2`` is
the geometric mean of the ratios ``r_i``, ``s = exp(mean_i ln r_i)``, of measured / predicted TPOT, or, for a run
that did not measure TPOT, predicted / measured output tokens/s (a slower step serves proportionally fewer
tokens). No ratio: 1.

TTFT is a line, ``measured = offset + s x predicted``: the steps' share scales with the prefill step, and a served
TTFT also holds a per-request cost no step does (tokenisation, scheduling, the first step's queue, HTTP and stream
setup: the B300 fixture measures 315-361 ms where the steps take 15-23 ms). The line is fitted by least squares on
the relative error, minimising ``sum_i ((offset + s p_i) / m_i - 1)^2`` with ``s`` in the calibration's bounds
(0.2-5) and ``offset`` in 0-10 s, solved exactly on the box (the interior solution of the 2 x 2 normal equations,
or the best of each edge's clipped one-variable solution). The slope is fitted only where the runs tell it apart
from the intercept: two or more runs whose predicted TTFTs differ by :data:`SLOPE_SPREAD` (2x) or more (runs at
other prompt lengths or loads). Otherwise the prefill scale stays 1 (one run, or runs alike, cannot say whether the
gap grows with the prompt's work) and the offset is the weighted mean gap, ``measured - predicted`` for one run;
where that gap is negative (measured faster than the steps) there is no offset and the prefill scale is the
geometric mean of the TTFT ratios, as for decode. So a gap of a few hundred ms on a 20 ms prefill becomes an
offset, not a prefill step 15 times slower that every prefill plan would then carry.

Scales are held to the calibration's bounds (0.2-5). Without ``recheck`` the calibrated predictions are the
first-order ones (offset + TTFT x prefill scale, TPOT x decode scale, output tokens/s / decode scale: exact where a
phase's time is all its own steps, as at low load); with ``recheck(calibration) -> predict`` each round predicts
again under the calibration found so far, multiplies the decode scale by the geometric mean of the remaining
ratios and refits the TTFT line on the calibrated TTFTs with their offset removed and their scale divided out
(a fixed point: TTFT also waits on decode steps, and TPOT on the prompts' prefill, under load). The residual is
the relative RMS error, sqrt(mean (calibrated / measured - 1)^2), over every run's metrics that were both measured
and predicted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core._util.checks import is_number, whole
from core.deployment.calibration import MAX_STEP_SCALE, MAX_TTFT_OFFSET_S, MIN_STEP_SCALE, ServedCalibration
from core.validation.bench_results import MAX_RUNS, TOOLS, BenchResult

__all__ = ["METRICS", "SLOPE_SPREAD", "MetricGap", "ServedFit", "compare_runs", "fit_calibration", "measured_metrics"]

# key -> (name, unit, phase whose step time it follows, exponent: metric ~ scale ** exponent)
METRICS: dict[str, tuple[str, str, str, int]] = {
    "ttft_ms": ("TTFT", "ms", "prefill", 1),
    "tpot_ms": ("TPOT", "ms", "decode", 1),
    "output_tokens_per_s": ("output tokens/s", "tokens/s", "decode", -1),
}
MAX_ROUNDS = 10
SLOPE_SPREAD = 2.0  # the runs' predicted TTFTs must span this factor for the prefill scale to be a fitted slope

Predict = Callable[[BenchResult], dict]


@dataclass(frozen=True)
class MetricGap:
    """One metric of one run: predicted against measured (None where either is missing)."""

    index: int  # the run's position in the runs given (0 first)
    run: str  # the run's label
    metric: str  # a key of METRICS
    predicted: float | None
    measured: float | None

    @property
    def name(self) -> str:
        return METRICS[self.metric][0]

    @property
    def unit(self) -> str:
        return METRICS[self.metric][1]

    @property
    def gap_pct(self) -> float | None:
        """(predicted / measured - 1) x 100: negative where the model is faster (lower latency) or, for tokens/s,
        predicts less; None unless both are known."""
        if self.predicted is None or not self.measured:
            return None
        return 100.0 * (self.predicted / self.measured - 1.0)


@dataclass(frozen=True)
class ServedFit:
    """The fitted calibration, the gaps before and after it, and which metrics each scale came from."""

    calibration: ServedCalibration
    before: tuple[MetricGap, ...]
    after: tuple[MetricGap, ...]
    decode_from: str  # "TPOT", "output tokens/s", "TPOT, output tokens/s" or "" (no ratio: scale 1)
    prefill_from: str  # "TTFT" (the scale fitted on it) or "" (held at 1)
    clipped: bool  # a scale, or the TTFT offset, was held at the calibration's bounds
    ttft_fit: str = ""  # how TTFT was fitted: "slope and offset", "offset", "scale" or "" (no TTFT measured)


def measured_metrics(run: BenchResult) -> dict[str, float | None]:
    """What ``run`` measured, keyed as :data:`METRICS`: the mean TTFT and TPOT (the median where the file has no
    mean) and the output tokens/s."""
    if not isinstance(run, BenchResult):
        raise TypeError(f"run must be a BenchResult, got {type(run).__name__}")
    return {
        "ttft_ms": run.latency_ms("ttft"),
        "tpot_ms": run.latency_ms("tpot"),
        "output_tokens_per_s": run.output_tokens_per_s,
    }


def _runs(runs) -> tuple[BenchResult, ...]:
    if not isinstance(runs, (list, tuple)) or not all(isinstance(r, BenchResult) for r in runs):
        raise ValueError("runs must be a list of BenchResult (parse_bench_results' runs)")
    if not 1 <= len(runs) <= MAX_RUNS:
        raise ValueError(f"runs must hold 1 to {MAX_RUNS:,} runs, got {len(runs):,}")
    return tuple(runs)


def _predicted(predict: Predict, run: BenchResult) -> dict[str, float | None]:
    """``predict(run)``, checked: a dict whose METRICS values are None or numbers > 0."""
    if not callable(predict):
        raise ValueError(f"predict must be a function of a run, got {type(predict).__name__}")
    out = predict(run)
    if not isinstance(out, dict):
        raise ValueError(f"predict must return a dict of {', '.join(METRICS)}, got {type(out).__name__}")
    got = {}
    for key in METRICS:
        v = out.get(key)
        if v is not None and not (is_number(v) and 0 < v <= 1e15):
            raise ValueError(f"predict's {key} must be a number > 0 or None, got {v!r}"[:200])
        got[key] = None if v is None else float(v)
    return got


def _gaps(runs: tuple[BenchResult, ...], predictions: list[dict]) -> tuple[MetricGap, ...]:
    return tuple(
        MetricGap(i, run.label, key, pred[key], measured_metrics(run)[key])
        for i, (run, pred) in enumerate(zip(runs, predictions, strict=True))
        for key in METRICS
    )


def compare_runs(runs: Sequence[BenchResult], predict: Predict) -> tuple[MetricGap, ...]:
    """Predicted against measured for every run and metric of :data:`METRICS`, in run order."""
    rs = _runs(runs)
    return _gaps(rs, [_predicted(predict, r) for r in rs])


def _ttft_pairs(gaps: tuple[MetricGap, ...], scale: float = 1.0, offset_ms: float = 0.0) -> list[tuple[float, float]]:
    """(the TTFT the steps account for at prefill scale 1, measured) per run: ``(predicted - offset) / scale`` of
    predictions made under a calibration of that scale and offset."""
    return [
        (max(g.predicted - offset_ms, 1e-9 * g.predicted) / scale, g.measured)
        for g in gaps
        if g.metric == "ttft_ms" and g.predicted and g.measured
    ]


def _line_sse(pairs: list[tuple[float, float]], s: float, o: float) -> float:
    return sum(((o + s * u) / m - 1.0) ** 2 for u, m in pairs)


def _fit_ttft(pairs: list[tuple[float, float]], slope: bool) -> tuple[float, float, bool]:
    """(prefill scale, offset ms, held at a bound) of the TTFT line (the module docstring)."""
    if not pairs:
        return 1.0, 0.0, False
    o_max = 1e3 * MAX_TTFT_OFFSET_S
    w = [1.0 / (m * m) for _, m in pairs]  # relative error: weights 1 / m^2
    sw = sum(w)
    swu = sum(wi * u for wi, (u, _) in zip(w, pairs, strict=True))
    swm = sum(wi * m for wi, (_, m) in zip(w, pairs, strict=True))
    swuu = sum(wi * u * u for wi, (u, _) in zip(w, pairs, strict=True))
    swum = sum(wi * u * m for wi, (u, m) in zip(w, pairs, strict=True))

    def clip(x: float, lo: float, hi: float) -> float:
        return min(hi, max(lo, x))

    if not slope:
        o = (swm - swu) / sw  # s = 1: the weighted mean gap
        if o > 0:
            return 1.0, clip(o, 0.0, o_max), o > o_max
        raw = _geomean([m / u for u, m in pairs])  # measured at or below the steps: no offset, a scale
        return _held(raw), 0.0, not MIN_STEP_SCALE <= raw <= MAX_STEP_SCALE
    candidates = []
    det = sw * swuu - swu * swu
    if det > 1e-12 * sw * swuu:
        o, s = (swm * swuu - swu * swum) / det, (sw * swum - swu * swm) / det
        if MIN_STEP_SCALE <= s <= MAX_STEP_SCALE and 0.0 <= o <= o_max:
            return s, o, False
    for o in (0.0, o_max):  # the box's edges: one variable at its bound, the other's best clipped
        candidates.append((clip((swum - o * swu) / swuu, MIN_STEP_SCALE, MAX_STEP_SCALE), o))
    for s in (MIN_STEP_SCALE, MAX_STEP_SCALE):
        candidates.append((s, clip((swm - s * swu) / sw, 0.0, o_max)))
    s, o = min(candidates, key=lambda c: _line_sse(pairs, *c))
    return s, o, s in (MIN_STEP_SCALE, MAX_STEP_SCALE) or o == o_max


def _ratios(gaps: tuple[MetricGap, ...], phase: str) -> tuple[list[float], list[str]]:
    """The phase's measured / predicted step-time ratios, one per run (TPOT before output tokens/s for decode)."""
    by_run: dict[int, list[MetricGap]] = {}
    for g in gaps:
        by_run.setdefault(g.index, []).append(g)
    ratios, used = [], []
    for run_gaps in by_run.values():
        for g in run_gaps:
            _, _, ph, power = METRICS[g.metric]
            if ph == phase and g.predicted and g.measured:
                ratios.append((g.measured / g.predicted) ** power)
                used.append(g.name)
                break
    return ratios, used


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 1.0


def _first_order(gap: MetricGap, scales: dict[str, float], offset_ms: float) -> MetricGap:
    _, _, phase, power = METRICS[gap.metric]
    pred = None if gap.predicted is None else gap.predicted * scales[phase] ** power
    if pred is not None and gap.metric == "ttft_ms":
        pred += offset_ms
    return MetricGap(gap.index, gap.run, gap.metric, pred, gap.measured)


def _residual(gaps: tuple[MetricGap, ...]) -> float:
    errs = [(g.predicted / g.measured - 1.0) ** 2 for g in gaps if g.predicted is not None and g.measured]
    return math.sqrt(sum(errs) / len(errs)) if errs else 0.0


def _held(x: float) -> float:
    return min(MAX_STEP_SCALE, max(MIN_STEP_SCALE, x))


def _day(date: str) -> str:
    """vLLM's '20260521-110938' as '2026-05-21'; an ISO time (AIPerf) cut to its day."""
    if re.fullmatch(r"\d{8}-\d{6}", date):
        return f"{date[:4]}-{date[4:6]}-{date[6:8]}"
    return date[:10]


def _source(runs: tuple[BenchResult, ...], source: str) -> str:
    if not isinstance(source, str):
        raise ValueError(f"source must be text (a file name), got {type(source).__name__}")
    tools = sorted({TOOLS[r.tool] for r in runs})
    dates = sorted({_day(r.date) for r in runs if r.date})
    parts = [p for p in (" ".join(source.split())[:80], ", ".join(tools), dates[0] if dates else "") if p]
    return ", ".join(parts)[:200]


def fit_calibration(
    runs: Sequence[BenchResult],
    predict: Predict,
    *,
    source: str = "",
    recheck: Callable[[ServedCalibration], Predict] | None = None,
    rounds: int = 3,
) -> ServedFit:
    """The served calibration of ``runs`` against ``predict`` (the module docstring), with ``rounds`` rounds of
    ``recheck`` when given. ``source`` names the file; the tools and the first run's date are added."""
    rs = _runs(runs)
    n_rounds = whole("rounds", rounds, 0, MAX_ROUNDS)
    if recheck is not None and not callable(recheck):
        raise ValueError(f"recheck must be a function of a ServedCalibration, got {type(recheck).__name__}")
    before = compare_runs(rs, predict)
    decode, decode_used = _ratios(before, "decode")
    pairs = _ttft_pairs(before)
    slope = len(pairs) >= 2 and max(u for u, _ in pairs) >= SLOPE_SPREAD * min(u for u, _ in pairs)
    raw = _geomean(decode)
    scales = {"decode": _held(raw)}
    scales["prefill"], offset_ms, ttft_held = _fit_ttft(pairs, slope)
    label = _source(rs, source)

    def calibration(residual: float) -> ServedCalibration:
        return ServedCalibration(
            decode_step_scale=scales["decode"],
            prefill_step_scale=scales["prefill"],
            ttft_offset_s=offset_ms / 1e3,
            source=label or "benchmark results",
            runs=len(rs),
            fit_residual=min(100.0, residual),
        )

    if recheck is None:
        after = tuple(_first_order(g, scales, offset_ms) for g in before)
    else:
        after = compare_runs(rs, recheck(calibration(0.0)))
        for _ in range(n_rounds):
            raw *= _geomean(_ratios(after, "decode")[0])
            scales["decode"] = _held(raw)
            pairs = _ttft_pairs(after, scales["prefill"], offset_ms)
            scales["prefill"], offset_ms, ttft_held = _fit_ttft(pairs, slope)
            after = compare_runs(rs, recheck(calibration(0.0)))
    if not pairs:
        how = ""
    elif slope:
        how = "slope and offset"
    else:
        how = "offset" if offset_ms > 0 else "scale"
    return ServedFit(
        calibration(_residual(after)),
        before,
        after,
        ", ".join(dict.fromkeys(decode_used)),
        "TTFT" if how in ("slope and offset", "scale") else "",
        ttft_held or not MIN_STEP_SCALE <= raw <= MAX_STEP_SCALE,
        how,
    )
