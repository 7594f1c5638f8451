"""What one step of the step-time model processes (:class:`StepConfig`), per GPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core._util.checks import is_number, is_whole
from core.hardware.efficiency import KERNEL_PATHS
from core.model import DEFAULT_TIER, TIERS

__all__ = ["Phase", "StepConfig"]

Phase = Literal["decode", "prefill"]


@dataclass(frozen=True)
class StepConfig:
    """What one step processes, per GPU.

    decode: ``tokens_per_gpu`` query tokens per GPU over ``context_len`` cached tokens per sequence,
    ``tokens_per_sequence`` of them per sequence (1 in plain decoding; gamma + 1 when verifying a draft).
    prefill: ``tokens_per_gpu`` prompt tokens per GPU per forward step, prompts of ``context_len`` tokens, of which
    the first ``cached_tokens`` come from a prefix cache (their KV is read, not computed): each prompt computes
    ``computed_len`` = ``context_len - cached_tokens`` tokens, which attend to the cached ones as well.
    """

    phase: Phase
    tokens_per_gpu: float
    context_len: int
    overlap: Literal["none", "two_batch"] = "none"
    comm_kernel: Literal["low_latency", "normal"] | None = None  # None: low-latency for decode, normal for prefill
    redundant_experts: int = 0
    imbalance: float = 1.0  # max/mean routed-expert load across the EP group
    tokens_per_sequence: float = 1.0
    kernel_path: str | None = None  # MoE kernel path (efficiency.KERNEL_PATHS); None: the stack's for the layout
    table_tier: str = DEFAULT_TIER  # where the model's stored extras (lookup tables) live: core.model.TIERS
    cached_tokens: int = 0  # prefill: prompt tokens served by a prefix cache (0 in decode)

    def __post_init__(self):
        if self.phase not in ("decode", "prefill"):
            raise ValueError(f"phase must be decode or prefill, got {self.phase!r}")
        if not (is_number(self.tokens_per_gpu) and 0 < self.tokens_per_gpu <= 1e9):
            raise ValueError(f"tokens_per_gpu must be > 0 and <= 1,000,000,000, got {self.tokens_per_gpu!r}")
        if not (is_whole(self.context_len) and 1 <= self.context_len <= 100_000_000):
            raise ValueError(f"context_len must be a whole number in 1..100,000,000, got {self.context_len!r}")
        if self.overlap not in ("none", "two_batch"):
            raise ValueError(f"overlap must be none or two_batch, got {self.overlap!r}")
        if self.comm_kernel not in (None, "low_latency", "normal"):
            raise ValueError(f"comm_kernel must be low_latency, normal or None, got {self.comm_kernel!r}")
        if not (is_whole(self.redundant_experts) and 0 <= self.redundant_experts <= 100_000):
            raise ValueError(f"redundant_experts must be a whole number in 0..100,000, got {self.redundant_experts!r}")
        if not (is_number(self.imbalance) and 1 <= self.imbalance <= 1e6):
            raise ValueError("imbalance must be >= 1 (max / mean) and <= 1,000,000")
        if not (is_number(self.tokens_per_sequence) and 1 <= self.tokens_per_sequence <= 1_000):
            raise ValueError(f"tokens_per_sequence must be in [1, 1,000], got {self.tokens_per_sequence!r}")
        if self.table_tier not in TIERS:
            raise ValueError(f"table_tier must be {', '.join(TIERS[:-1])} or {TIERS[-1]}, got {self.table_tier!r}")
        if not (is_whole(self.cached_tokens) and 0 <= self.cached_tokens < self.context_len):
            raise ValueError(
                f"cached_tokens must be a whole number in 0..context_len - 1 ({self.context_len - 1:,}), "
                f"got {self.cached_tokens!r}"
            )
        if self.cached_tokens and self.phase != "prefill":
            raise ValueError("cached_tokens applies to prefill (a decode step's context is all cached)")
        if self.kernel_path not in (None, *KERNEL_PATHS):
            raise ValueError(f"kernel_path must be one of {', '.join(KERNEL_PATHS)} or None, got {self.kernel_path!r}")

    @property
    def computed_len(self) -> int:
        """Prompt tokens each sequence computes: the whole prompt less what the prefix cache serves."""
        return self.context_len - self.cached_tokens

    @property
    def kernel(self) -> str:
        return self.comm_kernel or ("low_latency" if self.phase == "decode" else "normal")
