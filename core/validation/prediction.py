"""Published measurements against the step-time model: ``predict(case)``, calibration, leave-one-out.

A case is a plain dict in the schema of ``catalogs/validation/README.md`` (as ``yaml.safe_load``
returns it): model, GPU, layout, precision, workload, options and the measured metric. ``predict``
answers all five metrics for any catalog model and GPU:

* ``output_tokens_per_s_per_gpu`` (decode) and ``input_tokens_per_s_per_gpu`` (prefill): a whole step
  from :func:`core.perf.step_time`; with ``options.serving: aggregated`` (and ``options.input_len`` /
  ``options.output_len``, ``options.max_num_batched_tokens`` where stated) the served model of in-flight
  batching, :func:`core.serving.serve_saturated` at the case's batch: prompt chunks in the decode steps, the
  stack's served step, the attention-DP pacing;
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
``strip_fitted``, ``owner_of``) live in :mod:`core.validation.calibration` and are re-exported here, so
``validation.calibrate`` still works; it uses ``parse_case``, ``predict_parsed``, ``case_id`` and
``case_field`` from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.catalog import Catalog, load_catalog
from core.hardware.efficiency import (
    STACK_NAMES,
    KernelFactors,
    LinkFactors,
    SystemFactors,
)
from core.validation.calibration import (
    calibrate,
    error_summary,
    fitted_families,
    leave_one_out,
    owner_of,
    residual_cases,
    strip_fitted,
)
from core.validation.case_work import CaseResult, predict_parsed, predict_with
from core.validation.cases import (
    METRIC_UNITS,
    METRICS,
    case_family,
    parse_case,
)

__all__ = [
    "METRICS",
    "METRIC_UNITS",
    "CaseResult",
    "calibrate",
    "calibration_note",
    "case_family",
    "error_summary",
    "fitted_families",
    "leave_one_out",
    "owner_of",
    "predict",
    "predict_with",
    "strip_fitted",
]


def predict(case: Mapping[str, Any]) -> float:
    """The model's prediction of ``case["measured"]["metric"]``, in the case's unit, with the catalog's
    efficiency factors. Raises ValueError naming the case and the field for a malformed case."""
    cat = load_catalog()
    c = parse_case(case, cat)
    return predict_parsed(c, cat.efficiency_for(c.gpu.id, c.stack))


# these factor classes are what the YAML holds; re-exported for the calibration script
FACTOR_TYPES = {"kernel": KernelFactors, "link": LinkFactors, "system": SystemFactors}


def calibration_note(cat: Catalog, gpu_id: str, stack: str = "sglang") -> str:
    """One sentence a page shows under its step times: which factors the GPU has from measured cases of its
    own (and how many cases) and which it inherits from whom; a GPU with none says so."""
    gpu = cat.gpu(gpu_id)
    eff = cat.efficiency_for(gpu.id, stack)
    own, inherited = set(), {}
    for row in eff.describe():
        if row["family"] == "system":
            continue
        owner = row["owner"].split("@")[0]
        if owner == gpu.id:
            own.add(row["family"])
        else:
            inherited.setdefault(owner, set()).add(row["family"])
    n = sum(1 for c in cat.validation_cases if str(c.get("gpu")) == gpu.id)
    whole = sum(1 for c in cat.validation_cases if case_family(c, cat) == "system")
    fitted = len(residual_cases(list(cat.validation_cases), cat))  # those on GPUs with kernel cases of their own
    parts = []
    if own:
        parts.append(f"{len(own)} kernel families fitted on {n:,} measured cases of its own")
    else:
        parts.append("no measured case of its own: an uncalibrated estimate from a relative's fractions of peak")
    if inherited:
        parts.append(
            "inherited: "
            + ", ".join(
                f"{len(f)} from the {cat.gpus[o].name.split(' (')[0]}"
                if o in cat.gpus
                else f"{len(f)} documented defaults"
                for o, f in sorted(inherited.items(), key=lambda kv: kv[0] == "default")
            )
        )
    return (
        f"Step times on the {gpu.name.split(' (')[0]} under {STACK_NAMES.get(stack, stack)}: "
        + "; ".join(parts)
        + f". The whole-step residual is one set for every GPU, fitted on {fitted} of {whole} published deployments (those "
        "on GPUs with measured kernels). Validation page: details."
    )
