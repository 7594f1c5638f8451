"""Bytes: element sizes and the KV cache (MHA / GQA / MLA, cross-layer sharing, DSA indexer keys).

The per-GPU memory model and the fit verdicts build on these (Fit page).
"""

from __future__ import annotations

import numpy as np

from core.specs import KV_DTYPES, AttentionKind, ModelSpec

__all__ = [
    "DTYPE_BYTES",
    "dtype_bytes",
    "kv_bytes_per_token",
    "kv_bytes_per_token_per_layer",
    "kv_elements_per_token_per_layer",
]

# Bytes per element of the payload, without block/group scales (core.memory adds those per scheme).
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


def kv_bytes_per_token_per_layer(model: ModelSpec, kv_dtype: str = "bf16") -> float:
    """Bytes per token in one K/V-storing layer, plus a DSA indexer key where the model has one."""
    if kv_dtype not in KV_DTYPES:
        raise ValueError(f"unknown KV cache dtype {kv_dtype!r}; allowed: {', '.join(KV_DTYPES)}")
    b = kv_elements_per_token_per_layer(model) * dtype_bytes(kv_dtype)
    if model.index_head_dim:
        b += model.index_head_dim * _INDEXER_KEY_BYTES_PER_ELEM + _INDEXER_SCALE_BYTES
    return b


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "bf16") -> float:
    """KV-cache bytes one token adds across all layers (below any sliding-window cap).

    ``kv_layers * elements * bytes`` (cross-layer attention stores K/V on ``num_layers /
    cla_share_factor`` layers) ``+ num_layers * indexer key bytes`` (DSA).
    """
    per_layer = kv_elements_per_token_per_layer(model) * dtype_bytes(kv_dtype) if kv_dtype in KV_DTYPES else None
    if per_layer is None:
        raise ValueError(f"unknown KV cache dtype {kv_dtype!r}; allowed: {', '.join(KV_DTYPES)}")
    total = model.kv_layers * per_layer
    if model.index_head_dim:
        total += model.num_layers * (model.index_head_dim * _INDEXER_KEY_BYTES_PER_ELEM + _INDEXER_SCALE_BYTES)
    return float(np.float64(total))
