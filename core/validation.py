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

Calibration and leave-one-out (``calibrate``, ``leave_one_out``, ``error_summary``, ``fitted_families``,
``strip_fitted``, ``owner_of``) live in :mod:`core.calibration` and are re-exported here, so
``validation.calibrate`` still works; it uses ``parse_case``, ``predict_parsed``, ``case_id`` and
``case_field`` from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from core import perf
from core.calibration import calibrate, error_summary, fitted_families, leave_one_out, owner_of, strip_fitted
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
    "METRIC_UNITS",
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
# the unit each metric is measured and predicted in (the Validation page labels its tables with it)
METRIC_UNITS = {
    "output_tokens_per_s_per_gpu": "tok/s/GPU",
    "input_tokens_per_s_per_gpu": "tok/s/GPU",
    "moe_layer_latency_ms": "ms",
    "dispatch_latency_us": "µs",
    "combine_latency_us": "µs",
    "dispatch_bandwidth_gbps": "GB/s",
    "combine_bandwidth_gbps": "GB/s",
}
_COMM_METRICS = ("dispatch_latency_us", "combine_latency_us", "dispatch_bandwidth_gbps", "combine_bandwidth_gbps")
_REQUIRED = ("model", "gpu", "num_gpus", "phase", "layout", "precision", "workload", "measured")


_MAX_COUNT = 10**9  # GPUs, layout sizes, tokens, experts: whole numbers in a case stay below this


def _opt_int(d: Mapping[str, Any], key: str, where: str, default: int) -> int:
    """An optional whole-number field (``default`` when absent, None or 0)."""
    if not d.get(key):
        return default
    return case_field(d, key, where, int)


def _mapping(v: Any, where: str, key: str) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise ValueError(f"case {where}: field '{key}' must be a mapping, got {type(v).__name__}")
    return v


def case_id(case: Any) -> str:
    """A case's id for messages ("<no id>" when it has none); ValueError when the case is not a mapping."""
    if not isinstance(case, Mapping):
        raise ValueError("a case must be a mapping (a YAML / JSON object)")
    return str(case.get("id", "<no id>"))[:120]


def case_field(d: Mapping[str, Any], key: str, where: str, kind=None):
    """Field ``key`` of a case (or of one of its mappings): present, and with ``kind`` int a whole number in
    0..10^9, with ``kind`` float a finite number > 0; ValueError naming case ``where`` and the field."""
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


def parse_case(case: Mapping[str, Any], cat: Catalog) -> _Case:
    """A case checked and resolved against the catalog (model, GPU, layout, precision)."""
    where = case_id(case)
    for k in _REQUIRED:
        case_field(case, k, where)
    measured = case["measured"]
    metric = case_field(measured, "metric", where)
    if not isinstance(metric, str) or metric not in METRICS:
        raise ValueError(f"case {where}: unknown metric {metric!r}; known: {', '.join(METRICS)}")
    model = cat.model(str(case["model"]))
    gpu = cat.gpu(str(case["gpu"]))
    lay = _mapping(case["layout"], where, "layout")
    tp = case_field(lay, "attention_tp", where, int)
    adp = case_field(lay, "attention_dp", where, int)
    ep = case_field(lay, "ep", where, int)
    etp = _opt_int(lay, "expert_tp", where, 1)
    pp = _opt_int(lay, "pp", where, 1)
    num = case_field(case, "num_gpus", where, int)
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
    where = case_id(case)
    metric = case_field(case_field(case, "measured", where), "metric", where)
    if metric == "moe_layer_latency_ms":
        return "grouped_gemm_prefill" if "prefill" in str(case.get("phase", "")) else "grouped_gemm_decode"
    if metric in _COMM_METRICS:
        kernel = _mapping(case.get("options") or {}, where, "options").get("comm_kernel", "low_latency")
        return "alltoall_normal" if kernel == "normal" else "alltoall_low_latency"
    return "system"


def _eff(c: _Case, cat: Catalog, profiles: Mapping[str, EfficiencyProfile] | None, overrides=None) -> perf.Efficiency:
    return perf.resolve_efficiency(c.gpu.id, profiles if profiles is not None else cat.efficiency, overrides)


def predict_parsed(c: _Case, eff: perf.Efficiency) -> float:
    """The prediction of a parsed case's metric with the factors ``eff`` (calibration parses once)."""
    wl, opts = c.workload, c.options
    if c.metric == "moe_layer_latency_ms":
        t = case_field(wl, "tokens_per_gpu", c.id, float)
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
        t = case_field(wl, "tokens_per_gpu", c.id, float)
        kind = opts.get("comm_kernel", "low_latency")
        fam = "alltoall_normal" if kind == "normal" else "alltoall_low_latency"
        dtype = c.precision.dispatch if c.metric.startswith("dispatch") else "bf16"
        groups = opts.get("routing_groups")
        if groups:
            if not isinstance(groups, (list, tuple)) or len(groups) != 2:
                raise ValueError(f"case {c.id}: options.routing_groups must be [groups, groups per token]")
            groups = (case_field({"g": groups[0]}, "g", c.id, int), case_field({"g": groups[1]}, "g", c.id, int))
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
        batch = case_field(wl, "batch_per_gpu", c.id, float)
        cfg = perf.StepConfig(
            phase="decode",
            tokens_per_gpu=batch,
            context_len=int(case_field(wl, "context_len", c.id, float)),
            overlap=opts.get("overlap", "none") or "none",
            comm_kernel=opts.get("comm_kernel"),
            redundant_experts=_opt_int(opts, "redundant_experts", c.id, 0),
        )
        decode = perf.step_time(c.model, c.gpu, c.layout, c.precision, cfg, eff, domain_gpus=c.domain)
        if opts.get("serving") == "aggregated":
            # in-flight batching: each decode step also carries its share of the prompts' prefill
            isl = case_field(opts, "input_len", c.id, float)
            osl = case_field(opts, "output_len", c.id, float)
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
            tokens_per_gpu=case_field(wl, "tokens_per_gpu", c.id, float),
            context_len=int(case_field(wl, "input_len", c.id, float)),
            overlap=opts.get("overlap", "none") or "none",
            comm_kernel=opts.get("comm_kernel"),
            redundant_experts=_opt_int(opts, "redundant_experts", c.id, 0),
        )
    return perf.step_time(c.model, c.gpu, c.layout, c.precision, cfg, eff, domain_gpus=c.domain).tokens_per_s_per_gpu


def predict(case: Mapping[str, Any]) -> float:
    """The model's prediction of ``case["measured"]["metric"]``, in the case's unit, with the catalog's
    efficiency factors. Raises ValueError naming the case and the field for a malformed case."""
    cat = load_catalog()
    c = parse_case(case, cat)
    return predict_parsed(c, _eff(c, cat, None))


def predict_with(
    case: Mapping[str, Any], profiles: Mapping[str, EfficiencyProfile], cat: Catalog | None = None
) -> float:
    """``predict`` with other efficiency profiles (calibration, leave-one-out)."""
    cat = cat or load_catalog()
    c = parse_case(case, cat)
    return predict_parsed(c, _eff(c, cat, profiles))


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


# these factor classes are what the YAML holds; re-exported for the calibration script
FACTOR_TYPES = {"kernel": KernelFactors, "link": LinkFactors, "system": SystemFactors}
