"""Synthetic expert loads: the load profiles the Balance page offers when no measured loads are given.

Every function returns load fractions (each row sums to 1): ``uniform_loads``, ``zipf_loads``,
``hot_expert_loads`` and ``dirichlet_loads`` one profile for one layer (Dirichlet for several), and
``synthetic_loads`` a ``[layers, experts]`` table of one profile, seeded and reproducible. Loads read from
user text (CSV, a Prometheus scrape) are ``core.balance.loads_io``'s.
"""

from __future__ import annotations

import numpy as np

from core._util.checks import whole
from core.balance.loads_io import MAX_CELLS, MAX_EXPERTS, MAX_LAYERS

__all__ = ["PROFILES", "dirichlet_loads", "hot_expert_loads", "synthetic_loads", "uniform_loads", "zipf_loads"]

# the synthetic profiles synthetic_loads draws, by name
PROFILES = ("dirichlet", "zipf", "hot", "uniform")


def _n(n_experts: int) -> int:
    return whole("n_experts", n_experts, 1, MAX_EXPERTS)


def _layers(n: int, layers: int) -> int:
    layers = whole("layers", layers, 1, MAX_LAYERS)
    if n * layers > MAX_CELLS:
        raise ValueError(f"layers x experts ({layers:,} x {n:,}) exceeds {MAX_CELLS:,}")
    return layers


def uniform_loads(n_experts: int) -> np.ndarray:
    """Every expert gets 1/N of the assignments."""
    n = _n(n_experts)
    return np.full(n, 1.0 / n)


def zipf_loads(n_experts: int, s: float = 1.0, *, seed: int | None = None) -> np.ndarray:
    """Load fractions ~ 1 / rank^s (s = 0: uniform), optionally shuffled over expert ids by ``seed``."""
    n = _n(n_experts)
    if not np.isfinite(s) or s < 0 or s > 10:
        raise ValueError("Zipf exponent s must be within 0 and 10")
    w = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    if seed is not None:
        w = np.random.default_rng(seed).permutation(w)
    return w / w.sum()


def hot_expert_loads(n_experts: int, n_hot: int = 1, hot_share: float = 0.38) -> np.ndarray:
    """``n_hot`` experts share ``hot_share`` of the assignments equally, the rest share the remainder."""
    n = _n(n_experts)
    if not isinstance(n_hot, (int, np.integer)) or not 1 <= n_hot < n:
        raise ValueError(f"n_hot must be a whole number in 1..{n - 1}")
    if not np.isfinite(hot_share) or not 0 < hot_share < 1:
        raise ValueError("hot_share must be between 0 and 1 (exclusive)")
    w = np.full(n, (1.0 - hot_share) / (n - n_hot))
    w[:n_hot] = hot_share / n_hot
    return w


def dirichlet_loads(n_experts: int, concentration: float = 1.0, *, seed: int = 0, layers: int = 1) -> np.ndarray:
    """Random load fractions from Dirichlet(concentration): large = near uniform, small = skewed."""
    n = _n(n_experts)
    if not np.isfinite(concentration) or not 1e-3 <= concentration <= 1e6:
        raise ValueError("concentration must be within 0.001 and 1,000,000")
    layers = _layers(n, layers)
    out = np.random.default_rng(seed).dirichlet(np.full(n, concentration), size=layers)
    return out[0] if layers == 1 else out


def synthetic_loads(
    profile: str,
    n_experts: int,
    layers: int,
    *,
    s: float = 0.3,
    concentration: float = 2.0,
    n_hot: int = 1,
    hot_share: float = 0.38,
    seed: int = 0,
) -> np.ndarray:
    """A ``[layers, experts]`` table of load fractions (each row sums to 1) of one of ``PROFILES``.

    ``zipf``: every layer its own shuffle of 1 / rank^s, layer i seeded ``seed + i``; ``dirichlet``: one
    Dirichlet(concentration) draw per layer from ``seed``; ``hot``: ``n_hot`` experts with ``hot_share``
    of the assignments, the same in every layer; ``uniform``: 1/N everywhere.
    """
    n = _n(n_experts)
    layers = _layers(n, layers)
    if profile == "zipf":
        return np.stack([zipf_loads(n, s, seed=seed + i) for i in range(layers)])
    if profile == "dirichlet":
        return np.atleast_2d(dirichlet_loads(n, concentration, seed=seed, layers=layers))
    if profile == "hot":
        return np.tile(hot_expert_loads(n, n_hot, hot_share), (layers, 1))
    if profile == "uniform":
        return np.tile(uniform_loads(n), (layers, 1))
    raise ValueError(f"unknown load profile {profile!r}; one of {', '.join(PROFILES)}")
