"""Expert-load imbalance: distributions, metrics, capacity overflow, EPLB, bias-based balancing.

A MoE step waits for its most loaded GPU: every other GPU idles while the hottest expert finishes.
Everything here is numpy; loads are per expert (1-D) or per layer x expert (2-D).

``rebalance_experts`` follows DeepSeek's open-source Expert Parallelism Load Balancer (EPLB,
github.com/deepseek-ai/EPLB): same arguments, same outputs, same results on the same inputs (the
tests compare with outputs recorded from the reference). It is written anew for numpy and vectorised
over layers: the greedy packing runs one vector step per item instead of a Python loop per layer and
item. Among items of exactly equal load (replicas of one expert always are) the reference inherits
the order of ``torch.sort``'s unstable introsort on the CPU; ``core._introsort`` reproduces that
order, so the outputs are identical, ``log2phy`` included.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass

import numpy as np

from core._checks import whole
from core._introsort import introsort_order_desc

__all__ = [
    "BiasBalancing",
    "aux_balance_loss",
    "balanced_packing",
    "bias_balancing",
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

MAX_EXPERTS = 100_000
MAX_LAYERS = 10_000
MAX_CELLS = 10_000_000  # layers x experts of one load table (80 MB of float64)
MAX_REPLICAS = 2 * MAX_EXPERTS  # physical expert slots of one EPLB placement
MAX_LOAD = 1e30  # a load (token count or fraction) beyond this is not a measurement; float32 sums stay finite


# ------------------------------------------------------------------------------ distributions


def _weight32(weight, name: str = "weight") -> np.ndarray:
    """A 2-D ``[rows, items]`` load table, finite, >= 0 and <= MAX_LOAD, as float32 (what EPLB sorts)."""
    w = np.asarray(weight, dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array [rows, items], got {w.ndim} dimension(s)")
    if w.size > MAX_CELLS:
        raise ValueError(f"{name} has {w.size:,} entries; the limit is {MAX_CELLS:,}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or np.any(w > MAX_LOAD):
        raise ValueError(f"{name} must be finite, >= 0 and <= {MAX_LOAD:g}")
    return w.astype(np.float32)


def _n(n_experts: int) -> int:
    if not isinstance(n_experts, (int, np.integer)) or not 1 <= n_experts <= MAX_EXPERTS:
        raise ValueError(f"n_experts must be a whole number in 1..{MAX_EXPERTS:,}")
    return int(n_experts)


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
    if not 1 <= layers <= MAX_LAYERS:
        raise ValueError(f"layers must be in 1..{MAX_LAYERS:,}")
    if n * layers > MAX_CELLS:
        raise ValueError(f"layers x experts ({layers:,} x {n:,}) exceeds {MAX_CELLS:,}")
    out = np.random.default_rng(seed).dirichlet(np.full(n, concentration), size=layers)
    return out[0] if layers == 1 else out


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
    num_gpus = whole("num_gpus", num_gpus)
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
    n_experts = whole("n_experts", n_experts)
    if whole("top_k", top_k) > n_experts:
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


# ------------------------------------------------------------------------------------------ EPLB


def balanced_packing(weight, num_packs: int) -> tuple[np.ndarray, np.ndarray]:
    """Pack the n items of each row into ``num_packs`` packs of exactly ``n / num_packs`` items,
    greedily: heaviest item first, into the lightest pack that still has room (the first such pack on
    a tie). Vectorised over rows. Returns ``(pack_index, rank_in_pack)``, both ``[rows, n]``."""
    w = _weight32(weight)
    rows, n = w.shape
    if isinstance(num_packs, bool) or not isinstance(num_packs, (int, np.integer)) or num_packs < 1 or n % num_packs:
        raise ValueError(f"num_packs ({num_packs}) must divide the {n} items")
    per_pack = n // num_packs
    if per_pack == 1:
        return np.broadcast_to(np.arange(n, dtype=np.int64), (rows, n)).copy(), np.zeros((rows, n), dtype=np.int64)
    # heaviest first; equal weights in the order the reference's torch.sort (an introsort) leaves them
    order = np.stack([introsort_order_desc(row) for row in w])
    pack_index = np.full((rows, n), -1, dtype=np.int64)
    rank_in_pack = np.full((rows, n), -1, dtype=np.int64)
    pack_weight = np.zeros((rows, num_packs), dtype=np.float32)
    pack_items = np.zeros((rows, num_packs), dtype=np.int64)
    r = np.arange(rows)
    for j in range(n):
        item = order[:, j]
        candidates = np.where(pack_items < per_pack, pack_weight, np.inf)
        pack = np.argmin(candidates, axis=-1)
        pack_index[r, item] = pack
        rank_in_pack[r, item] = pack_items[r, pack]
        pack_weight[r, pack] += w[r, item]
        pack_items[r, pack] += 1
    return pack_index, rank_in_pack


def replicate_experts(weight, num_physical: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Give the ``num_physical - n`` redundant slots, one at a time, to the expert with the highest
    load per replica. Returns ``(phy2log [rows, num_physical], rank [rows, num_physical],
    logcnt [rows, n])``."""
    w = _weight32(weight)
    rows, n = w.shape
    num_physical = whole("num_physical", num_physical, 1, MAX_REPLICAS)
    extra = num_physical - n
    if extra < 0:
        raise ValueError(f"num_physical ({num_physical}) must be >= the {n} logical experts")
    phy2log = np.broadcast_to(np.arange(num_physical, dtype=np.int64), (rows, num_physical)).copy()
    rank = np.zeros((rows, num_physical), dtype=np.int64)
    logcnt = np.ones((rows, n), dtype=np.int64)
    r = np.arange(rows)
    for i in range(n, num_physical):
        hottest = np.argmax(w / logcnt.astype(np.float32), axis=-1)
        phy2log[:, i] = hottest
        rank[:, i] = logcnt[r, hottest]
        logcnt[r, hottest] += 1
    return phy2log, rank, logcnt


def _inverse(perm: np.ndarray) -> np.ndarray:
    inv = np.empty_like(perm)
    np.put_along_axis(inv, perm, np.broadcast_to(np.arange(perm.shape[1], dtype=perm.dtype), perm.shape), axis=1)
    return inv


def _rebalance_hierarchical(weight: np.ndarray, num_physical: int, num_groups: int, num_nodes: int, num_gpus: int):
    layers, n = weight.shape
    group_size = n // num_groups
    groups_per_node = num_groups // num_nodes
    per_gpu = num_physical // num_gpus
    # 1. pack expert groups onto nodes, balancing the nodes' loads
    group_load = weight.reshape(layers, num_groups, group_size).sum(axis=-1, dtype=np.float32)
    group_pack, group_rank = balanced_packing(group_load, num_nodes)
    log2mlog = (
        ((group_pack * groups_per_node + group_rank) * group_size)[:, :, None] + np.arange(group_size, dtype=np.int64)
    ).reshape(layers, n)
    mlog2log = _inverse(log2mlog)
    # 2. replicate experts inside each node ("mlog": node-major logical order)
    mlog_load = np.take_along_axis(weight, mlog2log, axis=-1).reshape(layers * num_nodes, n // num_nodes)
    phy2mlog, phyrank, mlogcnt = replicate_experts(mlog_load, num_physical // num_nodes)
    # 3. pack the node's physical replicas onto its GPUs
    phy_load = np.take_along_axis(mlog_load / mlogcnt.astype(np.float32), phy2mlog, axis=-1)
    pack, rank_in_pack = balanced_packing(phy_load, num_gpus // num_nodes)
    phy2pphy = pack * per_gpu + rank_in_pack
    pphy2phy = _inverse(phy2pphy)
    pphy2mlog = np.take_along_axis(phy2mlog, pphy2phy, axis=-1)
    offsets = np.arange(0, n, n // num_nodes, dtype=np.int64).reshape(1, -1, 1)
    pphy2mlog = (pphy2mlog.reshape(layers, num_nodes, -1) + offsets).reshape(layers, -1)
    pphy2log = np.take_along_axis(mlog2log, pphy2mlog, axis=-1)
    pphyrank = np.take_along_axis(phyrank, pphy2phy, axis=-1).reshape(layers, -1)
    logcnt = np.take_along_axis(mlogcnt.reshape(layers, -1), log2mlog, axis=-1)
    return pphy2log, pphyrank, logcnt


def rebalance_experts(weight, num_replicas: int, num_groups: int, num_nodes: int, num_gpus: int):
    """DeepSeek's EPLB: replicate hot experts into redundant slots and place the replicas on GPUs.

    Parameters: ``weight [layers, num_logical_experts]`` (load statistics), ``num_replicas`` (physical
    expert slots, a multiple of ``num_gpus``), ``num_groups`` (expert groups), ``num_nodes``,
    ``num_gpus`` (a multiple of ``num_nodes``).

    Hierarchical policy when ``num_groups % num_nodes == 0``: pack groups to nodes, replicate within
    nodes, pack replicas to GPUs; global policy otherwise (one group, one node).

    Returns ``phy2log [layers, num_replicas]`` (logical expert of each slot; GPU g holds slots
    ``g*R/G ... (g+1)*R/G - 1``), ``log2phy [layers, num_logical_experts, max_replicas]`` (the slots
    of each expert, padded with -1) and ``logcnt [layers, num_logical_experts]`` (replicas per expert).
    """
    w = np.asarray(weight)
    if w.ndim != 2 or w.shape[0] < 1 or w.shape[1] < 1:
        raise ValueError("weight must be a 2-D array [layers, experts]")
    if not np.all(np.isfinite(w.astype(np.float64))) or np.any(w < 0):
        raise ValueError("weight must be finite and >= 0")
    w = _weight32(w)
    layers, n = w.shape
    for name, v in (
        ("num_replicas", num_replicas),
        ("num_groups", num_groups),
        ("num_nodes", num_nodes),
        ("num_gpus", num_gpus),
    ):
        whole(name, v, 1, MAX_REPLICAS)
    if num_replicas < n:
        raise ValueError(f"num_replicas ({num_replicas}) must be >= the {n} logical experts")
    if num_replicas % num_gpus:
        raise ValueError(f"num_replicas ({num_replicas}) must be a multiple of num_gpus ({num_gpus})")
    if num_gpus % num_nodes:
        raise ValueError(f"num_gpus ({num_gpus}) must be a multiple of num_nodes ({num_nodes})")
    w32 = w.astype(np.float32)
    hierarchical = num_groups % num_nodes == 0
    groups, nodes = (num_groups, num_nodes) if hierarchical else (1, 1)
    if n % groups:
        raise ValueError(f"num_groups ({num_groups}) must divide the {n} experts")
    if hierarchical and (num_replicas // nodes) < (n // nodes):
        raise ValueError("not enough replicas per node")
    phy2log, phyrank, logcnt = _rebalance_hierarchical(w32, num_replicas, groups, nodes, num_gpus)
    max_cnt = int(logcnt.max())
    log2phy = np.full((layers, n * max_cnt), -1, dtype=np.int64)
    np.put_along_axis(
        log2phy,
        phy2log * max_cnt + phyrank,
        np.broadcast_to(np.arange(num_replicas, dtype=np.int64), (layers, num_replicas)),
        axis=-1,
    )
    return phy2log, log2phy.reshape(layers, n, max_cnt), logcnt


# ----------------------------------------------------------------- auxiliary-loss-free balancing


@dataclass(frozen=True)
class BiasBalancing:
    imbalance: np.ndarray  # max/mean expert load at each step ([steps], or [speeds, steps])
    bias: np.ndarray  # final bias per expert ([experts], or [speeds, experts])
    loads: np.ndarray  # final step's assignments per expert (same leading shape as bias)


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
    n = _n(n_experts)
    if not 1 <= top_k <= n:
        raise ValueError(f"top_k must be in 1..{n}")
    if not 1 <= steps <= 100_000 or not 1 <= tokens_per_step <= 1_000_000:
        raise ValueError("steps must be in 1..100,000 and tokens_per_step in 1..1,000,000")
    u = np.atleast_1d(np.asarray(update_speed, dtype=np.float32))
    if np.any(~np.isfinite(u)) or np.any(u < 0) or np.any(u > 1) or u.ndim != 1 or u.size > 16:
        raise ValueError("update_speed must be within 0 and 1 (at most 16 speeds)")
    if steps * tokens_per_step * n * u.size > 2e9:
        raise ValueError("simulation too large: reduce steps, tokens per step or experts")
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


# -------------------------------------------------------------------------------- user input

_MAX_TEXT = 5_000_000


def parse_loads_csv(text: str) -> np.ndarray:
    """Per-expert loads from CSV: one row per layer, one column per expert, numbers >= 0. A header
    row of non-numbers is skipped. Errors name the line and the problem."""
    if not isinstance(text, str):
        raise ValueError("CSV input must be text")
    if len(text) > _MAX_TEXT:
        raise ValueError(f"CSV is {len(text):,} characters; the limit is {_MAX_TEXT:,}")
    rows: list[list[float]] = []
    reader = csv.reader(io.StringIO(text, newline=None))  # universal newlines: a lone CR ends a line too
    width = None
    for line_no, row in _csv_rows(reader):
        cells = [c.strip() for c in row]
        if not cells or all(c == "" for c in cells):
            continue
        try:
            values = [float(c) for c in cells]
        except ValueError:
            if not rows and width is None:
                continue  # a header
            bad = next(c for c in cells if not _is_number(c))
            raise ValueError(f"line {line_no}: {bad[:40]!r} is not a number") from None
        if any(not math.isfinite(v) or v < 0 for v in values):
            raise ValueError(f"line {line_no}: loads must be finite numbers >= 0")
        if width is None:
            width = len(values)
            if width < 2:
                raise ValueError(f"line {line_no}: need at least 2 experts (columns)")
            if width > MAX_EXPERTS:
                raise ValueError(f"line {line_no}: more than {MAX_EXPERTS:,} experts")
        elif len(values) != width:
            raise ValueError(f"line {line_no}: {len(values)} columns, but the first row has {width}")
        rows.append(values)
        if len(rows) > MAX_LAYERS:
            raise ValueError(f"more than {MAX_LAYERS:,} layers (rows)")
    if not rows:
        raise ValueError("no rows of numbers found")
    a = np.asarray(rows, dtype=np.float64)
    if np.any(a.sum(axis=1) <= 0):
        line = int(np.argmax(a.sum(axis=1) <= 0)) + 1
        raise ValueError(f"row {line} of numbers is all zero")
    return a


def _csv_rows(reader):
    """(line number, row) pairs; a CSV syntax error becomes a ValueError naming the line."""
    line_no = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise ValueError(f"line {reader.line_num}: not valid CSV ({e})") from None
        line_no += 1
        yield line_no, row


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


_PROM_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)(\s+\S+)?$")
_PROM_LABEL = re.compile(r'(?P<k>[a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"(?P<v>(?:[^"\\]|\\.)*)"')


def parse_prometheus_loads(text: str, metric: str | None = None) -> tuple[np.ndarray, str]:
    """Per-layer, per-expert loads from a Prometheus text scrape: samples of one metric carrying an
    ``expert`` label (``expert_id`` / ``expert_idx`` also accepted) and optionally a ``layer`` label.
    ``metric`` picks the metric; by default the first one with an expert label. Returns
    ``(loads [layers, experts], metric name)``; errors name the line and the problem."""
    if not isinstance(text, str):
        raise ValueError("the scrape must be text")
    if len(text) > _MAX_TEXT:
        raise ValueError(f"scrape is {len(text):,} characters; the limit is {_MAX_TEXT:,}")
    samples: dict[tuple[int, int], float] = {}
    chosen = metric
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _PROM_LINE.match(line)
        if not m:
            raise ValueError(f"line {line_no}: not a Prometheus sample ({line[:60]!r})")
        labels = {lm.group("k"): lm.group("v") for lm in _PROM_LABEL.finditer(m.group("labels") or "")}
        expert_key = next((k for k in ("expert", "expert_id", "expert_idx") if k in labels), None)
        if expert_key is None:
            continue
        name = m.group("name")
        if chosen is None:
            chosen = name
        if name != chosen:
            continue
        try:
            expert = int(labels[expert_key])
            layer = int(labels.get("layer", labels.get("layer_id", "0")))
            value = float(m.group("value"))
        except ValueError:
            raise ValueError(f"line {line_no}: expert/layer labels must be integers and the value a number") from None
        if not (0 <= expert < MAX_EXPERTS and 0 <= layer < MAX_LAYERS):
            raise ValueError(f"line {line_no}: expert or layer index out of range")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"line {line_no}: load must be a finite number >= 0")
        samples[(layer, expert)] = samples.get((layer, expert), 0.0) + value
    if not samples:
        raise ValueError(
            "no per-expert samples found"
            + (f" for metric {metric!r}" if metric else "")
            + ': expected lines like  name{layer="3",expert="17"} 1234'
        )
    layers = sorted({k[0] for k in samples})
    n = max(k[1] for k in samples) + 1
    if len(layers) * n > MAX_CELLS:
        raise ValueError(
            f"{len(layers):,} layers x {n:,} experts is more than {MAX_CELLS:,} loads; "
            "scrape fewer layers or check the expert labels"
        )
    out = np.zeros((len(layers), n))
    index = {layer: i for i, layer in enumerate(layers)}
    for (layer, expert), v in samples.items():
        out[index[layer], expert] = v
    if np.any(out.sum(axis=1) <= 0):
        raise ValueError("a layer's loads are all zero")
    return out, chosen or ""


# -------------------------------------------------------------------------- page-level summaries


def drop_rate(load_fractions, tokens: float, top_k: int, capacity_factors) -> np.ndarray:
    """Share of the ``tokens x top_k`` assignments dropped for being over capacity, per capacity factor."""
    cfs = np.atleast_1d(np.asarray(capacity_factors, dtype=np.float64))
    top_k = whole("top_k", top_k)
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
    num_gpus, num_nodes = whole("num_gpus", num_gpus), whole("num_nodes", num_nodes)
    num_groups, redundant = whole("num_groups", num_groups), whole("redundant", redundant, 0)
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
