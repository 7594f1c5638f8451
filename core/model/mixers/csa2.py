"""DeepSeek-V4.1's CSA2 attention: V4's compressed attention with the compressed cache shared across layers.

Each layer keeps the V4 query and output path (``wq_a`` h -> q_lora, norm, ``wq_b`` -> heads x dim; ONE K=V
head ``wkv`` h -> dim for its own sliding window; grouped low-rank output ``wo_a`` / ``wo_b``; per-head
sinks) and its last ``window`` raw entries. What V4 gave every layer, CSA2 gives a few (``config.json``:
``compress_ratios``, ``kv_source_layer_ids``, ``index_source_layer_ids``, ``candidate_source_layer_id``):

* a **KV source** layer runs the compressor (``wkv`` h -> dim, a softmax gate ``wgate`` and position bias
  ``ape`` [r, dim] when it pools r > 1 tokens, norm) and stores one compressed entry per ``ratio`` tokens
  plus its index key (``indexer.wk`` dim -> index dim, from the compressed entry): the only layers whose
  cache grows past the window. DeepSeek-V4.1-Flash has four (2, 8, 14 at ratio 2; 20 at ratio 1) for 40
  layers;
* an **index source** runs the indexer's query (``wq_b`` q_lora -> index heads x index dim, head weights
  h -> index heads) over its KV source's index keys and picks the top-k entries; a layer after a candidate
  source scans only the candidate blocks it kept (``candidate_topk_blocks`` x ``candidate_block_size``);
* every other layer with a ratio **reuses** the top-k of the index source before it and reads those
  entries of its KV source's cache: no cache, no indexer, only reads.

So a layer here is one of four roles: window only, KV source (always an index source too), re-index, reuse;
the reader makes one mixer per role and ratio, and the sums over layers give the model's cache: one KV
source's entries are counted once, on the layer that writes them. The entry formats are the reader's (the
serving format SGLang's V4.1 pool uses, or the paper's FP4 cache); the compressor of a ratio r > 1 source
keeps an fp32 kv_state and score_state of [r, dim], as V4's does at coff 1. Everything sits whole on every
TP rank (one head), as in V4.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from core.model.mixers.base import Phase, mean_min
from core.model.mixers.compressed import V4Attention

__all__ = ["CSA2Attention"]

_FP32 = 4


class CSA2Attention(V4Attention):
    kind: Literal["dsv41_csa2"] = "dsv41_csa2"
    window_entry_bytes: int = Field(gt=0, le=10_000_000, description="bytes of one cached raw window entry")
    ratio: int = Field(0, ge=0, le=1_000_000, description="tokens per entry of the compressed cache it reads")
    kv_source: bool = Field(False, description="computes and stores the compressed cache and its index keys")
    index_source: bool = Field(False, description="runs its own indexer query (else reuses the last top-k)")
    entry_bytes: int = Field(0, ge=0, le=10_000_000, description="bytes of one compressed entry")
    index_heads: int = Field(0, ge=0, le=100_000)
    index_head_dim: int = Field(0, ge=0, le=100_000)
    index_key_bytes: int = Field(0, ge=0, le=10_000_000, description="bytes of one cached index key")
    topk_tokens: int = Field(0, ge=0, le=100_000_000, description="compressed entries a query attends to")
    index_scan_cap: int = Field(
        0, ge=0, le=1_000_000_000, description="index keys scanned after a candidate filter; 0 = all"
    )

    @model_validator(mode="after")
    def _check(self) -> CSA2Attention:
        if self.ratio == 0 and (self.kv_source or self.index_source):
            raise ValueError("a window-only CSA2 layer (ratio 0) can be neither a KV nor an index source")
        if self.kv_source and not self.index_source:
            raise ValueError("a CSA2 KV source also indexes its cache (it owns the index keys)")
        if self.ratio and not (self.entry_bytes and self.topk_tokens):
            raise ValueError("a CSA2 layer with a ratio needs entry_bytes and topk_tokens")
        if self.index_source and not (self.index_heads and self.index_head_dim and self.index_key_bytes):
            raise ValueError("a CSA2 index source needs index_heads, index_head_dim and index_key_bytes")
        if self.index_scan_cap and self.index_scan_cap < self.topk_tokens:
            raise ValueError(
                f"index_scan_cap ({self.index_scan_cap:,}) must be at least topk_tokens ({self.topk_tokens:,})"
            )
        return self

    @property
    def role(self) -> str:
        if not self.ratio:
            return "window"
        if self.kv_source:
            return "KV source"
        return "re-index" if self.index_source else "reuse"

    def label(self) -> str:
        if not self.ratio:
            return f"sliding window {self.window:,}"
        return f"CSA2 1/{self.ratio} {self.role} + window {self.window:,}"

    def describe(self) -> str:
        return (
            f"{self.label()}: {self.num_heads} heads, one {self.head_dim}-wide K=V entry; top-{self.topk_tokens:,}"
            " compressed entries shared across layers"
            if self.ratio
            else f"{self.label()}: {self.num_heads} heads, one {self.head_dim}-wide K=V entry"
        )

    def cache_format(self, kv_dtype: str) -> str:
        fmt = f"{self.window_entry_bytes} B window entries"
        if self.ratio:
            fmt += f", {self.entry_bytes} B shared compressed entries, {self.index_key_bytes} B index keys"
        return fmt

    # -- parameters
    def _compressor(self, hidden: int) -> int:
        """wkv + norm; a pooling (r > 1) compressor adds the gate and the position bias; + index keys wk."""
        d = self.head_dim
        pool = hidden * d + self.ratio * d if self.ratio > 1 else 0
        return hidden * d + d + pool + d * self.index_head_dim

    def extra_replicated_params(self, hidden: int) -> int:
        """A KV source's compressor and an index source's indexer query and head weights."""
        idx = self.q_lora_rank * self.index_heads * self.index_head_dim + hidden * self.index_heads
        return (self._compressor(hidden) if self.kv_source else 0) + (idx if self.index_source else 0)

    # -- cache: a KV source stores the shared entries; every layer its window
    def _entries(self, ctx):
        return np.floor(np.asarray(ctx, dtype=np.float64) / self.ratio) if self.ratio else 0.0

    def cache_parts(self, ctx, kv_dtype: str) -> dict[str, object]:
        """The formats are fixed by the reader whatever ``kv_dtype`` says."""
        out = {f"sliding window (last {self.window:,} entries)": self.window_entry_bytes * np.minimum(ctx, self.window)}
        if self.kv_source:
            n = self._entries(ctx)
            out[f"CSA2 shared entries (1 per {self.ratio})"] = self.entry_bytes * n
            out["CSA2 index keys"] = self.index_key_bytes * n
        return out

    def cache_bytes_per_token(self, kv_dtype: str) -> float:
        """Long-context rate: a KV source adds an entry and an index key per ``ratio`` tokens; the layers
        that read its cache add nothing."""
        return (self.entry_bytes + self.index_key_bytes) / self.ratio if self.kv_source else 0.0

    def state_bytes(self) -> float:
        """A pooling source's fp32 kv_state + score_state of [r, dim]: 2 x 2 x 512 x 4 = 8,192 B at r = 2."""
        return float(2 * self.ratio * self.head_dim * _FP32) if self.kv_source and self.ratio > 1 else 0.0

    def state_label(self) -> str:
        return "compressor state (fixed)"

    def decode_state_read_bytes_per_rank(self, tp: int) -> float:
        """The whole compressor state is read once per ``ratio`` tokens, when it yields an entry."""
        return self.state_bytes() / self.ratio if self.ratio else 0.0

    def decode_state_write_bytes_per_rank(self, tp: int) -> float:
        """Each token writes its row of kv_state and score_state (2 x dim fp32)."""
        return float(2 * self.head_dim * _FP32) if self.state_bytes() else 0.0

    def _scanned(self, n):
        """Index keys an index source scores: every entry of its source (or the candidates), once the
        source holds more than the top-k (below that every entry is attended and nothing is selected)."""
        if not self.index_source:
            return np.zeros_like(n)
        cap = np.minimum(n, self.index_scan_cap) if self.index_scan_cap else n
        return np.where(n > self.topk_tokens, cap, 0.0)

    def decode_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        """The window, the top-k shared entries, and (an index source) the index keys it scans."""
        n = self._entries(ctx)
        read = self.window_entry_bytes * np.minimum(ctx, self.window)
        if self.ratio:
            read = read + self.entry_bytes * np.minimum(n, self.topk_tokens) + self.index_key_bytes * self._scanned(n)
        return float(read)

    # -- FLOPs
    def score_flops_per_token(self, ctx, tp: int, phase: Phase):
        """``4 dim`` per attended entry and head (K=V scored and summed) over the window and the top-k shared
        entries, + an index source's ``2 x index heads x index dim`` per scanned key (whole on each rank).
        Prefill: the mean over a causal prompt of ``ctx`` tokens of each capped count."""
        ctx = np.asarray(ctx, dtype=np.float64)
        per_head = self.num_heads / tp * 4.0 * self.head_dim
        per_key = 2.0 * self.index_heads * self.index_head_dim
        if phase == "decode":
            n = self._entries(ctx)
            attended = np.minimum(ctx, self.window) + (np.minimum(n, self.topk_tokens) if self.ratio else 0.0)
            return per_head * attended + per_key * (self._scanned(n) if self.ratio else 0.0)
        attended = mean_min(ctx, self.window)
        scan = 0.0
        if self.ratio:
            c, k = ctx / self.ratio, float(self.topk_tokens)
            attended = attended + mean_min(c, k)
            if self.index_source:  # keys scored at positions holding more than k entries: x in (k, c]
                top, over = c, 0.0
                if self.index_scan_cap:  # past the cap, every position scans exactly the cap
                    cap = float(self.index_scan_cap)
                    top, over = np.minimum(c, cap), cap * np.maximum(c - cap, 0.0)
                scan = np.where(c > k, ((top * top - k * k) / 2.0 + over) / np.maximum(c, 1e-30), 0.0)
        return per_head * attended + per_key * scan
