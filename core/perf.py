"""The step-time model: one forward step of decode or prefill, per layer and summed.

Per GPU and layer, each kernel family takes ``floor + max(FLOPs / (peak x compute_eff),
bytes / (HBM bandwidth x mem_eff))`` with the family's factors from ``catalogs/efficiency.yaml``
(per GPU type and serving stack, inherited from the closest relative where a GPU has none):

* attention: projections (dense GEMM family; MLA's down-projections whole on every TP rank, the rest
  split; decode runs MLA absorbed) and scores over the KV cache (attention family: decode reads the
  cache, prefill is causal over the prompt);
* dense FFN, shared experts, router (dense GEMM family);
* routed experts (grouped GEMM family, decode or prefill layout): only the local experts a step
  touches are read; each GPU receives ``tokens x k / EP`` assignments, times the imbalance factor;
* dispatch and combine (all-to-all family, low-latency or normal kernels), split into scale-up and
  scale-out bytes; TP all-reduces when attention is tensor-parallel;
* a fixed overhead per layer (norms, RoPE, router top-k, their launches).

Two-batch overlap splits the step into two micro-batches: every kernel runs twice on half the tokens
(weights are read twice) and communication hides under compute up to ``overlap_eff``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from core import comms, memory, params
from core.specs import (
    EFFICIENCY_FAMILIES,
    AttentionKind,
    EfficiencyProfile,
    GPUSpec,
    KernelFactors,
    LinkFactors,
    ModelSpec,
    ParallelLayout,
    Precision,
    SystemFactors,
)

__all__ = [
    "Efficiency",
    "StepConfig",
    "StepTime",
    "alltoall_call_s",
    "normal_kernel_fanout",
    "grouped_gemm_s",
    "token_copy_bytes",
    "resolve_efficiency",
    "step_time",
]

Phase = Literal["decode", "prefill"]


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and math.isfinite(x)


def _is_whole(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _amount(name: str, x, hi: float) -> float:
    """A finite number in [0, hi]."""
    if not (_is_number(x) and 0 <= x <= hi):
        raise ValueError(f"{name} must be a finite number in [0, {hi:g}], got {x!r}")
    return float(x)


def _count(name: str, x, lo: int = 1, hi: int = 1_000_000) -> int:
    """A whole number in lo..hi."""
    if not (_is_whole(x) and lo <= x <= hi):
        raise ValueError(f"{name} must be a whole number in {lo:,}..{hi:,}, got {x!r}")
    return x


def _moe(model: ModelSpec):
    if model.moe is None:
        raise ValueError(f"{model.name} is a dense model: it has no routed experts")
    return model.moe


@dataclass(frozen=True)
class Efficiency:
    """Resolved factors for one GPU: each family with the profile (GPU, stack) it came from."""

    gpu: str
    factors: Mapping[str, KernelFactors | LinkFactors | SystemFactors]
    source: Mapping[str, str]

    def __getitem__(self, family: str):
        return self.factors[family]

    def describe(self) -> list[dict]:
        rows = []
        for fam in EFFICIENCY_FAMILIES:
            f = self.factors[fam]
            rows.append({"family": fam, "from": self.source[fam], **f.model_dump()})
        return rows


_DEFAULTS = {
    "grouped_gemm_decode": KernelFactors(),
    "grouped_gemm_prefill": KernelFactors(),
    "dense_gemm": KernelFactors(),
    "attention_decode": KernelFactors(),
    "attention_prefill": KernelFactors(),
    "alltoall_low_latency": LinkFactors(),
    "alltoall_normal": LinkFactors(),
    "allreduce": LinkFactors(),
    "system": SystemFactors(),
}


def resolve_efficiency(gpu_id: str, profiles: Mapping[str, EfficiencyProfile],
                       overrides: Mapping[str, KernelFactors | LinkFactors | SystemFactors] | None = None) -> Efficiency:
    """Each family from the GPU's own profile, else from its ``inherits`` chain (closest relative),
    else the generic default (labelled as such). ``overrides`` replace families (used by calibration)."""
    factors, source = {}, {}
    for fam in EFFICIENCY_FAMILIES:
        pid, seen = gpu_id, set()
        while pid is not None and pid in profiles and pid not in seen:
            seen.add(pid)
            value = getattr(profiles[pid], fam)
            if value is not None:
                prof = profiles[pid]
                factors[fam] = value
                source[fam] = f"{pid} ({prof.stack})" + ("" if pid == gpu_id else f", inherited by {gpu_id}")
                break
            pid = profiles[pid].inherits
        else:
            factors[fam] = _DEFAULTS[fam]
            source[fam] = "generic default (no profile)"
        if fam not in factors:
            factors[fam] = _DEFAULTS[fam]
            source[fam] = "generic default (no profile)"
    for fam, v in (overrides or {}).items():
        factors[fam] = v
        source[fam] = "calibration override"
    return Efficiency(gpu_id, factors, source)


@dataclass(frozen=True)
class StepConfig:
    """What one step processes, per GPU.

    decode: ``tokens_per_gpu`` sequences per GPU, one new token each, over ``context_len`` cached tokens.
    prefill: ``tokens_per_gpu`` prompt tokens per GPU per forward step, prompts of ``context_len`` tokens.
    """

    phase: Phase
    tokens_per_gpu: float
    context_len: int
    overlap: Literal["none", "two_batch"] = "none"
    comm_kernel: Literal["low_latency", "normal"] | None = None  # None: low-latency for decode, normal for prefill
    redundant_experts: int = 0
    imbalance: float = 1.0  # max/mean routed-expert load across the EP group

    def __post_init__(self):
        if self.phase not in ("decode", "prefill"):
            raise ValueError(f"phase must be decode or prefill, got {self.phase!r}")
        if not (_is_number(self.tokens_per_gpu) and 0 < self.tokens_per_gpu <= 1e9):
            raise ValueError(f"tokens_per_gpu must be > 0 and <= 1,000,000,000, got {self.tokens_per_gpu!r}")
        if not (_is_whole(self.context_len) and 1 <= self.context_len <= 100_000_000):
            raise ValueError(f"context_len must be a whole number in 1..100,000,000, got {self.context_len!r}")
        if self.overlap not in ("none", "two_batch"):
            raise ValueError(f"overlap must be none or two_batch, got {self.overlap!r}")
        if self.comm_kernel not in (None, "low_latency", "normal"):
            raise ValueError(f"comm_kernel must be low_latency, normal or None, got {self.comm_kernel!r}")
        if not (_is_whole(self.redundant_experts) and 0 <= self.redundant_experts <= 100_000):
            raise ValueError(f"redundant_experts must be a whole number in 0..100,000, got {self.redundant_experts!r}")
        if not (_is_number(self.imbalance) and 1 <= self.imbalance <= 1e6):
            raise ValueError("imbalance must be >= 1 (max / mean) and <= 1,000,000")

    @property
    def kernel(self) -> str:
        return self.comm_kernel or ("low_latency" if self.phase == "decode" else "normal")


@dataclass(frozen=True)
class StepTime:
    """One step on the most loaded GPU: seconds per component (summed over layers) and totals."""

    components: dict[str, float]
    compute_s: float
    comm_s: float
    step_s: float
    tokens_per_gpu: float
    phase: Phase
    per_layer: dict[str, float] = field(default_factory=dict)

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_gpu / self.step_s


def _kernel_s(flops: float, nbytes: float, peak_flops: float, bw_bytes: float, f: KernelFactors) -> float:
    if flops <= 0 and nbytes <= 0:
        return 0.0
    return f.floor_us * 1e-6 + max(flops / (peak_flops * f.compute_eff), nbytes / (bw_bytes * f.mem_eff))


def _peak(gpu: GPUSpec, dtype: str) -> float:
    return gpu.tflops(memory.precision_support(gpu, dtype).compute_dtype) * 1e12


def grouped_gemm_s(model: ModelSpec, gpu: GPUSpec, layout: ParallelLayout, precision: Precision, assignments_per_gpu: float,
                   total_assignments: float, f: KernelFactors, redundant_experts: int = 0) -> float:
    """One MoE layer's routed experts on one GPU: ``assignments_per_gpu`` token-expert pairs over its
    ``(N + redundant) / EP`` local experts, each split over expert-TP; only touched experts are read.
    ``total_assignments`` A = T x k come from T tokens, each picking k distinct experts, so an expert is
    untouched with probability ``(1 - k/N)^T`` (:func:`core.moe.expected_experts_touched`)."""
    e = _moe(model)
    precision = Precision.of(precision)
    assignments_per_gpu = _amount("assignments_per_gpu", assignments_per_gpu, 1e15)
    total_assignments = _amount("total_assignments", total_assignments, 1e15)
    redundant_experts = _count("redundant_experts", redundant_experts, 0, 100_000)
    local = math.ceil((e.n_routed_experts + redundant_experts) / layout.ep)
    p_touched = 1.0 - (1.0 - e.top_k / e.n_routed_experts) ** (total_assignments / e.top_k)
    expert_p = params.expert_params(model) / layout.expert_tp
    nbytes = local * p_touched * expert_p * memory.bytes_per_param(precision.expert_dtype)
    flops = 2.0 * assignments_per_gpu * expert_p
    return _kernel_s(flops, nbytes, _peak(gpu, precision.expert_dtype), gpu.hbm_bytes_per_s, f)


def token_copy_bytes(d_model: int, dtype: str) -> float:
    """Bytes of one token's hidden state on the wire: bf16 2 B per element; fp8 1 B plus one fp32 scale
    per 128 channels (DeepEP); nvfp4 half a byte plus one FP8 scale per 16 elements."""
    d_model = _count("d_model", d_model, 1, 10_000_000)
    if dtype == "fp8":
        return d_model + comms.fp8_scale_bytes(d_model)
    if dtype == "nvfp4":
        return d_model * 0.5 + d_model / 16
    if dtype in ("bf16", "fp16"):
        return 2.0 * d_model
    raise ValueError(f"unknown all-to-all dtype {dtype!r}; allowed: bf16, fp8, nvfp4")


def _touch(n_experts: int, top_k: int, bins: float, groups: tuple[int, int]) -> float:
    """P(one token touches a given bin); uniform routing when the bins do not split the experts evenly."""
    if bins <= 1:
        return 1.0
    if float(bins).is_integer() and n_experts % int(bins) == 0:
        return comms.bin_touch_probability(n_experts, top_k, int(bins), *groups)
    return 1.0 - (1.0 - 1.0 / bins) ** top_k


def normal_kernel_fanout(model: ModelSpec, ep: int, domain_gpus: int,
                         routing_groups: tuple[int, int] | None = None) -> tuple[float, float]:
    """Per token, DeepEP normal kernels' (distinct GPUs, distinct nodes) it is sent to, counting its own:
    a token goes once to each GPU (or, across nodes, once to each node) holding any of its experts,
    not once per expert. Routing is limited to the model's expert groups unless ``routing_groups``
    gives (groups, groups per token)."""
    e = _moe(model)
    groups = routing_groups or (e.n_groups, e.topk_groups)
    if not (isinstance(groups, (tuple, list)) and len(groups) == 2):
        raise ValueError("routing_groups must be (groups, groups per token)")
    ep, domain_gpus = _count("ep", ep, 1, 100_000), _count("domain_gpus", domain_gpus, 1, 100_000)
    d = min(ep, domain_gpus)
    nodes = ep / d
    gpus = ep * _touch(e.n_routed_experts, e.top_k, ep, groups)
    return gpus, nodes * _touch(e.n_routed_experts, e.top_k, nodes, groups)


def alltoall_call_s(model: ModelSpec, gpu: GPUSpec, layout: ParallelLayout, tokens_per_gpu: float, dtype: str,
                    kind: str, domain_gpus: int, f: LinkFactors, *, routing_groups: tuple[int, int] | None = None) -> float:
    """One dispatch or combine of one MoE layer on one GPU with token copies in ``dtype``.

    Low-latency kernels send every top-k copy straight to its expert's GPU. Normal kernels (DeepEP's
    NVLink-RDMA forwarding) send a token once per distinct GPU inside the scale-up domain; across
    nodes once per distinct remote node over the network (to the GPU with the same local rank), which
    forwards it over NVLink to the GPUs there that need it. With G distinct GPUs and N distinct nodes
    per token (:func:`normal_kernel_fanout`): network bytes ``T x copy x (N - P(own node))``, scale-up
    bytes ``T x copy x G x (D - 1) / D`` (every GPU forwards as much as it originates)."""
    if kind not in ("low_latency", "normal"):
        raise ValueError(f"kind must be low_latency or normal, got {kind!r}")
    tokens_per_gpu = _amount("tokens_per_gpu", tokens_per_gpu, 1e12)
    domain_gpus = _count("domain_gpus", domain_gpus, 1, 100_000)
    if layout.ep <= 1:
        return 0.0
    h, k = model.hidden_size, _moe(model).top_k
    per_copy = token_copy_bytes(h, dtype)
    ep = layout.ep
    d = min(ep, domain_gpus)
    if kind == "low_latency":
        split = comms.alltoall_split(tokens_per_gpu * k * per_copy, ep, domain_gpus)
    else:
        gpus, nodes_touched = normal_kernel_fanout(model, ep, domain_gpus, routing_groups)
        nodes = ep / d
        remote_nodes = nodes_touched * (nodes - 1) / nodes  # by symmetry P(own node) = touched / nodes
        scale_out = tokens_per_gpu * per_copy * remote_nodes
        scale_up = tokens_per_gpu * per_copy * gpus * (d - 1) / d
        split = comms.AllToAllSplit(tokens_per_gpu * per_copy * gpus / ep, scale_up, scale_out)
    return comms.alltoall_time_s(split, gpu.scale_up_bw_gbps, gpu.scale_out_bw_gbps, scale_up_eff=f.scale_up_eff,
                                 scale_out_eff=f.scale_out_eff, latency_s=f.latency_us * 1e-6)


def _layer_parts(model: ModelSpec, gpu: GPUSpec, layout: ParallelLayout, prec: Precision, cfg: StepConfig, eff: Efficiency,
                 tokens_per_gpu: float, domain_gpus: int) -> dict[str, float]:
    """Seconds per component for ONE pass over all layers with ``tokens_per_gpu`` tokens (no overlap)."""
    tp, adp = layout.attention_tp, layout.attention_dp
    stage_gpus = layout.gpus_per_stage
    t_stage = tokens_per_gpu * stage_gpus
    t_attn = t_stage / adp  # tokens each attention (TP) group processes
    peak_w = _peak(gpu, prec.weights)
    # attention scores compute in bf16 even over an fp8 cache (FlashMLA and FA3 dequantise it)
    peak_attn = gpu.tflops("bf16" if gpu.supports("bf16") else "fp16") * 1e12
    bw = gpu.hbm_bytes_per_s
    bpp_w = memory.bytes_per_param(prec.weights)
    dense = eff["dense_gemm"]
    attn_f = eff["attention_decode" if cfg.phase == "decode" else "attention_prefill"]
    gg = eff["grouped_gemm_decode" if cfg.phase == "decode" else "grouped_gemm_prefill"]
    link = eff["alltoall_low_latency" if cfg.kernel == "low_latency" else "alltoall_normal"]
    L = model.num_layers
    h = model.hidden_size
    nq_rank = model.num_attention_heads / tp

    # --- attention projections (per layer)
    n_linear = len(model.linear_attention_layers)
    # per layer on average: softmax-attention projections, and linear mixers (sharded with their heads)
    n_glob = len(model.global_layers)
    if model.attention_params_by_layer:  # explicit blocks (DeepSeek-V4, Kimi-K3): their per-layer average
        proj_p = params.attention_params_per_rank(model, tp)
    else:
        proj_p = ((L - n_linear - n_glob) * params.attention_params_per_rank(model, tp)
                  + (n_glob * params.attention_params_per_rank(model, tp, global_layer=True) if n_glob else 0.0)
                  + n_linear * model.linear_attention_params / tp) / L
    proj_flops = 2.0 * proj_p * t_attn
    if model.attention is AttentionKind.MLA and cfg.phase == "decode":
        # absorbed MLA: q_nope x W_UK and the latent x W_UV per token instead of expanding K/V
        proj_flops += 2.0 * nq_rank * model.kv_lora_rank * (model.qk_nope_head_dim + model.v_head_dim) * t_attn
    proj_s = _kernel_s(proj_flops, proj_p * bpp_w, peak_w, bw, dense)

    # --- attention scores (per layer)
    if model.attention is AttentionKind.MLA:
        per_ctx = (2.0 * ((model.kv_lora_rank + model.qk_rope_head_dim) + model.kv_lora_rank) if cfg.phase == "decode"
                   else 2.0 * ((model.qk_nope_head_dim + model.qk_rope_head_dim) + model.v_head_dim))
    else:
        per_ctx = 2.0 * (model.head_dim + (model.v_head_dim or model.head_dim))
    ctx = cfg.context_len
    windowed = model.sliding_window_layers / L if model.sliding_window else 0.0
    eff_ctx = (1 - windowed) * ctx + windowed * min(ctx, model.sliding_window or ctx)
    softmax_frac = model.attention_layers / L  # linear-attention layers score against a fixed state instead
    attended = per_ctx * eff_ctx  # score + value elements per query head, averaged over layers
    if n_glob:  # Gemma 4: sliding layers at head_dim over the window, global ones at global_head_dim over all
        attended = ((L - n_glob) * per_ctx * min(ctx, model.sliding_window or ctx)
                    + n_glob * 4.0 * model.global_head_dim * ctx) / L
    # fixed per-sequence states (linear attention split over TP with its heads; DeepSeek-V4 compressor
    # states replicated)
    if model.linear_attention_layers or model.compress_ratios:
        lin = memory.linear_state_bytes_per_sequence(model)
        state_per_layer = (lin / tp + memory.fixed_state_bytes_per_sequence(model) - lin) / L
    else:
        state_per_layer = 0.0
    if cfg.phase == "decode":
        seqs = t_attn
        sparse = bool(model.index_n_heads and model.sparse_topk_tokens and ctx > model.sparse_topk_tokens)
        if sparse:  # an indexed layer attends to its top-k tokens and scans every index key
            n_idx = model.num_index_layers
            attended = per_ctx * ((L - n_idx) * ctx + n_idx * model.sparse_topk_tokens) / L
        if model.compress_ratios:  # DeepSeek-V4: window + top-k CSA entries / all HCA entries per layer
            topk = model.sparse_topk_tokens
            att = [min(ctx, model.sliding_window) + (min(ctx // r, topk or ctx // r) if r == min(x for x in model.compress_ratios if x)
                                                     else ctx // r) if r else min(ctx, model.sliding_window)
                   for r in model.compress_ratios]
            attended = per_ctx * sum(att) / L
        score_flops = seqs * nq_rank * attended * softmax_frac
        if model.compress_ratios and model.compressed_index_flops:  # every CSA index key scanned per token
            csa = min(x for x in model.compress_ratios if x)
            score_flops += seqs * model.compressed_index_flops * sum(ctx // r for r in model.compress_ratios if r == csa) / L
        if sparse:
            score_flops += seqs * 2.0 * model.index_n_heads * model.index_head_dim * ctx * model.num_index_layers / L
        # reads the K/V (and any linear state) once; a linear layer also writes its whole state back.
        # The full context goes in: the function caps the sliding-window layers itself.
        read_frac = 1.0
        if sparse or model.compress_ratios:  # only sparse attention reads less than it stores
            fixed = memory.fixed_state_bytes_per_sequence(model)
            stored = memory.kv_bytes_per_sequence(model, ctx, prec.kv_cache) - fixed
            read = memory.decode_read_bytes_per_sequence(model, ctx, prec.kv_cache) - fixed
            read_frac = read / stored if stored else 1.0
        kv_part = memory.kv_bytes_per_sequence_on_gpu(model, ctx, prec.kv_cache, tp, range(L)) / L - state_per_layer
        kv_bytes = seqs * (kv_part * read_frac + 2.0 * state_per_layer)
    else:
        seqs = t_attn / ctx
        score_flops = seqs * nq_rank * attended * ctx / 2.0 * softmax_frac  # causal: half the square
        per_token = memory.kv_bytes_per_sequence_on_gpu(model, 1, prec.kv_cache, tp, range(L)) / L - state_per_layer
        kv_bytes = t_attn * per_token + seqs * state_per_layer  # K/V written once per token, a state once per sequence
    score_s = _kernel_s(float(score_flops), float(kv_bytes), peak_attn, bw, attn_f)

    # --- dense FFN, shared experts, router, parallel MLP (per layer of each kind)
    mats = model.ffn_matrices

    def gemm(params_rank: float) -> float:
        return _kernel_s(2.0 * params_rank * t_attn, params_rank * bpp_w, peak_w, bw, dense) if params_rank else 0.0

    dense_ffn_s = gemm(mats * h * model.dense_intermediate_size / tp)
    shared_s = routed_s = dispatch_s = combine_s = router_s = parallel_s = 0.0
    if model.moe is not None:
        e = model.moe
        shared_s = gemm((e.n_shared_experts * mats * h * e.shared_intermediate_size) / tp)
        parallel_s = gemm(mats * h * model.parallel_dense_intermediate_size / tp)
        router_s = gemm(e.n_routed_experts * h)
        total_assign = t_stage * e.top_k
        per_gpu = total_assign / layout.ep * cfg.imbalance
        routed_s = grouped_gemm_s(model, gpu, layout, prec, per_gpu, total_assign, gg, cfg.redundant_experts)
        dispatch_s = alltoall_call_s(model, gpu, layout, tokens_per_gpu, prec.dispatch, cfg.kernel, domain_gpus, link)
        combine_s = alltoall_call_s(model, gpu, layout, tokens_per_gpu, "bf16", cfg.kernel, domain_gpus, link)

    # --- expert TP: every GPU of an expert-TP group needs the group's tokens (all-gather) and returns
    # partial sums (reduce-scatter), over NVLink inside the domain, over the network beyond it
    ar = eff["allreduce"]
    expert_tp_s = 0.0
    if model.moe is not None and layout.expert_tp > 1:
        etp = layout.expert_tp
        group_bytes = tokens_per_gpu * etp * h * 2.0 * (etp - 1) / etp
        bw_link, eff_link = ((gpu.scale_up_bw_gbps, ar.scale_up_eff) if etp <= domain_gpus
                             else (gpu.scale_out_bw_gbps, ar.scale_out_eff))
        expert_tp_s = 2.0 * comms.link_time_s(group_bytes, bw_link, eff_link, (etp - 1) * ar.latency_us * 1e-6)

    # --- TP all-reduce after attention and after the FFN / MoE block
    allreduce_s = 2.0 * comms.ring_allreduce_time_s(t_attn * h * 2.0, tp, gpu.scale_up_bw_gbps, ar.scale_up_eff,
                                                     ar.latency_us * 1e-6) if tp > 1 else 0.0

    n_moe, n_dense = model.num_moe_layers, model.num_dense_layers
    # --- LM head (prefill: only the last position of each prompt needs logits)
    head_tokens = t_attn if cfg.phase == "decode" else max(t_attn / ctx, 1.0)
    head_p = model.vocab_size * h / tp
    lm_head_s = _kernel_s(2.0 * head_p * head_tokens, head_p * 2.0, gpu.tflops("bf16" if gpu.supports("bf16") else "fp16") * 1e12,
                          bw, dense)
    overhead = eff["system"].layer_overhead_us * 1e-6 * L
    return {
        "attention_projections": L * proj_s,
        "attention_scores": L * score_s,
        "dense_ffn": n_dense * dense_ffn_s,
        "shared_experts": n_moe * shared_s,
        "parallel_mlp": n_moe * parallel_s,
        "router": n_moe * router_s,
        "routed_experts": n_moe * routed_s,
        "lm_head": lm_head_s,
        "layer_overhead": overhead,
        "dispatch": n_moe * dispatch_s,
        "combine": n_moe * combine_s,
        "allreduce": L * allreduce_s,
        "expert_tp_comm": n_moe * expert_tp_s,
    }


_MOE_PARTS = ("shared_experts", "parallel_mlp", "router", "routed_experts", "dispatch", "combine", "expert_tp_comm")


@functools.lru_cache(maxsize=1024)
def _stage_counts(model: ModelSpec, pp: int) -> tuple[tuple[int, int, int], ...]:
    """(layers, dense FFN layers, MoE layers) per pipeline stage (cached: the layout search asks often)."""
    dense = set(model.dense_layers)
    free = set(model.ffn_free_layers)
    out = []
    for stage in memory.pipeline_stages(model.num_layers, pp):
        nd = sum(1 for j in stage if j in dense)
        nm = (len(stage) - nd - sum(1 for j in stage if j in free)) if model.moe is not None else 0
        out.append((len(stage), nd, nm))
    return tuple(out)


def _stage_imbalance(model: ModelSpec, pp: int, parts: Mapping[str, float]) -> float:
    """The slowest pipeline stage over the average one: stages hold whole layers (``ceil`` / ``floor``
    of L / pp), the dense FFN layers sit where the model puts them, the LM head on the last stage.
    DeepSeek-V3 (61 layers, 3 dense) on PP4: stages of 16, 15, 15, 15 layers, the first with the 3
    dense ones; the pipeline runs at the pace of the slowest."""
    L = model.num_layers
    n_moe = model.num_moe_layers
    per_layer = sum(v for k, v in parts.items() if k not in _MOE_PARTS and k not in ("dense_ffn", "lm_head", "pp_send")) / L
    per_moe = sum(parts.get(k, 0.0) for k in _MOE_PARTS) / n_moe if n_moe else 0.0
    per_dense = parts.get("dense_ffn", 0.0) / model.num_dense_layers if model.num_dense_layers else 0.0
    counts = _stage_counts(model, pp)
    times = [n * per_layer + nm * per_moe + nd * per_dense + (parts.get("lm_head", 0.0) if i == len(counts) - 1 else 0.0)
             for i, (n, nd, nm) in enumerate(counts)]
    total = sum(times)
    return pp * max(times) / total if total > 0 else 1.0


COMM_PARTS = ("dispatch", "combine", "allreduce", "expert_tp_comm", "pp_send")


def step_time(model: ModelSpec, gpu: GPUSpec, layout: ParallelLayout, precision: Precision | str, cfg: StepConfig,
              eff: Efficiency, *, domain_gpus: int | None = None) -> StepTime:
    """One step of ``cfg.phase`` on the most loaded GPU under ``layout``.

    With two-batch overlap each micro-batch carries half the tokens: every kernel runs twice, and the
    step takes ``max(C, M) + (1 - overlap_eff) x min(C, M)`` for compute C and communication M; without
    it, ``C + M``. ``domain_gpus``: GPUs per scale-up domain (default: the GPU's).

    With pipeline stages, the step is a token's way through all of them (every layer once, as here,
    plus ``pp - 1`` activation sends between stages); each stage's GPUs work on their own micro-batch
    meanwhile, so throughput per GPU equals that of one stage's share."""
    prec = Precision.of(precision)
    problems = memory.check_layout(model, layout, cfg.redundant_experts)
    if problems:
        raise ValueError("invalid layout for " + model.name + ": " + "; ".join(problems))
    if domain_gpus is not None:
        _count("domain_gpus", domain_gpus, 1, 100_000)
    domain = domain_gpus or max(gpu.gpus_per_node, gpu.scale_up_domain_gpus)
    if cfg.overlap == "two_batch":
        half = _layer_parts(model, gpu, layout, prec, cfg, eff, cfg.tokens_per_gpu / 2.0, domain)
        parts = {k: 2.0 * v for k, v in half.items()}
    else:
        parts = _layer_parts(model, gpu, layout, prec, cfg, eff, cfg.tokens_per_gpu, domain)
    if layout.pp > 1:
        # a token crosses pp - 1 stage boundaries; activations go over NVLink inside the domain
        ar = eff["allreduce"]
        t_attn = cfg.tokens_per_gpu * layout.gpus_per_stage / layout.attention_dp
        parts["pp_send"] = (layout.pp - 1) * comms.link_time_s(
            comms.pp_send_bytes(t_attn, model.hidden_size), gpu.scale_out_bw_gbps, ar.scale_out_eff, ar.latency_us * 1e-6)
    comm = sum(parts.get(k, 0.0) for k in COMM_PARTS)
    compute = sum(v for k, v in parts.items() if k not in COMM_PARTS)
    if cfg.overlap == "two_batch":
        total = max(compute, comm) + (1.0 - eff["system"].overlap_eff) * min(compute, comm)
    else:
        total = compute + comm
    if layout.pp > 1:
        total *= _stage_imbalance(model, layout.pp, parts)
        # pipeline bubble, a stated assumption: 2 x pp micro-batches in flight (decode, continuous
        # batching) or 8 x pp (prefill chunks) leave (pp - 1) / (m + pp - 1) of each stage idle
        m = (2 if cfg.phase == "decode" else 8) * layout.pp
        total /= 1.0 - (layout.pp - 1) / (m + layout.pp - 1)
    return StepTime(parts, compute, comm, total, cfg.tokens_per_gpu, cfg.phase)
