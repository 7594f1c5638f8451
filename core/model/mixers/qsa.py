"""Qwen Sparse Attention (QSA, Qwen3.8-Flash-Next / ``qwen4_exp``): gated GQA whose decode query attends only
the tokens of the top-scoring compressed key blocks, chosen by a small indexer.

The attention itself is Qwen3.5's gated GQA (q_proj also emits the output gate, q/k RMSNorms). Beside it an
indexer (``indexer.index_qk_proj`` h -> (index heads + 1) x index dim, two RMSNorms of index dim; no head-weight
projection, unlike DeepSeek's DSA) caches one raw key per token; every ``compress_ratio`` consecutive raw keys
are averaged into one pooled key. A query scores all pooled keys (``relu(q . k)`` summed over index heads) and
attends the tokens of the best ``budget / compress_ratio`` complete blocks plus the unfinished tail
(transformers ``Qwen4ExpQSAIndexer``). So per token a layer caches its K/V, a raw index key and a share of a
pooled key; a decode step reads the selected tokens' K/V and every pooled key, not the raw keys.

Byte formats are the serving engine's (vLLM ``qwen3_8_flash_next``: ``QSAKeyStateCache`` a bf16 key followed
by three int64 MRoPE positions, ``QSACompressedKeyCache`` one bf16 key per block); ``kv_cache_dtype`` pins the
K/V dtype where the engine refuses a quantized cache (vLLM's QSA backend: bf16 only).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from core.model.mixers.base import Phase, kv_bytes_per_element, mean_min
from core.model.mixers.gqa import GQA

__all__ = ["QSA"]


class QSA(GQA):
    kind: Literal["qsa"] = "qsa"
    index_heads: int = Field(gt=0, le=100_000, description="indexer query heads")
    index_head_dim: int = Field(gt=0, le=100_000, description="indexer query / key size")
    topk_tokens: int = Field(gt=0, le=100_000_000, description="token budget a query attends (indexer_budget)")
    compress_ratio: int = Field(gt=0, le=1_000_000, description="raw index keys averaged into one pooled key")
    raw_key_bytes: int = Field(gt=0, le=10_000_000, description="cached bytes of one token's raw index key")
    pooled_key_bytes: int = Field(gt=0, le=10_000_000, description="cached bytes of one pooled (block) key")
    kv_cache_dtype: Literal["bf16", "fp16", "fp8", "int8"] | None = Field(
        None, description="the dtype the engine stores this layer's K/V in whatever is asked; None: as asked"
    )

    @model_validator(mode="after")
    def _check_qsa(self) -> QSA:
        if self.indexer is not None or self.window is not None or not self.stores_kv:
            raise ValueError("a QSA layer has its own indexer, no window (sliding_window or chunk) and stores its K/V")
        if self.topk_tokens % self.compress_ratio:
            raise ValueError(
                f"topk_tokens ({self.topk_tokens:,}) must be a multiple of compress_ratio ({self.compress_ratio:,})"
            )
        return self

    def label(self) -> str:
        return "QSA" + (", gated" if self.output_gate else "")

    def describe(self) -> str:
        return (
            f"{self.label()}: {self.num_heads} query / {self.num_kv_heads} KV heads × {self.head_dim}, "
            f"top {self.topk_tokens:,} tokens from {self.compress_ratio}-token blocks "
            f"({self.index_heads} index heads × {self.index_head_dim})"
        )

    def _dtype(self, kv_dtype: str) -> str:
        kv_bytes_per_element(kv_dtype)  # an unknown dtype is refused even where the layer pins its own
        return self.kv_cache_dtype or kv_dtype

    def cache_format(self, kv_dtype: str) -> str:
        dt = self._dtype(kv_dtype)
        pinned = f" (QSA keeps {dt} whatever is asked)" if dt != kv_dtype else ""
        return (
            f"{dt} K/V{pinned}, {self.raw_key_bytes} B raw + {self.pooled_key_bytes} B per "
            f"{self.compress_ratio} tokens pooled index keys"
        )

    # -- parameters
    def _index_params(self, hidden: int) -> int:
        """``index_qk_proj`` h -> (heads + 1) x dim and the q / k RMSNorms (2 x dim)."""
        return hidden * (self.index_heads + 1) * self.index_head_dim + 2 * self.index_head_dim

    def replicated_params(self, hidden: int) -> int:
        """GQA's (norms, output bias) and the indexer, a replicated projection in vLLM and transformers."""
        return super().replicated_params(hidden) + self._index_params(hidden)

    # -- cache
    def _kv_per_token(self, kv_dtype: str) -> float:
        return self.kv_elements_per_token() * kv_bytes_per_element(self._dtype(kv_dtype))

    def _index_bytes(self, ctx):
        """Raw keys for every token, one pooled key per ``compress_ratio`` tokens (whole on every TP rank)."""
        return self.raw_key_bytes * ctx + self.pooled_key_bytes * ctx / self.compress_ratio

    def cache_parts(self, ctx, kv_dtype: str) -> dict[str, object]:
        return {
            "full-attention K/V": self._kv_per_token(kv_dtype) * ctx,
            "QSA raw index keys": self.raw_key_bytes * ctx,
            "QSA pooled index keys": self.pooled_key_bytes * ctx / self.compress_ratio,
        }

    def cache_bytes_per_rank(self, ctx, kv_dtype: str, tp: int):
        return self._kv_per_token(kv_dtype) * ctx / min(tp, self.num_kv_heads) + self._index_bytes(ctx)

    def cache_bytes_per_token(self, kv_dtype: str) -> float:
        return self._kv_per_token(kv_dtype) + self.raw_key_bytes + self.pooled_key_bytes / self.compress_ratio

    def _attended(self, ctx):
        """Tokens one decode query reads K/V of: the budget, or all of a shorter context."""
        return np.minimum(ctx, self.topk_tokens)

    def decode_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        """The selected tokens' K/V (split with the KV heads) and a scan of every pooled key; the raw keys
        are read only when a block completes (one block per ``compress_ratio`` steps, not counted)."""
        kv = self._kv_per_token(kv_dtype) * self._attended(ctx) / min(tp, self.num_kv_heads)
        return float(kv + self.pooled_key_bytes * ctx / self.compress_ratio)

    # -- FLOPs
    def score_flops_per_token(self, ctx, tp: int, phase: Phase):
        """``2 (d + dv)`` per attended token and query head over the budget-capped context (prefill: its
        mean over the causal prompt), + the index scan ``2 x index heads x index dim`` per pooled key (whole
        on every rank)."""
        per_head = self.num_heads / tp * 2.0 * (self.head_dim + self.dv)
        scan = 2.0 * self.index_heads * self.index_head_dim / self.compress_ratio
        if phase == "decode":
            return per_head * self._attended(ctx) + scan * ctx
        return per_head * mean_min(ctx, self.topk_tokens) + scan * np.asarray(ctx, dtype=np.float64) / 2.0
