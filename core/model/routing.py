"""MoE routing arithmetic: tokens per expert, the hottest expert, assignments per GPU under EP and the
distinct experts a step touches, uniform or skewed.

Compute sparsity is not memory sparsity: a token uses ``top_k`` of ``N`` experts, but a decode step over
``T`` tokens touches ``N (1 - (1 - k/N)^T)`` of them, and each expert GEMM sees only ``T k / N`` tokens, far
below a GPU's ridge point. Vectorised over numpy arrays of token counts.
"""

from __future__ import annotations

import numpy as np

from core._util.checks import nonneg_array, scalar_or_array, whole

__all__ = [
    "MAX_EXPERTS",
    "MAX_TOKENS",
    "check_top_k",
    "expected_experts_touched",
    "expected_experts_touched_skewed",
    "hottest_expert_tokens",
    "token_counts",
    "tokens_per_expert",
    "tokens_per_gpu_under_ep",
    "zipf_probs",
]


MAX_TOKENS = 1e15  # token counts beyond this are not a serving step (and would overflow the products)
MAX_EXPERTS = 100_000


def token_counts(tokens, what: str = "token counts"):
    """Token counts (a number or an array): finite, >= 0 and <= MAX_TOKENS."""
    return nonneg_array(what, tokens, MAX_TOKENS)


def check_top_k(top_k, n_experts) -> None:
    """top_k and n_experts whole numbers in 1..MAX_EXPERTS, top_k <= n_experts."""
    whole("n_experts", n_experts, 1, MAX_EXPERTS)
    whole("top_k", top_k, 1, MAX_EXPERTS)
    if top_k > n_experts:
        raise ValueError(f"top_k ({top_k}) cannot exceed n_experts ({n_experts})")


def tokens_per_expert(tokens, top_k: int, n_experts: int):
    """Mean tokens per expert under uniform routing: ``tokens x top_k / n_experts``.
    Mixtral (8 experts, top-2) at 32 tokens: 8; Qwen3-235B (128, top-8) at 128: 8."""
    check_top_k(top_k, n_experts)
    return scalar_or_array(token_counts(tokens) * top_k / n_experts)


def hottest_expert_tokens(tokens, top_k: int, n_experts: int, imbalance_ratio: float = 1.0):
    """Tokens of the most loaded expert when the load's max/mean ratio is ``imbalance_ratio``
    (capped at every token: an expert can get each token at most once)."""
    check_top_k(top_k, n_experts)
    if not np.isfinite(imbalance_ratio) or not 1 <= imbalance_ratio <= 1e6:
        raise ValueError(f"imbalance_ratio must be >= 1 (max / mean) and <= 1,000,000, got {imbalance_ratio}")
    t = token_counts(tokens)
    return scalar_or_array(np.minimum(t * top_k / n_experts * imbalance_ratio, t))


def tokens_per_gpu_under_ep(tokens, top_k: int, ep: int):
    """Token-expert assignments landing on one GPU of an EP group (uniform routing): ``T k / EP``."""
    whole("ep", ep, 1, MAX_EXPERTS)
    whole("top_k", top_k, 1, MAX_EXPERTS)
    return scalar_or_array(token_counts(tokens) * top_k / ep)


def expected_experts_touched(tokens, top_k: int, n_experts: int):
    """Distinct experts a step over ``tokens`` tokens touches per layer, uniform independent routing:
    ``N (1 - (1 - k/N)^T)``. A token picks k distinct experts, so it misses a given one with
    probability ``1 - k/N``. DeepSeek-V3 at one token: 8 of 256; at thousands: all 256."""
    check_top_k(top_k, n_experts)
    return scalar_or_array(n_experts * touched_share(token_counts(tokens), top_k, n_experts))


def touched_share(tokens, top_k: int, n_experts: int):
    """The share of the ``n_experts`` experts a step over ``tokens`` tokens touches, ``1 - (1 - k/N)^T``
    (:func:`expected_experts_touched` / N), unchecked: for callers whose counts come from a validated model and
    deployment (the step-time kernels call it once per MoE layer cost)."""
    return 1.0 - (1.0 - top_k / n_experts) ** tokens


def zipf_probs(n_experts: int, s: float = 1.0) -> np.ndarray:
    """Routing probabilities ``p_i ~ 1 / i^s`` (a skewed router; s = 0 is uniform)."""
    whole("n_experts", n_experts, 1, MAX_EXPERTS)
    if not np.isfinite(s) or not 0 <= s <= 10:
        raise ValueError("the Zipf exponent s must be within 0 and 10")
    w = 1.0 / np.arange(1, n_experts + 1, dtype=np.float64) ** s
    return w / w.sum()


def expected_experts_touched_skewed(tokens, top_k: int, probs) -> np.ndarray | float:
    """Distinct experts touched when expert i is picked by a fraction ``min(1, k p_i)`` of the tokens
    (``probs`` sums to 1): ``sum_i 1 - (1 - min(1, k p_i))^T``. Uniform ``p`` gives the closed form
    above; skew concentrates tokens on fewer experts, so fewer are touched."""
    p = np.asarray(probs, dtype=np.float64)
    if (
        p.ndim != 1
        or p.size < 1
        or not np.all(np.isfinite(p))
        or np.any(p < 0)
        or np.any(p > 1 + 1e-6)
        or not np.isclose(p.sum(), 1.0)
    ):
        raise ValueError("probs must be a 1-D array of non-negative probabilities summing to 1")
    check_top_k(top_k, p.size)
    t = token_counts(tokens)
    q = np.minimum(1.0, top_k * p)
    out = np.sum(1.0 - (1.0 - q[:, None]) ** np.atleast_1d(t)[None, :], axis=0)
    return float(out[0]) if np.ndim(tokens) == 0 else out.reshape(np.shape(tokens))
