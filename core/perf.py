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

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from core import comms, memory, parallel
from core._checks import amount, is_number, is_whole, whole
from core.efficiency import Efficiency, resolve_efficiency
from core.model import ffn
from core.specs import (
    GPUSpec,
    KernelFactors,
    LinkFactors,
    ModelSpec,
    ParallelLayout,
    Precision,
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


def _moe(model: ModelSpec):
    if model.moe is None:
        raise ValueError(f"{model.name} is a dense model: it has no routed experts")
    return model.moe


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
        if not (is_number(self.tokens_per_gpu) and 0 < self.tokens_per_gpu <= 1e9):
            raise ValueError(f"tokens_per_gpu must be > 0 and <= 1,000,000,000, got {self.tokens_per_gpu!r}")
        if not (is_whole(self.context_len) and 1 <= self.context_len <= 100_000_000):
            raise ValueError(f"context_len must be a whole number in 1..100,000,000, got {self.context_len!r}")
        if self.overlap not in ("none", "two_batch"):
            raise ValueError(f"overlap must be none or two_batch, got {self.overlap!r}")
        if self.comm_kernel not in (None, "low_latency", "normal"):
            raise ValueError(f"comm_kernel must be low_latency, normal or None, got {self.comm_kernel!r}")
        if not (is_whole(self.redundant_experts) and 0 <= self.redundant_experts <= 100_000):
            raise ValueError(f"redundant_experts must be a whole number in 0..100,000, got {self.redundant_experts!r}")
        if not (is_number(self.imbalance) and 1 <= self.imbalance <= 1e6):
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
    assignments_per_gpu = amount("assignments_per_gpu", assignments_per_gpu, 0, 1e15)
    total_assignments = amount("total_assignments", total_assignments, 0, 1e15)
    redundant_experts = whole("redundant_experts", redundant_experts, 0, 100_000)
    local = math.ceil((e.n_routed_experts + redundant_experts) / layout.ep)
    p_touched = 1.0 - (1.0 - e.top_k / e.n_routed_experts) ** (total_assignments / e.top_k)
    expert_p = ffn.expert_params(model) / layout.expert_tp
    nbytes = local * p_touched * expert_p * memory.bytes_per_param(precision.expert_dtype)
    flops = 2.0 * assignments_per_gpu * expert_p
    return _kernel_s(flops, nbytes, _peak(gpu, precision.expert_dtype), gpu.hbm_bytes_per_s, f)


def token_copy_bytes(d_model: int, dtype: str) -> float:
    """Bytes of one token's hidden state on the wire: bf16 2 B per element; fp8 1 B plus one fp32 scale
    per 128 channels (DeepEP); nvfp4 half a byte plus one FP8 scale per 16 elements."""
    d_model = whole("d_model", d_model, 1, 10_000_000)
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
    ep, domain_gpus = whole("ep", ep, 1, 100_000), whole("domain_gpus", domain_gpus, 1, 100_000)
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
    tokens_per_gpu = amount("tokens_per_gpu", tokens_per_gpu, 0, 1e12)
    domain_gpus = whole("domain_gpus", domain_gpus, 1, 100_000)
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


def _attention_s(model: ModelSpec, gpu: GPUSpec, tp: int, prec: Precision, cfg: StepConfig, eff: Efficiency,
                 t_attn: float) -> tuple[float, float]:
    """(projections, scores) seconds of the mean layer on one GPU: each mixer group's FLOPs and bytes
    (:mod:`core.model.mixers`) averaged over the layers, then one kernel each.

    Projections: the rank's mixer weights read once, ``2 x weights`` FLOPs per token (+ absorbed MLA's
    extra). Scores: decode reads each sequence's cache as its mixer reads it (windows, top-k) and reads and
    writes back its fixed state; prefill writes the prompt's cache and each sequence's state once. Scores
    compute in bf16 even over an fp8 cache (FlashMLA and FA3 dequantise it)."""
    h, L, ctx, phase, kv = model.hidden_size, model.num_layers, cfg.context_len, cfg.phase, prec.kv_cache
    proj_p = proj_f = score_f = cache_b = state_b = 0.0
    for g in model.mixers:
        n, mx = len(g.layers), g.mixer
        proj_p += n * mx.params_per_rank(h, tp)
        proj_f += n * mx.projection_flops_per_token(h, tp, phase)
        score_f += n * float(mx.score_flops_per_token(ctx, tp, phase))
        cache_b += n * (mx.decode_read_bytes_per_rank(ctx, kv, tp) if phase == "decode"
                        else float(mx.cache_bytes_per_rank(1.0, kv, tp)))
        state_b += n * mx.state_bytes_per_rank(tp)
    if phase == "decode":  # one token per sequence: t_attn sequences
        kv_bytes = t_attn * (cache_b + 2.0 * state_b) / L
    else:  # prompts of ctx tokens: t_attn / ctx sequences
        kv_bytes = t_attn * cache_b / L + t_attn / ctx * state_b / L
    half = "bf16" if gpu.supports("bf16") else "fp16"
    proj_s = _kernel_s(proj_f / L * t_attn, proj_p / L * memory.bytes_per_param(prec.weights), _peak(gpu, prec.weights),
                       gpu.hbm_bytes_per_s, eff["dense_gemm"])
    score_s = _kernel_s(score_f / L * t_attn, kv_bytes, gpu.tflops(half) * 1e12, gpu.hbm_bytes_per_s,
                        eff["attention_decode" if phase == "decode" else "attention_prefill"])
    return proj_s, score_s


def _layer_parts(model: ModelSpec, gpu: GPUSpec, layout: ParallelLayout, prec: Precision, cfg: StepConfig, eff: Efficiency,
                 tokens_per_gpu: float, domain_gpus: int) -> dict[str, float]:
    """Seconds per component for ONE pass over all layers with ``tokens_per_gpu`` tokens (no overlap)."""
    tp, adp = layout.attention_tp, layout.attention_dp
    stage_gpus = layout.gpus_per_stage
    t_stage = tokens_per_gpu * stage_gpus
    t_attn = t_stage / adp  # tokens each attention (TP) group processes
    peak_w = _peak(gpu, prec.weights)
    bw = gpu.hbm_bytes_per_s
    bpp_w = memory.bytes_per_param(prec.weights)
    dense = eff["dense_gemm"]
    gg = eff["grouped_gemm_decode" if cfg.phase == "decode" else "grouped_gemm_prefill"]
    link = eff["alltoall_low_latency" if cfg.kernel == "low_latency" else "alltoall_normal"]
    L, h, ctx = model.num_layers, model.hidden_size, cfg.context_len
    proj_s, score_s = _attention_s(model, gpu, tp, prec, cfg, eff, t_attn)

    # --- dense FFN, shared experts, router (+ a latent MoE's projections), parallel MLP: per layer of each kind
    def gemm(params_rank: float) -> float:
        return _kernel_s(2.0 * params_rank * t_attn, params_rank * bpp_w, peak_w, bw, dense) if params_rank else 0.0

    dense_ffn_s = gemm(ffn.dense_ffn_params(model) / tp)
    shared_s = routed_s = dispatch_s = combine_s = router_s = parallel_s = 0.0
    if model.moe is not None:
        e = model.moe
        shared_s = gemm(ffn.shared_experts_params(model) / tp)
        parallel_s = gemm(ffn.parallel_mlp_params(model) / tp)
        router_s = gemm(ffn.router_params(model))
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
    counts = [parallel.stage_counts(model, st) for st in parallel.pipeline_stages(L, pp)]
    times = [c.layers * per_layer + c.moe * per_moe + c.dense * per_dense
             + (parts.get("lm_head", 0.0) if i == len(counts) - 1 else 0.0) for i, c in enumerate(counts)]
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
        whole("domain_gpus", domain_gpus, 1, 100_000)
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
