"""DeepSeek-V4's compressed attention (Flash, Pro), module shapes from DeepSeek's reference
``inference/model.py``: a low-rank query (``wq_a`` h -> q_lora, norm, ``wq_b`` -> heads x dim), ONE K=V head
(``wkv`` h -> dim, norm), a grouped low-rank output (``wo_a`` heads x dim x o_lora in o_groups groups,
``wo_b`` o_groups x o_lora -> h) and per-head sinks. Every layer keeps its last ``window`` raw entries; a
layer with a compress ratio r adds a Compressor (``ape`` [r, coff x dim], ``wkv`` and ``wgate`` h -> coff x
dim, norm) and one compressed entry per r tokens:

* CSA (compressed sparse attention, the small ratio, overlapping windows: coff 2) also carries an Indexer
  (``wq_b`` q_lora -> heads x dim, ``weights_proj`` h -> heads, its own compressor at the index dim), caches
  one index key per compressed entry, and a decode query reads only the top-k entries;
* HCA (heavily compressed attention, coff 1) reads all its compressed entries.

Cache entries in the serving format (SGLang DeepSeekV4SingleKVPool): 448 B FP8 no-RoPE part + 64 x 2 B
BF16 RoPE part + 8 B ue8m0 scales = 584 B; FP4 index keys 68 B. The compressors keep an fp32 decode state
(kv_state + score_state of [coff x r, coff x dim]). All of it sits whole on every TP rank (one head).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from core.model.mixers.base import Mixer, Phase, heads_split_problems, mean_min

__all__ = ["CompressedAttention", "V4Attention"]

_FP32 = 4


class V4Attention(Mixer):
    """What every DeepSeek-V4-style layer has (no ``kind``: a base, not a registered kind): the low-rank
    query, the single K=V head for its window, the grouped low-rank output and the sinks. A kind adds its
    compressor / indexer weights in :meth:`extra_replicated_params`."""

    num_heads: int = Field(gt=0, le=100_000)
    head_dim: int = Field(gt=0, le=100_000, description="the single K=V head's size (512)")
    q_lora_rank: int = Field(gt=0, le=1_000_000)
    o_lora_rank: int = Field(gt=0, le=1_000_000)
    o_groups: int = Field(gt=0, le=100_000)
    window: int = Field(gt=0, le=100_000_000, description="raw entries every layer keeps")

    def cache_split_note(self) -> str:
        return "the single K=V head's entries stay whole on every TP rank"

    def extra_replicated_params(self, hidden: int) -> int:
        return 0

    def replicated_params(self, hidden: int) -> int:
        """wq_a + its norm, the K=V head wkv + its norm, and the kind's compressor / indexer: whole on every
        rank."""
        h, ql, hd = hidden, self.q_lora_rank, self.head_dim
        return h * ql + ql + h * hd + hd + self.extra_replicated_params(hidden)

    def params(self, hidden: int) -> int:
        h, nq, hd, ql, ol = hidden, self.num_heads, self.head_dim, self.q_lora_rank, self.o_lora_rank
        split = ql * nq * hd + nq * hd * ol + self.o_groups * ol * h + nq  # wq_b, wo_a, wo_b, sinks
        return self.replicated_params(hidden) + split

    def tp_problems(self, tp: int) -> list[str]:
        return heads_split_problems(tp, self.num_heads)

    def decode_query_rows(self, tp: int) -> float:
        """One K=V head shared by every local query head."""
        return self.num_heads / tp

    def output_features(self) -> int:
        return self.num_heads * self.head_dim


class CompressedAttention(V4Attention):
    kind: Literal["dsv4_compressed"] = "dsv4_compressed"
    ratio: int = Field(0, ge=0, le=1_000_000, description="tokens per compressed entry; 0 = window only")
    sparse: bool = Field(False, description="CSA: overlapping compressor (coff 2) + indexer + top-k reads")
    entry_bytes: int = Field(gt=0, le=10_000_000, description="bytes of one cached raw or compressed entry")
    index_heads: int = Field(0, ge=0, le=100_000)
    index_head_dim: int = Field(0, ge=0, le=100_000)
    index_key_bytes: int = Field(0, ge=0, le=10_000_000, description="bytes of one cached CSA index key")
    topk_tokens: int = Field(0, ge=0, le=100_000_000, description="compressed entries a CSA query reads")

    @property
    def _coff(self) -> int:
        return 2 if self.sparse else 1

    def label(self) -> str:
        if not self.ratio:
            return f"sliding window {self.window:,}"
        return f"{'CSA' if self.sparse else 'HCA'} 1/{self.ratio} + window {self.window:,}"

    def describe(self) -> str:
        return f"{self.label()}: {self.num_heads} heads, one {self.head_dim}-wide K=V entry ({self.entry_bytes} B)"

    def cache_format(self, kv_dtype: str) -> str:
        return f"DeepSeek-V4 serving format ({self.entry_bytes} B entries, {self.index_key_bytes} B FP4 index keys)"

    # -- parameters
    def _compressor(self, hidden: int, dim: int) -> int:
        c = self._coff
        return self.ratio * c * dim + 2 * hidden * c * dim + dim

    def extra_replicated_params(self, hidden: int) -> int:
        """The compressor and (CSA) the indexer with its own compressor."""
        h, ql, hd = hidden, self.q_lora_rank, self.head_dim
        extra = self._compressor(h, hd) if self.ratio else 0
        if self.sparse:
            extra += (
                ql * self.index_heads * self.index_head_dim
                + h * self.index_heads
                + self._compressor(h, self.index_head_dim)
            )
        return extra

    # -- cache
    def _entries(self, ctx):
        return np.floor(np.asarray(ctx, dtype=np.float64) / self.ratio) if self.ratio else 0.0

    def cache_parts(self, ctx, kv_dtype: str) -> dict[str, object]:
        """The serving format is fixed (FP8 + BF16 entries) whatever ``kv_dtype`` says."""
        e = self.entry_bytes
        out = {f"sliding window (last {self.window:,} entries)": e * np.minimum(ctx, self.window)}
        if self.ratio and self.sparse:
            out[f"CSA compressed entries (1 per {self.ratio})"] = e * self._entries(ctx)
            out["CSA indexer keys"] = self.index_key_bytes * self._entries(ctx)
        elif self.ratio:
            out[f"HCA compressed entries (1 per {self.ratio})"] = e * self._entries(ctx)
        return out

    def cache_bytes_per_token(self, kv_dtype: str) -> float:
        """The long-context rate: one entry (+ an index key) per ``ratio`` tokens."""
        if not self.ratio:
            return 0.0
        return (self.entry_bytes + (self.index_key_bytes if self.sparse else 0)) / self.ratio

    def state_bytes(self) -> float:
        """fp32 kv_state + score_state of [coff r, coff dim], for the attention compressor and (CSA) the
        indexer's own: Flash CSA 2 x 8 x 1,024 x 4 + 2 x 8 x 256 x 4 = 81,920 B; HCA 2 x 128 x 512 x 4."""
        if not self.ratio:
            return 0.0
        c, r = self._coff, self.ratio
        state = 2 * (c * r) * (c * self.head_dim) * _FP32
        if self.sparse:
            state += 2 * (c * r) * (c * self.index_head_dim) * _FP32
        return float(state)

    def state_label(self) -> str:
        return "compressor state (fixed)"

    def decode_state_read_bytes_per_rank(self, tp: int) -> float:
        """The whole compressor state is read once per ``ratio`` tokens, when it yields a compressed entry."""
        return self.state_bytes() / self.ratio if self.ratio else 0.0

    def decode_state_write_bytes_per_rank(self, tp: int) -> float:
        """Each token writes its row of kv_state and score_state, ``2 x coff x dim`` fp32 values (and the
        indexer compressor's at the index dim)."""
        if not self.ratio:
            return 0.0
        dims = self.head_dim + (self.index_head_dim if self.sparse else 0)
        return float(2 * self._coff * dims * _FP32)

    def decode_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        """The window, then the top-k CSA entries and every CSA index key, or every HCA entry."""
        e, w = self.entry_bytes, self.window
        read = e * min(ctx, w)
        n = float(self._entries(ctx))
        if self.ratio and self.sparse:
            read += e * min(n, self.topk_tokens or n) + self.index_key_bytes * n
        elif self.ratio:
            read += e * n
        return read

    # -- FLOPs
    def score_flops_per_token(self, ctx, tp: int, phase: Phase):
        """``4 dim`` per attended entry and head (K=V scored and summed): decode over the window plus the
        top-k CSA / all HCA entries, and the CSA indexer's ``2 heads dim`` per index key (whole on each
        rank); prefill over the mean of the window-capped count, ``mean_min(ctx, window)`` (the compressed
        entries are not counted in prefill)."""
        per_head = self.num_heads / tp * 4.0 * self.head_dim
        if phase == "prefill":
            return per_head * mean_min(ctx, self.window)
        n = ctx // self.ratio if self.ratio else 0
        attended = min(ctx, self.window) + ((min(n, self.topk_tokens or n) if self.sparse else n) if self.ratio else 0)
        scan = 2.0 * self.index_heads * self.index_head_dim * n if self.sparse else 0.0
        return per_head * attended + scan
