"""Disaggregated serving: prefill and decode pool sizes, the KV cache moved between them, and where
disaggregation starts to pay against one colocated pool.

Per-GPU rates come from the best layout of each phase (:mod:`core.serving.layout`, the step-time model).
A pool is built from whole replicas of its layout. Colocated serving runs both phases on one pool
and pays an interference slowdown (a stated, editable assumption: chunked prefill steals decode
steps and the other way round).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from core import memory
from core._util.checks import amount, whole
from core.deployment.bundle import Deployment
from core.deployment.specs import Workload
from core.model import ModelSpec
from core.serving import cost, layout

if TYPE_CHECKING:
    from core.catalog import Catalog

__all__ = ["PoolSizing", "Traffic", "break_even_rate", "kv_bytes_per_request", "link_utilisation", "size_pools"]


@dataclass(frozen=True)
class Traffic:
    """Requests per minute with mean prompt and output lengths, the latency targets, and the share of each prompt
    a warm prefix cache serves (``prefix_reuse``: those tokens are not prefilled)."""

    requests_per_min: float
    input_len: int
    output_len: int
    ttft_s: float = 3.0
    tpot_s: float = 0.100
    prefix_reuse: float = 0.0

    def __post_init__(self):
        if not (math.isfinite(self.requests_per_min) and 0 < self.requests_per_min <= 1e8):
            raise ValueError("requests_per_min must be between 0 and 100,000,000")
        if not (1 <= self.input_len <= 10_000_000 and 1 <= self.output_len <= 10_000_000):
            raise ValueError("input_len and output_len must be 1-10,000,000 tokens")
        if not (0 < self.ttft_s <= 3600 and 0 < self.tpot_s <= 60):
            raise ValueError("ttft_s must be in (0, 3600] and tpot_s in (0, 60]")
        if not (isinstance(self.prefix_reuse, (int, float)) and 0 <= self.prefix_reuse <= 0.99):
            raise ValueError(f"prefix_reuse must be in [0, 0.99], got {self.prefix_reuse!r}")

    @property
    def workload(self) -> Workload:
        """One request as the planner's workload (its prefix reuse included)."""
        return Workload(batch=1, input_len=self.input_len, output_len=self.output_len, prefix_reuse=self.prefix_reuse)

    @property
    def computed_input_tokens_per_s(self) -> float:
        """Prompt tokens prefill computes per second: each prompt less what the prefix cache serves."""
        return self.requests_per_min / 60.0 * self.workload.computed_prompt_tokens

    @property
    def input_tokens_per_s(self) -> float:
        return self.requests_per_min / 60.0 * self.input_len

    @property
    def output_tokens_per_s(self) -> float:
        return self.requests_per_min / 60.0 * self.output_len


def kv_bytes_per_request(model: ModelSpec, input_len: int, kv_dtype: str = "bf16") -> float:
    """KV cache a prefill hands to decode for one prompt (all layers; MLA's latent, GQA's KV heads).
    Llama-3 70B, 2,048 tokens, bf16: 2 x 80 x 8 x 2,048 x 128 x 2 B = 0.67 GB."""
    return float(memory.kv_bytes_per_sequence(model, input_len, kv_dtype))


def link_utilisation(bytes_per_s: float, links: int, link_gbps: float) -> float:
    """Share of ``links`` links of ``link_gbps`` GB/s (per direction) that a KV stream occupies."""
    whole("links", links, 1, 1_000_000)
    amount("link_gbps (GB/s)", link_gbps, 0.001, 1e9)
    if not (isinstance(bytes_per_s, (int, float)) and math.isfinite(bytes_per_s) and 0 <= bytes_per_s <= 1e30):
        raise ValueError(f"bytes_per_s must be a finite number in [0, 1e30], got {bytes_per_s!r}")
    return bytes_per_s / (links * link_gbps * 1e9)


@dataclass(frozen=True)
class PoolSizing:
    prefill_plan: layout.Plan
    decode_plan: layout.Plan
    prefill_gpus: int
    decode_gpus: int
    colocated_gpus: int
    kv_bytes_per_s: float
    kv_bytes_per_request: float
    concurrent_sequences: float
    # GPUs the traffic keeps busy at each plan's throughput, before rounding up to whole replicas
    prefill_gpus_needed: float = 0.0
    decode_gpus_needed: float = 0.0
    colocated_gpus_needed: float = 0.0

    @property
    def prefill_utilisation(self) -> float:
        """Share of the prefill pool the traffic keeps busy (the rest is rounding up to whole replicas)."""
        return self.prefill_gpus_needed / self.prefill_gpus

    @property
    def decode_utilisation(self) -> float:
        return self.decode_gpus_needed / self.decode_gpus

    @property
    def colocated_utilisation(self) -> float:
        return self.colocated_gpus_needed / self.colocated_gpus

    @property
    def disaggregated_gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus

    @property
    def ratio(self) -> float:
        """Prefill GPUs per decode GPU."""
        return self.prefill_gpus / self.decode_gpus


def _replica(plan: layout.Plan) -> int:
    return plan.layout.gpus_per_stage * plan.layout.pp


def _round_up(gpus: float, unit: int) -> int:
    return max(unit, math.ceil(gpus / unit - 1e-9) * unit)


def size_pools(
    d: Deployment,
    traffic: Traffic,
    *,
    catalog: Catalog,
    interference: float = 0.3,
    decode_speedup: float = 1.0,
    plans: tuple | None = None,
) -> PoolSizing:
    """Pool sizes for ``traffic`` with the best prefill and decode layouts of ``d``'s model found on its cluster
    (the building block: one node, a rack, ...) at its precision, memory assumptions and serving stack (``plans``:
    the (prefill, decode) plans already found; else :func:`core.serving.layout.recommend` with the ``catalog``'s
    error tiers). ``decode_speedup`` (speculative decoding) divides the decode work; ``interference`` inflates the
    colocated pool's work."""
    if not (0 <= interference <= 10):
        raise ValueError("interference must be within 0 and 10 (0 = none, 0.3 = 30% slower)")
    if not (0 < decode_speedup <= 20):
        raise ValueError("decode_speedup must be within 0 and 20")
    model, prec, search_cluster = d.model, d.precision, d.cluster
    if plans is None:
        search = d.with_(workload=traffic.workload)
        pre = layout.recommend(search, "prefill", catalog=catalog, target_s=traffic.ttft_s, max_plans=1)
        dec = layout.recommend(search, "decode", catalog=catalog, target_s=traffic.tpot_s, max_plans=1)
        if not pre or not dec:
            missing = "prefill" if not pre else "decode"
            raise ValueError(
                f"no {missing} layout of {model.name} works on {search_cluster.total_gpus} x "
                f"{search_cluster.gpu.name} within the targets (see the Layouts page)"
            )
        plans = (pre[0], dec[0])
    pre_plan, dec_plan = plans
    p_rate = pre_plan.tokens_per_s_per_gpu
    d_rate = dec_plan.tokens_per_s_per_gpu * decode_speedup
    p_need = traffic.computed_input_tokens_per_s / p_rate
    d_need = traffic.output_tokens_per_s / d_rate
    prefill = _round_up(p_need, _replica(pre_plan))
    decode = _round_up(d_need, _replica(dec_plan))
    colo_need = (p_need + d_need) * (1.0 + interference)
    colo = _round_up(colo_need, _replica(dec_plan))
    kv_req = kv_bytes_per_request(model, traffic.input_len, prec.kv_cache)
    return PoolSizing(
        pre_plan,
        dec_plan,
        prefill,
        decode,
        colo,
        traffic.requests_per_min / 60.0 * kv_req,
        kv_req,
        traffic.output_tokens_per_s * dec_plan.step_s / decode_speedup,
        p_need,
        d_need,
        colo_need,
    )


def break_even_rate(
    d: Deployment, traffic: Traffic, rates, *, catalog: Catalog, **kwargs
) -> tuple[np.ndarray, np.ndarray, float | None]:
    """GPUs needed colocated and disaggregated at each request rate (per minute), and the lowest rate from
    which disaggregation needs no more GPUs than colocation (None if it never does in ``rates``); the pools'
    plans are :func:`size_pools`'s at the first rate's traffic (``kwargs``: its other options)."""
    rates = np.asarray(rates, dtype=np.float64)
    base = size_pools(d, traffic, catalog=catalog, **kwargs)
    plans = (base.prefill_plan, base.decode_plan)
    colo, disagg = [], []
    for r in rates:
        t = Traffic(
            float(r), traffic.input_len, traffic.output_len, traffic.ttft_s, traffic.tpot_s, traffic.prefix_reuse
        )
        s = size_pools(d, t, catalog=catalog, plans=plans, **kwargs)
        colo.append(s.colocated_gpus)
        disagg.append(s.disaggregated_gpus)
    colo_a, dis_a = np.asarray(colo), np.asarray(disagg)
    ok = dis_a <= colo_a
    # the break-even is where disaggregation stays at least as cheap for every higher rate
    even = None
    for i in range(len(rates)):
        if ok[i:].all():
            even = float(rates[i])
            break
    return colo_a, dis_a, even


def dollars(gpus: float, price_per_gpu_hour: float, tokens_per_s: float) -> float:
    return cost.dollars_per_million_tokens(gpus, price_per_gpu_hour, tokens_per_s)
