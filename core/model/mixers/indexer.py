"""Sparse-attention indexer, attachable to a GQA or MLA layer: DeepSeek-V3.2's DSA "lightning indexer"
(GLM-5 too) and MiniMax-M3's MSA block selection.

A small scorer reads an index key for every cached token, picks the top-k, and the layer's attention then
reads only those tokens' K/V. The index keys are cached for every token (DSA: an FP8 key + one fp32 scale,
``inference/model.py`` Indexer.k_cache / k_scale_cache; MSA: one bf16 key per token).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Indexer"]

_DSA_SCALE_BYTES = 4  # one fp32 scale per cached FP8 index key


class Indexer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n_heads: int = Field(gt=0, le=100_000, description="indexer heads")
    head_dim: int = Field(gt=0, le=100_000, description="index key / query size")
    key_bytes: int = Field(0, ge=0, le=10_000_000, description="cached bytes per token; 0 = DSA's FP8 key + fp32 scale")
    weights_proj: bool = Field(True, description="a per-head weight projection hidden -> heads (DSA; MSA has none)")
    topk_tokens: int = Field(0, ge=0, le=100_000_000, description="tokens a decode query attends to; 0 = all")
    shared: bool = Field(
        False,
        description="reuses the top-k the last full indexer layer chose (GLM-5.2's IndexShare, indexer_types "
        "'shared'): no indexer weights, no cached keys, no scan; attention still reads only the top-k",
    )

    def params(self, hidden: int, query_in: int) -> int:
        """Query projection ``query_in -> heads x dim`` (query_in: the q LoRA rank, else hidden), key
        projection ``hidden -> dim``, its norm ``2 dim``, head weights ``hidden -> heads`` (DSA); none when shared."""
        if self.shared:
            return 0
        ih, d = self.n_heads, self.head_dim
        return query_in * ih * d + hidden * d + 2 * d + (hidden * ih if self.weights_proj else 0)

    def key_bytes_per_token(self) -> int:
        if self.shared:
            return 0
        return self.key_bytes or self.head_dim + _DSA_SCALE_BYTES

    def is_sparse(self, ctx: float) -> bool:
        """A decode query reads fewer tokens than it has (top-k set and the context longer than it)."""
        return bool(self.topk_tokens) and ctx > self.topk_tokens

    def attended(self, ctx):
        """Tokens a decode query attends to: the top-k, or all of a shorter context."""
        return np.minimum(ctx, self.topk_tokens) if self.topk_tokens else ctx

    def scan_flops(self, ctx: float) -> float:
        """Scoring every index key for one query token (``2 x heads x dim x ctx``), when it selects."""
        return 2.0 * self.n_heads * self.head_dim * ctx if self.is_sparse(ctx) and not self.shared else 0.0
