"""Whole published curves against the planner (issue 35, "Validation of whole curves"): every case of
catalogs/frontier_cases.yaml modelled at its own deployments and concurrencies, every published point's error
(modelled / published - 1) for tokens/s per GPU and per-user tokens/s, then the median and P90 of |error| per
curve, per case, per concurrency band (low <= 4 clients, mid 5-63, high >= 64, unstated), per accelerator, per
stack and overall (core.serving.frontier_gaps, which the Validation page shows too).

    python -m bench.frontier              # every table, and the wall time of modelling every case
    python -m bench.frontier --bands      # the band tables only (README, bench/RESULTS.md): every point, then the
                                          # current engine version of each curve only (older-version curves out),
                                          # then what the targets are judged on (cases marked not_in_target out)
    python -m bench.frontier --case glm-5-b200-8k1k --prefill-scale 2
                                          # a what-if: the named cases (repeat --case) with every prefill step x 2
                                          # (a ServedCalibration, as one's own benchmark results would give)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _pct(x: float | None, signed: bool = False) -> str:
    return "–" if x is None else (f"{x:+.0%}" if signed else f"{x:.0%}")


def _table(title: str, stats, width: int = 40) -> list[str]:
    head = (
        f"| {title:<{width}} | points | tok/s/GPU median | P90 | bias | user points | tok/s/user median | P90 | bias |"
    )
    out = [head, "|" + "---|" * 9]
    for s in stats:
        out.append(
            f"| {s.group:<{width}} | {s.points} | {_pct(s.throughput_median)} | {_pct(s.throughput_p90)} | "
            f"{_pct(s.throughput_bias, True)} | {s.user_points} | {_pct(s.user_median)} | {_pct(s.user_p90)} | "
            f"{_pct(s.user_bias, True)} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bands", action="store_true", help="print the concurrency-band table only")
    ap.add_argument("--case", action="append", default=[], help="model only this case id (repeatable)")
    ap.add_argument("--prefill-scale", type=float, default=None, help="what-if: every prefill step x this (0.2-5)")
    args = ap.parse_args(argv)

    from core.catalog import load_catalog
    from core.deployment.calibration import MAX_STEP_SCALE, MIN_STEP_SCALE, ServedCalibration
    from core.serving.frontier import load_frontier_cases, model_case
    from core.serving.frontier_gaps import frontier_gaps

    cat = load_catalog()
    cases = load_frontier_cases()
    unknown = sorted(set(args.case) - {c.id for c in cases})
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; one of {', '.join(c.id for c in cases)}")
    cases = [c for c in cases if not args.case or c.id in args.case]
    cal = None
    if args.prefill_scale is not None:
        if not MIN_STEP_SCALE <= args.prefill_scale <= MAX_STEP_SCALE:
            ap.error(
                f"--prefill-scale must be within {MIN_STEP_SCALE:g} and {MAX_STEP_SCALE:g}, got {args.prefill_scale:g}"
            )
        cal = ServedCalibration(
            prefill_step_scale=args.prefill_scale, source="what-if (bench.frontier)", runs=1, fit_residual=0.0
        )
    t0 = time.perf_counter()
    models = [model_case(c, cat, cal) for c in cases]
    wall_s = time.perf_counter() - t0
    gaps = frontier_gaps(models)
    bands = _table("concurrency band", gaps.band_table("every"), 16)
    older = len(gaps.points) - gaps.current_points
    current = [
        "",
        f"Current engine versions only ({gaps.current_points} points; {older} on curves tagged as older versions left out)",
        "",
        *_table("concurrency band", gaps.band_table("current"), 16),
    ]
    left = sorted({c.id for c in cases if c.not_in_target})
    judged = [
        "",
        f"Judged against the targets ({gaps.target_points} points: current versions, {gaps.current_points - gaps.target_points}"
        f" points of cases not judged left out: {', '.join(left) or 'none'}, each case's not_in_target says why)",
        "",
        *_table("concurrency band", gaps.band_table("target"), 16),
    ]
    bands = [f"Every point ({len(gaps.points)})", "", *bands, *current, *judged]
    if args.bands:
        print("\n".join(bands))
        return 0
    print("Every published point (error = modelled / published - 1; tok/s/GPU in the point's own kind)\n")
    print(
        "| point | curve | clients | band | published tok/s/GPU | modelled | error | published tok/s/user | "
        "modelled | error |"
    )
    print("|" + "---|" * 10)
    for r in gaps.points:
        pu = "–" if r.published_tokens_per_s_per_user is None else f"{r.published_tokens_per_s_per_user:,.1f}"
        print(
            f"| {r.point_id} | {r.curve} | {r.concurrency or '–'} | {r.band} | {r.published_tokens_per_s_per_gpu:,.1f} "
            f"({r.throughput_kind}) | {r.modelled_tokens_per_s_per_gpu:,.1f} | {_pct(r.throughput_error, True)} | {pu} | "
            f"{r.modelled_tokens_per_s_per_user:,.1f} | {_pct(r.user_error, True)} |"
        )
    for title, stats, w in (
        ("curve (case: deployment)", gaps.curves, 70),
        ("case", gaps.cases, 34),
        ("accelerator", gaps.gpus, 12),
        ("stack", gaps.stacks, 8),
    ):
        print()
        print("\n".join(_table(title, stats, w)))
    print()
    print("\n".join(bands))
    print(f"\n{len(models)} cases, {len(gaps.points)} points modelled in {wall_s:.2f} s (one process, cold cache)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
