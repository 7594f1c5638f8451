"""Memory: bytes per weight format, per component, KV cache, per GPU under a layout, fit verdicts.

Units: bytes unless a name says otherwise; GB = 1e9 bytes. Formulas accept numpy arrays where a
curve is drawn (context lengths).

Assumptions (all stated, the editable ones in :class:`core.specs.MemoryAssumptions`):

* Quantised schemes store the linear layers (attention, dense FFN, experts) in the chosen dtype with
  its scales (``WEIGHT_FORMATS``); embeddings, LM head, router, norms and a vision tower stay in bf16,
  as the published FP8 / INT4 / NVFP4 checkpoints do (DeepSeek-V3 FP8, NVIDIA's NVFP4 exports).
* TP shards attention (q/o and MLA up-projections; K/V heads up to ``num_kv_heads``), dense FFNs,
  shared experts and the vocabulary; EP spreads routed experts (plus redundant replicas) over its
  ranks and expert-TP splits each expert; PP splits layers into contiguous stages (embedding on the
  first, LM head on the last); DP replicates everything and splits the sequences.
* The KV cache of MHA/GQA splits over TP up to the number of KV heads; MLA's latent is replicated on
  every TP rank (vLLM and SGLang keep the whole latent per rank); attention-DP ranks each hold their
  own sequences.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from core import params
from core.specs import (
    GGUF_DTYPES,
    KV_DTYPES,
    AttentionKind,
    GPUSpec,
    MemoryAssumptions,
    ModelSpec,
    ParallelLayout,
    Precision,
    SpecDecodeConfig,
    Workload,
)

__all__ = [
    "compressed_cache_parts",
    "fixed_state_bytes_per_sequence",
    "decode_read_bytes_per_sequence",
    "global_kv_elements_per_token_per_layer",
    "state_equivalent_tokens",
    "cache_by_layer_type",
    "linear_state_bytes_per_sequence",
    "GGUF_BLOCKS",
    "gguf_bits_per_weight",
    "DTYPE_BYTES",
    "WEIGHT_FORMATS",
    "GPUMemory",
    "PrecisionSupport",
    "WeightFormat",
    "bytes_per_param",
    "check_layout",
    "component_dtypes",
    "default_layout",
    "draft_params",
    "dtype_bytes",
    "kv_bytes_per_sequence",
    "kv_bytes_per_sequence_on_gpu",
    "pipeline_stages",
    "kv_bytes_per_token",
    "kv_bytes_per_token_per_layer",
    "kv_elements_per_token_per_layer",
    "max_concurrent_sequences",
    "max_context_len",
    "min_gpus",
    "per_gpu_memory",
    "stage_memories",
    "min_gpus_table",
    "scenario_notes",
    "precision_support",
    "weight_bytes_by_component",
    "weights_bytes",
]

# Bytes per element of the payload, without block/group scales.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nvfp4": 0.5,
    "mxfp4": 0.5,
}


@dataclass(frozen=True)
class WeightFormat:
    """How a weight dtype is stored: payload bits plus the scale bytes it needs per weight."""

    dtype: str
    payload_bits: float
    scale_bytes_per_param: float
    scales: str

    @property
    def bytes_per_param(self) -> float:
        return self.payload_bits / 8 + self.scale_bytes_per_param

    @property
    def bits_per_weight(self) -> float:
        return 8 * self.bytes_per_param


WEIGHT_FORMATS: dict[str, WeightFormat] = {
    f.dtype: f
    for f in (
        WeightFormat("fp32", 32, 0.0, "none"),
        WeightFormat("bf16", 16, 0.0, "none"),
        WeightFormat("fp16", 16, 0.0, "none"),
        WeightFormat(
            "fp8", 8, 4 / (128 * 128),
            "one fp32 scale per 128 x 128 block (DeepSeek-V3's block-wise FP8, DeepGEMM)",
        ),
        WeightFormat(
            "int8", 8, 2 / 4096,
            "one fp16 scale per output channel (W8A8 per-channel), about 2 bytes per 4,096-weight row",
        ),
        WeightFormat(
            "int4", 4, (2 + 0.5) / 128,
            "AWQ / GPTQ, group size 128: one fp16 scale and one packed 4-bit zero point per 128 weights",
        ),
        WeightFormat(
            "nvfp4", 4, 1 / 16,
            "one FP8 (E4M3) scale per 16 weights, plus one fp32 scale per tensor (negligible)",
        ),
        WeightFormat("mxfp4", 4, 1 / 32, "one 8-bit (E8M0) shared exponent per 32 weights (OCP MX)"),
    )
}

# llama.cpp GGUF block types: (weights per block, bytes per block, layout), read off the block structs of
# ggml/src/ggml-common.h (QK_K = 256). The bytes include each block's own scales, so
# bits per weight = 8 x bytes / weights (Q4_K: 8 x 144 / 256 = 4.5).
GGUF_BLOCKS: dict[str, tuple[int, int, str]] = {
    "q8_0": (32, 2 + 32, "fp16 scale + 32 int8"),
    "q6_k": (256, 128 + 64 + 16 + 2, "ql[128] + qh[64] + 16 int8 scales + fp16 d"),
    "q5_k": (256, 4 + 12 + 32 + 128, "fp16 d, dmin + 12 B 6-bit scales + qh[32] + qs[128]"),
    "q4_k": (256, 4 + 12 + 128, "fp16 d, dmin + 12 B 6-bit scales + qs[128]"),
    "q3_k": (256, 32 + 64 + 12 + 2, "hmask[32] + qs[64] + 12 B scales + fp16 d"),
    "q2_k": (256, 16 + 64 + 4, "16 B 4-bit scales/mins + qs[64] + fp16 d, dmin"),
    "iq4_xs": (256, 2 + 2 + 4 + 128, "fp16 d + scales_h (2 B) + scales_l[4] + qs[128] (non-linear 4-bit grid)"),
    "iq3_xxs": (256, 2 + 96, "fp16 d + 96 B grid indices and signs"),
    "iq2_xs": (256, 2 + 64 + 8, "fp16 d + 32 uint16 grid indices + 8 B scales"),
    "iq2_xxs": (256, 2 + 64, "fp16 d + 32 uint16 grid indices, signs and scales"),
    "iq1_s": (256, 2 + 32 + 16, "fp16 d + qs[32] + 8 uint16 qh"),
}


def gguf_bits_per_weight(block_type: str) -> float:
    """Bits per weight of one GGUF block type, scales included (``GGUF_BLOCKS``)."""
    try:
        n, nbytes, _ = GGUF_BLOCKS[block_type]
    except KeyError:
        raise ValueError(f"unknown GGUF block type {block_type!r}; allowed: {', '.join(GGUF_BLOCKS)}") from None
    return 8 * nbytes / n


# llama.cpp's _M mixes keep some tensors at a higher type (src/llama-quant.cpp). For an MoE checkpoint the
# routed experts dominate, so the mix is taken over the three FFN matrices: gate and up at the base type,
# down partly higher. Q4_K_M / Q5_K_M: ffn_down is Q6_K on the "use_more_bits" layers (first and last
# eighth and every third in between: about half of them); Q3_K_M: ffn_down is Q4_K (Q5_K on the first
# sixteenth). Attention V tensors also go up a step; they are a small share of an MoE and are not modelled.
_GGUF_MIXES: dict[str, tuple[str, list[tuple[str, float]], str]] = {
    "q4_k_m": ("q4_k", [("q4_k", 2 / 3), ("q6_k", 1 / 6), ("q4_k", 1 / 6)],
               "Q4_K gate/up, ffn_down Q6_K on about half the layers"),
    "q5_k_m": ("q5_k", [("q5_k", 2 / 3), ("q6_k", 1 / 6), ("q5_k", 1 / 6)],
               "Q5_K gate/up, ffn_down Q6_K on about half the layers"),
    "q3_k_m": ("q3_k", [("q3_k", 2 / 3), ("q5_k", 1 / 48), ("q4_k", 15 / 48)],
                "Q3_K gate/up, ffn_down Q4_K (Q5_K on the first sixteenth of layers)"),
}


def _gguf_format(dtype: str) -> WeightFormat:
    if dtype in _GGUF_MIXES:
        _, parts, what = _GGUF_MIXES[dtype]
        bpw = sum(w * gguf_bits_per_weight(t) for t, w in parts)
        return WeightFormat(dtype, bpw, 0.0, f"GGUF mix: {what} (llama.cpp llama-quant.cpp); blocks carry their scales")
    n, nbytes, layout = GGUF_BLOCKS[dtype]
    return WeightFormat(dtype, 8 * nbytes / n, 0.0, f"GGUF block of {n} weights in {nbytes} B: {layout} (ggml-common.h)")


WEIGHT_FORMATS.update({d: _gguf_format(d) for d in GGUF_DTYPES})
DTYPE_BYTES.update({d: WEIGHT_FORMATS[d].bytes_per_param for d in GGUF_DTYPES})

# DeepSeek-V3.2's DSA indexer caches its key in FP8 with one fp32 scale per token per layer
# (inference/model.py, Indexer.k_cache / k_scale_cache).
_INDEXER_KEY_BYTES_PER_ELEM = 1
_INDEXER_SCALE_BYTES = 4


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of a storage dtype (payload only)."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)}") from None


def bytes_per_param(dtype: str) -> float:
    """Bytes per weight including its scales (``WEIGHT_FORMATS``)."""
    try:
        return WEIGHT_FORMATS[dtype].bytes_per_param
    except KeyError:
        raise ValueError(f"unknown weight dtype {dtype!r}; allowed: {', '.join(WEIGHT_FORMATS)}") from None


def _precision(p: Precision | str) -> Precision:
    return Precision.of(p)


def component_dtypes(precision: Precision | str) -> dict[str, str]:
    """The dtype each component is stored in under a precision (see the module docstring)."""
    p = _precision(precision)
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


def weight_bytes_by_component(model: ModelSpec, precision: Precision | str, *, include_mtp: bool = False) -> dict[str, float]:
    """Bytes of each component's weights (whole model, before any sharding), scales included."""
    dt = component_dtypes(precision)
    b = params.breakdown(model).as_dict()
    out = {c: b[c] * bytes_per_param(dt[c]) for c in params.COMPONENTS}
    if include_mtp and model.num_mtp_layers:
        routed = params.mtp_routed_expert_params(model)
        out["mtp"] = (b["mtp"] - routed) * bytes_per_param(dt["mtp"]) + routed * bytes_per_param(dt["mtp_experts"])
    return out


def weights_bytes(model: ModelSpec, precision: Precision | str, *, include_mtp: bool = False) -> int:
    """Bytes of all weights of ``model`` stored under ``precision`` (a Precision or a dtype name such as
    ``"fp8"``), scales included. The MTP module is added with ``include_mtp`` (vLLM / SGLang load it
    only when it serves as the speculative draft)."""
    return int(round(sum(weight_bytes_by_component(model, precision, include_mtp=include_mtp).values())))


# ------------------------------------------------------------------------------------------ KV cache


def kv_elements_per_token_per_layer(model: ModelSpec) -> int:
    """Cached elements per token in one layer that stores K/V.

    MHA/GQA: ``num_kv_heads * (head_dim + v_head_dim)``, i.e. ``2 * kv_heads * head_dim`` when K and V
    have the same size (Llama-3 70B: 2 x 8 x 128 = 2048).
    MLA: the compressed latent plus the shared RoPE key, ``kv_lora_rank + qk_rope_head_dim``,
    independent of the head count (DeepSeek-V2/V3, Kimi K2: 512 + 64 = 576).
    """
    if model.attention is AttentionKind.MLA:
        return int(model.kv_lora_rank + model.qk_rope_head_dim)
    dv = model.v_head_dim or model.head_dim
    return int(model.num_kv_heads * (model.head_dim + dv))


def _kv_dtype_bytes(kv_dtype: str) -> float:
    if kv_dtype not in KV_DTYPES:
        raise ValueError(f"unknown KV cache dtype {kv_dtype!r}; allowed: {', '.join(KV_DTYPES)}")
    return DTYPE_BYTES[kv_dtype]


def _indexer_bytes_per_token_per_layer(model: ModelSpec) -> int:
    if not model.index_head_dim:
        return 0
    if model.index_key_bytes:
        return model.index_key_bytes
    return model.index_head_dim * _INDEXER_KEY_BYTES_PER_ELEM + _INDEXER_SCALE_BYTES


def kv_bytes_per_token_per_layer(model: ModelSpec, kv_dtype: str = "bf16") -> float:
    """Bytes per token in one K/V-storing layer, plus a DSA indexer key where the model has one."""
    return kv_elements_per_token_per_layer(model) * _kv_dtype_bytes(kv_dtype) + _indexer_bytes_per_token_per_layer(model)


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "bf16") -> float:
    """KV-cache bytes one token adds across all layers (below any sliding-window cap).

    ``kv_layers * elements * bytes`` (cross-layer attention stores K/V on ``num_layers /
    cla_share_factor`` layers) ``+ num_layers * indexer key bytes`` (DSA).
    """
    if model.compress_ratios:  # long-context marginal: one entry (+ index key) per ratio tokens
        csa = _csa_ratio(model)
        return float(sum((model.compressed_entry_bytes + (model.compressed_index_bytes if r == csa else 0)) / r
                         for r in model.compress_ratios if r))
    per_layer = kv_elements_per_token_per_layer(model) * _kv_dtype_bytes(kv_dtype)
    if model.global_layers:
        n_g = len(model.global_layers)
        return float((model.kv_layers - n_g) * per_layer
                     + n_g * global_kv_elements_per_token_per_layer(model) * _kv_dtype_bytes(kv_dtype))
    return float(model.kv_layers * per_layer + model.num_index_layers * _indexer_bytes_per_token_per_layer(model))


def global_kv_elements_per_token_per_layer(model: ModelSpec) -> int:
    """Cached elements per token in one global layer (Gemma 4: K and V both cached, even where V is K)."""
    return int(2 * model.global_num_kv_heads * model.global_head_dim)


def _kv_groups(model: ModelSpec, ctx, kv_dtype: str) -> list[tuple[str, float, float, int]]:
    """(label, layers, bytes per sequence per layer, KV heads for the TP split) per group of softmax
    layers that share a cache geometry. A DSA indexer and linear states are not included."""
    b = _kv_dtype_bytes(kv_dtype)
    per_layer = kv_elements_per_token_per_layer(model) * b
    heads = 10**9 if model.attention is AttentionKind.MLA else model.num_kv_heads
    capped = np.minimum(ctx, model.sliding_window) if model.sliding_window else ctx
    win = f"sliding-window K/V (last {model.sliding_window:,} tokens)" if model.sliding_window else ""
    if model.global_layers:
        n_g = len(model.global_layers)
        return [(win, model.kv_layers - n_g, per_layer * capped, heads),
                ("full-attention K/V", n_g, global_kv_elements_per_token_per_layer(model) * b * ctx,
                 model.global_num_kv_heads)]
    windowed = model.sliding_window_layers * model.kv_layers / model.num_layers if model.sliding_window else 0.0
    return [("full-attention K/V", model.kv_layers - windowed, per_layer * ctx, heads),
            (win, windowed, per_layer * capped, heads)]


def _attention_kv_per_sequence(model: ModelSpec, ctx: np.ndarray, kv_dtype: str) -> np.ndarray:
    if model.global_layers:
        return sum(n * per for _, n, per, _ in _kv_groups(model, ctx, kv_dtype))
    per_layer = kv_elements_per_token_per_layer(model) * _kv_dtype_bytes(kv_dtype)
    kv_layers = model.kv_layers
    windowed = model.sliding_window_layers * kv_layers / model.num_layers if model.sliding_window else 0.0
    capped = np.minimum(ctx, model.sliding_window) if model.sliding_window else ctx
    return per_layer * ((kv_layers - windowed) * ctx + windowed * capped)  # noqa: RUF100


def _indexer_kv_per_sequence(model: ModelSpec, ctx: np.ndarray) -> np.ndarray:
    return model.num_index_layers * _indexer_bytes_per_token_per_layer(model) * ctx


MAX_CONTEXT = 1e12  # tokens; far beyond any model, small enough that byte counts cannot overflow


def _context_array(context_len) -> np.ndarray:
    if isinstance(context_len, (int, float)) and not isinstance(context_len, bool):  # fast scalar path
        if not (math.isfinite(context_len) and 0 <= context_len <= MAX_CONTEXT):
            raise ValueError(f"context_len must be finite, >= 0 and <= {MAX_CONTEXT:g} tokens, got {context_len!r}")
        return np.float64(context_len)
    ctx = np.asarray(context_len, dtype=np.float64)
    if np.any(ctx < 0) or not np.all(np.isfinite(ctx)) or np.any(ctx > MAX_CONTEXT):
        raise ValueError(f"context_len must be finite, >= 0 and <= {MAX_CONTEXT:g} tokens")
    return ctx


def kv_bytes_per_sequence(model: ModelSpec, context_len, kv_dtype: str = "bf16"):
    """KV-cache bytes of one sequence of ``context_len`` tokens (scalar or numpy array), all layers.

    Full-attention layers cache every token; sliding-window / chunked layers cache at most
    ``sliding_window`` tokens (Mistral-7B: all 32 layers at 4,096; gpt-oss: half the layers at 128;
    Llama 4: 3 of 4 layers at 8,192); a DSA indexer key is cached for every token on every layer.
    """
    ctx = _context_array(context_len)
    if model.compress_ratios:  # DeepSeek-V4: its own fixed-format cache (FP8 + BF16 entries), any kv_dtype
        out = sum(compressed_cache_parts(model, ctx).values())
    else:
        out = (_attention_kv_per_sequence(model, ctx, kv_dtype) + _indexer_kv_per_sequence(model, ctx)
               + linear_state_bytes_per_sequence(model))
    return float(out) if np.ndim(out) == 0 else out


def cache_by_layer_type(model: ModelSpec, context_len: int, kv_dtype: str = "bf16") -> dict[str, float]:
    """One sequence's cache at ``context_len`` tokens split by layer type, bytes (whole model, before
    any sharding): full-attention K/V, sliding-window K/V (capped at the window), DSA indexer keys and
    linear-attention states. Only the types the model has are listed; the values sum to
    ``kv_bytes_per_sequence``."""
    ctx = float(_context_array(context_len))
    if model.compress_ratios:
        return {k: float(v) for k, v in compressed_cache_parts(model, ctx).items() if v}
    out: dict[str, float] = {}
    for label, n, per, _ in _kv_groups(model, np.float64(ctx), kv_dtype):
        if n and per:
            out[label] = float(n * per)
    idx = float(_indexer_kv_per_sequence(model, np.float64(ctx)))
    if idx:
        out["sparse-attention indexer keys"] = idx
    state = linear_state_bytes_per_sequence(model)
    if state:
        out["linear-attention state (fixed)"] = state
    return out


def decode_read_bytes_per_sequence(model: ModelSpec, context_len: float, kv_dtype: str = "bf16") -> float:
    """Cache bytes one decode step reads for one sequence (whole model): everything it stores, except
    that a sparse-attention layer reads only its top-k tokens' K/V plus a scan of every index key.
    GLM-5 at 128K: 78 x (2,048 x 1,152 + 131,072 x 132) = 1.53 GB read of 13.1 GB stored."""
    ctx = float(_context_array(context_len))
    if model.compress_ratios:  # window + top-k CSA entries + a scan of every CSA index key + all HCA entries
        csa = _csa_ratio(model)
        e, w = model.compressed_entry_bytes, model.sliding_window
        read = model.num_layers * e * min(ctx, w)
        for r in model.compress_ratios:
            if r and r == csa:
                n = math.floor(ctx / r)
                read += e * min(n, model.sparse_topk_tokens or n) + model.compressed_index_bytes * n
            elif r:
                read += e * math.floor(ctx / r)
        return read + fixed_state_bytes_per_sequence(model)
    stored = kv_bytes_per_sequence(model, ctx, kv_dtype) - linear_state_bytes_per_sequence(model)
    if not (model.index_n_heads and model.sparse_topk_tokens) or ctx <= model.sparse_topk_tokens:
        return stored + linear_state_bytes_per_sequence(model)
    n_idx = model.num_index_layers
    per_layer_kv = stored - float(_indexer_kv_per_sequence(model, np.float64(ctx)))  # K/V of all layers
    kv_per_layer = per_layer_kv / model.kv_layers
    idx_key = _indexer_bytes_per_token_per_layer(model)
    read = ((model.kv_layers - n_idx) * kv_per_layer
            + n_idx * (kv_per_layer * model.sparse_topk_tokens / ctx + idx_key * ctx))
    return read + linear_state_bytes_per_sequence(model)


def state_equivalent_tokens(model: ModelSpec, kv_dtype: str = "bf16") -> float:
    """How many tokens of K/V cache a sequence's fixed linear-attention state weighs (0 without one)."""
    per_token = kv_bytes_per_token(model, kv_dtype)
    return linear_state_bytes_per_sequence(model) / per_token if per_token else 0.0


def _csa_ratio(model: ModelSpec) -> int:
    """The CSA ratio: the smallest nonzero compress ratio (those layers carry the indexer)."""
    nz = [r for r in model.compress_ratios if r]
    return min(nz) if nz else 0


def compressed_cache_parts(model: ModelSpec, context_len) -> dict[str, object]:
    """DeepSeek-V4's cache of one sequence by part (scalar or numpy context): every layer keeps its last
    ``sliding_window`` raw entries; a CSA layer adds one compressed entry and one index key per ``ratio``
    tokens, an HCA layer one entry per ``ratio`` tokens; each compressing layer also holds a fixed
    compressor state. Flash at 4K: 43 x 584 x 128 + 21 x 652 x 1,024 + 20 x 584 x 32 + states."""
    if not model.compress_ratios:
        raise ValueError(f"{model.name} has no compressed cache (no compress_ratios)")
    ctx = _context_array(context_len)
    e, w = model.compressed_entry_bytes, model.sliding_window
    csa = _csa_ratio(model)
    n_csa = sum(1 for r in model.compress_ratios if r and r == csa)
    hca = [r for r in model.compress_ratios if r and r != csa]
    parts: dict[str, object] = {f"sliding window (last {w:,} entries)": model.num_layers * e * np.minimum(ctx, w)}
    if n_csa:
        parts[f"CSA compressed entries (1 per {csa})"] = n_csa * e * np.floor(ctx / csa)
        parts["CSA indexer keys"] = n_csa * model.compressed_index_bytes * np.floor(ctx / csa)
    if hca:
        parts[f"HCA compressed entries (1 per {hca[0]})"] = sum(e * np.floor(ctx / r) for r in hca)
    state = n_csa * model.compress_state_bytes_csa + len(hca) * model.compress_state_bytes_hca
    if state:
        parts["compressor state (fixed)"] = float(state)
    return parts


def fixed_state_bytes_per_sequence(model: ModelSpec) -> float:
    """Everything a sequence holds whatever its length: linear-attention states and compressor states."""
    csa = _csa_ratio(model)
    comp = sum(model.compress_state_bytes_csa if r == csa else model.compress_state_bytes_hca
               for r in model.compress_ratios if r)
    return linear_state_bytes_per_sequence(model) + float(comp)


def linear_state_bytes_per_sequence(model: ModelSpec) -> float:
    """The fixed recurrent state of one sequence over all linear-attention layers (0 without them):
    constant in context length, present from the first token."""
    return float(len(model.linear_attention_layers) * model.linear_state_bytes)


@functools.lru_cache(maxsize=4096)
def _stage_cache_shares(model: ModelSpec, stage: range) -> tuple[float, float, int]:
    """(share of the K/V-storing layers, share of the indexed layers, linear layers) in a stage: cached,
    the layout search asks for the same few stages thousands of times."""
    linear = set(model.linear_attention_layers)
    attn_idx = [i for i in range(model.num_layers) if i not in linear]
    in_stage = set(stage)
    kv_fraction = sum(1 for j, i in enumerate(attn_idx) if i in in_stage and j % model.cla_share_factor == 0) / model.kv_layers
    idx_set = set(model.index_layers) if model.index_layers else set(range(model.num_layers))
    index_fraction = (sum(1 for i in stage if i in idx_set) / len(idx_set)) if model.num_index_layers else 0.0
    return kv_fraction, index_fraction, sum(1 for i in stage if i in linear)


def kv_bytes_per_sequence_on_gpu(model: ModelSpec, ctx, kv_dtype: str, tp: int, stage: range):
    """One sequence's KV bytes on one GPU of a pipeline stage: the stage's share of the K/V-storing
    layers, split over TP up to the KV heads (MLA's latent and the indexer key are replicated)."""
    ctx = _context_array(ctx)
    if isinstance(tp, bool) or not isinstance(tp, (int, np.integer)) or not 1 <= tp <= 100_000:
        raise ValueError(f"tp must be a whole number in 1..100,000, got {tp!r}")
    if not (isinstance(stage, range) and stage.step == 1 and 0 <= stage.start <= stage.stop <= model.num_layers):
        raise ValueError(f"stage must be a range of layers within 0..{model.num_layers}, got {stage!r}")
    if model.compress_ratios:  # one K=V head and its compressed entries: replicated on every TP rank
        share = len(stage) / model.num_layers
        return share * sum(compressed_cache_parts(model, ctx).values())
    kv_split = 1 if model.attention is AttentionKind.MLA else min(tp, model.num_kv_heads)
    kv_fraction, index_fraction, state = _stage_cache_shares(model, stage)
    state = state * model.linear_state_bytes / tp  # linear states split over TP with their heads
    if model.global_layers:
        glob = set(model.global_layers)
        n_g_stage = sum(1 for i in stage if i in glob)
        n_s_stage = len(stage) - n_g_stage
        kv = 0.0
        for label, n, per, heads in _kv_groups(model, ctx, kv_dtype):
            here = n_g_stage if label == "full-attention K/V" else n_s_stage
            kv = kv + here * per / min(tp, heads)
        return kv + state
    return (
        kv_fraction * _attention_kv_per_sequence(model, ctx, kv_dtype) / kv_split
        + index_fraction * _indexer_kv_per_sequence(model, ctx)
        + state
    )


# -------------------------------------------------------------------------------- precision support


@dataclass(frozen=True)
class PrecisionSupport:
    """Whether a GPU runs a storage dtype natively, weight-only (dequantised) or emulated."""

    dtype: str
    status: str  # "native" | "weight_only" | "emulated"
    compute_dtype: str
    message: str

    @property
    def native(self) -> bool:
        return self.status == "native"


def precision_support(gpu: GPUSpec, dtype: str) -> PrecisionSupport:
    """How ``gpu`` executes weights stored as ``dtype``.

    fp8 needs Hopper/Ada/Blackwell/CDNA3 tensor cores; fp4 (nvfp4, mxfp4) needs Blackwell (NVIDIA) or
    MI355X (MXFP4 only). Without them the engines still run such checkpoints weight-only (e.g. vLLM's
    Marlin kernels dequantise FP8 / FP4 weights to bf16): the memory saving holds, the compute runs in
    bf16, and the app marks the cell "emulated". int4 (AWQ/GPTQ) is weight-only everywhere (W4A16).
    """
    half = "bf16" if gpu.supports("bf16") else "fp16"
    if dtype in ("fp32", "bf16", "fp16"):
        return PrecisionSupport(dtype, "native", half, f"{dtype} runs natively on {gpu.name}")
    if dtype in ("fp8", "int8"):
        if gpu.supports(dtype):
            return PrecisionSupport(dtype, "native", dtype, f"{dtype} tensor cores on {gpu.name}")
        return PrecisionSupport(
            dtype, "emulated", half,
            f"{gpu.name} has no {dtype} tensor cores: {dtype} weights run weight-only (dequantised to {half}); "
            "memory is saved, compute is not",
        )
    if dtype == "int4":
        return PrecisionSupport(
            dtype, "weight_only", half,
            f"int4 (AWQ/GPTQ) is weight-only: dequantised to {half} in the GEMM (W4A16)",
        )
    if dtype in GGUF_DTYPES:
        return PrecisionSupport(
            dtype, "weight_only", half,
            f"{dtype} is a llama.cpp GGUF type: weight-only, dequantised in the kernel (llama.cpp, not vLLM/SGLang)",
        )
    if dtype in ("nvfp4", "mxfp4"):
        fp4_ok = gpu.supports("fp4") and (dtype == "mxfp4" or gpu.vendor == "nvidia")
        if fp4_ok:
            return PrecisionSupport(dtype, "native", "fp4", f"{dtype} tensor cores on {gpu.name}")
        return PrecisionSupport(
            dtype, "emulated", half,
            f"{gpu.name} has no native {dtype} tensor cores (Blackwell or, for mxfp4, MI355X): weight-only, "
            f"dequantised to {half}",
        )
    raise ValueError(f"unknown dtype {dtype!r}; allowed: {', '.join(WEIGHT_FORMATS)}")


# ---------------------------------------------------------------------------------------- layouts


def check_layout(model: ModelSpec, layout: ParallelLayout, redundant_experts: int = 0) -> list[str]:
    """Problems that make a layout invalid for a model (empty list: valid)."""
    if isinstance(redundant_experts, bool) or not isinstance(redundant_experts, (int, np.integer)) \
            or not 0 <= redundant_experts <= 100_000:
        raise ValueError(f"redundant_experts must be a whole number in 0..100,000, got {redundant_experts!r}")
    problems = []
    tp = layout.attention_tp
    if model.num_attention_heads % tp:
        problems.append(f"attention TP {tp} does not divide the {model.num_attention_heads} query heads")
    nkv = model.num_kv_heads
    if model.attention is not AttentionKind.MLA and tp % nkv and nkv % tp:
        problems.append(f"attention TP {tp} and the {nkv} KV heads do not divide one another")
    if layout.pp > model.num_layers:
        problems.append(f"PP {layout.pp} exceeds the {model.num_layers} layers")
    if model.moe is not None:
        slots = model.moe.n_routed_experts + redundant_experts
        if slots % layout.ep:
            problems.append(
                f"EP {layout.ep} does not divide the {model.moe.n_routed_experts} routed experts"
                + (f" + {redundant_experts} redundant" if redundant_experts else "")
            )
        if model.moe.expert_intermediate_size % layout.expert_tp:
            problems.append(
                f"expert TP {layout.expert_tp} does not divide the expert width {model.moe.expert_intermediate_size}"
            )
    elif layout.ep > 1:
        problems.append("a dense model has no experts to spread over EP > 1")
    return problems


def default_layout(model: ModelSpec, total_gpus: int, gpus_per_node: int = 8) -> ParallelLayout:
    """TP inside a node (the largest power of two <= 8 that divides the GPUs and the heads), PP across
    nodes; MoE experts spread with EP = TP (vLLM's ``--tensor-parallel-size N --enable-expert-parallel``,
    ``--pipeline-parallel-size`` across nodes). The Layouts page searches for better ones."""
    if total_gpus < 1:
        raise ValueError(f"total_gpus must be >= 1, got {total_gpus}")
    limit = max(1, min(8, gpus_per_node, total_gpus))
    tp = 1
    for t in (8, 4, 2, 1):
        if t > limit or total_gpus % t:
            continue
        lay = _tp_layout(model, t, total_gpus // t)
        if not check_layout(model, lay):
            tp = t
            break
    return _tp_layout(model, tp, total_gpus // tp)


def _tp_layout(model: ModelSpec, tp: int, pp: int) -> ParallelLayout:
    if model.moe is None:
        return ParallelLayout(attention_tp=tp, ep=1, expert_tp=tp, pp=pp)
    ep = tp if model.moe.n_routed_experts % tp == 0 else 1
    return ParallelLayout(attention_tp=tp, ep=ep, expert_tp=tp // ep, pp=pp)


def pipeline_stages(num_layers: int, pp: int) -> list[range]:
    """Contiguous pipeline stages, the first ``num_layers % pp`` one layer longer."""
    for name, v in (("num_layers", num_layers), ("pp", pp)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= 10_000:
            raise ValueError(f"{name} must be a whole number in 1..10,000, got {v!r}")
    base, extra = divmod(num_layers, pp)
    out, start = [], 0
    for s in range(pp):
        n = base + (1 if s < extra else 0)
        out.append(range(start, start + n))
        start += n
    return out


# ------------------------------------------------------------------------------------ draft models


def draft_params(target: ModelSpec, spec: SpecDecodeConfig, draft_model: ModelSpec | None = None) -> int:
    """Parameters the speculative draft adds (0 for none / n-gram).

    mtp: the target's own MTP module(s). eagle: one decoder layer of the target's width (its attention
    and a SwiGLU FFN of the target's dense width, or 4 x hidden for all-MoE targets) plus the fusion
    projection from 3 x hidden (EAGLE-3) and two norms; it shares the target's embedding and LM head.
    draft_model: the whole separate model.
    """
    if spec.kind in ("none", "ngram"):
        return 0
    if spec.kind == "mtp":
        if not target.num_mtp_layers:
            raise ValueError(f"{target.name} has no MTP module (num_nextn_predict_layers = 0); choose another draft")
        return params.mtp_params(target)
    if spec.kind == "eagle":
        h = target.hidden_size
        f = target.dense_intermediate_size or 4 * h
        return int(params.attention_params_per_layer(target) + 3 * h * f + 3 * h * h + 2 * h)
    if draft_model is None:
        raise ValueError("a draft_model speculative config needs the draft ModelSpec")
    return draft_model.total_params


# ------------------------------------------------------------------------------- per-GPU memory


@dataclass(frozen=True)
class GPUMemory:
    """Memory of the most loaded GPU (the worst pipeline stage) under a layout, in bytes."""

    components: dict[str, float]  # weights per component, draft, activations, runtime reserve, kv_cache
    capacity_bytes: float  # device memory
    usable_bytes: float  # gpu_memory_utilization x capacity
    kv_budget_bytes: float  # usable minus everything but the KV cache
    kv_required_bytes: float  # the workload's KV cache on this GPU
    kv_bytes_per_sequence: float  # one sequence at the workload's context, on this GPU
    sequences_per_gpu: int  # the workload's sequences held by this GPU
    stage: int
    num_stages: int
    replicas: int  # attention-DP ranks x DP replicas: the sequences are split this many ways

    @property
    def weights_bytes(self) -> float:
        return sum(v for k, v in self.components.items() if k not in ("activations", "runtime_reserve", "kv_cache", "draft_kv_cache"))

    @property
    def total_bytes(self) -> float:
        return sum(self.components.values())

    @property
    def fits(self) -> bool:
        return self.kv_budget_bytes >= self.kv_required_bytes and self.kv_budget_bytes > 0

    @property
    def headroom_bytes(self) -> float:
        """usable - (weights + activations + reserve + the workload's KV): negative when it does not fit."""
        return self.kv_budget_bytes - self.kv_required_bytes


@functools.lru_cache(maxsize=4096)
def _stage_layer_counts(model: ModelSpec, stage: range) -> tuple[int, int, int, int, int, int]:
    """(dense, FFN-free, softmax-attention, K/V-storing, global, not-indexed) layers of a stage (cached)."""
    dense_set = set(model.dense_layers)
    free = set(model.ffn_free_layers)
    linear = set(model.linear_attention_layers)
    attn_idx = [i for i in range(model.num_layers) if i not in linear]
    in_stage = set(stage)
    idx_set = set(model.index_layers) if model.index_layers else set(range(model.num_layers))
    return (sum(1 for i in stage if i in dense_set),
            sum(1 for i in stage if i in free),
            sum(1 for i in attn_idx if i in in_stage),
            sum(1 for j, i in enumerate(attn_idx) if i in in_stage and j % model.cla_share_factor == 0),
            sum(1 for i in model.global_layers if i in in_stage),
            sum(1 for i in stage if i not in idx_set))


def _stage_weights(model: ModelSpec, layout: ParallelLayout, precision: Precision, stage: range, first: bool,
                   last: bool, redundant: int) -> dict[str, float]:
    dt = component_dtypes(precision)
    h, tp, mats = model.hidden_size, layout.attention_tp, model.ffn_matrices
    n_dense, n_free, n_attn, n_kv, n_glob, n_not_indexed = _stage_layer_counts(model, stage)
    n_moe = len(stage) - n_dense - n_free if model.moe is not None else 0
    n_linear = len(stage) - n_attn
    attn = ((n_kv - n_glob) * params.attention_params_per_rank(model, tp)
            + (n_glob * params.attention_params_per_rank(model, tp, global_layer=True) if n_glob else 0.0)
            + (n_attn - n_kv) * params.attention_params_per_rank(model, tp, stores_kv=False)
            + n_linear * model.linear_attention_params / tp)  # linear mixers shard over TP with their heads
    if model.attention_params_by_layer:  # explicit blocks (DeepSeek-V4): sharded part over TP, the rest whole
        rep = model.attention_replicated_by_layer or (0,) * model.num_layers
        attn = sum(rep[i] + (model.attention_params_by_layer[i] - rep[i]) / tp for i in stage)
    elif model.index_n_heads and model.index_layers:  # the indexer sits on some layers only (MiniMax-M3)
        attn -= n_not_indexed * params.indexer_params(model)
    p: dict[str, float] = {
        "embedding": model.vocab_size * h / tp if first else 0.0,
        "lm_head": model.vocab_size * h / tp if last and (not model.tie_word_embeddings or layout.pp > 1) else 0.0,
        "attention": attn,
        "dense_ffn": n_dense * mats * h * model.dense_intermediate_size / tp,
        "parallel_mlp": n_moe * mats * h * model.parallel_dense_intermediate_size / tp,
        "shared_experts": 0.0,
        "routed_experts": 0.0,
        "router": 0.0,
        "norms": len(stage) * (model.norms_per_layer * h + model.layer_extra_params)
        + ((h + model.model_extra_params) if last else 0),
        "vision": model.vision_params if first else 0.0,
    }
    if model.moe is not None:
        e = model.moe
        slots = math.ceil((e.n_routed_experts + redundant) / layout.ep)
        p["routed_experts"] = n_moe * slots * params.expert_params(model) / layout.expert_tp
        shared = e.n_shared_experts * mats * h * e.shared_intermediate_size + (h if e.shared_expert_gate else 0)
        p["shared_experts"] = n_moe * shared / tp
        p["router"] = n_moe * (e.n_routed_experts * h + (e.n_routed_experts if e.router_bias else 0)
                               + ((2 * h * e.latent_size + e.latent_size) if e.latent_size else 0)) + (
            model.inactive_extra_params if first else 0)
    return {k: v * bytes_per_param(dt[k]) for k, v in p.items()}


def _mtp_bytes_per_rank(model: ModelSpec, layout: ParallelLayout, precision: Precision, redundant: int) -> float:
    """One GPU's share of the MTP module(s), sharded like a MoE layer (+ the 2h -> h projection over TP)."""
    dt = component_dtypes(precision)
    h, tp = model.hidden_size, layout.attention_tp
    routed = params.mtp_routed_expert_params(model)
    if model.moe is not None:
        slots = math.ceil((model.moe.n_routed_experts + redundant) / layout.ep)
        routed_rank = model.num_mtp_layers * slots * params.expert_params(model) / layout.expert_tp
    else:
        routed_rank = 0.0
    attn = model.num_mtp_layers * params.attention_params_per_rank(model, tp)
    attn_full = model.num_mtp_layers * params.attention_params_per_layer(model)
    rest = params.mtp_params(model) - routed - attn_full
    return (attn + rest / tp) * bytes_per_param(dt["mtp"]) + routed_rank * bytes_per_param(dt["mtp_experts"])


def _draft_weights_and_kv(model, layout, prec, spec, draft_model, redundant):
    """(draft weight bytes on one GPU, function ctx -> draft KV bytes per sequence on one GPU)."""
    tp = layout.attention_tp
    if spec.kind == "mtp":
        draft_params(model, spec)  # raises when the model has no MTP module
        w = _mtp_bytes_per_rank(model, layout, prec, redundant)
        per_layer = kv_bytes_per_token_per_layer(model, prec.kv_cache)
        split = 1 if model.attention is AttentionKind.MLA else min(tp, model.num_kv_heads)
        return w, lambda ctx: model.num_mtp_layers * per_layer * np.asarray(ctx, dtype=np.float64) / split
    if spec.kind == "eagle":
        w = draft_params(model, spec) * bytes_per_param(prec.weights) / tp
        per_layer = kv_bytes_per_token_per_layer(model, prec.kv_cache)
        split = 1 if model.attention is AttentionKind.MLA else min(tp, model.num_kv_heads)
        return w, lambda ctx: per_layer * np.asarray(ctx, dtype=np.float64) / split
    if spec.kind == "draft_model":
        if draft_model is None:
            raise ValueError("speculative method 'draft_model' needs the draft model")
        d_tp = tp if draft_model.num_attention_heads % tp == 0 else 1
        w = weights_bytes(draft_model, spec.draft_weights or prec.weights) / d_tp
        everything = range(draft_model.num_layers)
        return w, lambda ctx: kv_bytes_per_sequence_on_gpu(draft_model, ctx, prec.kv_cache, d_tp, everything)
    return 0.0, lambda ctx: np.zeros_like(np.asarray(ctx, dtype=np.float64))


def _stage_memory(model, gpu, layout, prec, a, spec, draft_model):
    """Per stage: (non-KV components in bytes, function ctx -> KV bytes per sequence on one GPU)."""
    usable_extra = {
        "activations": a.max_num_batched_tokens * model.hidden_size * 2 * a.activation_factor,
        "runtime_reserve": a.runtime_reserve_gb * 1e9,
    }
    draft_w, draft_kv = _draft_weights_and_kv(model, layout, prec, spec, draft_model, a.redundant_experts)
    stages = pipeline_stages(model.num_layers, layout.pp)
    out = []
    cache: dict[tuple, dict[str, float]] = {}
    for s, stage in enumerate(stages):
        first, last = s == 0, s == len(stages) - 1
        # stages with the same make-up (first/last, layers, dense layers, K/V layers) hold the same bytes
        key = (first, last, len(stage), _stage_layer_counts(model, stage),
               _stage_cache_shares(model, stage))
        if key not in cache:
            cache[key] = _stage_weights(model, layout, prec, stage, first, last, a.redundant_experts)
        comp = dict(cache[key])
        with_draft = last and spec.enabled
        if with_draft:
            comp["draft_weights"] = draft_w
        comp.update(usable_extra)

        def kv(ctx, stage=stage, with_draft=with_draft):
            own = kv_bytes_per_sequence_on_gpu(model, ctx, prec.kv_cache, layout.attention_tp, stage)
            return (own, draft_kv(ctx) if with_draft else np.zeros_like(own))

        out.append((comp, kv))
    return out


def stage_memories(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    precision: Precision | str,
    workload: Workload,
    *,
    assumptions: MemoryAssumptions | None = None,
    spec: SpecDecodeConfig | None = None,
    draft_model: ModelSpec | None = None,
) -> list[GPUMemory]:
    """Memory of one GPU of each pipeline stage for serving ``workload`` under ``layout``.

    KV budget = ``gpu_memory_utilization x device memory - weights - draft - activations - reserve``
    (vLLM's definition); the workload needs ``ceil(batch / (attention_dp x dp))`` sequences of
    ``input_len + output_len (+ speculative tokens)`` on each GPU.
    """
    a = assumptions or MemoryAssumptions()
    spec = spec or SpecDecodeConfig()
    prec = _precision(precision)
    problems = check_layout(model, layout, a.redundant_experts)
    if problems:
        raise ValueError("invalid layout for " + model.name + ": " + "; ".join(problems))
    replicas = layout.attention_dp * layout.dp
    seqs = math.ceil(workload.batch / replicas)
    ctx = workload.context_len + (spec.num_speculative_tokens if spec.enabled else 0)
    capacity = float(gpu.memory_bytes)
    usable = a.gpu_memory_utilization * capacity
    stages = _stage_memory(model, gpu, layout, prec, a, spec, draft_model)
    results = []
    for s, (comp, kv) in enumerate(stages):
        own, draft = (float(x) for x in kv(ctx))
        budget = usable - sum(comp.values())
        comp = {**comp, "kv_cache": seqs * own}
        if draft:
            comp["draft_kv_cache"] = seqs * draft
        results.append(
            GPUMemory(
                components=comp,
                capacity_bytes=capacity,
                usable_bytes=usable,
                kv_budget_bytes=budget,
                kv_required_bytes=seqs * (own + draft),
                kv_bytes_per_sequence=own + draft,
                sequences_per_gpu=seqs,
                stage=s,
                num_stages=len(stages),
                replicas=replicas,
            )
        )
    return results


def per_gpu_memory(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    precision: Precision | str,
    workload: Workload,
    *,
    assumptions: MemoryAssumptions | None = None,
    spec: SpecDecodeConfig | None = None,
    draft_model: ModelSpec | None = None,
) -> GPUMemory:
    """The most loaded GPU (least headroom over the pipeline stages); see :func:`stage_memories`."""
    stages = stage_memories(
        model, gpu, layout, precision, workload, assumptions=assumptions, spec=spec, draft_model=draft_model
    )
    return min(stages, key=lambda r: r.headroom_bytes)


def max_concurrent_sequences(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    precision: Precision | str,
    context_lens,
    *,
    assumptions: MemoryAssumptions | None = None,
    spec: SpecDecodeConfig | None = None,
    draft_model: ModelSpec | None = None,
):
    """How many sequences of each context length the whole deployment can hold in its KV cache:
    ``min over stages floor(kv_budget / kv_bytes_per_sequence)`` per GPU, times the attention-DP x DP
    replicas. 0 where not even one fits. Scalar in, int out; array in, array out."""
    a = assumptions or MemoryAssumptions()
    spec = spec or SpecDecodeConfig()
    prec = _precision(precision)
    ctx = np.atleast_1d(np.asarray(context_lens, dtype=np.float64))
    if np.any(ctx < 1) or not np.all(np.isfinite(ctx)):
        raise ValueError("context lengths must be finite and >= 1 token")
    problems = check_layout(model, layout, a.redundant_experts)
    if problems:
        raise ValueError("invalid layout for " + model.name + ": " + "; ".join(problems))
    usable = a.gpu_memory_utilization * gpu.memory_bytes
    total_ctx = ctx + (spec.num_speculative_tokens if spec.enabled else 0)
    per_gpu = None
    for comp, kv in _stage_memory(model, gpu, layout, prec, a, spec, draft_model):
        budget = max(usable - sum(comp.values()), 0.0)
        own, draft = kv(total_ctx)
        n = np.floor(budget / (own + draft))
        per_gpu = n if per_gpu is None else np.minimum(per_gpu, n)
    out = per_gpu.astype(np.int64) * layout.attention_dp * layout.dp
    return int(out[0]) if np.ndim(context_lens) == 0 else out


def max_context_len(
    model: ModelSpec,
    gpu: GPUSpec,
    layout: ParallelLayout,
    precision: Precision | str,
    batch: int,
    *,
    assumptions: MemoryAssumptions | None = None,
    spec: SpecDecodeConfig | None = None,
    draft_model: ModelSpec | None = None,
) -> int:
    """The longest context (tokens, capped at the model's ``max_position_embeddings``) at which
    ``batch`` concurrent sequences fit; 0 if not even one token does."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    a = assumptions or MemoryAssumptions()
    spec = spec or SpecDecodeConfig()
    cap = model.max_position_embeddings
    grid = np.unique(np.clip(np.round(np.geomspace(1, cap, 400)), 1, cap))
    n = max_concurrent_sequences(model, gpu, layout, precision, grid, assumptions=a, spec=spec, draft_model=draft_model)
    ok = grid[n >= batch]
    if ok.size == 0:
        return 0
    lo = int(ok.max())
    hi = int(grid[grid > lo].min()) if np.any(grid > lo) else lo
    while hi - lo > 1:  # refine between grid points (per-sequence bytes grow monotonically)
        mid = (lo + hi) // 2
        if max_concurrent_sequences(model, gpu, layout, precision, mid, assumptions=a, spec=spec, draft_model=draft_model) >= batch:
            lo = mid
        else:
            hi = mid
    return lo


MAX_CLUSTER_GPUS = 65_536  # the largest cluster a scenario can describe (ClusterSpec)


def _max_gpus(v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= MAX_CLUSTER_GPUS:
        raise ValueError(f"max_gpus must be a whole number in 1..{MAX_CLUSTER_GPUS:,}, got {v!r}")
    return int(v)


def gpu_count_candidates(gpu: GPUSpec, max_gpus: int = 4096) -> list[int]:
    """1, 2, 4 ... up to a node, then whole nodes: the counts a deployment is built from."""
    max_gpus = _max_gpus(max_gpus)
    node = gpu.gpus_per_node
    out = [c for c in (1, 2, 4, 8, 16, 32, 64) if c < node]
    out += list(range(node, max_gpus + 1, node))
    return out


def min_gpus(
    model: ModelSpec,
    gpu: GPUSpec | str,
    precision: Precision | str = "bf16",
    *,
    workload: Workload | None = None,
    assumptions: MemoryAssumptions | None = None,
    max_gpus: int = 4096,
) -> int:
    """The fewest GPUs of type ``gpu`` (a GPUSpec or a catalog id) that hold ``model`` at ``precision``.

    Counts tried: powers of two up to a node, then whole nodes (``gpu_count_candidates``), each with
    :func:`default_layout` (TP inside a node, PP across nodes, EP = TP). It holds when the KV budget of
    every GPU is >= the KV of ``workload`` (default: one sequence of one token, i.e. the weights,
    activations and runtime reserve fit under ``gpu_memory_utilization``). Raises ``ValueError`` if
    nothing up to ``max_gpus`` holds it.
    """
    if isinstance(gpu, str):
        from core.catalog import load_catalog

        gpu = load_catalog().gpu(gpu)
    wl = workload or Workload(batch=1, input_len=1, output_len=1)
    a = assumptions or MemoryAssumptions()
    prec = _precision(precision)
    # a quick lower bound skips counts that cannot hold even the weights
    floor_gpus = weights_bytes(model, prec) / (a.gpu_memory_utilization * gpu.memory_bytes)
    for n in gpu_count_candidates(gpu, max_gpus):
        if n < floor_gpus:
            continue
        layout = default_layout(model, n, gpu.gpus_per_node)
        if check_layout(model, layout, a.redundant_experts):
            continue
        if per_gpu_memory(model, gpu, layout, prec, wl, assumptions=a).fits:
            return n
    raise ValueError(f"{model.name} at {prec.label} does not fit on {max_gpus:,} or fewer {gpu.name} GPUs")


def min_gpus_table(
    model: ModelSpec,
    gpus: list[GPUSpec],
    precisions: dict[str, Precision | str],
    *,
    workload: Workload | None = None,
    assumptions: MemoryAssumptions | None = None,
    max_gpus: int = 4096,
) -> list[dict]:
    """Rows of ``gpu x precision`` -> fewest GPUs (``None`` beyond ``max_gpus``) and how the GPU runs that
    precision (``native`` / ``weight_only`` / ``emulated``, from its lowest-precision part), for the
    "minimum GPUs" table. ``precisions`` maps a column label to a Precision or a dtype name."""
    max_gpus = _max_gpus(max_gpus)
    rows = []
    for g in gpus:
        row: dict = {"gpu_id": g.id, "gpu": g.name, "memory_gb": g.memory_gb}
        for label, p in precisions.items():
            prec = _precision(p)
            try:
                row[label] = min_gpus(model, g, prec, workload=workload, assumptions=assumptions, max_gpus=max_gpus)
            except ValueError:
                row[label] = None
            statuses = {precision_support(g, prec.weights).status, precision_support(g, prec.expert_dtype).status}
            row[f"{label}_support"] = next(st for st in ("emulated", "weight_only", "native") if st in statuses)
        rows.append(row)
    return rows


def scenario_notes(model: ModelSpec, gpu: GPUSpec, precision: Precision | str, workload: Workload,
                   spec: SpecDecodeConfig | None = None) -> list[tuple[str, str]]:
    """(level, message) pairs about a scenario: "error" for what the model cannot do (a context beyond
    its positions), "warning" for precisions the GPU only emulates, "info" for weight-only formats."""
    prec = _precision(precision)
    notes: list[tuple[str, str]] = []
    ctx = workload.context_len + (spec.num_speculative_tokens if spec and spec.enabled else 0)
    if ctx > model.max_position_embeddings:
        notes.append((
            "error",
            f"Context of {ctx:,} tokens ({workload.input_len:,} in + {workload.output_len:,} out"
            + (f" + {spec.num_speculative_tokens} speculative" if spec and spec.enabled else "")
            + f") exceeds {model.name}'s {model.max_position_embeddings:,} positions "
            "(max_position_embeddings in its config.json). Shorten the workload.",
        ))
    seen = set()
    for what, dt in (("weights", prec.weights), ("routed experts", prec.expert_dtype)):
        if dt in seen:
            continue
        seen.add(dt)
        s = precision_support(gpu, dt)
        if s.status == "emulated":
            notes.append(("warning", f"Emulated precision ({what}): {s.message}."))
        elif s.status == "weight_only":
            notes.append(("info", f"{what.capitalize()}: {s.message}."))
    if prec.kv_cache == "fp8" and not gpu.supports("fp8"):
        notes.append(("warning", f"Emulated precision (KV cache): {gpu.name} stores an fp8 KV cache but computes attention in bf16."))
    return notes
