"""Calibration of the efficiency factors on the published cases, and leave-one-out errors.

Calibration fits one set of factors per GPU profile and kernel family on the kernel-level cases
(grouped GEMM decode / prefill layouts, low-latency and normal all-to-all) and the whole-step factors
(per-layer overhead, overlap) on the system-level cases; each fit is a least-squares fit of log
errors with a weak pull towards the inherited value, so a factor the remaining cases cannot
determine stays where its relative puts it. Leave-one-out refits without the case it predicts.

The cases and the predictions are :mod:`core.validation`'s (``parse_case``, ``predict_parsed``,
``predict_with``), and so is ``CaseResult``. These functions were part of it and it re-exports them
(``validation.calibrate`` still works); because it does, this module imports ``core.validation`` inside
its functions, not at load time.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from core import perf
from core.catalog import Catalog, load_catalog
from core.specs import EfficiencyProfile

if TYPE_CHECKING:
    from core.validation import CaseResult

__all__ = [
    "calibrate",
    "error_summary",
    "fitted_families",
    "leave_one_out",
    "owner_of",
    "strip_fitted",
]

# --------------------------------------------------------------------------------- calibration

# the parameters each family fits, with their bounds; the rest of the family stays as inherited
_FIT: dict[str, tuple[tuple[str, float, float], ...]] = {
    "grouped_gemm_decode": (("mem_eff", 0.2, 1.0), ("floor_us", 0.0, 200.0)),
    "grouped_gemm_prefill": (("compute_eff", 0.15, 1.0), ("floor_us", 0.0, 200.0)),
    "alltoall_low_latency": (("scale_up_eff", 0.1, 1.2), ("scale_out_eff", 0.1, 1.2), ("latency_us", 0.0, 200.0)),
    "alltoall_normal": (("scale_up_eff", 0.1, 1.2), ("scale_out_eff", 0.1, 1.2), ("latency_us", 0.0, 500.0)),
    "system": (("layer_overhead_us", 0.0, 400.0), ("overlap_eff", 0.0, 1.0)),
}
_PRIOR_WEIGHT = 0.02  # a weak pull towards the inherited value (in units of the parameter's range)


def _with(profile: EfficiencyProfile | None, gpu: str, family: str, value) -> EfficiencyProfile:
    base = profile or EfficiencyProfile(gpu=gpu, stack="calibration", inherits="default")
    return base.model_copy(update={family: value})


def _fit_family(
    family: str, owner: str, cases: list[Mapping[str, Any]], profiles: Mapping[str, EfficiencyProfile], cat: Catalog
) -> Any:
    """Fit ``family``'s free parameters for profile ``owner`` on ``cases`` (log errors, least squares)."""
    # at call time: core.validation re-exports this module
    from core.validation import parse_case, predict_parsed

    start = perf.resolve_efficiency(owner, profiles)[family]
    names = [n for n, _, _ in _FIT[family]]
    bounds = [(lo, hi) for _, lo, hi in _FIT[family]]
    parsed = [(parse_case(c, cat), _measured(c)) for c in cases]

    def loss(values: tuple[float, ...]) -> float:
        factors = start.model_copy(update=dict(zip(names, values, strict=True)))
        trial = dict(profiles)
        trial[owner] = _with(profiles.get(owner), owner, family, factors)
        total = 0.0
        for c, measured in parsed:
            eff = perf.resolve_efficiency(c.gpu.id, trial)
            pred = predict_parsed(c, eff)
            total += math.log(max(pred, 1e-12) / measured) ** 2
        prior = sum(
            ((v - getattr(start, n)) / (hi - lo)) ** 2 for v, n, (lo, hi) in zip(values, names, bounds, strict=True)
        )
        return total + _PRIOR_WEIGHT * prior

    best = tuple(min(max(getattr(start, n), lo), hi) for n, (lo, hi) in zip(names, bounds, strict=True))
    best_loss = loss(best)
    spans = [(hi - lo) for lo, hi in bounds]
    for _round in range(6):  # coarse-to-fine grid around the best point
        grids = [
            sorted({min(max(b + s * f, lo), hi) for f in (-0.5, -0.25, -0.1, 0.0, 0.1, 0.25, 0.5)})
            for b, s, (lo, hi) in zip(best, spans, bounds, strict=True)
        ]
        for point in itertools.product(*grids):
            value = loss(point)
            if value < best_loss - 1e-12:
                best, best_loss = point, value
        spans = [s * 0.35 for s in spans]
    return start.model_copy(update={n: round(v, 4) for n, v in zip(names, best, strict=True)})


def _measured(case: Mapping[str, Any]) -> float:
    """A case's measured value (a number > 0)."""
    # at call time: core.validation re-exports this module
    from core.validation import case_field, case_id

    where = case_id(case)
    return case_field(case_field(case, "measured", where), "value", where, float)


def fitted_families(cases: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """(profile, family) pairs that the cases calibrate (system cases: the default profile and their GPU's)."""
    # at call time: core.validation re-exports this module
    from core.validation import case_family

    out = set()
    for c in cases:
        fam = case_family(c)
        out.add((_owner(c, fam), fam))
        if fam == "system":
            out.add(("default", "system"))
    return out


def strip_fitted(
    profiles: Mapping[str, EfficiencyProfile], cases: Iterable[Mapping[str, Any]]
) -> dict[str, EfficiencyProfile]:
    """The profiles with every fitted family removed: the documented starting point of a calibration."""
    out = dict(profiles)
    for owner, fam in fitted_families(cases):
        if owner in out:
            out[owner] = out[owner].model_copy(update={fam: None})
    return out


def owner_of(case: Mapping[str, Any], family: str) -> str:
    return _owner(case, family)


def _owner(case: Mapping[str, Any], family: str) -> str:
    """The profile a case's family is fitted on: its GPU's."""
    # at call time: core.validation re-exports this module
    from core.validation import case_field, case_id

    where = case_id(case)
    return str(case_field(case, "gpu", where))


def calibrate(
    cases: Iterable[Mapping[str, Any]],
    profiles: Mapping[str, EfficiencyProfile] | None = None,
    cat: Catalog | None = None,
) -> dict[str, EfficiencyProfile]:
    """Fit, in order: every (GPU, kernel family) on its kernel-level cases; the whole-step factors
    once over all system-level cases (the ``default`` profile, which every GPU inherits); then each GPU
    that has system-level cases of its own gets its own whole-step factors (its serving stack),
    pulled weakly towards the global ones."""
    # at call time: core.validation re-exports this module
    from core.validation import case_family

    cat = cat or load_catalog()
    profiles = dict(profiles if profiles is not None else cat.efficiency)
    cases = list(cases)
    groups: dict[tuple[str, str], list] = {}
    for c in cases:
        fam = case_family(c)
        if fam != "system":
            groups.setdefault((_owner(c, fam), fam), []).append(c)
    for (owner, fam), members in sorted(groups.items()):
        profiles[owner] = _with(profiles.get(owner), owner, fam, _fit_family(fam, owner, members, profiles, cat))
    system = [c for c in cases if case_family(c) == "system"]
    if system:
        profiles["default"] = _with(
            profiles.get("default"), "default", "system", _fit_family("system", "default", system, profiles, cat)
        )
        by_gpu: dict[str, list] = {}
        for c in system:
            by_gpu.setdefault(_owner(c, "system"), []).append(c)
        for gpu_id, members in sorted(by_gpu.items()):
            profiles[gpu_id] = _with(
                profiles.get(gpu_id), gpu_id, "system", _fit_family("system", gpu_id, members, profiles, cat)
            )
    return profiles


def leave_one_out(
    cases: list[Mapping[str, Any]],
    profiles: Mapping[str, EfficiencyProfile] | None = None,
    cat: Catalog | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> list[CaseResult]:
    """For each case: the prediction with the given (fully calibrated) profiles, and the prediction
    after refitting without it everything it helped fit: its kernel family on its GPU, or, for a
    system-level case, the global whole-step factors and its GPU's own. Kernel factors are never
    fitted on system cases, so a system case's leave-one-out prediction has not seen it."""
    # at call time: core.validation re-exports this module
    from core.validation import CaseResult, case_family, case_id, predict_with

    cat = cat or load_catalog()
    profiles = dict(profiles if profiles is not None else cat.efficiency)
    out = []
    for i, case in enumerate(cases):
        fam = case_family(case)
        gpu_id = _owner(case, fam)
        loo = dict(profiles)
        if fam != "system":
            rest = [c for c in cases if c is not case and case_family(c) == fam and _owner(c, fam) == gpu_id]
            if rest:
                loo[gpu_id] = _with(loo.get(gpu_id), gpu_id, fam, _fit_family(fam, gpu_id, rest, loo, cat))
            elif gpu_id in loo:  # nothing else to learn from: the family falls back to what it inherits
                loo[gpu_id] = loo[gpu_id].model_copy(update={fam: None})
        else:
            others = [c for c in cases if c is not case and case_family(c) == "system"]
            if gpu_id in loo:
                loo[gpu_id] = loo[gpu_id].model_copy(update={"system": None})
            if others:
                loo["default"] = _with(
                    loo.get("default"), "default", "system", _fit_family("system", "default", others, loo, cat)
                )
            mine = [c for c in others if _owner(c, "system") == gpu_id]
            if mine:
                loo[gpu_id] = _with(loo.get(gpu_id), gpu_id, "system", _fit_family("system", gpu_id, mine, loo, cat))
        out.append(
            CaseResult(
                id=case_id(case),
                metric=case["measured"]["metric"],
                family=fam,
                gpu=gpu_id,
                measured=_measured(case),
                predicted=predict_with(case, profiles, cat),
                loo_predicted=predict_with(case, loo, cat),
            )
        )
        if progress:
            progress(i + 1, len(cases))
    return out


def error_summary(results: list[CaseResult], *, loo: bool = True) -> dict[str, dict[str, float]]:
    """Median and 90th-percentile |error| (and the max) per family, and over all cases."""

    def stats(errs: list[float]) -> dict[str, float]:
        a = sorted(abs(e) for e in errs)
        if not a:
            return {}
        p90 = a[min(len(a) - 1, math.ceil(0.9 * len(a)) - 1)]
        return {"n": len(a), "median": statistics.median(a), "p90": p90, "max": a[-1]}

    groups: dict[str, list[float]] = {}
    for r in results:
        e = r.loo_error if loo else r.error
        if e is None:
            continue
        groups.setdefault(r.family, []).append(e)
        groups.setdefault("all", []).append(e)
    return {k: stats(v) for k, v in groups.items()}
