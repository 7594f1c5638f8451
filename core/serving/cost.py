"""Cost: dollars per GPU-hour into dollars per million tokens, and the yearly value of a speedup."""

from __future__ import annotations

import math

from core._util.checks import amount, no_overflow

__all__ = ["HOURS_PER_YEAR", "dollars_per_million_tokens", "yearly_gpu_cost", "yearly_saving"]

HOURS_PER_YEAR = 8760.0


def _positive(name: str, x: float) -> float:
    return amount(name, x, 0.0, math.inf, open_lo=True)


def dollars_per_million_tokens(gpus: float, price_per_gpu_hour: float, tokens_per_s: float) -> float:
    """``gpus x $/GPU-hour / (tokens/s x 3600) x 1e6``: what a million tokens cost on a pool that
    produces ``tokens_per_s`` while fully busy."""
    amount("price_per_gpu_hour", price_per_gpu_hour, 0.0, math.inf)
    return no_overflow(
        "the cost per million tokens",
        _positive("gpus", gpus) * price_per_gpu_hour / (_positive("tokens_per_s", tokens_per_s) * 3600.0) * 1e6,
    )


def yearly_saving(gpus: float, price_per_gpu_hour: float, speedup: float) -> float:
    """Dollars a year a speedup saves: without it the same traffic needs ``speedup`` times the GPUs,
    i.e. ``gpus x (speedup - 1)`` more, at ``price x 8,760 h``. (The chapter's 2.52x on 2 x H100 at
    $3/GPU-hour: 3.04 GPUs avoided = $79.9K a year; its "$52K" is the cost of the 2 GPUs themselves.)"""
    s = _positive("speedup", speedup)
    amount("price_per_gpu_hour", price_per_gpu_hour, 0.0, math.inf)
    return no_overflow("the yearly saving", _positive("gpus", gpus) * (s - 1.0) * price_per_gpu_hour * HOURS_PER_YEAR)


def yearly_gpu_cost(gpus: float, price_per_gpu_hour: float) -> float:
    """Dollars a year ``gpus`` GPUs cost at ``price_per_gpu_hour`` around the clock (8,760 h): what a
    speedup saves when it lets a pool shrink by that many whole GPUs."""
    amount("price_per_gpu_hour", price_per_gpu_hour, 0.0, math.inf)
    gpus = amount("gpus", gpus, 0.0, 1e12)
    return no_overflow("the yearly GPU cost", gpus * price_per_gpu_hour * HOURS_PER_YEAR)
