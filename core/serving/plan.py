"""A layout at its operating point (:class:`Plan`), as the layout search ranks it, and the engines' shorthand for
a layout (:func:`layout_label`). :mod:`core.serving.operating_point` finds the operating point and re-exports
both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from core.deployment.specs import ParallelLayout

__all__ = ["OVERLAP_LABELS", "Plan", "layout_label"]

Phase = Literal["prefill", "decode"]
OVERLAP_LABELS = {"none": "no overlap", "two_batch": "two-batch overlap"}


@dataclass(frozen=True)
class Plan:
    """One layout at its operating point. ``tp`` is attention TP, ``ep`` expert parallel, ``dp`` data-parallel
    replicas, ``pp`` pipeline stages (``dp_attention`` and ``expert_tp`` complete the layout).

    ``tokens_per_gpu``: decode sequences per GPU (the replica's sequences / its GPUs), prefill prompt tokens
    per GPU per step; ``step_s`` the time between a sequence's steps (decode: TPOT); ``latency_s`` TPOT in
    decode, TTFT of a prompt in prefill; ``overlap`` "none" or "two_batch"; ``tier`` 1 for the plans the
    model cannot tell from the best (within ``tolerance``, its median measured error), 2 for those its
    90th-percentile error (``tolerance_p90``) cannot rule out, 3 below."""

    layout: ParallelLayout
    phase: Phase
    redundant_experts: int
    tokens_per_gpu: float
    step_s: float
    tokens_per_s_per_gpu: float
    headroom_gb: float
    reason: str = ""
    breakdown: dict[str, float] = field(default_factory=dict)
    rank: int = 0
    dense: bool = False
    overlap: str = "none"
    latency_s: float = 0.0
    microbatches: float = 1.0
    comm_s: float = 0.0
    # what stops a larger batch or chunk: "memory", "target" (TPOT / TTFT) or "grid" (the largest chunk tried)
    bound: str = ""
    # decode: sequences per GPU the KV cache holds at the full context; prefill: the largest chunk that fits
    capacity: float = 0.0
    tier: int = 0
    tolerance: float = 0.0
    tolerance_p90: float = 0.0

    def below(self, best: Plan) -> float:
        """The share of ``best``'s tokens/s per GPU this plan falls short of (0 for the best, 0.21 for 21% below)."""
        return 1.0 - self.tokens_per_s_per_gpu / best.tokens_per_s_per_gpu

    @property
    def tp(self) -> int:
        return self.layout.attention_tp

    @property
    def ep(self) -> int:
        return self.layout.ep

    @property
    def dp(self) -> int:
        return self.layout.dp

    @property
    def pp(self) -> int:
        return self.layout.pp

    @property
    def replica_gpus(self) -> int:
        """GPUs one replica spans: what one failed GPU takes out of service (the blast radius)."""
        return self.layout.gpus_per_stage * self.layout.pp

    @property
    def sequences_per_replica(self) -> float:
        """Decode: sequences one replica serves at this operating point."""
        return self.tokens_per_gpu * self.replica_gpus

    @property
    def label(self) -> str:
        return layout_label(self.layout, self.dense)


def layout_label(lay: ParallelLayout, dense: bool = False) -> str:
    """A layout in the engines' shorthand, e.g. "TP8 · EP8 · DCP8" or "DP-attn8 · EP8" ("1 GPU" when unsplit;
    ``dense``: a dense model's FFN-TP in place of expert TP)."""
    parts = [
        f"TP{lay.attention_tp}" if lay.attention_tp > 1 else "",
        f"DP-attn{lay.attention_dp}" if lay.attention_dp > 1 else "",
        f"EP{lay.ep}" if lay.ep > 1 else "",
        (f"FFN-TP{lay.expert_tp}" if dense else f"expert-TP{lay.expert_tp}") if lay.expert_tp > 1 else "",
        f"DCP{lay.dcp}" if lay.dcp > 1 else "",
        f"PP{lay.pp}" if lay.pp > 1 else "",
        f"DP{lay.dp}" if lay.dp > 1 else "",
    ]
    return " · ".join(p for p in parts if p) or "1 GPU"
