"""The work of one forward pass, layer kind by layer kind, on one GPU: the single accounting the step-time model
(:mod:`core.perf`, measured efficiency factors) and the roofline bound (every factor at 1) both sum.

A :class:`Work` is one kernel call: FLOPs at the peak of the dtype it computes in, weight bytes and cache bytes read
from HBM, and the kernel family whose factors time it (``catalogs/efficiency.yaml``):

* per layer of each mixer group (:mod:`core.model.mixers`): the projections (dense GEMM family: the rank's mixer
  weights, ``2 x weights`` FLOPs per token + what a kind adds, e.g. absorbed MLA) and the scores (attention family,
  in bf16 even over an fp8 cache as FlashMLA and FA3 dequantise it: decode reads each sequence's cache as its mixer
  reads it and moves its fixed state as the mixer says (a recurrent state is read and written back whole; a
  compressor writes one row per token and reads its state once per entry); prefill writes the prompt's cache and
  each sequence's state once);
* per dense layer: the FFN; per MoE layer: shared experts, the dense MLP beside the MoE, the router (and a latent
  MoE's down / up projections), and the routed experts (grouped GEMM family: each GPU receives ``tokens x k / EP``
  assignments times the imbalance, and reads only its local experts that some token touches);
* on the last stage: the LM head (bf16; prefill needs logits only for each prompt's last position);
* per pass, the model's extras (:mod:`core.model.extras`): the rows their lookups read (off-GPU tables), fetched
  from the tier they live in (:func:`core.memory.host_tables.lookup_fetches`); the step adds what its compute does
  not hide.

Communication is timed apart, per MoE layer (dispatch, combine, expert-TP all-gather / reduce-scatter), per layer
(TP all-reduces, DCP's merge) and per stage boundary (activations to the next stage).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from core import comms, memory
from core._util.checks import amount, whole
from core.deployment.bundle import Deployment
from core.hardware import GPUSpec, precision_support
from core.hardware.efficiency import Efficiency, KernelFactors
from core.memory import host_tables
from core.model import ffn, routing
from core.perf import layer_comm
from core.perf.step_config import Phase, StepConfig
from core.perf.work import Work, half_peak_flops, kernel_s, peak_flops

__all__ = [
    "PARTS",
    "LayerCosts",
    "StepConfig",
    "attention_work",
    "dense_gemm_work",
    "grouped_gemm_s",
    "layer_costs",
    "routed_experts_work",
]

# the components of a step, in the order the breakdowns show them (pp_send with pipeline stages, dcp_merge with DCP)
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


def routed_experts_work(
    d: Deployment,
    assignments_per_gpu: float,
    total_assignments: float,
    phase: Phase = "decode",
    redundant_experts: int = 0,
    path: str | None = None,
) -> Work:
    """One MoE layer's routed experts on one GPU: ``assignments_per_gpu`` token-expert pairs over its
    ``(N + redundant) / EP`` local experts, each split over expert-TP; only touched experts are read.
    ``total_assignments`` A = T x k come from T tokens, each picking k distinct experts, so an expert is
    untouched with probability ``(1 - k/N)^T`` (:func:`core.model.routing.expected_experts_touched`).
    Experts stored in a dtype the GPU has no tensor cores for (MXFP4 on Hopper, int4) run weight-only
    dequantising kernels (Marlin-style): timed by the ``grouped_gemm_weight_only`` family. Activations: the batch's
    ``A / k`` tokens x width, each local pair x (width + ``ffn_matrices`` x the expert's intermediate slice)."""
    if d.model.moe is None:
        raise ValueError(f"{d.model.name} is a dense model: it has no routed experts")
    assignments_per_gpu = amount("assignments_per_gpu", assignments_per_gpu, 0, 1e15)
    total_assignments = amount("total_assignments", total_assignments, 0, 1e15)
    redundant_experts = whole("redundant_experts", redundant_experts, 0, 100_000)
    return _routed_experts_work(d, assignments_per_gpu, total_assignments, phase, redundant_experts, path)


def _routed_experts_work(
    d: Deployment, assignments_per_gpu: float, total_assignments: float, phase: Phase, redundant_experts: int, path
) -> Work:
    """:func:`routed_experts_work` unchecked, for :func:`layer_costs`, whose counts come from the deployment."""
    model, gpu, layout, precision = d.model, d.gpu, d.layout, d.precision
    e = model.moe
    local = math.ceil((e.n_routed_experts + redundant_experts) / layout.ep)
    p_touched = routing.touched_share(total_assignments / e.top_k, e.top_k, e.n_routed_experts)
    expert_p = ffn.expert_params(model) / layout.expert_tp
    width = e.latent_size or model.hidden_size
    native = precision_support(gpu, precision.expert_dtype).native
    family = (
        "grouped_gemm_weight_only"
        if not native
        else "grouped_gemm_decode"
        if phase == "decode"
        else "grouped_gemm_prefill"
    )
    rows = assignments_per_gpu  # the token-expert rows the GEMMs compute
    if path == "deepgemm":
        rows = _deepgemm_rows(gpu, assignments_per_gpu, local, local * p_touched)
        family = "grouped_gemm_prefill" if native else family  # the contiguous layout's kernels, decode included
    return Work(
        2.0 * rows * expert_p,
        local * p_touched * expert_p * memory.bytes_per_param(precision.expert_dtype),
        0.0,
        peak_flops(gpu, precision.expert_dtype),
        family,
        path,
        local * p_touched / layout.expert_tp,  # expert-equivalents: a 1/etp slice has 1/etp of the tiles
        precision_support(gpu, precision.expert_dtype).compute_dtype in ("bf16", "fp16"),
        row_elems=total_assignments / e.top_k * width,
        pair_elems=rows * (width + model.ffn_matrices * e.expert_intermediate_size / layout.expert_tp),
    )


DEEPGEMM_BLOCK_M = 128  # DeepGEMM's M alignment for the contiguous layout (get_mk_alignment_for_contiguous_layout)


def _deepgemm_rows(gpu: GPUSpec, pairs: float, local: int, touched: float) -> float:
    """Rows DeepGEMM's contiguous grouped GEMM computes for ``pairs`` token-expert pairs over ``local`` experts, of
    which ``touched`` get a token, without per-expert counts on the host (vLLM's DeepGemmExperts under CUDA graphs):
    the buffer holds ``pairs + local x (block - 1)`` rows rounded up to the block (vLLM's ``compute_aligned_M``), each
    expert's rows padded to whole blocks. Hopper's kernels skip blocks that hold only padding
    (``is_computation_valid``): the touched experts' blocks, at least one each. Blackwell's kernels (SM100) compute
    every block of the buffer."""
    b = DEEPGEMM_BLOCK_M
    if gpu.vendor == "nvidia" and gpu.architecture.startswith(("blackwell", "rubin")):
        return math.ceil((pairs + local * (b - 1)) / b) * b
    if touched <= 0:
        return 0.0
    return touched * math.ceil(pairs / touched / b) * b


def grouped_gemm_s(
    d: Deployment,
    assignments_per_gpu: float,
    total_assignments: float,
    redundant_experts: int = 0,
    *,
    factors: KernelFactors | None = None,
    phase: Phase = "decode",
    path: str | None = None,
) -> float:
    """Seconds of :func:`routed_experts_work` under the deployment's efficiency on kernel ``path`` (default: the
    stack's for the layout), or under the given ``factors``."""
    eff = d.efficiency
    if factors is None:
        path = path or d.moe_path
    w = routed_experts_work(d, assignments_per_gpu, total_assignments, phase, redundant_experts, path)
    return kernel_s(w, d.gpu.hbm_bytes_per_s, eff.kernel(w.family, w.path) if factors is None else factors)


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
    extras: host_tables.Fetches  # the model extras' row reads for this pass's tokens (core.model.extras)

    def stage_works(self, counts, last: bool) -> Iterator[tuple[int, str, Work]]:
        """(calls, component, work) of one pass over a stage holding ``counts`` (a
        :class:`core.deployment.parallel.StageCounts`); the LM head on the ``last`` stage."""
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


def dense_gemm_work(gpu: GPUSpec, dtype: str, weights: float, tokens: float) -> Work:
    """A dense GEMM on one GPU: ``tokens`` rows through ``weights`` (n x k) parameters stored in ``dtype``,
    ``2 x tokens x weights`` FLOPs at the dtype's compute peak, the weights read once."""
    weights, tokens = amount("weights", weights, 0, 1e15), amount("tokens", tokens, 0, 1e12)
    return _dense_gemm_work(gpu, dtype, weights, tokens)


def _dense_gemm_work(gpu: GPUSpec, dtype: str, weights: float, tokens: float) -> Work:
    return Work(
        2.0 * weights * tokens, weights * memory.bytes_per_param(dtype), 0.0, peak_flops(gpu, dtype), "dense_gemm"
    )


def attention_work(d: Deployment, phase: Phase, context_len: int, sequences: float) -> Work:
    """One layer's attention core (the ``attention_scores`` work of the model's most common mixer kind) on one GPU
    of the deployment's attention-TP group: ``sequences`` each decoding a token over ``context_len`` or prefilling
    it."""
    if phase not in ("decode", "prefill"):
        raise ValueError(f"phase must be decode or prefill, got {phase!r}")
    context_len = whole("context_len", context_len, 1, 100_000_000)
    sequences = amount("sequences", sequences, 0, 1e9, open_lo=True)
    tokens = sequences if phase == "decode" else sequences * context_len
    model = d.model
    works = _mixer_works(d, phase, context_len, tokens, 1.0, dcp=1)
    group = max(range(len(model.mixers)), key=lambda i: len(model.mixers[i].layers))
    return works[group]["attention_scores"]


def _mixer_works(
    d: Deployment,
    phase: Phase,
    ctx: int,
    t_attn: float,
    tokens_per_sequence: float,
    cached: int = 0,
    dcp: int | None = None,
) -> tuple[dict[str, Work], ...]:
    """Projections and scores of one layer of each mixer group; the layer's norms (and any per-layer
    extras such as hyper-connection mixers, bf16) are read with the projections. ``cached`` prompt tokens from a
    prefix cache: a prompt computes its last ``ctx - cached`` (``Mixer.prefill_score_flops_after``). Decode context
    parallel ``dcp``: a rank reads / writes 1 / dcp of each cache for dcp x its heads (the same FLOPs)."""
    model, gpu, prec, tp = d.model, d.gpu, d.precision, d.layout.attention_tp
    dcp = d.layout.dcp if dcp is None else dcp
    h, kv = model.hidden_size, prec.kv_cache
    norms = (model.norms_per_layer * h + model.layer_extra_params) * memory.bytes_per_param(
        memory.component_dtypes(prec)["norms"]
    )
    peak_w, peak_half, bpp = peak_flops(gpu, prec.weights), half_peak_flops(gpu), memory.bytes_per_param(prec.weights)
    family = "attention_decode" if phase == "decode" else "attention_prefill"
    out = []
    for g in model.mixers:
        mx = g.mixer
        if phase == "decode":  # t_attn query tokens, tokens_per_sequence per sequence (verification: gamma + 1)
            seqs = t_attn / tokens_per_sequence
            own = mx.decode_query_read_bytes_per_rank(ctx, kv, tp) / dcp  # a sparse layer's top-k: per query token
            cache = t_attn * own + seqs * (
                mx.decode_read_bytes_per_rank(ctx, kv, tp) / dcp
                - own
                + mx.decode_state_read_bytes_per_rank(tp)
                + mx.decode_state_write_bytes_per_rank(tp)
            )
        else:  # prompts of ctx tokens, ctx - cached computed: t_attn / (ctx - cached) sequences
            write = float(mx.cache_bytes_per_rank(1.0, kv, tp)) / dcp
            cache = t_attn * write + t_attn / (ctx - cached) * mx.state_bytes_per_rank(tp)
        rows = min(mx.decode_query_rows(tp) * dcp, mx.decode_query_rows(1))  # DCP gathers the group's heads
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
                    (
                        float(mx.score_flops_per_token(ctx, tp, phase))
                        if phase == "decode"
                        else mx.prefill_score_flops_after(ctx, cached, tp)
                    )
                    * t_attn,
                    0.0,
                    cache,
                    peak_half,
                    family,
                    rows=rows * tokens_per_sequence if phase == "decode" else 0.0,
                ),
            }
        )
    return tuple(out)


def layer_costs(
    d: Deployment, cfg: StepConfig, *, tokens_per_gpu: float | None = None, eff: Efficiency | None = None
) -> LayerCosts:
    """The :class:`LayerCosts` of one pass of ``cfg`` (no overlap) with ``tokens_per_gpu`` tokens on each GPU of
    a stage (default ``cfg.tokens_per_gpu``; a micro-batch's share when the caller splits the step). ``eff``
    (default: the deployment's) supplies the link factors that time the communication and the kernel path."""
    model, gpu, layout, prec = d.model, d.gpu, d.layout, d.precision
    eff = d.efficiency if eff is None else eff
    domain_gpus = d.domain
    phase, ctx, tokens_per_sequence = cfg.phase, cfg.context_len, cfg.tokens_per_sequence
    redundant_experts, imbalance = cfg.redundant_experts, cfg.imbalance
    tokens_per_gpu = (
        cfg.tokens_per_gpu if tokens_per_gpu is None else amount("tokens_per_gpu", tokens_per_gpu, 0, 1e9, open_lo=True)
    )
    tp, h = layout.attention_tp, model.hidden_size
    t_stage = tokens_per_gpu * layout.gpus_per_stage
    t_attn = t_stage / layout.attention_dp  # tokens each attention (TP) group processes
    path = cfg.kernel_path or d.moe_path

    def gemm(params_rank: float) -> Work:
        return _dense_gemm_work(gpu, prec.weights, params_rank, t_attn)

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
                half_peak_flops(gpu),
                "dense_gemm",
            ),
            "routed_experts": _routed_experts_work(
                d,
                t_stage * e.top_k / layout.ep * imbalance,
                t_stage * e.top_k,
                phase,
                redundant_experts,
                path,
            ),
        }
        moe_comm = layer_comm.moe_comm_s(d, cfg, tokens_per_gpu, path, eff)
    # TP all-reduce after the mixer and after the FFN / MoE block; DCP's merge of the partial attention outputs
    per_layer_comm = {
        "allreduce": 2.0 * layer_comm.collective(eff, gpu, cfg.phase, "all_reduce", t_attn * h * 2.0, tp, domain_gpus),
    }
    if layout.dcp > 1 and phase == "decode":  # prefill's merge is not modelled (vLLM's DCP is for decode)
        per_layer_comm["dcp_merge"] = layer_comm.dcp_merge_s(d, phase, t_attn, eff)
    head_p = model.vocab_size * h / tp
    head_tokens = t_attn if phase == "decode" else max(t_attn / cfg.computed_len, 1.0)  # one logit row a prompt
    final_norm = (h + model.model_extra_params) * 2.0  # the last norm (+ a hyper-connection head), bf16
    head = {
        "lm_head": Work(2.0 * head_p * head_tokens, head_p * 2.0 + final_norm, 0.0, half_peak_flops(gpu), "dense_gemm")
    }
    # a stage boundary sends its activations over NVLink when the whole replica is one scale-up domain
    inside = layout.gpus_per_stage * layout.pp <= domain_gpus
    send = (
        comms.link_time_s_unchecked(
            comms.pp_send_bytes_unchecked(t_attn, h),
            gpu.scale_up_bw_gbps if inside else gpu.scale_out_bw_gbps,
            ar.scale_up_eff if inside else ar.scale_out_eff,
            ar.latency_us * 1e-6,
        )
        if layout.pp > 1
        else 0.0
    )
    mixer = _mixer_works(d, phase, ctx, t_attn, tokens_per_sequence, cfg.cached_tokens)
    # the model's extras (core.model.extras): rows their lookups read for this pass's tokens, from cfg.table_tier
    extras = host_tables.lookup_fetches(d, cfg.table_tier, tokens_per_gpu)
    return LayerCosts(mixer, dense, moe, head, moe_comm, per_layer_comm, send, extras)
