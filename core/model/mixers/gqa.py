"""Softmax attention with separate K/V heads: MHA (one K/V head per query head), GQA (groups of query
heads share one), MQA (one K/V head). Variants a config can switch on: a sliding window (Mistral, gpt-oss,
Gemma 4 sliding layers: a token attends the last N tokens) or a chunk (Llama 4 local layers: a token attends
only the earlier tokens of its own N-token chunk), either of which caps the cache at N, layers that borrow
another layer's K/V (Hunyuan's cross-layer attention), K used as V (Gemma 4 global layers, still cached
twice), q/k/v/o biases, q/k RMSNorms, one learned sink per head (gpt-oss), an output gate emitted by the
query projection (Qwen3.5 gated attention) and a sparse-attention indexer (MiniMax-M3 MSA).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from core.model.mixers.base import Mixer, Phase, heads_split_problems, kv_bytes_per_element, mean_chunked, mean_min
from core.model.mixers.indexer import Indexer

__all__ = ["GQA"]

_Dim = Field(gt=0, le=100_000)


class GQA(Mixer):
    kind: Literal["gqa"] = "gqa"
    num_heads: int = _Dim
    num_kv_heads: int = _Dim
    head_dim: int = Field(gt=0, le=100_000, description="query / key head size")
    v_head_dim: int | None = Field(None, gt=0, le=100_000, description="value head size (None: head_dim)")
    sliding_window: int | None = Field(None, gt=0, description="a token attends the last N tokens (the cache keeps N)")
    chunk: int | None = Field(None, gt=0, description="chunked attention: a token attends its own N-token chunk")
    stores_kv: bool = Field(True, description="False: the layer borrows another layer's K/V (cross-layer attention)")
    k_eq_v: bool = Field(False, description="no v_proj: K doubles as V (both still cached)")
    qkv_bias: bool = False
    output_bias: bool = False
    qk_norm: bool = False
    sinks: bool = Field(False, description="one learned attention sink per head")
    output_gate: bool = Field(False, description="q_proj also emits a per-head output gate")
    indexer: Indexer | None = None

    @model_validator(mode="after")
    def _check(self) -> GQA:
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads})"
            )
        if self.sliding_window and self.chunk:
            raise ValueError(
                f"a layer has a sliding_window ({self.sliding_window:,}) or a chunk ({self.chunk:,}), not both"
            )
        return self

    @property
    def window(self) -> int | None:
        """The most tokens the cache keeps: the sliding window or the chunk (None: the whole context)."""
        return self.sliding_window or self.chunk

    @property
    def dv(self) -> int:
        return self.v_head_dim or self.head_dim

    def label(self) -> str:
        name = "MHA" if self.num_kv_heads == self.num_heads else ("MQA" if self.num_kv_heads == 1 else "GQA")
        bits = [name]
        if self.sliding_window:
            bits.append(f"sliding {self.sliding_window:,}")
        if self.chunk:
            bits.append(f"chunked {self.chunk:,}")
        if not self.stores_kv:
            bits.append("K/V borrowed")
        if self.output_gate:
            bits.append("gated")
        return ", ".join(bits) + (" + sparse indexer" if self.indexer else "")

    def dcp_kv_heads(self) -> int | None:
        plain = self.kind == "gqa" and not (self.indexer or self.window) and self.stores_kv
        return self.num_kv_heads if plain else None

    def dcp_exchange_elements_per_head(self) -> tuple[int, int]:
        return (self.head_dim, self.dv)

    def decode_query_rows(self, tp: int) -> float:
        """The query heads sharing one KV head."""
        return self.num_heads / self.num_kv_heads

    def describe(self) -> str:
        return f"{self.label()}: {self.num_heads} query / {self.num_kv_heads} KV heads × {self.head_dim}"

    def cache_format(self, kv_dtype: str) -> str:
        return f"{kv_dtype} K/V" + (f", {self.indexer.key_bytes_per_token()} B index keys" if self.indexer else "")

    def cache_split_note(self) -> str:
        return f"the {self.num_kv_heads} KV heads split over TP up to their count"

    # -- parameters
    def _kv_params(self, hidden: int) -> int:
        """K and V projections (+ their biases) of a layer that stores them; K only when K is V."""
        if not self.stores_kv:
            return 0
        per_head = self.head_dim + (0 if self.k_eq_v else self.dv)
        return hidden * self.num_kv_heads * per_head + (self.num_kv_heads * per_head if self.qkv_bias else 0)

    def replicated_params(self, hidden: int) -> int:
        """Output bias, q/k norms and an indexer: whole on every TP rank."""
        idx = self.indexer.params(hidden, hidden) if self.indexer else 0
        return (hidden if self.output_bias else 0) + (2 * self.head_dim if self.qk_norm else 0) + idx

    def params(self, hidden: int) -> int:
        """q ``h nq d`` (x2 with an output gate), k and v ``h nkv d`` each (none when borrowed, no v when
        K is V), o ``nq dv h``; biases, q/k norms ``2d``, sinks ``nq``, an indexer."""
        h, nq, nkv, d, dv = hidden, self.num_heads, self.num_kv_heads, self.head_dim, self.dv
        total = h * nq * d * (2 if self.output_gate else 1) + nq * dv * h
        if self.stores_kv:
            total += h * nkv * d + (0 if self.k_eq_v else h * nkv * dv)
        if self.qkv_bias:
            total += nq * d + (nkv * d + nkv * dv if self.stores_kv else 0)
        total += (nq if self.sinks else 0) + self.replicated_params(hidden)
        return total

    def params_per_rank(self, hidden: int, tp: int) -> float:
        """q, o, their biases and sinks split over TP; K/V heads split while ``tp <= nkv``, replicated
        beyond (each rank keeps one head); norms, output bias and indexer whole."""
        kv = self._kv_params(hidden)
        rep = self.replicated_params(hidden)
        return rep + (self.params(hidden) - kv - rep) / tp + kv / min(tp, self.num_kv_heads)

    def tp_problems(self, tp: int) -> list[str]:
        out = heads_split_problems(tp, self.num_heads)
        if tp % self.num_kv_heads and self.num_kv_heads % tp:
            out.append(f"attention TP {tp} and the {self.num_kv_heads} KV heads do not divide one another")
        return out

    def output_features(self) -> int:
        return self.num_heads * self.dv

    # -- cache
    def kv_elements_per_token(self) -> int:
        return self.num_kv_heads * (self.head_dim + self.dv)

    def _kv_per_token(self, kv_dtype: str) -> float:
        return self.kv_elements_per_token() * kv_bytes_per_element(kv_dtype) if self.stores_kv else 0.0

    def _cached_tokens(self, ctx):
        return np.minimum(ctx, self.window) if self.window else ctx

    def cache_parts(self, ctx, kv_dtype: str) -> dict[str, object]:
        out = {}
        if self.stores_kv:
            label = (
                f"sliding-window K/V (last {self.sliding_window:,} tokens)"
                if self.sliding_window
                else (f"chunked K/V (a {self.chunk:,}-token chunk)" if self.chunk else "full-attention K/V")
            )
            out[label] = self._kv_per_token(kv_dtype) * self._cached_tokens(ctx)
        if self.indexer:
            out["sparse-attention indexer keys"] = self.indexer.key_bytes_per_token() * ctx
        return out

    def cache_bytes_per_rank(self, ctx, kv_dtype: str, tp: int):
        idx = self.indexer.key_bytes_per_token() * ctx if self.indexer else 0.0
        return self._kv_per_token(kv_dtype) * self._cached_tokens(ctx) / min(tp, self.num_kv_heads) + idx

    def cache_bytes_per_token(self, kv_dtype: str) -> float:
        return self._kv_per_token(kv_dtype) + (self.indexer.key_bytes_per_token() if self.indexer else 0)

    def _attended(self, ctx):
        """Tokens one decode query reads K/V of: the window, or an indexer's top-k. A chunked layer is charged its
        whole chunk once the context reaches it (the last token of a chunk reads it all; the cache holds it)."""
        if self.indexer and self.indexer.is_sparse(ctx):
            return self.indexer.attended(ctx)
        return self._cached_tokens(ctx)

    def decode_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        idx = self.indexer.key_bytes_per_token() * ctx if self.indexer else 0.0
        return float(self._kv_read(ctx, kv_dtype, tp) + idx)

    def _kv_read(self, ctx, kv_dtype: str, tp: int):
        return self._kv_per_token(kv_dtype) * self._attended(ctx) / min(tp, self.num_kv_heads)

    def decode_query_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        """With a sparse indexer, the top-k tokens' K/V, gathered per query token (the index keys once per sequence)."""
        return float(self._kv_read(ctx, kv_dtype, tp)) if self.indexer and self.indexer.is_sparse(ctx) else 0.0

    # -- FLOPs
    def score_flops_per_token(self, ctx, tp: int, phase: Phase):
        """``2 (d + dv)`` per attended token and query head (QK^T and PV); decode attends the window or
        the indexer's top-k (+ the indexer's scan of every key, whole on each rank); prefill is causal: the mean
        over the prompt of the keys a token attends, half the prompt with full attention, ``mean_min(ctx, w)``
        under a sliding window (tending to w) and ``mean_chunked(ctx, w)`` under a chunk (tending to w / 2)."""
        per_head = self.num_heads / tp * 2.0 * (self.head_dim + self.dv)
        if phase == "decode":
            scan = self.indexer.scan_flops(ctx) if self.indexer else 0.0
            return per_head * self._attended(ctx) + scan
        if self.sliding_window:
            return per_head * mean_min(ctx, self.sliding_window)
        if self.chunk:
            return per_head * mean_chunked(ctx, self.chunk)
        return per_head * self._cached_tokens(ctx) / 2.0
