"""Published measurements against the step-time model: ``predict(case)``, calibration, leave-one-out.

A case is a plain dict in the schema of ``catalogs/validation/README.md`` (as ``yaml.safe_load``
returns it): model, GPU, layout, precision, workload, options and the measured metric. ``predict``
answers all five metrics for any catalog model and GPU:

* ``output_tokens_per_s_per_gpu`` (decode) and ``input_tokens_per_s_per_gpu`` (prefill): a whole step
  from :func:`core.perf.step_time`; with ``options.serving: aggregated`` (and ``options.input_len`` /
  ``options.output_len``) each decode step also pays for ``batch x input_len / output_len`` prompt
  tokens of prefill, as in-flight batching on the same GPUs does;
* ``moe_layer_latency_ms``: the routed experts' grouped GEMM of one MoE layer on one GPU (uniform
  routing), :func:`core.perf.grouped_gemm_s`;
* ``dispatch_latency_us`` / ``combine_latency_us``: one all-to-all call, :func:`core.perf.alltoall_call_s`;
* ``dispatch_bandwidth_gbps`` / ``combine_bandwidth_gbps``: the "logical bandwidth" DeepEP's tests print
  for normal kernels, bytes over the predicted call time, where bytes count each token once per
  distinct node it goes to (its own included) across nodes, once per distinct GPU inside one
  (``options.routing_groups: [groups, groups per token]`` reproduces the test's routing).

Calibration fits one set of factors per GPU profile and kernel family on the kernel-level cases
(grouped GEMM decode / prefill layouts, low-latency and normal all-to-all) and the whole-step factors
(per-layer overhead, overlap) on the system-level cases; each fit is a least-squares fit of log
errors with a weak pull towards the inherited value, so a factor the remaining cases cannot
determine stays where its relative puts it. Leave-one-out refits without the case it predicts.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from core import perf
from core.catalog import Catalog, load_catalog
from core.specs import (
    EfficiencyProfile,
    KernelFactors,
    LinkFactors,
    ParallelLayout,
    Precision,
    SystemFactors,
    describe_validation_error,
)

__all__ = [
    "METRICS",
    "CaseResult",
    "calibrate",
    "case_family",
    "error_summary",
    "fitted_families",
    "leave_one_out",
    "owner_of",
    "predict",
    "predict_with",
    "strip_fitted",
]

METRICS = {
    "output_tokens_per_s_per_gpu": "decode",
    "input_tokens_per_s_per_gpu": "prefill",
    "moe_layer_latency_ms": "moe_layer",
    "dispatch_latency_us": "dispatch",
    "combine_latency_us": "combine",
    "dispatch_bandwidth_gbps": "dispatch",
    "combine_bandwidth_gbps": "combine",
}
_COMM_METRICS = ("dispatch_latency_us", "combine_latency_us", "dispatch_bandwidth_gbps", "combine_bandwidth_gbps")
_REQUIRED = ("model", "gpu", "num_gpus", "phase", "layout", "precision", "workload", "measured")


_MAX_COUNT = 10**9  # GPUs, layout sizes, tokens, experts: whole numbers in a case stay below this


def _opt_int(d: Mapping[str, Any], key: str, where: str, default: int) -> int:
    """An optional whole-number field (``default`` when absent, None or 0)."""
    if not d.get(key):
        return default
    return _get(d, key, where, int)


def _mapping(v: Any, where: str, key: str) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise ValueError(f"case {where}: field '{key}' must be a mapping, got {type(v).__name__}")
    return v


def _where(case: Any) -> str:
    if not isinstance(case, Mapping):
        raise ValueError("a case must be a mapping (a YAML / JSON object)")
    return str(case.get("id", "<no id>"))[:120]


def _get(d: Mapping[str, Any], key: str, where: str, kind=None):
    if not isinstance(d, Mapping) or key not in d or d[key] is None:
        raise ValueError(f"case {where}: missing field '{key}'")
    v = d[key]
    if kind is int and (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not math.isfinite(v)
        or v != int(v)
        or not 0 <= v <= _MAX_COUNT
    ):
        raise ValueError(f"case {where}: field '{key}' must be a whole number in 0..{_MAX_COUNT:,}, got {v!r}")
    if kind is float and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0):
        raise ValueError(f"case {where}: field '{key}' must be a number > 0, got {v!r}")
    return int(v) if kind is int else (float(v) if kind is float else v)


@dataclass(frozen=True)
class _Case:
    id: str
    metric: str
    model: Any
    gpu: Any
    layout: ParallelLayout
    precision: Precision
    domain: int
    workload: Mapping[str, Any]
    options: Mapping[str, Any]
    phase: str
    measured: float | None


def _parse(case: Mapping[str, Any], cat: Catalog) -> _Case:
    where = _where(case)
    for k in _REQUIRED:
        _get(case, k, where)
    measured = case["measured"]
    metric = _get(measured, "metric", where)
    if not isinstance(metric, str) or metric not in METRICS:
        raise ValueError(f"case {where}: unknown metric {metric!r}; known: {', '.join(METRICS)}")
    model = cat.model(str(case["model"]))
    gpu = cat.gpu(str(case["gpu"]))
    lay = _mapping(case["layout"], where, "layout")
    tp = _get(lay, "attention_tp", where, int)
    adp = _get(lay, "attention_dp", where, int)
    ep = _get(lay, "ep", where, int)
    etp = _opt_int(lay, "expert_tp", where, 1)
    pp = _opt_int(lay, "pp", where, 1)
    num = _get(case, "num_gpus", where, int)
    stage = tp * adp
    if stage < 1 or num % (stage * pp):
        raise ValueError(f"case {where}: attention_tp x attention_dp x pp must divide num_gpus ({num})")
    try:
        layout = ParallelLayout(attention_tp=tp, attention_dp=adp, ep=ep, expert_tp=etp, pp=pp, dp=num // (stage * pp))
        p = _mapping(case["precision"], where, "precision")
        prec = Precision(
            weights=p.get("weights", "bf16"),
            routed_experts=p.get("experts") if p.get("experts") not in (None, p.get("weights")) else None,
            kv_cache=p.get("kv", "bf16"),
            dispatch=p.get("dispatch", "bf16"),
        )
    except ValidationError as e:
        raise ValueError(f"case {where}: {describe_validation_error(e)}") from None
    if model.moe is None and metric in ("moe_layer_latency_ms", *_COMM_METRICS):
        raise ValueError(f"case {where}: {model.name} is dense; {metric} needs a MoE model")
    value = measured.get("value")
    return _Case(
        id=where,
        metric=metric,
        model=model,
        gpu=gpu,
        layout=layout,
        precision=prec,
        domain=_opt_int(case, "gpus_per_node", where, gpu.gpus_per_node),
        workload=_mapping(case["workload"], where, "workload"),
        options=_mapping(case.get("options") or {}, where, "options"),
        phase=str(case["phase"]),
        measured=float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None,
    )


def case_family(case: Mapping[str, Any]) -> str:
    """The efficiency family a case calibrates: a kernel family or ``system``."""
    where = _where(case)
    metric = _get(_get(case, "measured", where), "metric", where)
    if metric == "moe_layer_latency_ms":
        return "grouped_gemm_prefill" if "prefill" in str(case.get("phase", "")) else "grouped_gemm_decode"
    if metric in _COMM_METRICS:
        kernel = _mapping(case.get("options") or {}, where, "options").get("comm_kernel", "low_latency")
        return "alltoall_normal" if kernel == "normal" else "alltoall_low_latency"
    return "system"


def _eff(c: _Case, cat: Catalog, profiles: Mapping[str, EfficiencyProfile] | None, overrides=None) -> perf.Efficiency:
    return perf.resolve_efficiency(c.gpu.id, profiles if profiles is not None else cat.efficiency, overrides)


def _predict_parsed(c: _Case, eff: perf.Efficiency) -> float:
    wl, opts = c.workload, c.options
    if c.metric == "moe_layer_latency_ms":
        t = _get(wl, "tokens_per_gpu", c.id, float)
        k = c.model.moe.top_k
        fam = "grouped_gemm_prefill" if "prefill" in c.phase else "grouped_gemm_decode"
        total = t * k * c.layout.gpus_per_stage
        s = perf.grouped_gemm_s(
            c.model,
            c.gpu,
            c.layout,
            c.precision,
            total / c.layout.ep,
            total,
            eff[fam],
            _opt_int(opts, "redundant_experts", c.id, 0),
        )
        return s * 1e3
    if c.metric in _COMM_METRICS:
        t = _get(wl, "tokens_per_gpu", c.id, float)
        kind = opts.get("comm_kernel", "low_latency")
        fam = "alltoall_normal" if kind == "normal" else "alltoall_low_latency"
        dtype = c.precision.dispatch if c.metric.startswith("dispatch") else "bf16"
        groups = opts.get("routing_groups")
        if groups:
            if not isinstance(groups, (list, tuple)) or len(groups) != 2:
                raise ValueError(f"case {c.id}: options.routing_groups must be [groups, groups per token]")
            groups = (_get({"g": groups[0]}, "g", c.id, int), _get({"g": groups[1]}, "g", c.id, int))
        else:
            groups = None
        s = perf.alltoall_call_s(c.model, c.gpu, c.layout, t, dtype, kind, c.domain, eff[fam], routing_groups=groups)
        if c.metric.endswith("latency_us"):
            return s * 1e6
        if kind != "normal":
            raise ValueError(f"case {c.id}: logical bandwidth is defined for normal kernels only")
        if s <= 0:
            raise ValueError(f"case {c.id}: EP {c.layout.ep} has no all-to-all to measure a bandwidth of")
        gpus, nodes = perf.normal_kernel_fanout(c.model, c.layout.ep, c.domain, groups)
        copies = nodes if c.layout.ep > c.domain else gpus
        return t * copies * perf.token_copy_bytes(c.model.hidden_size, dtype) / s / 1e9
    if c.metric == "output_tokens_per_s_per_gpu":
        batch = _get(wl, "batch_per_gpu", c.id, float)
        cfg = perf.StepConfig(
            phase="decode",
            tokens_per_gpu=batch,
            context_len=int(_get(wl, "context_len", c.id, float)),
            overlap=opts.get("overlap", "none") or "none",
            comm_kernel=opts.get("comm_kernel"),
            redundant_experts=_opt_int(opts, "redundant_experts", c.id, 0),
        )
        decode = perf.step_time(c.model, c.gpu, c.layout, c.precision, cfg, eff, domain_gpus=c.domain)
        if opts.get("serving") == "aggregated":
            # in-flight batching: each decode step also carries its share of the prompts' prefill
            isl = _get(opts, "input_len", c.id, float)
            osl = _get(opts, "output_len", c.id, float)
            pre = perf.StepConfig(
                phase="prefill",
                tokens_per_gpu=batch * isl / osl,
                context_len=int(isl),
                comm_kernel=opts.get("comm_kernel"),
                redundant_experts=_opt_int(opts, "redundant_experts", c.id, 0),
            )
            prefill = perf.step_time(c.model, c.gpu, c.layout, c.precision, pre, eff, domain_gpus=c.domain)
            return batch / (decode.step_s + prefill.step_s)
        return decode.tokens_per_s_per_gpu
    else:
        cfg = perf.StepConfig(
            phase="prefill",
            tokens_per_gpu=_get(wl, "tokens_per_gpu", c.id, float),
            context_len=int(_get(wl, "input_len", c.id, float)),
            overlap=opts.get("overlap", "none") or "none",
            comm_kernel=opts.get("comm_kernel"),
            redundant_experts=_opt_int(opts, "redundant_experts", c.id, 0),
        )
    return perf.step_time(c.model, c.gpu, c.layout, c.precision, cfg, eff, domain_gpus=c.domain).tokens_per_s_per_gpu


def predict(case: Mapping[str, Any]) -> float:
    """The model's prediction of ``case["measured"]["metric"]``, in the case's unit, with the catalog's
    efficiency factors. Raises ValueError naming the case and the field for a malformed case."""
    cat = load_catalog()
    c = _parse(case, cat)
    return _predict_parsed(c, _eff(c, cat, None))


def predict_with(
    case: Mapping[str, Any], profiles: Mapping[str, EfficiencyProfile], cat: Catalog | None = None
) -> float:
    """``predict`` with other efficiency profiles (calibration, leave-one-out)."""
    cat = cat or load_catalog()
    c = _parse(case, cat)
    return _predict_parsed(c, _eff(c, cat, profiles))


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
    start = perf.resolve_efficiency(owner, profiles)[family]
    names = [n for n, _, _ in _FIT[family]]
    bounds = [(lo, hi) for _, lo, hi in _FIT[family]]
    parsed = [(_parse(c, cat), _measured(c)) for c in cases]

    def loss(values: tuple[float, ...]) -> float:
        factors = start.model_copy(update=dict(zip(names, values, strict=True)))
        trial = dict(profiles)
        trial[owner] = _with(profiles.get(owner), owner, family, factors)
        total = 0.0
        for c, measured in parsed:
            eff = perf.resolve_efficiency(c.gpu.id, trial)
            pred = _predict_parsed(c, eff)
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
    where = _where(case)
    return _get(_get(case, "measured", where), "value", where, float)


def fitted_families(cases: Iterable[Mapping[str, Any]]) -> set[tuple[str, str]]:
    """(profile, family) pairs that the cases calibrate (system cases: the default profile and their GPU's)."""
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
    where = _where(case)
    return str(_get(case, "gpu", where))


def calibrate(
    cases: Iterable[Mapping[str, Any]],
    profiles: Mapping[str, EfficiencyProfile] | None = None,
    cat: Catalog | None = None,
) -> dict[str, EfficiencyProfile]:
    """Fit, in order: every (GPU, kernel family) on its kernel-level cases; the whole-step factors
    once over all system-level cases (the ``default`` profile, which every GPU inherits); then each GPU
    that has system-level cases of its own gets its own whole-step factors (its serving stack),
    pulled weakly towards the global ones."""
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


@dataclass(frozen=True)
class CaseResult:
    id: str
    metric: str
    family: str
    gpu: str
    measured: float
    predicted: float
    loo_predicted: float | None

    def __post_init__(self):
        for name in ("measured", "predicted", "loo_predicted"):
            v = getattr(self, name)
            if v is None and name == "loo_predicted":
                continue
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v < 0
                or (name == "measured" and v == 0)
            ):
                raise ValueError(f"case {self.id}: {name} must be a finite number >= 0 (measured > 0), got {v!r}")
        for v in (self.predicted, self.loo_predicted):
            if v is not None and not math.isfinite(v / self.measured):
                raise ValueError(f"case {self.id}: predicted / measured overflows (measured {self.measured!r})")

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0

    @property
    def loo_error(self) -> float | None:
        return None if self.loo_predicted is None else self.loo_predicted / self.measured - 1.0


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
                id=_where(case),
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


# these factor classes are what the YAML holds; re-exported for the calibration script
FACTOR_TYPES = {"kernel": KernelFactors, "link": LinkFactors, "system": SystemFactors}
