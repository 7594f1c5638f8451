"""The work of one forward pass, layer kind by layer kind, on one GPU: the single accounting that the
step-time model (:mod:`core.perf`, with measured efficiency factors) and the roofline bound (the same works
with every factor at 1) both sum.

A :class:`Work` is one kernel call: FLOPs at the peak of the dtype it computes in, weight bytes and cache
bytes read from HBM, and the kernel family whose factors time it (``catalogs/efficiency.yaml``):

* per layer of each mixer group (:mod:`core.model.mixers`): the projections (dense GEMM family: the rank's
  mixer weights, ``2 x weights`` FLOPs per token + what a kind adds, e.g. absorbed MLA) and the scores
  (attention family, in bf16 even over an fp8 cache as FlashMLA and FA3 dequantise it: decode reads each
  sequence's cache as its mixer reads it and moves its fixed state as the mixer says (a recurrent state is
  read and written back whole; a compressor writes one row per token and reads its state once per entry); prefill writes the
  prompt's cache and each sequence's state once);
* per dense layer: the FFN; per MoE layer: shared experts, the dense MLP beside the MoE, the router (and a
  latent MoE's down / up projections), and the routed experts (grouped GEMM family: each GPU receives
  ``tokens x k / EP`` assignments times the imbalance, and reads only its local experts that some token
  touches);
* on the last stage: the LM head (bf16; prefill needs logits only for each prompt's last position).

Communication is timed apart, per MoE layer (dispatch, combine, expert-TP all-gather / reduce-scatter), per
layer (TP all-reduces) and per stage boundary (activations to the next stage).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from core import comms, memory
from core._checks import amount, is_number, is_whole, whole
from core.dispatch import alltoall_call_s
from core.efficiency import Efficiency
from core.model import ffn
from core.specs import GPUSpec, KernelFactors, ModelSpec, ParallelLayout, Precision

__all__ = [
    "PARTS",
    "LayerCosts",
    "StepConfig",
    "Work",
    "grouped_gemm_s",
    "kernel_s",
    "layer_costs",
    "routed_experts_work",
]

# the components of a step, in the order the breakdowns show them (pp_send only with pipeline stages)
PARTS = (
    "attention_projections",
    "attention_scores",
    "dense_ffn",
    "shared_experts",
    "parallel_mlp",
    "router",
    "routed_experts",
    "lm_head",
    "layer_overhead",
    "dispatch",
    "combine",
    "allreduce",
    "expert_tp_comm",
)

Phase = Literal["decode", "prefill"]


@dataclass(frozen=True)
class StepConfig:
    """What one step processes, per GPU.

    decode: ``tokens_per_gpu`` query tokens per GPU over ``context_len`` cached tokens per sequence,
    ``tokens_per_sequence`` of them per sequence (1 in plain decoding; gamma + 1 when verifying a draft).
    prefill: ``tokens_per_gpu`` prompt tokens per GPU per forward step, prompts of ``context_len`` tokens.
    """

    phase: Phase
    tokens_per_gpu: float
    context_len: int
    overlap: Literal["none", "two_batch"] = "none"
    comm_kernel: Literal["low_latency", "normal"] | None = None  # None: low-latency for decode, normal for prefill
    redundant_experts: int = 0
    imbalance: float = 1.0  # max/mean routed-expert load across the EP group
    tokens_per_sequence: float = 1.0

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
        if not (is_number(self.tokens_per_sequence) and 1 <= self.tokens_per_sequence <= 1_000):
            raise ValueError(f"tokens_per_sequence must be in [1, 1,000], got {self.tokens_per_sequence!r}")

    @property
    def kernel(self) -> str:
        return self.comm_kernel or ("low_latency" if self.phase == "decode" else "normal")


@dataclass(frozen=True)
class Work:
    """One kernel call on one GPU."""

    flops: float
    weight_bytes: float
    cache_bytes: float
    peak_flops: float  # FLOP/s of the dtype the kernel computes in
    family: str  # the efficiency family that times it

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.cache_bytes


def kernel_s(w: Work, bw_bytes: float, f: KernelFactors) -> float:
    """``floor + max(FLOPs / (peak x compute_eff), bytes / (HBM bandwidth x mem_eff))``; 0 for no work."""
    if w.flops <= 0 and w.bytes <= 0:
        return 0.0
    try:
        s = f.floor_us * 1e-6 + max(w.flops / (w.peak_flops * f.compute_eff), w.bytes / (bw_bytes * f.mem_eff))
    except (TypeError, ZeroDivisionError):
        s = math.nan
    if not 0 <= s < math.inf:  # a record built from out-of-range numbers (the model's own are always finite)
        raise ValueError(f"kernel time is not a finite number of seconds: {w!r} at {bw_bytes!r} B/s")
    return s


def _peak(gpu: GPUSpec, dtype: str) -> float:
    return gpu.tflops(memory.precision_support(gpu, dtype).compute_dtype) * 1e12


def _half_peak(gpu: GPUSpec) -> float:
    return gpu.tflops("bf16" if gpu.supports("bf16") else "fp16") * 1e12


def routed_experts_work(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    precision: Precision,
    assignments_per_gpu: float,
    total_assignments: float,
    phase: Phase = "decode",
    redundant_experts: int = 0,
) -> Work:
    """One MoE layer's routed experts on one GPU: ``assignments_per_gpu`` token-expert pairs over its
    ``(N + redundant) / EP`` local experts, each split over expert-TP; only touched experts are read.
    ``total_assignments`` A = T x k come from T tokens, each picking k distinct experts, so an expert is
    untouched with probability ``(1 - k/N)^T`` (:func:`core.moe.expected_experts_touched`)."""
    if model.moe is None:
        raise ValueError(f"{model.name} is a dense model: it has no routed experts")
    e = model.moe
    precision = Precision.of(precision)
    assignments_per_gpu = amount("assignments_per_gpu", assignments_per_gpu, 0, 1e15)
    total_assignments = amount("total_assignments", total_assignments, 0, 1e15)
    redundant_experts = whole("redundant_experts", redundant_experts, 0, 100_000)
    local = math.ceil((e.n_routed_experts + redundant_experts) / layout.ep)
    p_touched = 1.0 - (1.0 - e.top_k / e.n_routed_experts) ** (total_assignments / e.top_k)
    expert_p = ffn.expert_params(model) / layout.expert_tp
    return Work(
        2.0 * assignments_per_gpu * expert_p,
        local * p_touched * expert_p * memory.bytes_per_param(precision.expert_dtype),
        0.0,
        _peak(gpu, precision.expert_dtype),
        "grouped_gemm_decode" if phase == "decode" else "grouped_gemm_prefill",
    )


def grouped_gemm_s(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    precision: Precision,
    assignments_per_gpu: float,
    total_assignments: float,
    f: KernelFactors,
    redundant_experts: int = 0,
) -> float:
    """Seconds of :func:`routed_experts_work` under the factors ``f``."""
    w = routed_experts_work(
        model, gpu, layout, precision, assignments_per_gpu, total_assignments, redundant_experts=redundant_experts
    )
    return kernel_s(w, gpu.hbm_bytes_per_s, f)


@dataclass(frozen=True)
class LayerCosts:
    """One pass's works and communication seconds, per layer of each kind (see the module docstring)."""

    mixer: tuple[dict[str, Work], ...]  # per mixer group, in ``model.mixers`` order
    dense: dict[str, Work]  # per dense-FFN layer
    moe: dict[str, Work]  # per MoE layer
    head: dict[str, Work]  # once, on the last stage
    moe_comm_s: dict[str, float]  # per MoE layer
    layer_comm_s: dict[str, float]  # per layer
    send_s: float  # per stage boundary

    def stage_works(self, counts, last: bool) -> Iterator[tuple[int, str, Work]]:
        """(calls, component, work) of one pass over a stage holding ``counts`` (a
        :class:`core.parallel.StageCounts`); the LM head on the ``last`` stage."""
        for n, works in zip(counts.per_group, self.mixer, strict=True):
            for name, w in works.items():
                yield n, name, w
        for n, works in ((counts.dense, self.dense), (counts.moe, self.moe), (1 if last else 0, self.head)):
            for name, w in works.items():
                yield n, name, w

    def stage_parts(
        self, counts, last: bool, boundary: bool, work_s: Callable[[Work], float], overhead_s: float
    ) -> dict[str, float]:
        """Seconds per component for one stage pass, each work timed by ``work_s``; ``overhead_s`` per
        layer; communication per MoE layer, per layer and (``boundary``) one send to the next stage."""
        parts: dict[str, float] = dict.fromkeys(PARTS, 0.0)

        def add(name: str, seconds: float) -> None:
            parts[name] = parts.get(name, 0.0) + seconds

        for n, name, w in self.stage_works(counts, last):
            add(name, n * work_s(w) if n else 0.0)
        add("layer_overhead", counts.layers * overhead_s)
        for name, s in self.moe_comm_s.items():
            add(name, counts.moe * s)
        for name, s in self.layer_comm_s.items():
            add(name, counts.layers * s)
        if boundary:
            add("pp_send", self.send_s)
        return parts


def _mixer_works(
    model: ModelSpec,
    gpu: GPUSpec,
    tp: int,
    prec: Precision,
    phase: Phase,
    ctx: int,
    t_attn: float,
    tokens_per_sequence: float,
) -> tuple[dict[str, Work], ...]:
    """Projections and scores of one layer of each mixer group; the layer's norms (and any per-layer
    extras such as hyper-connection mixers, bf16) are read with the projections."""
    h, kv = model.hidden_size, prec.kv_cache
    norms = (model.norms_per_layer * h + model.layer_extra_params) * memory.bytes_per_param(
        memory.component_dtypes(prec)["norms"]
    )
    peak_w, peak_half, bpp = _peak(gpu, prec.weights), _half_peak(gpu), memory.bytes_per_param(prec.weights)
    family = "attention_decode" if phase == "decode" else "attention_prefill"
    out = []
    for g in model.mixers:
        mx = g.mixer
        if phase == "decode":  # t_attn query tokens, tokens_per_sequence per sequence (verification: gamma + 1)
            seqs = t_attn / tokens_per_sequence
            cache = seqs * (
                mx.decode_read_bytes_per_rank(ctx, kv, tp)
                + mx.decode_state_read_bytes_per_rank(tp)
                + mx.decode_state_write_bytes_per_rank(tp)
            )
        else:  # prompts of ctx tokens: t_attn / ctx sequences
            cache = t_attn * float(mx.cache_bytes_per_rank(1.0, kv, tp)) + t_attn / ctx * mx.state_bytes_per_rank(tp)
        out.append(
            {
                "attention_projections": Work(
                    mx.projection_flops_per_token(h, tp, phase) * t_attn,
                    mx.params_per_rank(h, tp) * bpp + norms,
                    0.0,
                    peak_w,
                    "dense_gemm",
                ),
                "attention_scores": Work(
                    float(mx.score_flops_per_token(ctx, tp, phase)) * t_attn, 0.0, cache, peak_half, family
                ),
            }
        )
    return tuple(out)


def layer_costs(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    prec: Precision,
    cfg: StepConfig,
    eff: Efficiency,
    *,
    tokens_per_gpu: float | None = None,
    domain_gpus: int = 8,
) -> LayerCosts:
    """The :class:`LayerCosts` of one pass of ``cfg`` (no overlap) with ``tokens_per_gpu`` tokens on each GPU of
    a stage (default ``cfg.tokens_per_gpu``; a micro-batch's share when the caller splits the step). ``eff``
    supplies the link factors that time the communication."""
    prec = Precision.of(prec)
    phase, ctx, tokens_per_sequence, kernel = cfg.phase, cfg.context_len, cfg.tokens_per_sequence, cfg.kernel
    redundant_experts, imbalance = cfg.redundant_experts, cfg.imbalance
    tokens_per_gpu = (
        cfg.tokens_per_gpu if tokens_per_gpu is None else amount("tokens_per_gpu", tokens_per_gpu, 0, 1e9, open_lo=True)
    )
    domain_gpus = whole("domain_gpus", domain_gpus, 1, 100_000)
    tp, h = layout.attention_tp, model.hidden_size
    t_stage = tokens_per_gpu * layout.gpus_per_stage
    t_attn = t_stage / layout.attention_dp  # tokens each attention (TP) group processes
    peak_w, bpp = _peak(gpu, prec.weights), memory.bytes_per_param(prec.weights)

    def gemm(params_rank: float) -> Work:
        return Work(2.0 * params_rank * t_attn, params_rank * bpp, 0.0, peak_w, "dense_gemm")

    dense = {"dense_ffn": gemm(ffn.dense_ffn_params(model) / tp)} if model.num_dense_layers else {}
    moe: dict[str, Work] = {}
    moe_comm: dict[str, float] = {}
    ar = eff["allreduce"]
    if model.moe is not None:
        e = model.moe
        router_bpp = memory.bytes_per_param(memory.component_dtypes(prec)["router"])  # kept in bf16 by checkpoints
        moe = {
            "shared_experts": gemm(ffn.shared_experts_params(model) / tp),
            "parallel_mlp": gemm(ffn.parallel_mlp_params(model) / tp),
            "router": Work(
                2.0 * ffn.router_params(model) * t_attn,
                ffn.router_params(model) * router_bpp,
                0.0,
                _half_peak(gpu),
                "dense_gemm",
            ),
            "routed_experts": routed_experts_work(
                model,
                gpu,
                layout,
                prec,
                t_stage * e.top_k / layout.ep * imbalance,
                t_stage * e.top_k,
                phase,
                redundant_experts,
            ),
        }
        link = eff["alltoall_low_latency" if kernel == "low_latency" else "alltoall_normal"]
        moe_comm = {
            "dispatch": alltoall_call_s(model, gpu, layout, tokens_per_gpu, prec.dispatch, kernel, domain_gpus, link),
            "combine": alltoall_call_s(model, gpu, layout, tokens_per_gpu, "bf16", kernel, domain_gpus, link),
        }
        if layout.expert_tp > 1:  # all-gather the group's tokens, reduce-scatter the partial sums
            etp = layout.expert_tp
            group_bytes = tokens_per_gpu * etp * h * 2.0 * (etp - 1) / etp
            bw, f = (
                (gpu.scale_up_bw_gbps, ar.scale_up_eff)
                if etp <= domain_gpus
                else (gpu.scale_out_bw_gbps, ar.scale_out_eff)
            )
            moe_comm["expert_tp_comm"] = 2.0 * comms.link_time_s(group_bytes, bw, f, (etp - 1) * ar.latency_us * 1e-6)
    # TP all-reduce after the mixer and after the FFN / MoE block
    layer_comm = {
        "allreduce": 2.0
        * comms.ring_allreduce_time_s(t_attn * h * 2.0, tp, gpu.scale_up_bw_gbps, ar.scale_up_eff, ar.latency_us * 1e-6)
        if tp > 1
        else 0.0
    }
    head_p = model.vocab_size * h / tp
    head_tokens = t_attn if phase == "decode" else max(t_attn / ctx, 1.0)
    final_norm = (h + model.model_extra_params) * 2.0  # the last norm (+ a hyper-connection head), bf16
    head = {"lm_head": Work(2.0 * head_p * head_tokens, head_p * 2.0 + final_norm, 0.0, _half_peak(gpu), "dense_gemm")}
    send = (
        comms.link_time_s(comms.pp_send_bytes(t_attn, h), gpu.scale_out_bw_gbps, ar.scale_out_eff, ar.latency_us * 1e-6)
        if layout.pp > 1
        else 0.0
    )
    mixer = _mixer_works(model, gpu, tp, prec, phase, ctx, t_attn, tokens_per_sequence)
    return LayerCosts(mixer, dense, moe, head, moe_comm, layer_comm, send)
