"""The cache a sequence holds and reads: sums over the model's layer groups, each mixer saying what one of
its layers caches (:mod:`core.model.mixers`). Bytes; a context may be a number or a numpy array of them.

* growing cache: K/V (MHA/GQA, window-capped on sliding layers, none on layers that borrow K/V), MLA's
  latent, sparse-attention index keys, DeepSeek-V4's window + compressed entries;
* fixed state: linear-attention / Mamba recurrent state, DeepSeek-V4's compressor state;
* on one GPU: a pipeline stage's own layers, each part split over TP as its mixer says (GQA K/V up to the
  KV heads, linear states with their heads; MLA latents, index keys and compressed entries replicated).
"""

from __future__ import annotations

import math

import numpy as np

from core._util.checks import is_whole
from core.deployment.parallel import stage_counts
from core.model import ModelSpec

__all__ = [
    "MAX_CONTEXT",
    "cache_by_layer_type",
    "cache_format",
    "cache_split_note",
    "decode_read_bytes_per_sequence",
    "fixed_state_bytes_per_sequence",
    "kv_bytes_per_sequence",
    "kv_bytes_per_sequence_on_gpu",
    "kv_bytes_per_token",
    "kv_elements_per_token_per_layer",
    "kv_per_token_note",
    "linear_state_bytes_per_sequence",
    "state_equivalent_tokens",
    "state_layers",
]

MAX_CONTEXT = 1e12  # tokens; far beyond any model, small enough that byte counts cannot overflow


def context_array(context_len):
    """A validated context length (tokens): a float64 scalar, or an array of them."""
    if isinstance(context_len, (int, float)) and not isinstance(context_len, bool):  # fast scalar path
        if not (math.isfinite(context_len) and 0 <= context_len <= MAX_CONTEXT):
            raise ValueError(f"context_len must be finite, >= 0 and <= {MAX_CONTEXT:g} tokens, got {context_len!r}")
        return np.float64(context_len)
    ctx = np.asarray(context_len, dtype=np.float64)
    if np.any(ctx < 0) or not np.all(np.isfinite(ctx)) or np.any(ctx > MAX_CONTEXT):
        raise ValueError(f"context_len must be finite, >= 0 and <= {MAX_CONTEXT:g} tokens")
    return ctx


def context_scalar(context_len) -> float:
    """A validated context length that must be one number (tokens)."""
    ctx = context_array(context_len)
    if np.ndim(ctx):
        raise ValueError(f"context_len must be one number of tokens here, got an array of shape {np.shape(ctx)}")
    return float(ctx)


def _out(x):
    return float(x) if np.ndim(x) == 0 else x


def kv_elements_per_token_per_layer(model: ModelSpec) -> int:
    """Cached K/V elements per token in the model's first softmax layer: ``kv_heads (head_dim + v_head_dim)``
    for MHA/GQA (Llama-3 70B: 2 x 8 x 128 = 2,048), ``kv_lora_rank + qk_rope_head_dim`` for MLA (576);
    0 where the cache is not K/V elements (DeepSeek-V4's fixed-format entries)."""
    return model.head_mixer.kv_elements_per_token()


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "bf16") -> float:
    """Cache bytes one more token adds across all layers, below any window cap (a compressed cache: its
    long-context rate). DeepSeek-V3: 61 x 576 x 2 B = 70,272 B."""
    return float(sum(len(g.layers) * g.mixer.cache_bytes_per_token(kv_dtype) for g in model.mixers))


def kv_bytes_per_sequence(model: ModelSpec, context_len, kv_dtype: str = "bf16"):
    """Cache bytes of one sequence of ``context_len`` tokens, all layers, growing cache + fixed state.
    Sliding layers cache at most their window (Mistral-7B: all 32 layers at 4,096; gpt-oss: half the
    layers at 128; Llama 4: 3 of 4 layers at 8,192)."""
    ctx = context_array(context_len)
    return _out(sum(len(g.layers) * (g.mixer.cache_bytes(ctx, kv_dtype) + g.mixer.state_bytes()) for g in model.mixers))


def cache_by_layer_type(model: ModelSpec, context_len, kv_dtype: str = "bf16") -> dict[str, float]:
    """One sequence's cache at ``context_len`` tokens by part, bytes (whole model, before any split): K/V by
    kind, index keys, compressed entries, fixed states. Only parts the model has; they sum to
    ``kv_bytes_per_sequence``."""
    ctx = context_scalar(context_len)
    out: dict[str, float] = {}
    for g in model.mixers:
        n = len(g.layers)
        for label, b in g.mixer.cache_parts(np.float64(ctx), kv_dtype).items():
            out[label] = out.get(label, 0.0) + n * float(b)
        if g.mixer.state_bytes():
            label = g.mixer.state_label()
            out[label] = out.get(label, 0.0) + n * g.mixer.state_bytes()
    return {k: v for k, v in out.items() if v}


def decode_read_bytes_per_sequence(model: ModelSpec, context_len: float, kv_dtype: str = "bf16") -> float:
    """Cache and state bytes one decode step reads for one sequence (whole model): everything it stores,
    except that a sparse layer reads only its top-k tokens' K/V plus a scan of every index key, a compressed
    layer its window, top-k CSA or all HCA entries and its compressor state once per entry (a recurrent state
    is read whole). GLM-5 at 128K: 78 x (2,048 x 1,152 + 131,072 x 132) = 1.53 GB read of 13.1 GB stored."""
    ctx = context_scalar(context_len)
    return float(
        sum(
            len(g.layers)
            * (g.mixer.decode_read_bytes_per_rank(ctx, kv_dtype, 1) + g.mixer.decode_state_read_bytes_per_rank(1))
            for g in model.mixers
        )
    )


def fixed_state_bytes_per_sequence(model: ModelSpec) -> float:
    """Everything a sequence holds whatever its length: linear-attention and compressor states."""
    return float(sum(len(g.layers) * g.mixer.state_bytes() for g in model.mixers))


def linear_state_bytes_per_sequence(model: ModelSpec) -> float:
    """The fixed recurrent state of one sequence over the layers without a per-token cache (linear
    attention, Mamba): constant in context length, present from the first token."""
    return float(sum(len(g.layers) * g.mixer.state_bytes() for g in model.mixers if not g.mixer.caches_context))


def state_equivalent_tokens(model: ModelSpec, kv_dtype: str = "bf16") -> float:
    """How many tokens of cache a sequence's fixed recurrent state weighs (0 without one)."""
    per_token = kv_bytes_per_token(model, kv_dtype)
    return linear_state_bytes_per_sequence(model) / per_token if per_token else 0.0


def _unique(items) -> list[str]:
    return list(dict.fromkeys(x for x in items if x))


def cache_format(model: ModelSpec, kv_dtype: str = "bf16") -> str:
    """How the model's cache is stored, e.g. "bf16 latent, 132 B index keys" (chart subtitles)."""
    return ", ".join(_unique(g.mixer.cache_format(kv_dtype) for g in model.mixers))


def cache_split_note(model: ModelSpec) -> str:
    """How attention TP splits the model's cache, e.g. "MLA keeps the whole latent on every TP rank"."""
    return "; ".join(_unique(g.mixer.cache_split_note() for g in model.mixers))


def kv_per_token_note(model: ModelSpec, kv_dtype: str = "bf16") -> str:
    """What ``kv_bytes_per_token`` adds up, in words: each layer group's bytes per token (a sliding layer's
    only up to its window; layers with a fixed state add none)."""
    parts = [
        f"{len(g.layers)} × {g.mixer.label()}: {g.mixer.cache_bytes_per_token(kv_dtype):,.0f} B" for g in model.mixers
    ]
    return (
        "Cache bytes one more token adds over all layers (below any window; fixed states apart): "
        + "; ".join(parts)
        + "."
    )


def state_layers(model: ModelSpec) -> int:
    """Layers that keep a fixed recurrent state instead of a per-token cache (linear attention, Mamba)."""
    return sum(len(g.layers) for g in model.mixers if not g.mixer.caches_context)


def kv_bytes_per_sequence_on_gpu(model: ModelSpec, ctx, kv_dtype: str, tp: int, stage: range, dcp: int = 1):
    """One sequence's cache on one GPU of a pipeline stage: the stage's layers, each mixer's cache and
    state split over TP as that mixer splits it, the growing cache further sharded along the sequence over
    ``dcp`` ranks (decode context parallelism: MLA's latent at TP 8 x DCP 8 holds an eighth per GPU)."""
    ctx = context_array(ctx)
    for name, v in (("tp", tp), ("dcp", dcp)):
        if not (is_whole(v) and 1 <= v <= 100_000):
            raise ValueError(f"{name} must be a whole number in 1..100,000, got {v!r}")
    counts = stage_counts(model, stage)
    out = sum(
        n * (g.mixer.cache_bytes_per_rank(ctx, kv_dtype, tp) / dcp + g.mixer.state_bytes_per_rank(tp))
        for n, g in zip(counts.per_group, model.mixers, strict=True)
        if n
    )
    return _out(out + np.zeros_like(ctx))
