"""Arithmetic intensity of the GEMMs a step runs: an expert's FFN at its tokens per expert, a dense FFN of
the same active width, the attention output projection and the LM head, against each GPU's ridge point;
the batch a GEMM needs to reach a target intensity. Element sizes follow how the GPU runs the weight dtype
(:func:`element_bytes`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import memory, roofline
from core._util.checks import amount, scalar_or_array
from core.deployment.bundle import Deployment
from core.deployment.specs import Precision
from core.hardware import GPUSpec, precision_support
from core.model import ModelSpec, ffn
from core.model.routing import token_counts, tokens_per_expert

__all__ = [
    "GemmElementBytes",
    "active_ffn_width",
    "batch_for_dense_intensity",
    "batch_for_expert_intensity",
    "dense_equivalent_intensity",
    "element_bytes",
    "expert_ffn_flops_bytes",
    "expert_gemm_intensity",
    "intensity_sweep",
    "step_gemms",
]


def _element_bytes(eb: GemmElementBytes | None) -> GemmElementBytes:
    """The bf16 default, or ``eb`` with every element size a number in [0.001, 64] bytes."""
    if eb is None:
        return GemmElementBytes(2.0, 2.0, 2.0, "bf16")
    for name in ("weight", "act", "out"):
        v = getattr(eb, name)
        amount(f"element bytes: {name}", v, 0.001, 64)
    return eb


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
    support = precision_support(gpu, weight_dtype)
    act = {"fp8": 1.0, "int8": 1.0, "fp4": memory.bytes_per_param(weight_dtype)}.get(support.compute_dtype, 2.0)
    return GemmElementBytes(memory.bytes_per_param(weight_dtype), act, 2.0, support.compute_dtype)


def _gemms_flops_bytes(shapes, tokens, eb: GemmElementBytes):
    """(FLOPs, bytes) of the GEMMs ``shapes`` ((k, n) each) over ``tokens`` tokens, each operand moved
    once; ``eb``'s sizes may be arrays (a sweep over GPUs)."""
    flops = sum(roofline.gemm_flops(tokens, k, n) for k, n in shapes)
    moved = sum(
        roofline.gemm_bytes(tokens, k, n, weight_bytes=eb.weight, act_bytes=eb.act, out_bytes=eb.out) for k, n in shapes
    )
    return flops, moved


def expert_ffn_flops_bytes(model: ModelSpec, tokens_per_expert, eb: GemmElementBytes | None = None):
    """(FLOPs, bytes) of one expert's FFN at ``tokens_per_expert`` tokens: the fused gate/up GEMM
    ``[t, w] x [w, (m-1) f]`` and the down GEMM ``[t, f] x [f, w]`` (m = 3 for SwiGLU; w the latent width
    of a latent MoE, else the hidden size: :func:`core.model.ffn.expert_gemm_shapes`), each operand
    moved once. At one token the FLOPs are 2 x the expert's parameters."""
    shapes = ffn.expert_gemm_shapes(model)
    return _gemms_flops_bytes(shapes, token_counts(tokens_per_expert), _element_bytes(eb))


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
    """A dense FFN of intermediate ``width`` at the hidden size over ``tokens`` tokens."""
    shapes = ffn.ffn_gemm_shapes(model.hidden_size, width, model.ffn_matrices)
    return _gemms_flops_bytes(shapes, token_counts(tokens), eb)


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
    b = np.atleast_1d(token_counts(batches))
    t = tokens_per_expert(b, model.moe.top_k, model.moe.n_routed_experts) if model.moe else b
    ebs = [element_bytes(g, prec.expert_dtype) for g in gpus]
    sizes = GemmElementBytes(
        np.array([e.weight for e in ebs])[:, None],
        np.array([e.act for e in ebs])[:, None],
        np.array([e.out for e in ebs])[:, None],
        "per GPU",
    )
    if model.moe is not None:
        shapes = ffn.expert_gemm_shapes(model)
    else:
        shapes = ffn.ffn_gemm_shapes(model.hidden_size, model.dense_intermediate_size, model.ffn_matrices)
    tt = np.asarray(t)[None, :]
    flops, moved = _gemms_flops_bytes(shapes, tt, sizes)
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


def step_gemms(d: Deployment, tokens: float) -> list[dict]:
    """The main GEMMs of a decode step of deployment ``d`` over ``tokens`` tokens, with their arithmetic
    intensity: the routed-expert FFN at its tokens per expert, a dense FFN of equal active width over all tokens,
    the attention output projection and the LM head (the last two always see every token). Each is rated
    against the ridge of the dtype IT computes in (the LM head in bf16 beside FP8 experts): ``ridge``,
    ``peak_fraction`` = min(1, intensity / ridge) and ``attainable_tflops`` on the deployment's GPU."""
    model, gpu, prec = d.model, d.gpu, d.precision
    t = float(token_counts(tokens))
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
            "compute_dtype": "bf16" if gpu.supports("bf16") else "fp16",
        }
    )
    for g in out:
        ridge = roofline.ridge_point(gpu, g["compute_dtype"])
        g["intensity"] = float(g["intensity"])
        g["ridge"] = ridge
        g["peak_fraction"] = min(1.0, g["intensity"] / ridge)
        g["attainable_tflops"] = min(gpu.tflops(g["compute_dtype"]), g["intensity"] * gpu.hbm_bandwidth_gbps / 1000)
    return out
