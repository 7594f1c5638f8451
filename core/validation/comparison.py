"""The step-time model side by side with NVIDIA aiconfigurator (``catalogs/validation/aic_comparison.csv``,
written by ``bench/aic_compare.py`` where aiconfigurator is installed): the rows, and the summary per phase
and layout group that the Validation page shows against the step-time issue's targets (decode median
within 15% over all rows, no group beyond 25%, against aiconfigurator with balanced expert routing)."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path

__all__ = ["GROUP_NAMES", "comparison_summary", "load_comparison"]

GROUP_NAMES = {
    "all": "all rows",
    "attention_tp": "attention TP",
    "dp_ep": "attention DP × EP",
    "blackwell": "Blackwell (B200, GB200, B300)",
    "one_gpu": "one GPU",
}
_NUMBERS = ("aic_ms", "aic_balanced_ms", "planner_ms", "ratio", "gpus", "batch")


def load_comparison(path: Path | str) -> list[dict]:
    """The comparison's rows (``#`` lines are provenance), numbers as floats (None where empty); [] when the
    file is absent; ValueError naming the row for a malformed one."""
    try:
        path = Path(path)
        if not path.is_file():
            return []
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, TypeError) as e:
        raise ValueError(f"{str(path)[:200]}: not a readable comparison table ({type(e).__name__})") from None
    rows = []
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    for i, row in enumerate(csv.DictReader(lines), start=2):
        try:
            for k in _NUMBERS:
                row[k] = float(row[k]) if row.get(k) not in (None, "") else None
        except ValueError as e:
            raise ValueError(f"{path.name}: row {i}: {e}") from None
        if not (row["planner_ms"] and row["aic_ms"] and row["planner_ms"] > 0 and row["aic_ms"] > 0):
            raise ValueError(f"{path.name}: row {i}: aic_ms and planner_ms must be > 0")
        rows.append(row)
    return rows


def _diff(a: float, b: float) -> float:
    """``exp(|ln(a / b)|) - 1 = max(a / b, b / a) - 1``: the relative difference, symmetric in which side is
    larger."""
    return max(a / b, b / a) - 1.0


def _positive(row: dict, key: str, optional: bool = False) -> float | None:
    v = row.get(key)
    if optional and v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and 1e-9 < v < 1e12):
        raise ValueError(f"comparison row {row.get('config', '?')!r}: {key} must be a number > 0, got {v!r}")
    return float(v)


def comparison_summary(rows: list[dict]) -> list[dict]:
    """Per phase, all rows and each group: rows, the median and max difference from aiconfigurator with
    balanced routing (as shipped where it has no balanced figure) and as shipped, the median AIC / planner
    ratio, the target and whether it is met."""
    out = []
    for phase in ("decode", "prefill"):
        mine = [r for r in rows if r["phase"] == phase]
        for group in ("all", *sorted({r["group"] for r in mine})):
            part = mine if group == "all" else [r for r in mine if r["group"] == group]
            if not part:
                continue
            aic = [_positive(r, "aic_ms") for r in part]
            planner = [_positive(r, "planner_ms") for r in part]
            balanced = [_positive(r, "aic_balanced_ms", optional=True) or a for r, a in zip(part, aic, strict=True)]
            bal = [_diff(b, p) for b, p in zip(balanced, planner, strict=True)]
            shipped = [_diff(a, p) for a, p in zip(aic, planner, strict=True)]
            target = 0.15 if (phase, group) == ("decode", "all") else 0.25
            out.append(
                {
                    "phase": phase,
                    "group": GROUP_NAMES.get(group, group),
                    "rows": len(part),
                    "median, balanced (%)": 100 * statistics.median(bal),
                    "max, balanced (%)": 100 * max(bal),
                    "median, as shipped (%)": 100 * statistics.median(shipped),
                    "AIC / planner": statistics.median(a / p for a, p in zip(aic, planner, strict=True)),
                    "target (%)": f"median ≤ {100 * target:.0f}",
                    "met": "yes" if statistics.median(bal) <= target else "no",
                }
            )
    return out
