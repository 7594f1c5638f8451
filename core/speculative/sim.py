"""A real rejection-sampling simulator of speculative decoding (Leviathan et al. 2023): a target and a draft
distribution over a small vocabulary, drafts of gamma tokens accepted with probability min(1, p / q) and
the residual resampled, so the measured tokens per step can be set beside the closed form
(:func:`core.speculative.expected_tokens` at alpha = sum(min(p, q)))."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.speculative.closed_form import expected_tokens

__all__ = ["SimulationResult", "draft_acceptance", "simulate"]


def draft_acceptance(p, q) -> float:
    """Per-token acceptance of a draft q against a target p under rejection sampling:
    ``sum_x min(p(x), q(x))`` (one minus their total variation distance)."""
    p, q = _dist(p, "p"), _dist(q, "q")
    if p.shape != q.shape:
        raise ValueError("p and q must be distributions over the same vocabulary")
    return float(np.minimum(p, q).sum())


def _dist(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 1 or a.size < 2:
        raise ValueError(f"{name} must be a 1-D distribution over at least 2 tokens")
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1 + 1e-6) or not np.isclose(a.sum(), 1.0, atol=1e-6):
        raise ValueError(f"{name} must be non-negative and sum to 1")
    return a / a.sum()


@dataclass(frozen=True)
class SimulationResult:
    steps: int
    gamma: int
    tokens_per_step: float  # measured mean tokens emitted per verification step
    expected_tokens_per_step: float  # closed form at alpha = sum(min(p, q))
    alpha: float  # sum(min(p, q))
    measured_acceptance: float  # accepted draft tokens / proposed (until the first rejection)
    emitted: np.ndarray  # counts of each emitted token id
    tv_checkpoints: np.ndarray  # number of emitted tokens at each checkpoint
    tv_distance: np.ndarray  # total variation between the emitted histogram and p at each checkpoint

    @property
    def final_tv(self) -> float:
        return float(self.tv_distance[-1])


def _sample(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)


def simulate(p, q, gamma: int, steps: int, seed: int = 0) -> SimulationResult:
    """Speculative sampling, for real, over a vocabulary with target distribution ``p`` and draft
    distribution ``q`` (fixed across positions): each step the draft proposes ``gamma`` tokens from q;
    token x is accepted with probability ``min(1, p(x) / q(x))``; at the first rejection a token is
    drawn from ``norm(max(0, p - q))`` and the step ends; if all are accepted a bonus token is drawn
    from p. The emitted tokens are distributed exactly as p, and a step emits ``E(alpha, gamma)``
    tokens on average with ``alpha = sum(min(p, q))``. Vectorised over steps."""
    p, q = _dist(p, "p"), _dist(q, "q")
    if p.shape != q.shape:
        raise ValueError("p and q must be distributions over the same vocabulary")
    if not isinstance(gamma, (int, np.integer)) or not 1 <= gamma <= 64:
        raise ValueError("gamma must be a whole number in 1..64")
    if not isinstance(steps, (int, np.integer)) or not 1 <= steps <= 10_000_000:
        raise ValueError("steps must be a whole number in 1..10,000,000")
    rng = np.random.default_rng(seed)
    v = p.size
    q_cdf = np.cumsum(q)
    p_cdf = np.cumsum(p)
    residual = np.maximum(p - q, 0.0)
    res_sum = residual.sum()
    res_cdf = np.cumsum(residual / res_sum) if res_sum > 0 else p_cdf
    draft = _sample(q_cdf, rng.random((steps, gamma)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(q > 0, p / np.where(q > 0, q, 1.0), 0.0)
    accept = rng.random((steps, gamma)) < np.minimum(1.0, ratio[draft])
    all_ok = accept.all(axis=1)
    n_acc = np.where(all_ok, gamma, np.argmin(accept, axis=1))
    # the extra token: a residual sample at the first rejection, a bonus from p when all passed
    extra = np.where(all_ok, _sample(p_cdf, rng.random(steps)), _sample(res_cdf, rng.random(steps)))
    keep = np.arange(gamma)[None, :] < n_acc[:, None]
    emitted_tokens = np.concatenate([draft[keep], extra])
    counts = np.bincount(emitted_tokens, minlength=v)
    alpha = float(np.minimum(p, q).sum())
    # TV distance of the running histogram at log-spaced checkpoints of steps (in emission order)
    order_tokens = np.concatenate([np.where(keep, draft, -1), extra[:, None]], axis=1).ravel()
    order_tokens = order_tokens[order_tokens >= 0]
    marks = np.unique(np.round(np.geomspace(min(100, order_tokens.size), order_tokens.size, 12)).astype(int))
    tv = []
    for n in marks:
        h = np.bincount(order_tokens[:n], minlength=v) / n
        tv.append(0.5 * np.abs(h - p).sum())
    proposed = np.minimum(n_acc + 1, gamma).sum()
    return SimulationResult(
        steps=steps,
        gamma=gamma,
        tokens_per_step=float((n_acc + 1).mean()),
        expected_tokens_per_step=float(expected_tokens(alpha, gamma)),
        alpha=alpha,
        measured_acceptance=float(n_acc.sum() / proposed),
        emitted=counts,
        tv_checkpoints=marks,
        tv_distance=np.asarray(tv),
    )


# ------------------------------------------------------------------------- speedup against batch
