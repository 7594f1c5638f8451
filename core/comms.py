"""Communication volumes and times: MoE all-to-all (dispatch / combine), TP all-reduce, PP send.

Bytes are per GPU unless a name says otherwise; times in seconds. A link moves ``bytes /
(bandwidth x efficiency)`` plus a fixed latency per call; scale-up (NVLink, Infinity Fabric) and
scale-out (InfiniBand, RoCE) run in parallel, so an all-to-all takes as long as its slower part.

The functions in ``__all__`` check their arguments (users and pages call them with raw numbers) and then call
the formula itself: a ``*_unchecked`` function, public but not in ``__all__``, for callers whose inputs come
from a validated deployment (the step model, :mod:`core.perf`), which would only check them again.
"""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass

import numpy as np

from core._util.checks import amount, no_overflow, nonneg, whole

__all__ = [
    "AllToAllSplit",
    "alltoall_bytes_per_layer",
    "alltoall_split",
    "alltoall_time_s",
    "bin_touch_probability",
    "fp8_scale_bytes",
    "link_time_s",
    "pp_send_bytes",
    "ring_allreduce_bytes",
    "ring_allreduce_time_s",
]


def _rate(bw_gbps: float, efficiency: float) -> float:
    """Achieved bytes per second of a link, ``bw_gbps x 1e9 x efficiency``."""
    return bw_gbps * 1e9 * efficiency


def _checked_link(bw_gbps, efficiency, what: str = "bandwidth") -> tuple[float, float]:
    """``(bandwidth, efficiency)`` validated, their :func:`_rate` able to move bytes."""
    bw = amount(f"{what} (GB/s)", bw_gbps, 0, 1e9, open_lo=True)
    eff = amount(f"{what} efficiency", efficiency, 0, 1.5, open_lo=True)
    if not _rate(bw, eff) > 0:
        raise ValueError(f"{what} x efficiency is too small to move any bytes")
    return bw, eff


def _quiet(x):
    """Silence numpy's overflow warnings while an array result is computed (``_finite`` then refuses
    it); Python floats never warn."""
    return contextlib.nullcontext() if isinstance(x, float) else np.errstate(over="ignore", invalid="ignore")


def alltoall_bytes_per_layer(tokens, d_model: int, top_k: int, dispatch_bytes: float = 1, combine_bytes: float = 2):
    """Dispatch + combine bytes of one MoE layer: every token's hidden state goes to each of its
    ``top_k`` experts and comes back, ``tokens x d_model x top_k x (dispatch_bytes + combine_bytes)``.

    DeepSeek-V3 (d = 7168, k = 8), 4,096 tokens, FP8 both ways: 4096 x 7168 x 8 x 2 = 470 MB; 27.2 GB over its
    58 MoE layers (61 layers, the first 3 dense; the blog's "29 GB over 61" counts the dense ones). 32 x 4,096 tokens, d = 4,096, k = 2, BF16 both ways: 131072 x 4096 x 2 x 4 = 4.3 GB."""
    d_model, top_k = whole("d_model", d_model), whole("top_k", top_k)
    per_elem = amount("dispatch_bytes", dispatch_bytes, 0, 64) + amount("combine_bytes", combine_bytes, 0, 64)
    t = nonneg("tokens", tokens)
    with _quiet(t):
        return no_overflow("all-to-all bytes", t * d_model * top_k * per_elem)


def bin_touch_probability(n_experts: int, top_k: int, bins: int, n_groups: int = 1, topk_groups: int = 1) -> float:
    """Probability that one token's ``top_k`` experts touch a given bin of ``n_experts / bins``
    consecutive experts (a GPU or a node of an EP group), under uniform routing limited to
    ``topk_groups`` of ``n_groups`` expert groups (DeepSeek-V3: 4 of 8), as DeepEP's tests route.

    The k experts are distinct: a bin of e experts in a pool of P is missed with probability
    ``C(P - e, k) / C(P, k)``. When bins are finer than groups a bin is reachable only if its group is
    chosen (``topk_groups / n_groups``) and the pool is the chosen groups' experts; when a bin holds m
    whole groups, the number j of its groups chosen is hypergeometric and the bin is missed with
    probability ``C(P - j G, k) / C(P, k)`` for G experts per group. Without group limits
    (or groups that do not align with bins) routing is uniform over all experts.

    DeepSeek-V3 (256 experts, k = 8, 4 of 8 groups) on 4 nodes: a node holds 2 groups, missed when
    neither is chosen (C(6,4)/C(8,4) = 15/70) or when none of the 8 experts lands in its chosen
    group (j = 1: C(96,8)/C(128,8)); per GPU of EP32: 0.5 x (1 - C(120,8)/C(128,8)) = 0.2061."""
    for name, v in (
        ("n_experts", n_experts),
        ("top_k", top_k),
        ("bins", bins),
        ("n_groups", n_groups),
        ("topk_groups", topk_groups),
    ):
        whole(name, v, 1, 100_000)
    return bin_touch_probability_unchecked(int(n_experts), int(top_k), int(bins), int(n_groups), int(topk_groups))


@functools.lru_cache(maxsize=4096)
def bin_touch_probability_unchecked(n_experts: int, top_k: int, bins: int, n_groups: int, topk_groups: int) -> float:
    """:func:`bin_touch_probability` for whole-number arguments, their types unchecked: for callers whose counts
    come from a validated model and layout. How the counts relate (bins and groups dividing the experts, k and the
    groups per token in range) is checked here, once per distinct call (cached: the layout search asks for the same
    few (experts, k, bins, groups) thousands of times), as a model's groups are not compared where it is read."""
    if n_experts < 1 or top_k < 1 or bins < 1 or n_experts % bins:
        raise ValueError("bins must divide n_experts, and n_experts and top_k must be >= 1")
    if top_k > n_experts:
        raise ValueError("top_k must be <= n_experts")
    if n_groups < 1 or topk_groups < 1 or topk_groups > n_groups or n_experts % n_groups:
        raise ValueError("topk_groups must be in [1, n_groups] and n_groups must divide n_experts")
    per_bin = n_experts // bins
    if n_groups == 1 or topk_groups == n_groups or (bins % n_groups and n_groups % bins):
        return 1.0 - math.comb(n_experts - per_bin, top_k) / math.comb(n_experts, top_k)
    per_group = n_experts // n_groups
    pool = topk_groups * per_group
    k = min(top_k, pool)
    if bins % n_groups == 0:  # bins inside one group
        return topk_groups / n_groups * (1.0 - math.comb(pool - per_bin, k) / math.comb(pool, k))
    m = n_groups // bins  # whole groups per bin
    miss = 0.0
    for j in range(0, min(m, topk_groups) + 1):
        p_j = math.comb(m, j) * math.comb(n_groups - m, topk_groups - j) / math.comb(n_groups, topk_groups)
        miss += p_j * math.comb(pool - j * per_group, k) / math.comb(pool, k)
    return 1.0 - miss


def fp8_scale_bytes(d_model: int, block: int = 128) -> float:
    """Extra bytes per FP8-dispatched token copy: one fp32 scale per ``block`` channels (DeepEP)."""
    return fp8_scale_bytes_unchecked(whole("d_model", d_model), whole("block", block))


def fp8_scale_bytes_unchecked(d_model: int, block: int = 128) -> float:
    """:func:`fp8_scale_bytes`, unchecked: for callers with validated inputs (a model's hidden size)."""
    return 4.0 * -(-d_model // block)


@dataclass(frozen=True)
class AllToAllSplit:
    """Where one GPU's all-to-all bytes go: staying on the GPU, over the scale-up domain, over scale-out."""

    local: float
    scale_up: float
    scale_out: float

    @property
    def total(self) -> float:
        return self.local + self.scale_up + self.scale_out


def alltoall_split(bytes_per_gpu: float, ep: int, domain_gpus: int) -> AllToAllSplit:
    """Split an EP rank's all-to-all bytes by destination under uniform routing over ``ep`` ranks:
    ``1/ep`` stays local, ``(D - 1)/ep`` crosses the scale-up domain of ``D = min(ep, domain)`` GPUs,
    the rest ``(ep - D)/ep`` crosses the scale-out network."""
    ep, domain_gpus = whole("ep", ep), whole("domain_gpus", domain_gpus)
    s = alltoall_split_unchecked(float(nonneg("bytes_per_gpu", bytes_per_gpu)), ep, domain_gpus)
    no_overflow("scale-up bytes", s.scale_up)
    no_overflow("scale-out bytes", s.scale_out)
    return s


def alltoall_split_unchecked(bytes_per_gpu: float, ep: int, domain_gpus: int) -> AllToAllSplit:
    """:func:`alltoall_split`, unchecked: for callers with validated inputs (a deployment's layout and domain)."""
    b, d = bytes_per_gpu, min(ep, domain_gpus)
    return AllToAllSplit(b / ep, b * (d - 1) / ep, b * (ep - d) / ep)


def link_time_s(nbytes, bw_gbps: float, efficiency: float = 1.0, latency_s: float = 0.0):
    """``latency + bytes / (bandwidth x efficiency)`` (bandwidth in GB/s, per direction)."""
    bw, eff = _checked_link(bw_gbps, efficiency)
    lat = amount("latency_s", latency_s, 0, 1e6)
    nb = nonneg("bytes", nbytes)
    with _quiet(nb):
        return no_overflow("link time", link_time_s_unchecked(nb, bw, eff, lat))


def link_time_s_unchecked(nbytes, bw_gbps: float, efficiency: float = 1.0, latency_s: float = 0.0):
    """:func:`link_time_s`, unchecked: for callers with validated inputs (a GPU's links, a step's bytes)."""
    return latency_s + nbytes / _rate(bw_gbps, efficiency)


def alltoall_time_s(
    split: AllToAllSplit,
    scale_up_gbps: float,
    scale_out_gbps: float,
    *,
    scale_up_eff: float = 1.0,
    scale_out_eff: float = 1.0,
    latency_s: float = 0.0,
) -> float:
    """One all-to-all call: its fixed latency plus the slower of the scale-up and scale-out transfers
    (they proceed in parallel; the local share is a memory copy, ignored)."""
    su, so = nonneg("scale-up bytes", split.scale_up), nonneg("scale-out bytes", split.scale_out)
    (up_bw, up_eff), (out_bw, out_eff) = (
        _checked_link(scale_up_gbps, scale_up_eff, "scale-up"),
        _checked_link(scale_out_gbps, scale_out_eff, "scale-out"),
    )
    lat = amount("latency_s", latency_s, 0, 1e6)
    t = alltoall_time_s_unchecked(
        AllToAllSplit(split.local, su, so),
        up_bw,
        out_bw,
        scale_up_eff=up_eff,
        scale_out_eff=out_eff,
        latency_s=lat,
    )
    return float(no_overflow("all-to-all time", t))


def alltoall_time_s_unchecked(
    split: AllToAllSplit,
    scale_up_gbps: float,
    scale_out_gbps: float,
    *,
    scale_up_eff: float = 1.0,
    scale_out_eff: float = 1.0,
    latency_s: float = 0.0,
) -> float:
    """:func:`alltoall_time_s`, unchecked: for callers with validated inputs (a GPU's links, a deployment's split)."""
    up, out = _rate(scale_up_gbps, scale_up_eff), _rate(scale_out_gbps, scale_out_eff)
    return latency_s + max(split.scale_up / up, split.scale_out / out)


def ring_allreduce_bytes(nbytes, ranks: int):
    """Bytes each rank sends in a ring all-reduce of ``nbytes``: ``2 (n - 1) / n x bytes``."""
    ranks = whole("ranks", ranks)
    nb = nonneg("bytes", nbytes)
    with _quiet(nb):
        return no_overflow("all-reduce bytes", 2.0 * (ranks - 1) / ranks * nb)


def ring_allreduce_time_s(nbytes, ranks: int, bw_gbps: float, efficiency: float = 1.0, latency_s: float = 0.0):
    """A ring all-reduce over ``ranks`` GPUs on one link type: ``2 (n - 1)`` steps of latency plus the
    ring bytes over the bandwidth; 0 for one rank."""
    ranks = whole("ranks", ranks)
    if ranks == 1:
        return 0.0 if np.ndim(nbytes) == 0 else np.zeros_like(nonneg("bytes", nbytes))
    lat = amount("latency_s", latency_s, 0, 1e6)
    return link_time_s(ring_allreduce_bytes(nbytes, ranks), bw_gbps, efficiency, 2 * (ranks - 1) * lat)


def pp_send_bytes(tokens, d_model: int, act_bytes: float = 2.0):
    """Activations one pipeline stage sends to the next per step: ``tokens x d_model x bytes``."""
    d_model, act = whole("d_model", d_model), amount("act_bytes", act_bytes, 0, 64)
    t = nonneg("tokens", tokens)
    with _quiet(t):
        return no_overflow("pipeline send bytes", pp_send_bytes_unchecked(t, d_model, act))


def pp_send_bytes_unchecked(tokens, d_model: int, act_bytes: float = 2.0):
    """:func:`pp_send_bytes`, unchecked: for callers with validated inputs (a model's width, a step's tokens)."""
    return tokens * d_model * act_bytes
