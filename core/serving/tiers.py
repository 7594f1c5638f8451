"""The step-time model's measured error, which the layout search's tiers use (review 3 M4): the leave-one-out
|error| of the whole-step ("system") validation cases of each phase, its median and 90th percentile
(``catalogs/step_error.yaml``, written by ``python -m bench.calibrate --write`` from the shipped leave-one-out
table ``catalogs/validation/loo_predictions.csv``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from core._util.checks import load_yaml

if TYPE_CHECKING:
    from core.catalog import Catalog

__all__ = ["ErrorSpread", "error_distribution", "model_error"]

Phase = Literal["prefill", "decode"]


def model_error(phase: Phase, catalog: Catalog) -> float:
    """The step-time model's measured error for ``phase``: the median leave-one-out |error| of its
    whole-step cases (the ``catalog``'s ``step_error.yaml``, written by ``python -m bench.calibrate --write``)."""
    if phase not in ("prefill", "decode"):
        raise ValueError(f"phase must be prefill or decode, got {phase!r}")
    return float(catalog.step_error[phase])


@dataclass(frozen=True)
class ErrorSpread:
    """The step-time model's leave-one-out |error| on one phase's whole-step validation cases: its median, its
    90th percentile, how many cases and where the numbers come from."""

    median: float
    p90: float
    cases: int
    source: str


def error_distribution(phase: Phase, catalog: Catalog) -> ErrorSpread:
    """The median and 90th-percentile error the tiers use for ``phase`` (the ``catalog``'s ``step_error.yaml``:
    written by ``python -m bench.calibrate --write`` from the shipped leave-one-out table). Without a 90th percentile
    in the file the median stands for both (no second tier)."""
    median = model_error(phase, catalog)
    p90, cases, source = _spread(str(catalog.root), phase)
    return ErrorSpread(median, max(median, p90 if p90 is not None else median), cases, source)


@functools.lru_cache(maxsize=8)
def _spread(root: str, phase: str) -> tuple[float | None, int, str]:
    path = Path(root) / "step_error.yaml"
    data = load_yaml(path.read_text(encoding="utf-8")) if path.is_file() else {}
    entry = data.get(phase) if isinstance(data, dict) else None
    entry = entry if isinstance(entry, dict) else {}
    p90, cases = entry.get("p90_loo_error"), entry.get("cases", 0)
    if p90 is not None and not (isinstance(p90, (int, float)) and not isinstance(p90, bool) and 0 <= p90 < 10):
        raise ValueError(f"{path}: {phase}.p90_loo_error must be a number in [0, 10), got {p90!r:.40}")
    if not (isinstance(cases, int) and not isinstance(cases, bool) and cases >= 0):
        raise ValueError(f"{path}: {phase}.cases must be a whole number >= 0, got {cases!r:.40}")
    source = data.get("source") if isinstance(data, dict) else None
    return (None if p90 is None else float(p90)), cases, str(source or f"{path.name} ({phase})")
