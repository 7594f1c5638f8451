"""Where the time goes in the top plans, per token (review 3 M11): plans at different batches compare only per
token, so each plan's step is read as GPU time per output token (decode) or per prompt token (prefill), which is
``1 / tokens/s per GPU``, split by kernel category.

A plan's categories (:func:`core.serving.operating_point.time_categories`, seconds per step, every pipeline stage
summed for one micro-batch) are kernel time before two-batch overlap. A GPU runs its stage for each of the
``microbatches`` in flight, ``pp`` stages in all: its kernel time per step is ``microbatches / pp`` of the sum. Per
token: divided by the plan's tokens per GPU per step. The step per token can differ from their sum: two-batch
overlap hides part of the communication under compute (``hidden_us``), and a pipeline with fewer micro-batches
than stages leaves its GPUs idle part of the step (``idle_us``, drawn as its own category).

Plans whose per-token parts and step agree to three significant figures are one bar (the expert-TP variants of
one attention layout, pipelines of equal stages), named by the best-ranked, with the others listed.

Hand check, DeepSeek-V3 FP8 on 8 x H200 decode: DP-attn8 · EP8 runs 166 sequences per GPU at 3,215 output tok/s per
GPU, a step of 166 / 3,215 = 51.6 ms: 1e6 / 3,215 = 311 us per output token.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.serving.plan import Plan

__all__ = ["IDLE", "TokenTime", "time_per_token"]

IDLE = "pipeline idle"


@dataclass(frozen=True)
class TokenTime:
    """One bar: a plan's GPU time per token (microseconds), by category, largest first."""

    label: str
    rank: int
    alike: tuple[str, ...]  # the labels of the plans it stands for as well
    parts_us: dict[str, float]  # kernel time per token, largest first, empty categories left out (IDLE included)
    kernel_us: float  # their sum, before overlap (IDLE left out)
    step_us: float  # the step per token: 1e6 / tokens/s per GPU
    hidden_us: float  # what two-batch overlap hides (kernel - step, when positive)
    idle_us: float  # what a pipeline's bubble adds (step - kernel, when positive)
    step_ms: float
    tokens_per_gpu: float


def _bar(p: Plan) -> TokenTime:
    per_token = 1e6 * p.microbatches / max(p.pp, 1) / p.tokens_per_gpu
    parts = {k: v * per_token for k, v in p.breakdown.items() if v * per_token > 0}
    kernel = sum(parts.values())
    step = 1e6 / p.tokens_per_s_per_gpu
    idle = max(0.0, step - kernel) if p.pp > 1 else 0.0
    if idle > 1e-9 * step:
        parts[IDLE] = idle
    ordered = dict(sorted(parts.items(), key=lambda kv: -kv[1]))
    return TokenTime(
        p.label, p.rank, (), ordered, kernel, step, max(0.0, kernel - step), idle, 1e3 * p.step_s, p.tokens_per_gpu
    )


def _key(t: TokenTime) -> tuple:
    return (round_sig(t.step_us), *sorted((k, round_sig(v)) for k, v in t.parts_us.items()))


def round_sig(x: float, digits: int = 3) -> float:
    """``x`` to ``digits`` significant figures (0 stays 0)."""
    return float(f"{x:.{digits - 1}e}")


def time_per_token(plans: list[Plan], max_plans: int = 4) -> list[TokenTime]:
    """The first ``max_plans`` distinct bars of ``plans`` (ranked, one phase), alike plans collapsed into the
    best-ranked of them. Raises ValueError for plans of both phases or a plan with no tokens or throughput."""
    if not isinstance(max_plans, int) or isinstance(max_plans, bool) or not 1 <= max_plans <= 64:
        raise ValueError(f"max_plans must be a whole number from 1 to 64, got {max_plans!r}")
    if len({p.phase for p in plans}) > 1:
        raise ValueError("plans of one phase only: decode steps are per output token, prefill per prompt token")
    bars: dict[tuple, TokenTime] = {}
    for p in plans:
        if not (p.tokens_per_gpu > 0 and p.tokens_per_s_per_gpu > 0 and p.step_s > 0):
            raise ValueError(f"plan {p.label} has no tokens per GPU, throughput or step to divide by")
        bar = _bar(p)
        key = _key(bar)
        if key in bars:
            first = bars[key]
            bars[key] = TokenTime(**{**first.__dict__, "alike": (*first.alike, bar.label)})
        elif len(bars) < max_plans:
            bars[key] = bar
    return list(bars.values())
