"""MoE routing arithmetic and the memory-bound decode step.

Compute sparsity is not memory sparsity: a token uses ``top_k`` of ``N`` experts, but a decode step
over ``T`` tokens touches ``N (1 - (1 - k/N)^T)`` of them, and each expert GEMM sees only
``T k / N`` tokens, far below a GPU's ridge point. Vectorised over numpy arrays of token counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import memory, roofline
from core._checks import amount, nonneg_array, scalar_or_array, whole
from core.specs import GPUSpec, MemoryAssumptions, ModelSpec, ParallelLayout, Precision

__all__ = [
    "DecodeStep",
    "GemmElementBytes",
    "active_ffn_width",
    "batch_for_dense_intensity",
    "batch_for_expert_intensity",
    "decode_step",
    "dense_equivalent_intensity",
    "element_bytes",
    "expected_experts_touched",
    "expected_experts_touched_skewed",
    "expert_ffn_flops_bytes",
    "expert_gemm_intensity",
    "hottest_expert_tokens",
    "intensity_sweep",
    "step_gemms",
    "tokens_per_expert",
    "tokens_per_gpu_under_ep",
    "zipf_probs",
]


MAX_TOKENS = 1e15  # token counts beyond this are not a serving step (and would overflow the products)
MAX_EXPERTS = 100_000


def _tokens(x, what: str = "token counts"):
    return nonneg_array(what, x, MAX_TOKENS)


def _check_k_n(top_k, n_experts) -> None:
    whole("n_experts", n_experts)
    whole("top_k", top_k)
    if top_k > n_experts:
        raise ValueError(f"top_k ({top_k}) cannot exceed n_experts ({n_experts})")


def _element_bytes(eb: GemmElementBytes | None) -> GemmElementBytes:
    """The bf16 default, or ``eb`` with every element size a number in [0.001, 64] bytes."""
    if eb is None:
        return GemmElementBytes(2.0, 2.0, 2.0, "bf16")
    for name in ("weight", "act", "out"):
        v = getattr(eb, name)
        amount(f"element bytes: {name}", v, 0.001, 64)
    return eb


def tokens_per_expert(tokens, top_k: int, n_experts: int):
    """Mean tokens per expert under uniform routing: ``tokens x top_k / n_experts``.
    Mixtral (8 experts, top-2) at 32 tokens: 8; Qwen3-235B (128, top-8) at 128: 8."""
    _check_k_n(top_k, n_experts)
    return scalar_or_array(_tokens(tokens) * top_k / n_experts)


def hottest_expert_tokens(tokens, top_k: int, n_experts: int, imbalance_ratio: float = 1.0):
    """Tokens of the most loaded expert when the load's max/mean ratio is ``imbalance_ratio``
    (capped at every token: an expert can get each token at most once)."""
    _check_k_n(top_k, n_experts)
    if not np.isfinite(imbalance_ratio) or not 1 <= imbalance_ratio <= 1e6:
        raise ValueError(f"imbalance_ratio must be >= 1 (max / mean) and <= 1,000,000, got {imbalance_ratio}")
    t = _tokens(tokens)
    return scalar_or_array(np.minimum(t * top_k / n_experts * imbalance_ratio, t))


def tokens_per_gpu_under_ep(tokens, top_k: int, ep: int):
    """Token-expert assignments landing on one GPU of an EP group (uniform routing): ``T k / EP``."""
    whole("ep", ep)
    whole("top_k", top_k)
    return scalar_or_array(_tokens(tokens) * top_k / ep)


def expected_experts_touched(tokens, top_k: int, n_experts: int):
    """Distinct experts a step over ``tokens`` tokens touches per layer, uniform independent routing:
    ``N (1 - (1 - k/N)^T)``. A token picks k distinct experts, so it misses a given one with
    probability ``1 - k/N``. DeepSeek-V3 at one token: 8 of 256; at thousands: all 256."""
    _check_k_n(top_k, n_experts)
    t = _tokens(tokens)
    return scalar_or_array(n_experts * (1.0 - (1.0 - top_k / n_experts) ** t))


def zipf_probs(n_experts: int, s: float = 1.0) -> np.ndarray:
    """Routing probabilities ``p_i ~ 1 / i^s`` (a skewed router; s = 0 is uniform)."""
    whole("n_experts", n_experts)
    if not np.isfinite(s) or not 0 <= s <= 10:
        raise ValueError("the Zipf exponent s must be within 0 and 10")
    w = 1.0 / np.arange(1, n_experts + 1, dtype=np.float64) ** s
    return w / w.sum()


def expected_experts_touched_skewed(tokens, top_k: int, probs) -> np.ndarray | float:
    """Distinct experts touched when expert i is picked by a fraction ``min(1, k p_i)`` of the tokens
    (``probs`` sums to 1): ``sum_i 1 - (1 - min(1, k p_i))^T``. Uniform ``p`` gives the closed form
    above; skew concentrates tokens on fewer experts, so fewer are touched."""
    p = np.asarray(probs, dtype=np.float64)
    if (
        p.ndim != 1
        or p.size < 1
        or not np.all(np.isfinite(p))
        or np.any(p < 0)
        or np.any(p > 1 + 1e-6)
        or not np.isclose(p.sum(), 1.0)
    ):
        raise ValueError("probs must be a 1-D array of non-negative probabilities summing to 1")
    _check_k_n(top_k, p.size)
    t = _tokens(tokens)
    q = np.minimum(1.0, top_k * p)
    out = np.sum(1.0 - (1.0 - q[:, None]) ** np.atleast_1d(t)[None, :], axis=0)
    return float(out[0]) if np.ndim(tokens) == 0 else out.reshape(np.shape(tokens))


@dataclass(frozen=True)
class GemmElementBytes:
    """Element sizes in a GEMM: the weight (with its scales), the input activation, the output."""

    weight: float
    act: float
    out: float
    compute_dtype: str


def element_bytes(gpu: GPUSpec, weight_dtype: str) -> GemmElementBytes:
    """How a GPU runs a weight dtype: W8A8 on FP8/INT8 tensor cores (1-byte activations), W4A4 on FP4
    tensor cores (4-bit activations with block scales), otherwise weight-only with bf16 activations.
    Outputs are written in bf16."""
    support = memory.precision_support(gpu, weight_dtype)
    act = {"fp8": 1.0, "int8": 1.0, "fp4": memory.bytes_per_param(weight_dtype)}.get(support.compute_dtype, 2.0)
    return GemmElementBytes(memory.bytes_per_param(weight_dtype), act, 2.0, support.compute_dtype)


def expert_ffn_flops_bytes(model: ModelSpec, tokens_per_expert, eb: GemmElementBytes | None = None):
    """(FLOPs, bytes) of one expert's FFN at ``tokens_per_expert`` tokens: the fused gate/up GEMM
    ``[t, h] x [h, (m-1) f]`` and the down GEMM ``[t, f] x [f, h]`` (m = 3 for SwiGLU), each operand
    moved once."""
    if model.moe is None:
        raise ValueError(f"{model.name} is dense: it has no experts")
    eb = _element_bytes(eb)
    h, f, mats = model.hidden_size, model.moe.expert_intermediate_size, model.ffn_matrices
    t = _tokens(tokens_per_expert)
    up_n = (mats - 1) * f
    flops = roofline.gemm_flops(t, h, up_n) + roofline.gemm_flops(t, f, h)
    moved = roofline.gemm_bytes(
        t, h, up_n, weight_bytes=eb.weight, act_bytes=eb.act, out_bytes=eb.out
    ) + roofline.gemm_bytes(t, f, h, weight_bytes=eb.weight, act_bytes=eb.act, out_bytes=eb.out)
    return flops, moved


def expert_gemm_intensity(model: ModelSpec, tokens_per_expert, eb: GemmElementBytes | None = None):
    """FLOP per byte of one expert's FFN (gate/up + down) at ``tokens_per_expert`` tokens."""
    flops, moved = expert_ffn_flops_bytes(model, tokens_per_expert, eb)
    return scalar_or_array(flops / moved)


def dense_equivalent_intensity(model: ModelSpec, tokens, eb: GemmElementBytes | None = None):
    """FLOP per byte of a dense FFN with the same active width per token (``top_k x expert width +
    shared width``) over all ``tokens``: what the same active compute would achieve without routing."""
    if model.moe is None:
        raise ValueError(f"{model.name} is dense: it has no experts")
    flops, moved = _ffn_flops_bytes(model, active_ffn_width(model), tokens, _element_bytes(eb))
    return scalar_or_array(flops / moved)


def _solve_tokens(flops_fn, target_intensity):
    """Tokens t at which ``FLOPs(t) / bytes(t) = R`` when FLOPs = A t and bytes = B + C t:
    ``t = R B / (A - R C)``, ``inf`` where the intensity saturates below R."""
    flops1, bytes1 = flops_fn(1.0)
    _, bytes0 = flops_fn(0.0)
    a, b, c = float(flops1), float(bytes0), float(bytes1 - bytes0)
    r = np.asarray(target_intensity, dtype=np.float64)
    if np.any(~np.isfinite(r)) or np.any(r <= 0) or np.any(r > 1e12):
        raise ValueError("target_intensity must be finite, > 0 and <= 1e12 FLOP/byte")
    denom = a - r * c
    with np.errstate(divide="ignore"):
        return np.where(denom > 0, r * b / np.where(denom > 0, denom, 1.0), np.inf)


def _ffn_flops_bytes(model: ModelSpec, width: int, tokens, eb: GemmElementBytes):
    h, mats = model.hidden_size, model.ffn_matrices
    t = _tokens(tokens)
    flops = roofline.gemm_flops(t, h, (mats - 1) * width) + roofline.gemm_flops(t, width, h)
    moved = roofline.gemm_bytes(
        t, h, (mats - 1) * width, weight_bytes=eb.weight, act_bytes=eb.act, out_bytes=eb.out
    ) + (roofline.gemm_bytes(t, width, h, weight_bytes=eb.weight, act_bytes=eb.act, out_bytes=eb.out))
    return flops, moved


def active_ffn_width(model: ModelSpec) -> int:
    """FFN width a token uses: top_k x expert width + shared width (MoE), the dense width otherwise."""
    if model.moe is None:
        return model.dense_intermediate_size
    e = model.moe
    return e.top_k * e.expert_intermediate_size + e.n_shared_experts * e.shared_intermediate_size


def batch_for_expert_intensity(model: ModelSpec, target_intensity, eb: GemmElementBytes | None = None):
    """Total tokens per step at which the expert FFN reaches ``target_intensity`` FLOP/byte (uniform
    routing), ``inf`` where it never can (the intensity saturates at FLOPs / activation bytes).

    Intensity at t tokens per expert is ``A t / (B + C t)`` with A = FLOPs per token, B = weight bytes,
    C = activation bytes per token, so ``t = R B / (A - R C)``; the batch is ``t N / k``.
    """
    if model.moe is None:
        raise ValueError(f"{model.name} is dense: it has no experts")
    t = _solve_tokens(lambda x: expert_ffn_flops_bytes(model, x, eb), target_intensity)
    return scalar_or_array(t * model.moe.n_routed_experts / model.moe.top_k)


def batch_for_dense_intensity(model: ModelSpec, target_intensity, eb: GemmElementBytes | None = None):
    """Tokens per step at which a dense FFN of the model's active width reaches ``target_intensity``
    (the model's own FFN for a dense model)."""
    eb = _element_bytes(eb)
    width = active_ffn_width(model)
    return scalar_or_array(_solve_tokens(lambda x: _ffn_flops_bytes(model, width, x, eb), target_intensity))


def intensity_sweep(
    model: ModelSpec, gpus: list[GPUSpec], batches, precision: Precision | str = "bf16"
) -> dict[str, np.ndarray]:
    """A 2-D sweep over (GPU, batch) in one vectorised call: expert FFN intensity, each GPU's ridge
    for the dtype it would compute in, the fraction of the ridge reached and the attainable TFLOP/s.
    Arrays are shaped ``[len(gpus), len(batches)]``."""
    prec = Precision.of(precision)
    b = np.atleast_1d(_tokens(batches))
    t = tokens_per_expert(b, model.moe.top_k, model.moe.n_routed_experts) if model.moe else b
    ebs = [element_bytes(g, prec.expert_dtype) for g in gpus]
    w = np.array([e.weight for e in ebs])[:, None]
    a = np.array([e.act for e in ebs])[:, None]
    o = np.array([e.out for e in ebs])[:, None]
    h = model.hidden_size
    if model.moe is not None:
        f, k_up = model.moe.expert_intermediate_size, (model.ffn_matrices - 1) * model.moe.expert_intermediate_size
    else:
        f, k_up = model.dense_intermediate_size, (model.ffn_matrices - 1) * model.dense_intermediate_size
    tt = np.asarray(t)[None, :]
    flops = roofline.gemm_flops(tt, h, k_up) + roofline.gemm_flops(tt, f, h)
    moved = roofline.gemm_bytes(tt, h, k_up, weight_bytes=w, act_bytes=a, out_bytes=o) + roofline.gemm_bytes(
        tt, f, h, weight_bytes=w, act_bytes=a, out_bytes=o
    )
    intensity = flops / moved
    peak = np.array([g.dense_tflops[e.compute_dtype] for g, e in zip(gpus, ebs, strict=True)])[:, None]
    bw = np.array([g.hbm_bandwidth_gbps / 1000.0 for g in gpus])[:, None]
    ridge = peak / bw
    return {
        "tokens_per_expert": np.broadcast_to(tt, intensity.shape),
        "intensity": intensity,
        "ridge": np.broadcast_to(ridge, intensity.shape),
        "fraction_of_ridge": intensity / ridge,
        "attainable_tflops": roofline.attainable_tflops(peak, bw, intensity),
    }


# ----------------------------------------------------------------------------- the decode step


@dataclass(frozen=True)
class DecodeStep:
    """The decode roofline (:func:`core.perf.decode_roofline`) over an array of batch sizes: per GPU of the
    busiest pipeline stage, for one micro-batch's pass, with the time each sequence waits per token."""

    tokens: np.ndarray  # query tokens per step in one replica
    weight_bytes: np.ndarray  # weights read per GPU of the busiest stage (experts actually touched)
    kv_bytes: np.ndarray  # cache read (and recurrent state read and written) per GPU of that stage
    flops: np.ndarray  # FLOPs per GPU of that stage
    memory_time_s: np.ndarray  # bytes / HBM bandwidth, per token step (scaled like time_s)
    compute_time_s: np.ndarray  # FLOPs at each kernel's dense peak, per token step
    time_s: np.ndarray  # each sequence's time per token: every kernel at max(memory, compute)
    experts_touched: np.ndarray  # distinct routed experts touched per MoE layer by one micro-batch
    microbatches: np.ndarray  # micro-batches in flight (min(PP, sequences))
    stage: np.ndarray  # the busiest stage (0-based)
    num_stages: int = 1

    @property
    def memory_bound(self) -> np.ndarray:
        return self.memory_time_s >= self.compute_time_s

    @property
    def tokens_per_s(self) -> np.ndarray:
        """Tokens per second of the replica (every micro-batch)."""
        return self.tokens / self.time_s


def decode_step(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    precision: Precision | str,
    tokens,
    context_len: int,
    *,
    sequences=None,
    assumptions: MemoryAssumptions | None = None,
) -> DecodeStep:
    """The roofline of a decode step for ``tokens`` query tokens per step in each replica (``sequences``
    sequences, default one token each) at ``context_len`` cached tokens per sequence: the step-time model's
    per-layer works (:mod:`core.kernels`: each mixer's cache reads, only the touched experts, the LM head,
    ...) with every efficiency at 1, no floors, no overheads, no communication (:func:`core.perf.decode_roofline`).
    With pipeline stages the figures are the busiest stage's, with ``min(PP, sequences)`` micro-batches in
    flight."""
    from core import perf

    a = assumptions or MemoryAssumptions()
    prec = Precision.of(precision)
    problems = memory.check_layout(model, layout, a.redundant_experts)
    if problems:
        raise ValueError("invalid layout for " + model.name + ": " + "; ".join(problems))
    t = np.atleast_1d(_tokens(tokens))
    seqs = t if sequences is None else np.broadcast_to(np.atleast_1d(_tokens(sequences)), t.shape)
    if (
        not isinstance(context_len, (int, np.integer))
        or isinstance(context_len, bool)
        or not 1 <= context_len <= 100_000_000
    ):
        raise ValueError(f"context_len must be a whole number in 1..100,000,000, got {context_len!r}")
    rows = []
    for ti, si in zip(t, seqs, strict=True):
        if ti <= 0 or si <= 0:
            raise ValueError("tokens and sequences per step must be > 0")
        if ti < si or ti / si > 1_000:
            raise ValueError(f"{ti:g} tokens from {si:g} sequences: each sequence brings 1 to 1,000 tokens per step")
        r = perf.decode_roofline(
            model,
            gpu,
            layout,
            prec,
            float(ti),
            int(context_len),
            tokens_per_sequence=float(ti / si),
            redundant_experts=a.redundant_experts,
        )
        scale = r.step_s / r.stage_s if r.stage_s else 1.0
        rows.append(
            (
                r.weight_bytes,
                r.cache_bytes,
                r.flops,
                r.memory_s * scale,
                r.compute_s * scale,
                r.step_s,
                r.microbatches,
                r.stage,
            )
        )
    cols = [np.array(c, dtype=np.float64) for c in zip(*rows, strict=True)] or [np.zeros(0)] * 8
    micro = cols[6]
    touched = (
        expected_experts_touched(t / micro, model.moe.top_k, model.moe.n_routed_experts)
        if model.moe is not None
        else np.zeros_like(t)
    )
    return DecodeStep(
        t,
        cols[0],
        cols[1],
        cols[2],
        cols[3],
        cols[4],
        cols[5],
        np.asarray(touched, dtype=np.float64),
        micro,
        cols[7].astype(np.int64),
        layout.pp,
    )


def step_gemms(model: ModelSpec, gpu: GPUSpec, precision: Precision | str, tokens: float) -> list[dict]:
    """The main GEMMs of a decode step over ``tokens`` tokens, with their arithmetic intensity:
    the routed-expert FFN at its tokens per expert, a dense FFN of equal active width over all tokens,
    the attention output projection and the LM head (the last two always see every token)."""
    prec = Precision.of(precision)
    t = float(_tokens(tokens))
    eb_w = element_bytes(gpu, prec.weights)
    eb_e = element_bytes(gpu, prec.expert_dtype)
    h = model.hidden_size
    out = []
    if model.moe is not None:
        tpe = t * model.moe.top_k / model.moe.n_routed_experts
        out.append(
            {
                "gemm": f"routed expert FFN ({tpe:,.1f} tokens/expert)",
                "tokens": tpe,
                "intensity": expert_gemm_intensity(model, tpe, eb_e),
                "compute_dtype": eb_e.compute_dtype,
            }
        )
        out.append(
            {
                "gemm": f"dense FFN of equal active width ({t:,.0f} tokens)",
                "tokens": t,
                "intensity": dense_equivalent_intensity(model, t, eb_w),
                "compute_dtype": eb_w.compute_dtype,
            }
        )
    else:
        flops, moved = _ffn_flops_bytes(model, model.dense_intermediate_size, t, eb_w)
        out.append(
            {
                "gemm": f"FFN ({t:,.0f} tokens)",
                "tokens": t,
                "intensity": float(flops / moved),
                "compute_dtype": eb_w.compute_dtype,
            }
        )
    o_in = model.head_mixer.output_features()
    out.append(
        {
            "gemm": f"attention output projection ({t:,.0f} tokens)",
            "tokens": t,
            "intensity": roofline.gemm_intensity(
                t, o_in, h, weight_bytes=eb_w.weight, act_bytes=eb_w.act, out_bytes=eb_w.out
            ),
            "compute_dtype": eb_w.compute_dtype,
        }
    )
    out.append(
        {
            "gemm": f"LM head ({t:,.0f} tokens)",
            "tokens": t,
            "intensity": roofline.gemm_intensity(t, h, model.vocab_size, 2.0),
            "compute_dtype": "bf16",
        }
    )
    return out
