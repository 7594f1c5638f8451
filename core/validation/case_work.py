"""What each measured case's kernel or step did, and the model's prediction of it under given efficiency factors:
the works of a GEMM, attention, MoE-layer or all-to-all case as the collector ran it, a whole step's deployment,
and :class:`CaseResult` (measured beside predicted). Both the calibration (which fits the factors on these works)
and the face (:mod:`core.validation.prediction`) use it; it uses neither."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from core import comms, perf, serving
from core.catalog import Catalog
from core.deployment.bundle import Deployment
from core.deployment.specs import MemoryAssumptions, Workload
from core.hardware.efficiency import (
    IDEAL,
    Efficiency,
    EfficiencyProfile,
    kernel_path,
)
from core.hardware.served_step import served_step_for
from core.perf.dispatch import alltoall_call_split
from core.validation.cases import (
    COMM_METRICS,
    ParsedCase,
    case_field,
    opt_int,
    parse_case,
)

# the case works (gemm_case_work, attention_case_work, moe_case_work, comm_case_terms) and predict_parsed take a
# ParsedCase the parser has checked: the calibration's, not a public entry
__all__ = ["CaseResult", "predict_with"]


def gemm_case_work(c: ParsedCase) -> tuple[perf.Work, float]:
    """A dense-GEMM case's work on one GPU (``m`` rows through an ``n x k`` weight in the case's weight dtype)."""
    wl = c.workload
    n, k = case_field(wl, "n", c.id, int), case_field(wl, "k", c.id, int)
    w = perf.dense_gemm_work(c.gpu, c.precision.weights, float(n) * k, case_field(wl, "m", c.id, float))
    return w, c.gpu.hbm_bytes_per_s


def attention_case_work(c: ParsedCase) -> tuple[perf.Work, float]:
    """An attention case's work on one GPU (one layer's attention core) and the GPU's HBM bytes/s."""
    w = perf.attention_work(
        _deployment(c, IDEAL),
        "prefill" if "prefill" in c.phase else "decode",
        int(case_field(c.workload, "context_len", c.id, float)),
        case_field(c.workload, "batch", c.id, float),
    )
    return w, c.gpu.hbm_bytes_per_s


def _step_case(c: ParsedCase, eff: Efficiency) -> perf.StepTime:
    """A step-level case: ``batch`` requests per attention group, each with ``new_tokens`` query tokens over
    ``past_kv_len`` cached ones (decode_step: 1, or gamma + 1 when verifying; prefill_step: a prompt chunk,
    timed as a prompt of ``new_tokens + past_kv_len`` tokens, the cached prefix's attention included)."""
    wl, opts = c.workload, c.options
    batch, new = case_field(wl, "batch", c.id, float), case_field(wl, "new_tokens", c.id, float)
    past = opt_int(wl, "past_kv_len", c.id, 0)
    tokens_per_gpu = batch * new * c.layout.attention_dp / c.layout.gpus_per_stage
    decode = c.phase == "decode_step"
    cfg = perf.StepConfig(
        phase="decode" if decode else "prefill",
        tokens_per_gpu=tokens_per_gpu,
        context_len=max(1, past) if decode else int(new) + past,
        overlap=opts.get("overlap", "none") or "none",
        comm_kernel=opts.get("comm_kernel"),
        redundant_experts=opt_int(opts, "redundant_experts", c.id, 0),
        tokens_per_sequence=new if decode else 1.0,
        kernel_path=c.kernel_path,
    )
    return perf.step_time(_deployment(c, eff, cfg.redundant_experts), cfg)


def _deployment(c: ParsedCase, eff: Efficiency, redundant_experts: int = 0) -> Deployment:
    """The deployment a published case measured: its model, GPU, layout, precision and scale-up domain."""
    return Deployment(
        c.model, c.gpu, c.layout, c.precision, eff, domain_gpus=c.domain, redundant_experts=redundant_experts
    )


def _aggregated_rate(c: ParsedCase, eff: Efficiency, batch: float, redundant: int) -> float:
    """Output tokens/s per GPU of a published in-flight-batching measurement (``options.serving: aggregated``) as the
    served model prices it (:func:`core.serving.serve_saturated`): ``batch`` sequences per GPU in decode, each
    finished one replaced at once, the prompts' chunks riding the decode steps at a full chunk's rate per token
    (``options.max_num_batched_tokens`` per attention rank where the source states the engine's budget, else the
    planner's default), the stack's served step, and the attention-DP pacing of steps that carry prompt work."""
    opts = c.options
    if opts.get("comm_kernel"):
        raise ValueError(f"case {c.id}: an aggregated case takes the layout's own all-to-all (no comm_kernel)")
    isl = case_field(opts, "input_len", c.id, float)
    osl = case_field(opts, "output_len", c.id, float)
    budget = opt_int(opts, "max_num_batched_tokens", c.id, MemoryAssumptions().max_num_batched_tokens)
    d = Deployment(
        c.model,
        c.gpu,
        c.layout,
        c.precision,
        eff,
        domain_gpus=c.domain,
        redundant_experts=redundant,
        workload=Workload(input_len=round(isl), output_len=round(osl)),
        assumptions=MemoryAssumptions(max_num_batched_tokens=budget),
        served_step=served_step_for(c.stack, "none"),
        kernel_path=c.kernel_path,
    )
    running = batch * c.layout.total_gpus  # one replica's sequences
    costs = serving.replica_costs(d, batches=(running,))
    return serving.serve_saturated(costs, d.workload, running).output_tokens_per_s_per_gpu


def comm_case_terms(c: ParsedCase) -> tuple[comms.AllToAllSplit | None, float | None]:
    """An all-to-all case's bytes on each link (None without EP) and, for a bandwidth metric, the logical
    bytes (GB) its call time divides; None for a latency metric."""
    opts = c.options
    t = case_field(c.workload, "tokens_per_gpu", c.id, float)
    kind = opts.get("comm_kernel", "low_latency")
    dtype = c.precision.dispatch if c.metric.startswith("dispatch") else "bf16"
    groups = opts.get("routing_groups")
    if groups:
        if not isinstance(groups, (list, tuple)) or len(groups) != 2:
            raise ValueError(f"case {c.id}: options.routing_groups must be [groups, groups per token]")
        groups = (case_field({"g": groups[0]}, "g", c.id, int), case_field({"g": groups[1]}, "g", c.id, int))
    else:
        groups = None
    split = alltoall_call_split(c.model, c.layout, t, dtype, kind, c.domain, groups)
    if c.metric.endswith("latency_us"):
        return split, None
    if kind != "normal":
        raise ValueError(f"case {c.id}: logical bandwidth is defined for normal kernels only")
    gpus, nodes = perf.normal_kernel_fanout(c.model, c.layout.ep, c.domain, groups)
    copies = nodes if c.layout.ep > c.domain else gpus
    return split, t * copies * perf.token_copy_bytes(c.model.hidden_size, dtype) / 1e9


def moe_case_work(c: ParsedCase) -> tuple[perf.Work, float]:
    """A grouped-GEMM case's work on one GPU (its routed experts, uniform routing) and the GPU's HBM bytes/s."""
    t = case_field(c.workload, "tokens_per_gpu", c.id, float)
    total = t * c.model.moe.top_k * c.layout.gpus_per_stage
    path = c.kernel_path or kernel_path(
        c.stack, c.layout.attention_dp, c.layout.ep, c.layout.expert_tp, c.precision.expert_dtype
    )
    redundant = opt_int(c.options, "redundant_experts", c.id, 0)
    w = perf.routed_experts_work(
        _deployment(c, IDEAL, redundant),
        total / c.layout.ep,
        total,
        "prefill" if "prefill" in c.phase else "decode",
        redundant,
        path,
    )
    if path == "fused" and c.layout.ep > 1:
        w = _fused_collector_work(c, w, t * c.layout.gpus_per_stage)
    return w, c.gpu.hbm_bytes_per_s


# What aiconfigurator's SGLang fused-MoE collector (collector/sglang/collect_moe.py) made the kernel compute at EP > 1,
# with its ``balanced`` routing (collector/helper.py balanced_logits: token t's k experts are t, t + s, t + 2s, ...
# mod E with s = ceil(E / k), one expert in each block of s), for N tokens entering the layer:
# * SGLang 0.5.10 tables (collect_moe.py at the "sglang 0.5.10 perf data" commit): build_rank0_workloads keeps the N x
#   min(1, (E / EP) / s) tokens with an expert on rank 0, and build_rank0_local_workload marks their remote slots -1
#   with weight 0; the benchmark then clamps -1 to 0 because the Triton kernel indexes weights without a mask, so all
#   k slots of those tokens are computed, the remote ones on local expert 0.
# * SGLang 0.5.14 tables (collect_moe.py at the "upgrade the SGLang collector to 0.5.14" commit): every model whose
#   case sets a routing method, a non-softmax score or expert groups (DeepSeek-V3, Qwen3, gpt-oss) runs through
#   _benchmark_framework_quantized_moe instead: SGLang's own FusedMoE layer with its EP size patched, fed all N tokens
#   and the router's top-k over the balanced logits. SGLang maps remote experts to -1, and the kernel writes zeros
#   for their blocks, so all N x k slots pass through the kernel's buffers (zero tiles, activation, the slot sum)
#   while only local slots are multiplied. The balanced logits give DeepSeek-V3's 8 groups of 32 equal scores, so its
#   grouped top-k (4 of 8 groups) breaks ties to the lowest: groups 0-3, the token's expert in each, and 4 fillers
#   on experts 0-3. The tables show it: DeepSeek-V3 FP8 on H200 at 16,384 tokens takes 15.3 / 15.4 / 11.9 / 10.2 ms
#   at EP 1 / 2 / 4 / 8 (8, 8, 6 and 5 local slots per token), where Qwen3-235B halves with each EP doubling.
def _fused_collector_work(c: ParsedCase, w: perf.Work, tokens: float) -> perf.Work:
    e = c.model.moe
    k, n_exp, ep = e.top_k, e.n_routed_experts, c.layout.ep
    width = e.latent_size or c.model.hidden_size
    per_pair = width + c.model.ffn_matrices * e.expert_intermediate_size / c.layout.expert_tp
    local = tokens * k / ep  # what routed_experts_work was given: uniform routing's local slots
    block = math.ceil(n_exp / k)
    if "sglang/0.5.10/moe_perf" in c.source:
        rank0 = tokens * min(1.0, n_exp / ep / block)
        pairs = rank0 * k
        return replace(w, flops=w.flops * pairs / local, row_elems=rank0 * width, pair_elems=pairs * per_pair)
    if "sglang/0.5.14/moe_perf" not in c.source:
        return w
    pairs = local
    group = n_exp // e.n_groups
    if e.topk_groups < e.n_groups and group == block:  # one balanced expert per group: every group score ties
        held = n_exp / ep  # rank 0 holds experts [0, held)
        chosen = sum(min(1.0, max(0.0, (held - g * group) / group)) for g in range(e.topk_groups))
        pairs = tokens * (chosen + min(k - e.topk_groups, held))
    return replace(w, flops=w.flops * pairs / local, pair_elems=tokens * k * per_pair)


def _eff(c: ParsedCase, cat: Catalog, profiles: Mapping[str, EfficiencyProfile] | None) -> Efficiency:
    return cat.efficiency_for(c.gpu.id, c.stack, profiles)


def predict_parsed(c: ParsedCase, eff: Efficiency) -> float:
    """The prediction of a parsed case's metric with the factors ``eff`` (calibration parses once)."""
    wl, opts = c.workload, c.options
    if c.metric == "moe_layer_latency_ms":
        w, bw = moe_case_work(c)
        return perf.kernel_s(w, bw, eff.kernel(w.family, w.path)) * 1e3
    if c.metric == "gemm_latency_us":
        w, bw = gemm_case_work(c)
        return perf.kernel_s(w, bw, eff["dense_gemm"]) * 1e6
    if c.metric == "attention_latency_us":
        w, bw = attention_case_work(c)
        return perf.kernel_s(w, bw, eff[w.family]) * 1e6
    if c.metric == "step_latency_ms":
        return _step_case(c, eff).step_s * 1e3
    if c.metric in COMM_METRICS:
        split, numerator = comm_case_terms(c)
        link = eff["alltoall_normal" if opts.get("comm_kernel") == "normal" else "alltoall_low_latency"]
        s = 0.0
        if split is not None:
            s = comms.alltoall_time_s(
                split,
                c.gpu.scale_up_bw_gbps,
                c.gpu.scale_out_bw_gbps,
                scale_up_eff=link.scale_up_eff,
                scale_out_eff=link.scale_out_eff,
                latency_s=link.latency_us * 1e-6,
            )
        if numerator is None:
            return s * 1e6
        if s <= 0:
            raise ValueError(f"case {c.id}: EP {c.layout.ep} has no all-to-all to measure a bandwidth of")
        return numerator / s
    if c.metric == "output_tokens_per_s_per_gpu":
        batch = case_field(wl, "batch_per_gpu", c.id, float)
        cfg = perf.StepConfig(
            phase="decode",
            tokens_per_gpu=batch,
            context_len=int(case_field(wl, "context_len", c.id, float)),
            overlap=opts.get("overlap", "none") or "none",
            comm_kernel=opts.get("comm_kernel"),
            redundant_experts=opt_int(opts, "redundant_experts", c.id, 0),
            kernel_path=c.kernel_path,
        )
        if opts.get("serving") == "aggregated":
            return _aggregated_rate(c, eff, batch, cfg.redundant_experts)
        return perf.step_time(_deployment(c, eff, cfg.redundant_experts), cfg).tokens_per_s_per_gpu
    else:
        cfg = perf.StepConfig(
            phase="prefill",
            tokens_per_gpu=case_field(wl, "tokens_per_gpu", c.id, float),
            context_len=int(case_field(wl, "input_len", c.id, float)),
            overlap=opts.get("overlap", "none") or "none",
            comm_kernel=opts.get("comm_kernel"),
            redundant_experts=opt_int(opts, "redundant_experts", c.id, 0),
            kernel_path=c.kernel_path,
        )
    return perf.step_time(_deployment(c, eff, cfg.redundant_experts), cfg).tokens_per_s_per_gpu


def predict_with(case: Mapping[str, Any], profiles: Mapping[str, EfficiencyProfile], cat: Catalog) -> float:
    """``predict`` with other efficiency profiles (calibration, leave-one-out) and the catalog ``cat``."""
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
