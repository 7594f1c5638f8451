"""DeepSeek's Expert Parallelism Load Balancer (EPLB): replicate hot experts into redundant slots and
place the replicas on GPUs.

Source: DeepSeek's open-source EPLB, github.com/deepseek-ai/EPLB. ``rebalance_experts`` follows it:
same arguments, same outputs, same results on the same inputs (the tests compare with outputs recorded
from the reference). It is written anew for numpy and vectorised over layers: the greedy packing runs
one vector step per item instead of a Python loop per layer and item. Among items of exactly equal load
(replicas of one expert always are) the reference inherits the order of ``torch.sort``'s unstable
introsort on the CPU; ``core.balance._introsort`` reproduces that order, so the outputs are identical,
``log2phy`` included.

Loads are per layer x expert (2-D, ``[rows, items]``). The per-GPU loads of a placement and the
before / after comparison (``gpu_loads``, ``placement_plan``) are in ``core.balance``.
"""

from __future__ import annotations

import numpy as np

from core._util.checks import whole
from core.balance._introsort import introsort_order_desc
from core.balance.loads_io import MAX_CELLS, MAX_EXPERTS, MAX_LOAD

__all__ = ["MAX_REPLICAS", "balanced_packing", "rebalance_experts", "replicate_experts"]

MAX_REPLICAS = 2 * MAX_EXPERTS  # physical expert slots of one EPLB placement


# ------------------------------------------------------------------------------------------ EPLB


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
