"""Expert-load imbalance: metrics, capacity overflow, bias-based balancing.

A MoE step waits for its most loaded GPU: every other GPU idles while the hottest expert finishes.
Everything here is numpy; loads are per expert (1-D) or per layer x expert (2-D).

DeepSeek's EPLB (``balanced_packing``, ``replicate_experts``, ``rebalance_experts``) lives in
``core.balance.eplb``, the CSV / Prometheus load parsers (``parse_loads_csv``, ``parse_prometheus_loads``)
in ``core.balance.loads_io`` and the synthetic load profiles (``zipf_loads`` ...) in ``core.balance.loads``;
all are re-exported here, so ``balance.rebalance_experts`` and every other old
name still work. ``gpu_loads`` and ``placement_plan`` (the per-GPU loads of an EPLB placement against
contiguous placement) stay here, with the metrics they use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core._util.checks import whole
from core.balance.eplb import balanced_packing, rebalance_experts, replicate_experts
from core.balance.loads import dirichlet_loads, hot_expert_loads, uniform_loads, zipf_loads
from core.balance.loads_io import MAX_EXPERTS, MAX_LOAD, parse_loads_csv, parse_prometheus_loads

__all__ = [
    "BIAS_SIM_MAX_SCORES",
    "BiasBalancing",
    "aux_balance_loss",
    "balanced_packing",
    "bias_balancing",
    "bias_steps_within_budget",
    "capacity_overflow",
    "capacity_per_expert",
    "coefficient_of_variation",
    "contiguous_gpu_loads",
    "dirichlet_loads",
    "drop_rate",
    "gpu_loads",
    "hot_expert_loads",
    "imbalance_ratio",
    "parse_loads_csv",
    "parse_prometheus_loads",
    "placement_plan",
    "rebalance_experts",
    "replicate_experts",
    "step_throughput_factor",
    "throughput_factor",
    "uniform_loads",
    "zipf_loads",
]


# ------------------------------------------------------------------------------------- metrics


def _loads(loads) -> np.ndarray:
    a = np.asarray(loads, dtype=np.float64)
    if a.ndim not in (1, 2) or a.shape[-1] < 1:
        raise ValueError("loads must be a 1-D array (experts) or 2-D array (layers x experts)")
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > MAX_LOAD):
        raise ValueError(f"loads must be finite, >= 0 and <= {MAX_LOAD:g}")
    return a


def imbalance_ratio(loads):
    """max / mean of the loads (per layer for a 2-D array); 1.0 is perfect balance.
    [0.10, 0.09, 0.11, 0.08, 0.45, 0.07, 0.05, 0.05] -> 0.45 / 0.125 = 3.6."""
    a = _loads(loads)
    mean = a.mean(axis=-1)
    if np.any(mean <= 0):
        raise ValueError("loads must not be all zero")
    out = a.max(axis=-1) / mean
    return float(out) if np.ndim(out) == 0 else out


def throughput_factor(loads):
    """mean / max: the fraction of the ideal throughput a step reaches when it waits for the most
    loaded unit (1 - this is the throughput lost to imbalance)."""
    r = imbalance_ratio(loads)
    return 1.0 / r if np.ndim(r) == 0 else 1.0 / np.asarray(r)


def coefficient_of_variation(loads):
    """Standard deviation / mean (population)."""
    a = _loads(loads)
    mean = a.mean(axis=-1)
    if np.any(mean <= 0):
        raise ValueError("loads must not be all zero")
    out = a.std(axis=-1) / mean
    return float(out) if np.ndim(out) == 0 else out


def aux_balance_loss(fractions, probabilities) -> float:
    """The auxiliary balance loss ``N * sum_i f_i P_i`` (Switch Transformer; f_i = fraction of tokens
    dispatched to expert i, P_i = mean router probability of expert i): 1 at perfect balance, N when
    one expert takes everything."""
    f = _loads(fractions)
    p = _loads(probabilities)
    if f.shape != p.shape or f.ndim != 1:
        raise ValueError("fractions and probabilities must be 1-D arrays of the same length")
    if not (np.isclose(f.sum(), 1.0, atol=1e-6) and np.isclose(p.sum(), 1.0, atol=1e-6)):
        raise ValueError("fractions and probabilities must each sum to 1")
    return float(f.size * np.dot(f, p))


def contiguous_gpu_loads(loads, num_gpus: int):
    """Per-GPU load when experts are placed contiguously, ``N / num_gpus`` per GPU (EP without EPLB)."""
    a = _loads(loads)
    n = a.shape[-1]
    if not isinstance(num_gpus, (int, np.integer)) or num_gpus < 1 or n % num_gpus:
        raise ValueError(f"num_gpus must divide the {n} experts")
    return a.reshape(*a.shape[:-1], num_gpus, n // num_gpus).sum(axis=-1)


def gpu_loads(weight, phy2log, logcnt, num_gpus: int) -> np.ndarray:
    """Per-GPU load of an EPLB placement: each physical replica carries ``load / replicas`` of its
    expert; GPU g holds replicas ``g * R/G ... (g+1) * R/G - 1``. Shapes: weight and logcnt
    ``[layers, experts]``, phy2log ``[layers, replicas]`` -> ``[layers, num_gpus]``."""
    w = np.atleast_2d(_loads(weight))
    num_gpus = whole("num_gpus", num_gpus, 1, MAX_EXPERTS)
    p2l = np.atleast_2d(np.asarray(phy2log))
    cnt = np.atleast_2d(np.asarray(logcnt, dtype=np.float64))
    if p2l.dtype.kind not in "iu" or p2l.ndim != 2 or p2l.shape[0] != w.shape[0] or p2l.shape[1] < 1:
        raise ValueError("phy2log must be whole numbers shaped [layers, replicas] like weight's layers")
    if np.any(p2l < 0) or np.any(p2l >= w.shape[-1]):
        raise ValueError(f"phy2log entries must be expert ids in 0..{w.shape[-1] - 1}")
    if cnt.shape != w.shape or not np.all(np.isfinite(cnt)) or np.any(cnt < 1):
        raise ValueError("logcnt must be replica counts >= 1 shaped like weight")
    per_replica = np.take_along_axis(w / cnt, p2l, axis=-1)
    r = p2l.shape[-1]
    if r % num_gpus:
        raise ValueError(f"num_gpus must divide the {r} replicas")
    return per_replica.reshape(p2l.shape[0], num_gpus, r // num_gpus).sum(axis=-1)


# ------------------------------------------------------------------------------- capacity factor


def capacity_per_expert(tokens, top_k: int, n_experts: int, capacity_factor: float):
    """Slots per expert: ``tokens x top_k / N x capacity_factor`` (GShard / Switch)."""
    n_experts = whole("n_experts", n_experts, 1, MAX_EXPERTS)
    if whole("top_k", top_k, 1, MAX_EXPERTS) > n_experts:
        raise ValueError("need 1 <= top_k <= n_experts")
    if not np.isfinite(capacity_factor) or not 0 < capacity_factor <= 1e6:
        raise ValueError("capacity_factor must be > 0 and <= 1,000,000")
    t = np.asarray(tokens, dtype=np.float64)
    if np.any(t < 0) or np.any(~np.isfinite(t)) or np.any(t > 1e15):
        raise ValueError("tokens must be finite, >= 0 and <= 1e15")
    out = t * top_k / n_experts * capacity_factor
    return float(out) if np.ndim(out) == 0 else out


def capacity_overflow(load_fractions, tokens: float, top_k: int, capacity_factor: float) -> np.ndarray:
    """Token-expert assignments each expert receives beyond its capacity (dropped: those tokens skip
    the expert and pass through the residual connection only).

    ``load_fractions`` are each expert's share of the ``tokens x top_k`` assignments (they sum to 1).
    8 experts, top-2, 512 tokens, capacity factor 1.25: capacity 160; an expert with 38% of the
    1,024 assignments receives 389 and overflows 229."""
    f = _loads(load_fractions)
    if f.ndim != 1 or not np.isclose(f.sum(), 1.0, atol=1e-6):
        raise ValueError("load_fractions must be a 1-D array summing to 1")
    cap = capacity_per_expert(tokens, top_k, f.size, capacity_factor)
    received = f * tokens * top_k
    return np.maximum(received - cap, 0.0)


# ----------------------------------------------------------------- auxiliary-loss-free balancing


@dataclass(frozen=True)
class BiasBalancing:
    imbalance: np.ndarray  # max/mean expert load at each step ([steps], or [speeds, steps])
    bias: np.ndarray  # final bias per expert ([experts], or [speeds, experts])
    loads: np.ndarray  # final step's assignments per expert (same leading shape as bias)


# router scores (tokens x experts, per step and speed) one bias_balancing run may draw: ~3 s on one core;
# DeepSeek-V3's 256 experts fit 400 steps of 512 tokens at three speeds, 5,000 experts 26 steps
BIAS_SIM_MAX_SCORES = 2e8


def bias_steps_within_budget(n_experts: int, tokens_per_step: int, n_speeds: int, steps: int) -> int:
    """The most of ``steps`` a :func:`bias_balancing` run of ``n_experts`` experts, ``tokens_per_step`` tokens and
    ``n_speeds`` update speeds can simulate within :data:`BIAS_SIM_MAX_SCORES` router scores (at least 1)."""
    n, t = whole("n_experts", n_experts, 1, MAX_EXPERTS), whole("tokens_per_step", tokens_per_step, 1, 1_000_000)
    per_step = n * t * whole("n_speeds", n_speeds, 1, 16)
    return max(1, min(whole("steps", steps, 1, 100_000), int(BIAS_SIM_MAX_SCORES // per_step)))


def bias_balancing(
    n_experts: int,
    top_k: int,
    *,
    steps: int = 200,
    tokens_per_step: int = 1024,
    update_speed=0.001,
    skew: float = 1.0,
    seed: int = 0,
) -> BiasBalancing:
    """DeepSeek-V3's auxiliary-loss-free balancing, simulated: each token picks its top-k experts by
    ``affinity + b_i``; after each step ``b_i -= u`` for an overloaded expert and ``+= u`` for an
    underloaded one (the bias steers the choice only; the gate weights use the raw affinity).

    The router is skewed: expert i's affinity is ``sigmoid(mu_i + noise)`` with ``mu_i`` from a Zipf
    profile of strength ``skew``. Too small a ``u`` converges slowly; too large a ``u`` oscillates.
    ``update_speed`` may be an array: every speed then sees the same tokens (common random numbers),
    and the results carry a leading axis per speed."""
    n = whole("n_experts", n_experts, 1, MAX_EXPERTS)
    if not 1 <= top_k <= n:
        raise ValueError(f"top_k must be in 1..{n}")
    if not 1 <= steps <= 100_000 or not 1 <= tokens_per_step <= 1_000_000:
        raise ValueError("steps must be in 1..100,000 and tokens_per_step in 1..1,000,000")
    u = np.atleast_1d(np.asarray(update_speed, dtype=np.float32))
    if np.any(~np.isfinite(u)) or np.any(u < 0) or np.any(u > 1) or u.ndim != 1 or u.size > 16:
        raise ValueError("update_speed must be within 0 and 1 (at most 16 speeds)")
    if steps * tokens_per_step * n * u.size > BIAS_SIM_MAX_SCORES:
        raise ValueError(
            f"simulation too large: steps x tokens per step x experts x speeds must stay within "
            f"{BIAS_SIM_MAX_SCORES:,.0f} router scores (bias_steps_within_budget gives the steps that fit)"
        )
    if not np.isfinite(skew) or not 0 <= skew <= 10:
        raise ValueError("skew must be within 0 and 10")
    rng = np.random.default_rng(seed)
    mu = (0.5 * skew * np.log(zipf_loads(n, 1.0, seed=seed) * n)).astype(np.float32)
    b = np.zeros((u.size, n), dtype=np.float32)
    history = np.empty((u.size, steps))
    counts = np.zeros((u.size, n))
    rows = np.arange(u.size)[:, None]
    for s in range(steps):
        affinity = 1.0 / (1.0 + np.exp(-(mu + rng.standard_normal((tokens_per_step, n), dtype=np.float32))))
        scores = affinity[None, :, :] + b[:, None, :]  # [speeds, tokens, experts]
        chosen = np.argpartition(-scores, top_k - 1, axis=2)[:, :, :top_k].reshape(u.size, -1)
        counts = np.zeros((u.size, n))
        np.add.at(counts, (np.broadcast_to(rows, chosen.shape), chosen), 1.0)
        mean = counts.mean(axis=1, keepdims=True)
        history[:, s] = counts.max(axis=1) / mean[:, 0]
        b -= u[:, None] * np.sign(counts - mean).astype(np.float32)
    if np.ndim(update_speed) == 0:
        return BiasBalancing(history[0], b[0].astype(np.float64), counts[0])
    return BiasBalancing(history, b.astype(np.float64), counts)


# -------------------------------------------------------------------------- page-level summaries


def drop_rate(load_fractions, tokens: float, top_k: int, capacity_factors) -> np.ndarray:
    """Share of the ``tokens x top_k`` assignments dropped for being over capacity, per capacity factor."""
    cfs = np.atleast_1d(np.asarray(capacity_factors, dtype=np.float64))
    top_k = whole("top_k", top_k, 1, MAX_EXPERTS)
    t = np.asarray(tokens, dtype=np.float64)
    if t.ndim or not np.isfinite(t) or not 0 <= t <= 1e15:
        raise ValueError("tokens must be one finite number in 0..1e15")
    total = float(t) * top_k
    if total <= 0:
        raise ValueError("tokens x top_k must be > 0")
    return np.array([capacity_overflow(load_fractions, tokens, top_k, cf).sum() / total for cf in cfs])


def step_throughput_factor(gpu_loads_by_layer) -> float:
    """A forward pass runs its MoE layers one after another, each waiting for its busiest GPU:
    ``sum_l mean_l / sum_l max_l`` of the per-GPU loads (1 - this = throughput lost to imbalance)."""
    a = np.atleast_2d(_loads(gpu_loads_by_layer))
    peak = a.max(axis=-1).sum()
    if peak <= 0:
        raise ValueError("loads must not be all zero")
    return float(a.mean(axis=-1).sum() / peak)


@dataclass(frozen=True)
class PlacementPlan:
    """Per-GPU loads of an EP group before (contiguous placement) and after EPLB."""

    phy2log: np.ndarray
    logcnt: np.ndarray
    gpu_before: np.ndarray  # [layers, gpus]
    gpu_after: np.ndarray  # [layers, gpus]
    throughput_before: float
    throughput_after: float


def placement_plan(weight, num_gpus: int, num_nodes: int, num_groups: int, redundant: int) -> PlacementPlan:
    """EPLB with ``redundant`` extra slots (a multiple of ``num_gpus``) against contiguous placement."""
    w = np.atleast_2d(_loads(weight))
    n = w.shape[-1]
    num_gpus, num_nodes = whole("num_gpus", num_gpus, 1, MAX_EXPERTS), whole("num_nodes", num_nodes, 1, MAX_EXPERTS)
    num_groups, redundant = (
        whole("num_groups", num_groups, 1, MAX_EXPERTS),
        whole("redundant", redundant, 0, MAX_EXPERTS),
    )
    if n % num_gpus:
        raise ValueError(f"EP size {num_gpus} must divide the {n} experts")
    if redundant % num_gpus:
        raise ValueError(f"redundant experts ({redundant}) must be a multiple of the EP size {num_gpus}")
    groups = num_groups if n % num_groups == 0 else 1
    nodes = num_nodes if num_gpus % num_nodes == 0 else 1
    phy2log, _, logcnt = rebalance_experts(w, n + redundant, groups, nodes, num_gpus)
    before = contiguous_gpu_loads(w, num_gpus)
    after = gpu_loads(w, phy2log, logcnt, num_gpus)
    return PlacementPlan(phy2log, logcnt, before, after, step_throughput_factor(before), step_throughput_factor(after))
