"""Predicted against measured for benchmark runs on one's own cluster, and the served calibration that closes the
gap (issue 36): a decode and a prefill multiplier on the step-time model's step times
(:class:`core.deployment.calibration.ServedCalibration`).

The prediction is a function argument, ``predict(run) -> {"ttft_ms", "tpot_ms", "output_tokens_per_s"}`` (a value
may be None where the model says nothing), so this module does not depend on how the planner predicts a run
(the pages pass an adapter over the serving model; the tests a hand-made one).

The fit, per phase, is least squares in log space over the runs: the scale ``s`` minimising
``sum_i (ln r_i - ln s)^2`` is the geometric mean of the ratios ``r_i`` of measured to predicted,
``s = exp(mean_i ln r_i)``. The decode scale's ratios are measured / predicted TPOT, or, for a run that did not
measure TPOT, predicted / measured output tokens/s (a slower step serves proportionally fewer tokens); the
prefill scale's are measured / predicted TTFT. A phase with no ratio keeps 1. Scales are held to the calibration's
bounds (0.2-5). Without ``recheck`` the calibrated predictions are the first-order ones (TTFT x prefill scale,
TPOT x decode scale, output tokens/s / decode scale: exact where a phase's time is all its own steps, as at low
load); with ``recheck(calibration) -> predict`` each round predicts again under the scales found so far and
multiplies them by the geometric mean of the remaining ratios (a fixed point: TTFT also waits on decode steps, and
TPOT on the prompts' prefill, under load). The residual is the relative RMS error, sqrt(mean (calibrated /
measured - 1)^2), over every run's metrics that were both measured and predicted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core._util.checks import is_number, whole
from core.deployment.calibration import MAX_STEP_SCALE, MIN_STEP_SCALE, ServedCalibration
from core.validation.bench_results import MAX_RUNS, TOOLS, BenchResult

__all__ = ["METRICS", "MetricGap", "ServedFit", "compare_runs", "fit_calibration", "measured_metrics"]

# key -> (name, unit, phase whose step time it follows, exponent: metric ~ scale ** exponent)
METRICS: dict[str, tuple[str, str, str, int]] = {
    "ttft_ms": ("TTFT", "ms", "prefill", 1),
    "tpot_ms": ("TPOT", "ms", "decode", 1),
    "output_tokens_per_s": ("output tokens/s", "tokens/s", "decode", -1),
}
MAX_ROUNDS = 10

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
    prefill_from: str  # "TTFT" or ""
    clipped: bool  # a scale was held at the calibration's bounds


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


def _first_order(gap: MetricGap, scales: dict[str, float]) -> MetricGap:
    _, _, phase, power = METRICS[gap.metric]
    pred = None if gap.predicted is None else gap.predicted * scales[phase] ** power
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
    prefill, prefill_used = _ratios(before, "prefill")
    raw = {"decode": _geomean(decode), "prefill": _geomean(prefill)}
    scales = {k: _held(v) for k, v in raw.items()}
    label = _source(rs, source)

    def calibration(residual: float) -> ServedCalibration:
        return ServedCalibration(
            decode_step_scale=scales["decode"],
            prefill_step_scale=scales["prefill"],
            source=label or "benchmark results",
            runs=len(rs),
            fit_residual=min(100.0, residual),
        )

    if recheck is None:
        after = tuple(_first_order(g, scales) for g in before)
    else:
        after = compare_runs(rs, recheck(calibration(0.0)))
        for _ in range(n_rounds):
            for phase in ("decode", "prefill"):
                ratios, _ = _ratios(after, phase)
                raw[phase] = raw[phase] * _geomean(ratios)
                scales[phase] = _held(raw[phase])
            after = compare_runs(rs, recheck(calibration(0.0)))
    clipped = any(not MIN_STEP_SCALE <= v <= MAX_STEP_SCALE for v in raw.values())
    return ServedFit(
        calibration(_residual(after)),
        before,
        after,
        ", ".join(dict.fromkeys(decode_used)),
        ", ".join(dict.fromkeys(prefill_used)),
        clipped,
    )
