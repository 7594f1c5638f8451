"""Calibration of the efficiency factors on the published cases, and leave-one-out errors.

Calibration fits one set of factors per GPU profile and kernel family on the kernel-level cases (grouped GEMM
decode / prefill layouts, low-latency and normal all-to-all) and the whole-step factors (per-token overhead,
overlap) on the system-level cases of kernel-calibrated GPUs; each a least-squares fit of log errors with a weak
pull towards the inherited value, so a factor the cases cannot determine stays where its relative puts it.
Leave-one-out refits without the case it predicts. The cases and predictions are :mod:`core.validation`'s, which
re-exports these functions (``validation.calibrate``): so this module imports it inside its functions.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from core.catalog import Catalog
from core.hardware.efficiency import EfficiencyProfile, resolve_efficiency

if TYPE_CHECKING:
    from core.validation.case_work import CaseResult

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
    "grouped_gemm_decode": (
        ("mem_eff", 0.2, 1.0),
        ("compute_eff", 0.1, 1.0),
        ("floor_us", 0.0, 200.0),
        ("per_expert_us", 0.0, 10.0),
    ),
    "grouped_gemm_prefill": (
        ("compute_eff", 0.15, 1.0),
        ("compute_eff_16bit", 0.1, 0.9),  # above 0.9 of the bf16 peak: the pairs' traffic taken for the GEMM
        ("floor_us", 0.0, 200.0),
        ("row_bytes", 0.0, 24.0),
        ("pair_bytes", 0.0, 24.0),
    ),
    "grouped_gemm_weight_only": (
        ("mem_eff", 0.05, 1.0),
        ("compute_eff", 0.05, 1.0),
        ("floor_us", 0.0, 200.0),
        ("per_expert_us", 0.0, 50.0),
    ),
    "alltoall_low_latency": (("scale_up_eff", 0.1, 1.2), ("scale_out_eff", 0.1, 1.2), ("latency_us", 0.0, 200.0)),
    "alltoall_normal": (("scale_up_eff", 0.1, 1.2), ("scale_out_eff", 0.1, 1.2), ("latency_us", 0.0, 500.0)),
    "attention_decode": (("mem_eff", 0.2, 1.2), ("compute_eff", 0.1, 1.0), ("floor_us", 0.0, 100.0)),
    "dense_gemm": (("compute_eff", 0.1, 1.0), ("mem_eff", 0.2, 1.2), ("floor_us", 0.0, 50.0)),
    "attention_prefill": (("compute_eff", 0.1, 1.0), ("floor_us", 0.0, 200.0)),
    "system": (("token_overhead_ps_per_channel", 0.0, 200.0), ("overlap_eff", 0.0, 1.0)),
}
_GROUPED = ("grouped_gemm_decode", "grouped_gemm_prefill", "grouped_gemm_weight_only")
_KERNEL = (*_GROUPED, "attention_decode", "attention_prefill", "dense_gemm")  # one work per case: vectorised
_LINKS = ("alltoall_low_latency", "alltoall_normal")  # fixed bytes per link per case: fitted vectorised
_PRIOR_WEIGHT = 0.02  # a weak pull towards the inherited value (in units of the parameter's range)


def _with(profile: EfficiencyProfile | None, owner: str, family: str, value) -> EfficiencyProfile:
    gpu, _, path = owner.partition("@")
    base = profile or EfficiencyProfile(
        gpu=gpu, path=path or None, stack="calibration", inherits=None if path else "default"
    )
    return base.model_copy(update={family: value})


def _grid_search(
    loss: Callable[[tuple[float, ...]], float], start: tuple[float, ...], bounds, *, local: bool = False
) -> tuple[float, ...]:
    """Coarse-to-fine grid search of ``loss`` around ``start`` within ``bounds``; ``local``: a refit that starts
    at the full fit's optimum (leave-one-out) searches a fifth of the range in four rounds."""
    best = tuple(min(max(v, lo), hi) for v, (lo, hi) in zip(start, bounds, strict=True))
    best_loss = loss(best)
    spans = [(hi - lo) * (0.2 if local else 1.0) for lo, hi in bounds]
    for _round in range(4 if local else 6):
        grids = [
            sorted({min(max(b + s * f, lo), hi) for f in (-0.5, -0.25, -0.1, 0.0, 0.1, 0.25, 0.5)})
            for b, s, (lo, hi) in zip(best, spans, bounds, strict=True)
        ]
        for point in itertools.product(*grids):
            value = loss(point)
            if value < best_loss - 1e-12:
                best, best_loss = point, value
        spans = [s * 0.35 for s in spans]
    return best


def _fit_kernel(family: str, start, parsed, names, bounds) -> tuple[float, ...]:
    """A kernel family's fit, vectorised: each case's work (FLOPs, bytes, touched experts) is fixed,
    only the factors vary, so every grid point is one numpy expression over all cases."""
    from core.validation.case_work import attention_case_work, gemm_case_work, moe_case_work

    work = moe_case_work if family in _GROUPED else gemm_case_work if family == "dense_gemm" else attention_case_work
    rows = [(*work(c), m) for c, m in parsed]
    scale = 1e-3 if family in _GROUPED else 1e-6  # ms or µs -> s
    flops = np.array([w.flops for w, _, _ in rows])
    nbytes = np.array([w.bytes for w, _, _ in rows])
    experts = np.array([w.experts for w, _, _ in rows])
    half = np.array([w.half for w, _, _ in rows])
    q_rows = np.array([w.rows for w, _, _ in rows])
    act = np.array([(w.row_elems, w.pair_elems) for w, _, _ in rows]).reshape(-1, 2)
    peak = np.array([w.peak_flops for w, _, _ in rows])
    bw = np.array([b for _, b, _ in rows])
    log_measured = np.log(np.array([m for _, _, m in rows]) * scale)
    fixed = start.model_dump()
    own_16bit = "compute_eff_16bit" in names or fixed["compute_eff_16bit"] is not None
    fixed["compute_eff_16bit"] = fixed["compute_eff_16bit"] or fixed["compute_eff"]

    def losses(points: np.ndarray) -> np.ndarray:
        """The loss at every grid point (rows of ``points``) at once: shape (points, cases) inside."""
        f = {n: np.full((len(points), 1), float(fixed[n])) for n in ("compute_eff", "compute_eff_16bit", "mem_eff")}
        f |= {
            n: np.full((len(points), 1), float(fixed[n]))
            for n in ("floor_us", "per_expert_us", "tile_rows", "row_bytes", "pair_bytes")
        }
        for k, n in enumerate(names):
            f[n] = points[:, k : k + 1]
        ce = np.where(half, f["compute_eff_16bit"] if own_16bit else f["compute_eff"], f["compute_eff"])
        ce = ce * np.where(
            (q_rows > 0) & (f["tile_rows"] > 0), np.minimum(1.0, q_rows / np.maximum(f["tile_rows"], 1e-9)), 1.0
        )
        t = (
            (f["floor_us"] + f["per_expert_us"] * experts) * 1e-6
            + np.maximum(flops / (peak * ce), nbytes / (bw * f["mem_eff"]))
            + (act[:, 0] * f["row_bytes"] + act[:, 1] * f["pair_bytes"]) / bw
        )
        spans = np.array([hi - lo for lo, hi in bounds])
        prior = np.sum(((points - np.array([fixed[n] for n in names])) / spans) ** 2, axis=1)
        return np.sum((np.log(np.maximum(t, 1e-15)) - log_measured) ** 2, axis=1) + _PRIOR_WEIGHT * prior

    return _grid_search_arrays(losses, [fixed[n] for n in names], bounds)


def _grid_search_arrays(losses, start: list[float], bounds) -> tuple[float, ...]:
    """Coarse-to-fine grid search where ``losses`` scores every grid point (rows of an array) at once."""
    best = np.array([min(max(v, lo), hi) for v, (lo, hi) in zip(start, bounds, strict=True)])
    spans = np.array([hi - lo for lo, hi in bounds])
    lo, hi = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    steps = np.array([-0.5, -0.25, -0.1, 0.0, 0.1, 0.25, 0.5])
    best_loss = float(losses(best[None, :])[0])
    for _round in range(8):  # coarse-to-fine grid around the best point, every point in one expression
        axes = [np.unique(np.clip(b + s * steps, a, z)) for b, s, a, z in zip(best, spans, lo, hi, strict=True)]
        points = np.stack([g.ravel() for g in np.meshgrid(*axes, indexing="ij")], axis=1)
        values = losses(points)
        k = int(np.argmin(values))
        if values[k] < best_loss - 1e-12:
            best, best_loss = points[k], float(values[k])
        spans = spans * 0.35
    return tuple(float(v) for v in best)


def _fit_links(family: str, start, parsed, names, bounds) -> tuple[float, ...]:
    """An all-to-all family's fit, vectorised: each case's bytes on each link are fixed, only the link
    efficiencies and the latency vary (``latency + max(scale-up, scale-out transfer)``)."""
    from core.validation.case_work import comm_case_terms

    terms = [(comm_case_terms(c), c.gpu, m) for c, m in parsed]
    up = np.array([(s.scale_up if s else 0.0) for (s, _), _, _ in terms])
    out = np.array([(s.scale_out if s else 0.0) for (s, _), _, _ in terms])
    up_bw = np.array([g.scale_up_bw_gbps * 1e9 for _, g, _ in terms])
    out_bw = np.array([g.scale_out_bw_gbps * 1e9 for _, g, _ in terms])
    num = np.array([(n if n is not None else np.nan) for (_, n), _, _ in terms])
    log_measured = np.log(np.array([m for _, _, m in terms]))
    fixed = start.model_dump()
    spans = np.array([hi - lo for lo, hi in bounds])

    def losses(points: np.ndarray) -> np.ndarray:
        f = {n: np.full((len(points), 1), float(fixed[n])) for n in fixed}
        for k, n in enumerate(names):
            f[n] = points[:, k : k + 1]
        t = f["latency_us"] * 1e-6 + np.maximum(up / (up_bw * f["scale_up_eff"]), out / (out_bw * f["scale_out_eff"]))
        pred = np.where(np.isnan(num), t * 1e6, num / np.maximum(t, 1e-15))
        prior = np.sum(((points - np.array([fixed[n] for n in names])) / spans) ** 2, axis=1)
        return np.sum((np.log(np.maximum(pred, 1e-12)) - log_measured) ** 2, axis=1) + _PRIOR_WEIGHT * prior

    return _grid_search_arrays(losses, [fixed[n] for n in names], bounds)


def _fit_family(
    family: str,
    owner: str,
    cases: list[Mapping[str, Any]],
    profiles: Mapping[str, EfficiencyProfile],
    cat: Catalog,
    *,
    local: bool = False,
) -> Any:
    """Fit ``family``'s free parameters for profile ``owner`` on ``cases`` (log errors, least squares)."""
    # at call time: core.validation re-exports this module
    from core.validation.case_work import predict_parsed
    from core.validation.cases import parse_case

    gpu_id, _, path = owner.partition("@")
    base = resolve_efficiency(gpu_id, profiles)
    start = base.kernel(family, path or None) if family in _GROUPED else base[family]
    names = [n for n, _, _ in _FIT[family]]
    bounds = [(lo, hi) for _, lo, hi in _FIT[family]]
    parsed = [(parse_case(c, cat), _measured(c)) for c in cases]
    if family in _KERNEL or family in _LINKS:
        fit = _fit_kernel if family in _KERNEL else _fit_links
        best = fit(family, start, parsed, names, bounds)
        return start.model_copy(update={n: round(v, 4) for n, v in zip(names, best, strict=True)})

    def loss(values: tuple[float, ...]) -> float:
        factors = start.model_copy(update=dict(zip(names, values, strict=True)))
        trial = dict(profiles)
        trial[owner] = _with(profiles.get(owner), owner, family, factors)
        total = 0.0
        effs: dict[tuple[str, str], Any] = {}  # one resolution per GPU and stack per trial
        for c, measured in parsed:
            key = (c.gpu.id, c.stack)
            if key not in effs:
                effs[key] = cat.efficiency_for(c.gpu.id, c.stack, trial)
            pred = predict_parsed(c, effs[key])
            total += math.log(max(pred, 1e-12) / measured) ** 2
        prior = sum(
            ((v - getattr(start, n)) / (hi - lo)) ** 2 for v, n, (lo, hi) in zip(values, names, bounds, strict=True)
        )
        return total + _PRIOR_WEIGHT * prior

    best = _grid_search(loss, tuple(getattr(start, n) for n in names), bounds, local=local)
    return start.model_copy(update={n: round(v, 4) for n, v in zip(names, best, strict=True)})


def _measured(case: Mapping[str, Any]) -> float:
    """A case's measured value (a number > 0)."""
    # at call time: core.validation re-exports this module
    from core.validation.cases import case_field, case_id

    where = case_id(case)
    return case_field(case_field(case, "measured", where), "value", where, float)


def fitted_families(cases: Iterable[Mapping[str, Any]], cat: Catalog) -> set[tuple[str, str]]:
    """(profile, family) pairs that the cases calibrate (system cases: the default profile, shared by every
    GPU generation); ``cat`` holds the cases' GPUs."""
    # at call time: core.validation re-exports this module
    from core.validation.cases import case_family

    return {(_owner(c, fam), fam) for c in cases for fam in [case_family(c, cat)]}


def strip_fitted(
    profiles: Mapping[str, EfficiencyProfile], cases: Iterable[Mapping[str, Any]], cat: Catalog
) -> dict[str, EfficiencyProfile]:
    """The profiles with every fitted family removed: the documented starting point of a calibration."""
    out = dict(profiles)
    for owner, fam in fitted_families(cases, cat):
        if owner in out:
            out[owner] = out[owner].model_copy(update={fam: None})
    return out


def owner_of(case: Mapping[str, Any], family: str) -> str:
    return _owner(case, family)


def _owner(case: Mapping[str, Any], family: str) -> str:
    """The profile a case's family is fitted on: the whole-step factors are one set shared by every GPU
    (``default``: a residual per GPU generation would absorb what its kernels miss); a kernel family is
    its GPU's, on its kernel path (``<gpu>@<path>`` except DeepGEMM's, the base profile)."""
    # at call time: core.validation re-exports this module
    from core.validation.cases import case_field, case_id, case_path

    if family == "system":
        return "default"
    gpu = str(case_field(case, "gpu", case_id(case)))
    path = case_path(case) if family.startswith("grouped_gemm") else "deepep"
    return gpu if path == "deepep" else f"{gpu}@{path}"


def residual_cases(cases: list[Mapping[str, Any]], cat: Catalog) -> list[Mapping[str, Any]]:
    """The system cases the shared whole-step factors are fitted on: those on a GPU with kernel cases of its own. On
    one without (an AMD Instinct: a relative's fractions of peak), a step's error is mostly its kernels', which the
    residual every GPU shares must not absorb; such a case is predicted and reported (leave-one-out: the full fit)."""
    from core.validation.cases import case_family  # at call time: core.validation re-exports this module

    family = [case_family(c, cat) for c in cases]
    own = {str(c.get("gpu")) for c, f in zip(cases, family, strict=True) if f != "system"}
    return [c for c, f in zip(cases, family, strict=True) if f == "system" and str(c.get("gpu")) in own]


def calibrate(
    cases: Iterable[Mapping[str, Any]],
    profiles: Mapping[str, EfficiencyProfile] | None,
    cat: Catalog,
) -> dict[str, EfficiencyProfile]:
    """Fit, in order: every (GPU, kernel path, kernel family) on its kernel-level cases; then the
    whole-step factors once over all system-level cases (the ``default`` profile, which every GPU
    inherits: one residual shared across GPU generations, stated on the Validation page)."""
    # at call time: core.validation re-exports this module
    from core.validation.cases import case_family

    profiles = dict(profiles if profiles is not None else cat.efficiency)
    cases = list(cases)
    groups: dict[tuple[str, str], list] = {}
    for c in cases:
        fam = case_family(c, cat)
        if fam != "system":
            groups.setdefault((_owner(c, fam), fam), []).append(c)
    for (owner, fam), members in sorted(groups.items()):
        profiles[owner] = _with(profiles.get(owner), owner, fam, _fit_family(fam, owner, members, profiles, cat))
    system = residual_cases(cases, cat)
    if system:
        profiles["default"] = _with(
            profiles.get("default"), "default", "system", _fit_family("system", "default", system, profiles, cat)
        )
    return profiles


def leave_one_out(
    cases: list[Mapping[str, Any]],
    profiles: Mapping[str, EfficiencyProfile] | None,
    cat: Catalog,
    *,
    progress: Callable[[int, int], None] | None = None,
    only: Collection[str] | None = None,
) -> list[CaseResult]:
    """For each case: the prediction with the given (fully calibrated) profiles, and the prediction
    after refitting without it everything it helped fit: its kernel family on its GPU, or, for a
    system-level case, the whole-step factors shared by every GPU. Kernel factors are never
    fitted on system cases, so a system case's leave-one-out prediction has not seen it. ``only``: the ids
    of the cases to answer (each still refitted on all the others), in their order; default every case."""
    # at call time: core.validation re-exports this module
    from core.validation.case_work import CaseResult, predict_with
    from core.validation.cases import case_family, case_id

    profiles = dict(profiles if profiles is not None else cat.efficiency)
    out = []
    keys = [(case_family(c, cat), _owner(c, case_family(c, cat))) for c in cases]  # (family, owner) of each case, once
    wanted = None if only is None else {only} if isinstance(only, str) else {str(x) for x in only}
    for i, case in enumerate(cases):
        if wanted is not None and case_id(case) not in wanted:
            continue
        fam, gpu_id = keys[i]
        loo = dict(profiles)
        if fam != "system":
            rest = [c for j, c in enumerate(cases) if j != i and keys[j] == (fam, gpu_id)]
            if rest:
                loo[gpu_id] = _with(loo.get(gpu_id), gpu_id, fam, _fit_family(fam, gpu_id, rest, loo, cat))
            elif gpu_id in loo:  # nothing else to learn from: the family falls back to what it inherits
                loo[gpu_id] = loo[gpu_id].model_copy(update={fam: None})
        else:
            others = [c for c in residual_cases(cases, cat) if c is not case]
            if others:
                loo["default"] = _with(
                    loo.get("default"),
                    "default",
                    "system",
                    _fit_family("system", "default", others, loo, cat, local=True),
                )
        out.append(
            CaseResult(
                id=case_id(case),
                metric=case["measured"]["metric"],
                family=fam,
                gpu=str(case["gpu"]),
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
