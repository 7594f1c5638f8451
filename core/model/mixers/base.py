"""The interface every mixer kind implements (one file per kind in this folder).

A *mixer* is the token-mixing half of a decoder layer: softmax attention in its variants, or a linear /
state-space recurrence. Each method describes ONE layer serving ONE sequence; ``ctx`` is a context length
in tokens (a float or a numpy array, so a curve is one call), ``tp`` the attention tensor-parallel size,
``kv_dtype`` the KV-cache storage dtype (``bf16``, ``fp16``, ``fp8``, ``int8``). Units are in the names.

The sums over a model's layers (parameters, per-GPU weights, cache, decode reads, FLOPs, TP checks) live
in ``core.model.params``, ``core.memory`` and ``core.perf`` and never ask which kind a mixer is: what differs
between kinds is here, in the subclass.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from core._util.checks import amount, nonneg, whole

__all__ = ["KV_BYTES", "Mixer", "Phase", "heads_split_problems", "kv_bytes_per_element", "mean_chunked", "mean_min"]

Phase = Literal["decode", "prefill"]

# Bytes per cached K/V element (the cache dtypes engines offer: vLLM --kv-cache-dtype, SGLang, TRT-LLM).
KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}


def kv_bytes_per_element(kv_dtype: str) -> float:
    try:
        return KV_BYTES[kv_dtype]
    except KeyError:
        raise ValueError(f"unknown KV cache dtype {kv_dtype!r}; allowed: {', '.join(KV_BYTES)}") from None


def heads_split_problems(tp: int, num_heads: int) -> list[str]:
    """Why attention TP ``tp`` cannot split ``num_heads`` query heads (empty when it divides them)."""
    tp, num_heads = whole("tp", tp, 1, 100_000), whole("num_heads", num_heads, 1, 100_000)
    return [f"attention TP {tp} does not divide the {num_heads} query heads"] if num_heads % tp else []


def mean_min(ctx, cap: float):
    """Mean of ``min(x, cap)`` for x uniform on [0, ctx]: the keys a token of a causal ``ctx``-token prompt attends
    when it attends at most ``cap`` (a sliding window, a top-k budget). ``ctx / 2`` up to the cap, then
    ``(cap^2 / 2 + cap (ctx - cap)) / ctx = cap - cap^2 / (2 ctx)``, which tends to ``cap`` for ``ctx >> cap``."""
    c = np.asarray(nonneg("ctx", ctx), dtype=np.float64)
    k = amount("cap", cap, 0.0, open_lo=True)
    return np.where(c <= k, c / 2.0, k - k * k / (2.0 * np.maximum(c, 1e-30)))


def mean_chunked(ctx, chunk: float):
    """Mean of ``x mod chunk`` for x uniform on [0, ctx]: the keys a token of a causal ``ctx``-token prompt attends
    under chunked attention (Llama 4's local layers: a token sees only the earlier tokens of its own ``chunk``-token
    chunk). ``n = (ctx - r) / chunk`` whole chunks average ``chunk / 2`` each and the last partial one of
    ``r = ctx mod chunk`` tokens ``r / 2``: ``(n chunk^2 + r^2) / (2 ctx)``; ``ctx / 2`` within the first chunk,
    tending to ``chunk / 2`` for ``ctx >> chunk`` (half a sliding window's ``mean_min``)."""
    c = np.asarray(nonneg("ctx", ctx), dtype=np.float64)
    w = amount("chunk", chunk, 0.0, open_lo=True)
    r = np.mod(c, w)
    return np.where(c > 0, ((c - r) * w + r * r) / (2.0 * np.maximum(c, 1e-30)), 0.0)


class Mixer(BaseModel):
    """Base of every mixer kind; a subclass declares ``kind: Literal["..."]`` and overrides what differs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # -- what it is ------------------------------------------------------------------------------
    def label(self) -> str:
        """Short name for tables and legends ("MLA", "GQA, sliding 128", "Gated DeltaNet")."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line of geometry for the Home page and the Catalog."""
        return self.label()

    @property
    def caches_context(self) -> bool:
        """True when the layer keeps a per-token cache (softmax attention); False for a fixed state only."""
        return True

    def cache_format(self, kv_dtype: str) -> str:
        """How the cache is stored, for chart subtitles ("bf16 K/V", "584 B serving-format entries")."""
        return f"{kv_dtype} K/V"

    def cache_split_note(self) -> str:
        """How attention TP splits the cache, in a sentence fragment."""
        return ""

    # -- parameters --------------------------------------------------------------------------------
    def params(self, hidden: int) -> int:
        """Weights of one layer's mixer."""
        raise NotImplementedError

    def replicated_params(self, hidden: int) -> int:
        """Weights every attention-TP rank holds whole (down-projections, norms, indexers, compressors)."""
        return 0

    def params_per_rank(self, hidden: int, tp: int) -> float:
        """Weights one attention-TP rank holds: the replicated part whole, the rest (column/row-parallel
        projections) split over ``tp``."""
        rep = self.replicated_params(hidden)
        return rep + (self.params(hidden) - rep) / tp

    def tp_problems(self, tp: int) -> list[str]:
        """Why attention TP ``tp`` cannot split this layer (empty when it can)."""
        return []

    def dcp_kv_heads(self) -> int | None:
        """KV heads decode context parallelism splits the cache of (MLA's latent: 1), or None where the
        engines run no DCP for the kind (vLLM's backends: dense MLA and full-attention GQA only)."""
        return None

    def dcp_exchange_elements_per_head(self) -> tuple[int, int]:
        """16-bit elements per query head and token a DCP group exchanges each layer: (the query, all-gathered;
        the partial output, reduce-scattered once each rank has rescaled it by the all-gathered log-sum-exps)."""
        return (0, 0)

    def output_features(self) -> int:
        """Input width of the output projection (heads x value head size): the GEMM after attention."""
        raise NotImplementedError

    # -- cache and state (one sequence) ------------------------------------------------------------
    def cache_parts(self, ctx, kv_dtype: str) -> dict[str, object]:
        """The cache that grows with the context, bytes by labelled part (whole layer, before any split)."""
        return {}

    def cache_bytes(self, ctx, kv_dtype: str):
        return sum(self.cache_parts(ctx, kv_dtype).values(), np.zeros_like(np.asarray(ctx, dtype=np.float64)))

    def cache_bytes_per_rank(self, ctx, kv_dtype: str, tp: int):
        """The growing cache one attention-TP rank holds."""
        return self.cache_bytes(ctx, kv_dtype)

    def cache_bytes_per_token(self, kv_dtype: str) -> float:
        """Bytes one more token adds (below any window cap; a compressed cache's long-context rate)."""
        return 0.0

    def kv_elements_per_token(self) -> int:
        """Cached K/V elements per token (0 where the cache is not K/V elements)."""
        return 0

    def state_bytes(self) -> float:
        """Fixed bytes per sequence whatever its length (recurrent or compressor state)."""
        return 0.0

    def state_bytes_per_rank(self, tp: int) -> float:
        return self.state_bytes()

    def state_label(self) -> str:
        return "fixed state"

    def prefill_scan_heads_per_rank(self, tp: int) -> float:
        """Value heads of a chunked gated delta-rule scan (Gated DeltaNet) the rank runs in prefill, whose measured
        kernels the step adds (core.hardware.gdn_prefill); 0: the layer runs none."""
        return 0.0

    def with_state_dtype(self, dtype: str) -> Mixer:
        """The mixer with its recurrent state stored in ``dtype`` (linear-attention / SSM kinds); the others as
        they are."""
        return self

    def decode_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        """Growing-cache bytes one decode step reads on one rank (a sparse layer reads less than it
        stores); the fixed state's traffic is apart (``decode_state_*``)."""
        return float(self.cache_bytes_per_rank(ctx, kv_dtype, tp))

    def decode_query_read_bytes_per_rank(self, ctx: float, kv_dtype: str, tp: int) -> float:
        """Of :meth:`decode_read_bytes_per_rank`, the bytes each query token of a sequence reads for itself: a sparse
        layer gathers its own top-k rows per query, so verifying k + 1 drafted tokens reads k + 1 sets; the rest (a
        dense cache, the index keys) the sequence's query tokens share. 0 here: all shared."""
        return 0.0

    def decode_state_read_bytes_per_rank(self, tp: int) -> float:
        """Fixed-state bytes one decode step reads on one rank (a recurrent state: all of it)."""
        return self.state_bytes_per_rank(tp)

    def decode_state_write_bytes_per_rank(self, tp: int) -> float:
        """Fixed-state bytes one decode step writes on one rank (a recurrent state: all of it, updated)."""
        return self.state_bytes_per_rank(tp)

    # -- FLOPs (per query token, one rank) ---------------------------------------------------------
    def projection_flops_per_token(self, hidden: int, tp: int, phase: Phase) -> float:
        """Matmul FLOPs of the layer's projections: 2 x the rank's weights (+ what a kind adds)."""
        return 2.0 * self.params_per_rank(hidden, tp)

    def decode_query_rows(self, tp: int) -> float:
        """Query rows that read one cached K/V stream per decoded token: the M of the attention GEMMs, which
        fills the tensor-core tile only when large enough (1 for mixers without attention)."""
        return 1.0

    def score_flops_per_token(self, ctx, tp: int, phase: Phase):
        """Score and value FLOPs: decode, one new token over ``ctx`` cached ones; prefill, the mean per
        token of a causal prompt of ``ctx`` tokens."""
        return 0.0

    def prefill_indexer_topk(self) -> int:
        """The top-k of a sparse-attention indexer this layer runs itself in prefill on an MLA cache (DSA: its measured
        prefill cost, :mod:`core.hardware.dsa_prefill`, applies on prompts longer than the top-k); 0 for none."""
        return 0

    def prefill_score_flops_after(self, ctx: int, cached: int, tp: int) -> float:
        """Score and value FLOPs per computed token of a ``ctx``-token prompt whose first ``cached`` tokens come from
        a prefix cache: the prompt's total less its cached part's (``L x S(L)`` is a causal prompt's total when
        ``S(L)`` is :meth:`score_flops_per_token`'s mean per token; full attention: ``(ctx + cached) / 2`` keys)."""
        mean = float(self.score_flops_per_token(ctx, tp, "prefill"))
        if not cached:
            return mean
        return (ctx * mean - cached * float(self.score_flops_per_token(cached, tp, "prefill"))) / (ctx - cached)
