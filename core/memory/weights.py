"""Weight bytes: per component for the whole model, per GPU of a pipeline stage under a layout, and what a
speculative draft adds.

Quantised schemes store the linear layers (attention and other mixers, dense FFN, experts) in the chosen
dtype with its scales (:mod:`core.memory.formats`); embeddings, LM head, router, norms and a vision tower stay
in bf16, as the published FP8 / INT4 / NVFP4 checkpoints do (DeepSeek-V3 FP8, NVIDIA's NVFP4 exports).
TP shards the mixers (as each mixer says), dense FFNs, shared experts and the vocabulary; EP spreads the
routed experts (plus redundant replicas) and expert-TP splits each; PP gives each stage its layers
(embedding on the first, LM head on the last).
"""

from __future__ import annotations

import math

import numpy as np

from core.deployment.parallel import fitting_tp, stage_counts
from core.deployment.specs import ParallelLayout, Precision, SpecDecodeConfig
from core.memory.formats import bytes_per_param
from core.memory.kv import kv_bytes_per_sequence_on_gpu
from core.model import ModelSpec, ffn
from core.model import params as model_params

__all__ = [
    "component_dtypes",
    "draft_params",
    "draft_weights_and_kv",
    "mtp_bytes_per_rank",
    "stage_weights",
    "weight_bytes_by_component",
    "weights_bytes",
]


def component_dtypes(precision: Precision | str) -> dict[str, str]:
    """The dtype each component is stored in under a precision (see the module docstring)."""
    p = Precision.of(precision)
    w = p.weights
    high = w if w in ("fp32", "bf16", "fp16") else "bf16"
    return {
        "embedding": high,
        "lm_head": high,
        "attention": w,
        "dense_ffn": w,
        "parallel_mlp": w,
        "shared_experts": w,
        "routed_experts": p.expert_dtype,
        "router": high,
        "norms": high,
        "vision": high,
        "mtp": w,
        "mtp_experts": p.expert_dtype,
    }


def weight_bytes_by_component(
    model: ModelSpec, precision: Precision | str, *, include_mtp: bool = False
) -> dict[str, float]:
    """Bytes of each component's weights (whole model, before any sharding), scales included."""
    dt = component_dtypes(precision)
    b = model_params.breakdown(model).as_dict()
    out = {c: b[c] * bytes_per_param(dt[c]) for c in model_params.COMPONENTS}
    if include_mtp and model.num_mtp_layers:
        routed = model_params.mtp_routed_expert_params(model)
        out["mtp"] = (b["mtp"] - routed) * bytes_per_param(dt["mtp"]) + routed * bytes_per_param(dt["mtp_experts"])
    return out


def weights_bytes(model: ModelSpec, precision: Precision | str, *, include_mtp: bool = False) -> int:
    """Bytes of all weights of ``model`` stored under ``precision`` (a Precision or a dtype name such as
    ``"fp8"``), scales included. The MTP module is added with ``include_mtp`` (vLLM / SGLang load it
    only when it serves as the speculative draft)."""
    return round(sum(weight_bytes_by_component(model, precision, include_mtp=include_mtp).values()))


def _local_experts(model: ModelSpec, layout: ParallelLayout, redundant: int) -> float:
    """Routed-expert weights of one MoE layer on one GPU: its ``ceil((N + redundant) / EP)`` slots, each
    split over expert-TP."""
    if model.moe is None:
        return 0.0
    return math.ceil((model.moe.n_routed_experts + redundant) / layout.ep) * ffn.expert_params(model) / layout.expert_tp


def stage_weights(
    model: ModelSpec,
    layout: ParallelLayout,
    precision: Precision,
    stage: range,
    first: bool,
    last: bool,
    redundant: int,
) -> dict[str, float]:
    """Bytes per component on one GPU of the pipeline stage holding layers ``stage``."""
    dt = component_dtypes(precision)
    h, tp = model.hidden_size, layout.attention_tp
    sc = stage_counts(model, stage)
    vocab = model.vocab_size * h / tp
    p: dict[str, float] = {
        "embedding": vocab if first else 0.0,
        "lm_head": vocab if last and (not model.tie_word_embeddings or layout.pp > 1) else 0.0,
        "attention": sum(
            n * g.mixer.params_per_rank(h, tp) for n, g in zip(sc.per_group, model.mixers, strict=True) if n
        ),
        "dense_ffn": sc.dense * ffn.dense_ffn_params(model) / tp,
        "parallel_mlp": sc.moe * ffn.parallel_mlp_params(model) / tp,
        "shared_experts": sc.moe * ffn.shared_experts_params(model) / tp,
        "routed_experts": sc.moe * _local_experts(model, layout, redundant),
        "router": sc.moe * ffn.router_params(model) + (model.inactive_extra_params if first and model.moe else 0),
        "norms": sc.layers * (model.norms_per_layer * h + model.layer_extra_params)
        + ((h + model.model_extra_params) if last else 0),
        "vision": model.vision_params if first else 0.0,
    }
    return {k: v * bytes_per_param(dt[k]) for k, v in p.items()}


def mtp_bytes_per_rank(model: ModelSpec, layout: ParallelLayout, precision: Precision, redundant: int) -> float:
    """One GPU's share of the MTP module(s), sharded like a MoE layer (+ the 2h -> h projection over TP)."""
    dt = component_dtypes(precision)
    tp, n = layout.attention_tp, model.num_mtp_layers
    attn = n * model_params.attention_params_per_rank(model, tp)
    rest = (
        model_params.mtp_params(model)
        - model_params.mtp_routed_expert_params(model)
        - n * model_params.attention_params_per_layer(model)
    )
    routed = 0.0 if model.mtp_dense_ffn else n * _local_experts(model, layout, redundant)
    return (attn + rest / tp) * bytes_per_param(dt["mtp"]) + routed * bytes_per_param(dt["mtp_experts"])


def draft_params(target: ModelSpec, spec: SpecDecodeConfig, draft_model: ModelSpec | None = None) -> int:
    """Parameters the speculative draft adds (0 for none / n-gram).

    mtp: the target's own MTP module(s). eagle: one decoder layer of the target's width (its head mixer and
    a SwiGLU FFN of the target's dense width, or 4 x hidden for all-MoE targets) plus the fusion projection
    from 3 x hidden (EAGLE-3) and two norms; it shares the target's embedding and LM head.
    draft_model: the whole separate model.
    """
    if spec.kind in ("none", "ngram"):
        return 0
    if spec.kind == "mtp":
        if not target.num_mtp_layers:
            raise ValueError(f"{target.name} has no MTP module (num_nextn_predict_layers = 0); choose another draft")
        return model_params.mtp_params(target)
    if spec.kind == "eagle":
        h = target.hidden_size
        f = target.dense_intermediate_size or 4 * h
        return int(model_params.attention_params_per_layer(target) + 3 * h * f + 3 * h * h + 2 * h)
    if draft_model is None:
        raise ValueError("a draft_model speculative config needs the draft ModelSpec")
    return draft_model.total_params


def draft_weights_and_kv(
    model: ModelSpec,
    layout: ParallelLayout,
    prec: Precision,
    spec: SpecDecodeConfig,
    draft_model: ModelSpec | None,
    redundant: int,
):
    """(draft weight bytes on one GPU, function ctx -> draft cache bytes per sequence on one GPU)."""
    tp = layout.attention_tp
    head = model.head_mixer

    def head_cache(ctx, layers: int = 1):
        ctx = np.asarray(ctx, dtype=np.float64)
        return layers * (head.cache_bytes_per_rank(ctx, prec.kv_cache, tp) + head.state_bytes_per_rank(tp))

    if spec.kind == "mtp":
        draft_params(model, spec)  # raises when the model has no MTP module
        return mtp_bytes_per_rank(model, layout, prec, redundant), lambda ctx: head_cache(ctx, model.num_mtp_layers)
    if spec.kind == "eagle":
        return draft_params(model, spec) * bytes_per_param(prec.weights) / tp, head_cache
    if spec.kind == "draft_model":
        if draft_model is None:
            raise ValueError("speculative method 'draft_model' needs the draft model")
        d_tp = fitting_tp(draft_model, tp)
        w = weights_bytes(draft_model, spec.draft_weights or prec.weights) / d_tp
        everything = range(draft_model.num_layers)
        return w, lambda ctx: kv_bytes_per_sequence_on_gpu(draft_model, ctx, prec.kv_cache, d_tp, everything)
    return 0.0, lambda ctx: np.zeros_like(np.asarray(ctx, dtype=np.float64))
