"""The validation cases' schema (``catalogs/validation/README.md``): metrics and their units, a case's
fields checked and resolved against the catalog (:func:`parse_case`), its kernel path and the efficiency
family it calibrates. :mod:`core.validation` predicts them (and re-exports these names)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from core._util.validated import describe_validation_error
from core.catalog import Catalog
from core.deployment.specs import ParallelLayout, Precision
from core.hardware import precision_support
from core.hardware.efficiency import KERNEL_PATHS, SERVING_STACKS, kernel_path
from core.model.dtypes import DTYPES

# parse_case, case_field, opt_int and mapping_field are the validation modules' own helpers (a case's
# fields are checked where each prediction reads them); the public surface is below
__all__ = [
    "COMM_METRICS",
    "METRICS",
    "METRIC_UNITS",
    "ParsedCase",
    "case_family",
    "case_id",
    "case_path",
]

METRICS = {
    "output_tokens_per_s_per_gpu": "decode",
    "input_tokens_per_s_per_gpu": "prefill",
    "moe_layer_latency_ms": "moe_layer",
    "dispatch_latency_us": "dispatch",
    "combine_latency_us": "combine",
    "dispatch_bandwidth_gbps": "dispatch",
    "combine_bandwidth_gbps": "combine",
    "attention_latency_us": "attention",
    "gemm_latency_us": "gemm",
    "step_latency_ms": "step",
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
    "attention_latency_us": "µs",
    "gemm_latency_us": "µs",
    "step_latency_ms": "ms",
}
COMM_METRICS = ("dispatch_latency_us", "combine_latency_us", "dispatch_bandwidth_gbps", "combine_bandwidth_gbps")
_REQUIRED = ("model", "gpu", "num_gpus", "phase", "layout", "precision", "workload", "measured")


_MAX_COUNT = 10**9  # GPUs, layout sizes, tokens, experts: whole numbers in a case stay below this


def opt_int(d: Mapping[str, Any], key: str, where: str, default: int) -> int:
    """An optional whole-number field (``default`` when absent, None or 0)."""
    if not d.get(key):
        return default
    return case_field(d, key, where, int)


def mapping_field(v: Any, where: str, key: str) -> Mapping[str, Any]:
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
class ParsedCase:
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
    stack: str = "sglang"
    kernel_path: str | None = None  # forced by the case (a kernel measurement); None: the stack's for the layout
    source: str = ""  # where the measurement comes from (the case's ``source``: table, collector version)


def parse_case(case: Mapping[str, Any], cat: Catalog) -> ParsedCase:
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
    lay = mapping_field(case["layout"], where, "layout")
    tp = case_field(lay, "attention_tp", where, int)
    adp = case_field(lay, "attention_dp", where, int)
    ep = case_field(lay, "ep", where, int)
    etp = opt_int(lay, "expert_tp", where, 1)
    pp = opt_int(lay, "pp", where, 1)
    num = case_field(case, "num_gpus", where, int)
    stage = tp * adp
    if stage < 1 or num % (stage * pp):
        raise ValueError(f"case {where}: attention_tp x attention_dp x pp must divide num_gpus ({num})")
    try:
        layout = ParallelLayout(attention_tp=tp, attention_dp=adp, ep=ep, expert_tp=etp, pp=pp, dp=num // (stage * pp))
        p = mapping_field(case["precision"], where, "precision")
        prec = Precision(
            weights=p.get("weights", "bf16"),
            routed_experts=p.get("experts") if p.get("experts") not in (None, p.get("weights")) else None,
            kv_cache=p.get("kv", "bf16"),
            dispatch=p.get("dispatch", "bf16"),
            linear_state=p.get("linear_state"),
        )
    except ValidationError as e:
        raise ValueError(f"case {where}: {describe_validation_error(e)}") from None
    if model.moe is None and metric in ("moe_layer_latency_ms", *COMM_METRICS):
        raise ValueError(f"case {where}: {model.name} is dense; {metric} needs a MoE model")
    value = measured.get("value")
    opts = mapping_field(case.get("options") or {}, where, "options")
    stack = opts.get("stack", "sglang")
    if stack not in SERVING_STACKS:
        raise ValueError(f"case {where}: unknown options.stack {stack!r}; known: {', '.join(SERVING_STACKS)}")
    path = opts.get("kernel_path")
    if path is not None and path not in KERNEL_PATHS:
        raise ValueError(f"case {where}: unknown options.kernel_path {path!r}; known: {', '.join(KERNEL_PATHS)}")
    return ParsedCase(
        id=where,
        metric=metric,
        model=model,
        gpu=gpu,
        layout=layout,
        precision=prec,
        domain=opt_int(case, "gpus_per_node", where, gpu.gpus_per_node),
        workload=mapping_field(case["workload"], where, "workload"),
        options=opts,
        phase=str(case["phase"]),
        measured=float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None,
        stack=stack,
        kernel_path=path,
        source=str(case.get("source", "")),
    )


def case_path(case: Mapping[str, Any]) -> str:
    """The MoE kernel path a case ran on: ``options.kernel_path``, else its stack's for its layout."""
    where = case_id(case)
    opts = mapping_field(case.get("options") or {}, where, "options")
    if opts.get("kernel_path"):
        return str(opts["kernel_path"])
    lay = mapping_field(case_field(case, "layout", where), where, "layout")
    prec = mapping_field(case.get("precision") or {}, where, "precision")
    return kernel_path(
        str(opts.get("stack", "sglang")),
        case_field(lay, "attention_dp", where, int),
        case_field(lay, "ep", where, int),
        opt_int(lay, "expert_tp", where, 1),
        str(prec.get("experts") or prec.get("weights", "")),
    )


def case_family(case: Mapping[str, Any], cat: Catalog) -> str:
    """The efficiency family a case calibrates: a kernel family or ``system`` (``cat``: the catalog whose GPU
    says whether an MoE layer's expert dtype is native there or weight-only)."""
    where = case_id(case)
    metric = case_field(case_field(case, "measured", where), "metric", where)
    if metric == "gemm_latency_us":
        return "dense_gemm"
    if metric == "attention_latency_us":
        return "attention_prefill" if "prefill" in str(case.get("phase", "")) else "attention_decode"
    if metric == "moe_layer_latency_ms":
        gpu = cat.gpus.get(str(case.get("gpu")))
        p = mapping_field(case.get("precision") or {}, where, "precision")
        experts = p.get("experts") or p.get("weights", "bf16")
        if gpu is not None and experts in DTYPES and not precision_support(gpu, experts).native:
            return "grouped_gemm_weight_only"
        return "grouped_gemm_prefill" if "prefill" in str(case.get("phase", "")) else "grouped_gemm_decode"
    if metric in COMM_METRICS:
        kernel = mapping_field(case.get("options") or {}, where, "options").get("comm_kernel", "low_latency")
        return "alltoall_normal" if kernel == "normal" else "alltoall_low_latency"
    return "system"
