"""Multi-head latent attention (DeepSeek-V2/V3, Kimi K2, GLM-5; gated in Kimi-K3): one compressed latent
of ``kv_lora_rank`` plus a shared RoPE key of ``qk_rope_head_dim`` is cached per token, whatever the head
count; decode runs absorbed (the up-projections fold into the query and output), prefill expanded.
Optionally a sparse-attention indexer (DeepSeek-V3.2 DSA, GLM-5)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from core.model.mixers.base import Mixer, Phase, heads_split_problems, kv_bytes_per_element
from core.model.mixers.indexer import Indexer

__all__ = ["MLA", "SPARSE_PREFILL_HEAD_BLOCK"]

SPARSE_PREFILL_HEAD_BLOCK = 64  # query heads a sparse MLA prefill kernel (FlashMLA, TensorRT-LLM) runs per block


class MLA(Mixer):
    kind: Literal["mla"] = "mla"
    num_heads: int = Field(gt=0, le=100_000)
    q_lora_rank: int | None = Field(
        None, ge=0, le=1_000_000, description="query down-projection rank (None: a plain q)"
    )
    kv_lora_rank: int = Field(gt=0, le=1_000_000)
    qk_nope_head_dim: int = Field(gt=0, le=100_000)
    qk_rope_head_dim: int = Field(ge=0, le=100_000, description="shared RoPE key size; 0: no RoPE (GLM-5.3-Flash)")
    v_head_dim: int = Field(gt=0, le=100_000)
    output_gate: bool = Field(False, description="a g_proj hidden -> heads x v output gate (Kimi-K3)")
    indexer: Indexer | None = None

    def label(self) -> str:
        return "MLA" + (", gated" if self.output_gate else "") + (" + sparse indexer" if self.indexer else "")

    def describe(self) -> str:
        return f"{self.label()}: {self.num_heads} heads, latent {self.kv_lora_rank} + RoPE {self.qk_rope_head_dim}"

    def cache_format(self, kv_dtype: str) -> str:
        return f"{kv_dtype} latent" + (f", {self.indexer.key_bytes_per_token()} B index keys" if self.indexer else "")

    def cache_split_note(self) -> str:
        return "MLA keeps the whole latent on every TP rank"

    def replicated_params(self, hidden: int) -> int:
        """The down-projections and their norms (``q_a``, ``kv_a``) and an indexer: whole on every rank."""
        h, ql, kvl, rope = hidden, self.q_lora_rank or 0, self.kv_lora_rank, self.qk_rope_head_dim
        idx = self.indexer.params(h, ql or h) if self.indexer else 0
        return h * (kvl + rope) + kvl + idx + (h * ql + ql if ql else 0)

    def params(self, hidden: int) -> int:
        """q ``h q_lora + q_lora + q_lora nq (nope + rope)`` (or ``h nq (nope + rope)``), kv
        ``h (kv_lora + rope) + kv_lora + kv_lora nq (nope + v)``, o ``nq v h``, a gate ``h nq v``, an indexer."""
        h, nq, ql = hidden, self.num_heads, self.q_lora_rank or 0
        nope, rope, v, kvl = self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim, self.kv_lora_rank
        q = h * ql + ql + ql * nq * (nope + rope) if ql else h * nq * (nope + rope)
        kv = h * (kvl + rope) + kvl + kvl * nq * (nope + v)
        idx = self.indexer.params(h, ql or h) if self.indexer else 0
        return q + kv + nq * v * h + (h * nq * v if self.output_gate else 0) + idx

    def tp_problems(self, tp: int) -> list[str]:
        return heads_split_problems(tp, self.num_heads)

    def dcp_kv_heads(self) -> int | None:
        return None if self.indexer else 1

    def dcp_exchange_elements_per_head(self) -> tuple[int, int]:
        """Absorbed decode: the latent-space query (latent + RoPE: 576) and the latent-space output (512)."""
        return (self.kv_lora_rank + self.qk_rope_head_dim, self.kv_lora_rank)

    def decode_query_rows(self, tp: int) -> float:
        """Absorbed MLA decode: every local head reads the one latent cache (MQA-like)."""
        return self.num_heads / tp

    def output_features(self) -> int:
        return self.num_heads * self.v_head_dim

    def kv_elements_per_token(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    def _idx(self, ctx):
        return self.indexer.key_bytes_per_token() * ctx if self.indexer else 0.0

    def cache_parts(self, ctx, kv_dtype: str) -> dict[str, object]:
        out = {"full-attention K/V": self.kv_elements_per_token() * kv_bytes_per_element(kv_dtype) * ctx}
        if self.indexer:
            out["sparse-attention indexer keys"] = self._idx(ctx)
        return out

    def cache_bytes_per_rank(self, ctx, kv_dtype: str, tp: int):
        """The latent is replicated on every TP rank (vLLM and SGLang keep it whole)."""
        return self.kv_elements_per_token() * kv_bytes_per_element(kv_dtype) * ctx + self._idx(ctx)

    def cache_bytes_per_token(self, kv_dtype: str) -> float:
        return self.kv_elements_per_token() * kv_bytes_per_element(kv_dtype) + (
            self.indexer.key_bytes_per_token() if self.indexer else 0
        )

    def _attended(self, ctx):
        return self.indexer.attended(ctx) if self.indexer and self.indexer.is_sparse(ctx) else ctx

    def prefill_indexer_topk(self) -> int:
        """DSA: the indexer's top-k where the layer runs its own (not GLM-5.2's shared layers, which reuse one)."""
        return self.indexer.topk_tokens if self.indexer is not None and not self.indexer.shared else 0

    def _latents(self, ctx, kv_dtype: str):
        return self.kv_elements_per_token() * kv_bytes_per_element(kv_dtype) * self._attended(ctx)

    def decode_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        """Top-k tokens' latents plus every index key on a sparse layer; the whole latent otherwise.
        GLM-5 at 128K: 2,048 x 1,152 + 131,072 x 132 B per layer."""
        return float(self._latents(ctx, kv_dtype) + self._idx(ctx))

    def decode_query_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        """A sparse layer's top-k latents, gathered per query token (the index keys are read once per sequence)."""
        return float(self._latents(ctx, kv_dtype)) if self.indexer and self.indexer.is_sparse(ctx) else 0.0

    def projection_flops_per_token(self, hidden: int, tp: int, phase: Phase) -> float:
        """2 x the rank's weights; decode (absorbed) adds ``q_nope x W_UK`` and ``latent x W_UV`` per head:
        ``2 nq/tp kv_lora (nope + v)``."""
        flops = 2.0 * self.params_per_rank(hidden, tp)
        if phase == "decode":
            flops += 2.0 * self.num_heads / tp * self.kv_lora_rank * (self.qk_nope_head_dim + self.v_head_dim)
        return flops

    def score_flops_per_token(self, ctx, tp: int, phase: Phase):
        """Decode (absorbed) scores the latent + RoPE key and sums values over the latent:
        ``2 ((kv_lora + rope) + kv_lora)`` per attended token and head, + the indexer's scan; prefill
        (expanded) ``2 ((nope + rope) + v)`` over half the prompt. A prompt longer than a sparse layer's top-k k
        runs the sparse kernel instead: absorbed, over ``k - k^2 / (2 ctx)`` tokens on average, on whole blocks of
        :data:`SPARSE_PREFILL_HEAD_BLOCK` heads (a rank with 8 heads pays for 64: aiconfigurator's measured SGLang
        module on B200, GLM-5 at 8,192 tokens with its top-k handed in, costs 1.63 ms per layer at 8 heads per rank
        against 2.83 ms at 64, whose projections are 8 times larger)."""
        nq = self.num_heads / tp
        if phase == "decode":
            per = 2.0 * (self.kv_elements_per_token() + self.kv_lora_rank)
            return nq * per * self._attended(ctx) + (self.indexer.scan_flops(ctx) if self.indexer else 0.0)
        expanded = nq * 2.0 * (self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim) * ctx / 2.0
        k = self.indexer.topk_tokens if self.indexer else 0
        if not k:
            return expanded
        block = SPARSE_PREFILL_HEAD_BLOCK
        heads = math.ceil(nq / block) * block
        c = np.maximum(ctx, 1.0)
        sparse = heads * 2.0 * (self.kv_elements_per_token() + self.kv_lora_rank) * (k - k * k / (2.0 * c))
        return np.where(np.asarray(ctx) > k, sparse, expanded) if np.ndim(ctx) else (sparse if ctx > k else expanded)
