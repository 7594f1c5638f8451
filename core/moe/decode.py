"""MoE routing and the decode-step bound, where the pages have always found them.

The routing arithmetic lives in :mod:`core.model.routing` (below :mod:`core.perf`, whose kernels count the
experts a step touches with it), GEMM intensities in :mod:`core.moe.intensity` (re-exported here); this module holds the decode-step roofline over an array of batch sizes
(:func:`decode_step`), which the Intensity page and the Speculative page's batch curves draw.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.deployment.bundle import Deployment
from core.model.routing import (
    expected_experts_touched,
    token_counts,
)
from core.moe.intensity import (
    GemmElementBytes,
    active_ffn_width,
    batch_for_dense_intensity,
    batch_for_expert_intensity,
    dense_equivalent_intensity,
    element_bytes,
    expert_ffn_flops_bytes,
    expert_gemm_intensity,
    intensity_sweep,
    step_gemms,
)

__all__ = [
    "DecodeStep",
    "GemmElementBytes",
    "active_ffn_width",
    "batch_for_dense_intensity",
    "batch_for_expert_intensity",
    "decode_step",
    "dense_equivalent_intensity",
    "element_bytes",
    "expert_ffn_flops_bytes",
    "expert_gemm_intensity",
    "intensity_sweep",
    "step_gemms",
]


@dataclass(frozen=True)
class DecodeStep:
    """The decode roofline (:func:`core.perf.decode_roofline`) over an array of batch sizes: per GPU of the
    busiest pipeline stage, for one micro-batch's pass, with the time each sequence waits per token."""

    tokens: np.ndarray  # query tokens per step in one replica
    weight_bytes: np.ndarray  # weights read per GPU of the busiest stage (experts actually touched)
    kv_bytes: np.ndarray  # cache read (and recurrent state read and written) per GPU of that stage
    flops: np.ndarray  # FLOPs per GPU of that stage
    memory_time_s: np.ndarray  # bytes / HBM bandwidth, per token step (scaled like time_s)
    compute_time_s: np.ndarray  # FLOPs at each kernel's dense peak, per token step
    time_s: np.ndarray  # each sequence's time per token: every kernel at max(memory, compute)
    experts_touched: np.ndarray  # distinct routed experts touched per MoE layer by one micro-batch
    microbatches: np.ndarray  # micro-batches in flight (min(PP, sequences))
    stage: np.ndarray  # the busiest stage (0-based)
    num_stages: int = 1

    @property
    def memory_bound(self) -> np.ndarray:
        return self.memory_time_s >= self.compute_time_s

    @property
    def tokens_per_s(self) -> np.ndarray:
        """Tokens per second of the replica (every micro-batch)."""
        return self.tokens / self.time_s


def decode_step(d: Deployment, tokens, context_len: int, *, sequences=None) -> DecodeStep:
    """The roofline of a decode step of deployment ``d`` for ``tokens`` query tokens per step in each replica
    (``sequences`` sequences, default one token each) at ``context_len`` cached tokens per sequence: the step-time
    model's per-layer works (:mod:`core.perf.kernels`: each mixer's cache reads, only the touched experts, the LM
    head, ...) with every efficiency at 1, no floors, no overheads, no communication
    (:func:`core.perf.decode_roofline`), with the deployment's redundant-expert slots. With pipeline stages the
    figures are the busiest stage's, with ``min(PP, sequences)`` micro-batches in flight."""
    from core import perf

    model, layout = d.model, d.layout
    t = np.atleast_1d(token_counts(tokens))
    seqs = t if sequences is None else np.broadcast_to(np.atleast_1d(token_counts(sequences)), t.shape)
    if (
        not isinstance(context_len, (int, np.integer))
        or isinstance(context_len, bool)
        or not 1 <= context_len <= 100_000_000
    ):
        raise ValueError(f"context_len must be a whole number in 1..100,000,000, got {context_len!r}")
    rows = []
    for ti, si in zip(t, seqs, strict=True):
        if ti <= 0 or si <= 0:
            raise ValueError("tokens and sequences per step must be > 0")
        if ti < si or ti / si > 1_000:
            raise ValueError(f"{ti:g} tokens from {si:g} sequences: each sequence brings 1 to 1,000 tokens per step")
        r = perf.decode_roofline(
            d,
            float(ti),
            int(context_len),
            tokens_per_sequence=float(ti / si),
            redundant_experts=d.redundant_experts,
        )
        scale = r.step_s / r.stage_s if r.stage_s else 1.0
        rows.append(
            (
                r.weight_bytes,
                r.cache_bytes,
                r.flops,
                r.memory_s * scale,
                r.compute_s * scale,
                r.step_s,
                r.microbatches,
                r.stage,
            )
        )
    cols = [np.array(c, dtype=np.float64) for c in zip(*rows, strict=True)] or [np.zeros(0)] * 8
    micro = cols[6]
    touched = (
        expected_experts_touched(t / micro, model.moe.top_k, model.moe.n_routed_experts)
        if model.moe is not None
        else np.zeros_like(t)
    )
    return DecodeStep(
        t,
        cols[0],
        cols[1],
        cols[2],
        cols[3],
        cols[4],
        cols[5],
        np.asarray(touched, dtype=np.float64),
        micro,
        cols[7].astype(np.int64),
        layout.pp,
    )
