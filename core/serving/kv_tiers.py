"""Where a request's cached prefix comes from (issue 23): GPU memory, host DRAM or a distributed KV store, what
loading it costs against recomputing it, and how many sessions' prefixes each tier keeps.

A workload with prefix reuse (``Workload.prefix_reuse``) finds ``cached_prompt_tokens`` of each prompt in a
prefix cache. Engines keep that cache in tiers (SGLang HiCache, vLLM's CPU offload and LMCache, Mooncake's
store): HBM first, then pinned host DRAM read over the GPU's host link (``GPUSpec.host_link``), then a
distributed store read over the scale-out NIC. Per tier, on one GPU of the layout (its share of the prefix: the
layers of one pipeline stage, the heads of its attention-TP rank):

- ``load_s``: ``latency + prefix bytes / (link GB/s x LINK_EFF)`` (HBM: already resident, 0);
- ``sessions_per_gpu``: how many sessions' prefixes the tier's capacity per GPU holds (HBM: the KV budget left
  beside the weights; host: ``host_gb_per_node`` shared by the node's GPUs; store: ``store_gb_per_gpu``);

and ``recompute_s``: prefilling the cached tokens instead (one step of the step-time model). A tier pays when
``load_s < recompute_s``. Efficiencies and latencies are stated assumptions, not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

from core import memory, perf
from core._util.checks import amount
from core.deployment.bundle import Deployment
from core.memory.host_tables import host_link

__all__ = ["LINK_EFF", "TIER_LATENCY_S", "KVTier", "prefix_tiers"]

# assumption: a prefix moves as large contiguous KV blocks (pages of 16-64 tokens x layers), near the link's rate
LINK_EFF = 0.8
# assumption: a host-DRAM fetch starts in ~10 us (a CUDA copy launch); a store fetch in ~100 us (an RDMA request)
TIER_LATENCY_S = {"hbm": 0.0, "host": 10e-6, "store": 100e-6}


@dataclass(frozen=True)
class KVTier:
    """One tier for one workload on one GPU (see the module docstring)."""

    tier: str
    where: str
    capacity_bytes_per_gpu: float
    link_gbps: float  # per direction into the GPU (0 for HBM: resident)
    load_s: float
    sessions_per_gpu: float


def prefix_tiers(
    d: Deployment,
    *,
    kv_budget_bytes_per_gpu: float,
    host_gb_per_node: float = 1024.0,
    store_gb_per_gpu: float = 0.0,
) -> tuple[tuple[KVTier, ...], float]:
    """The tiers (HBM, host DRAM, and a store where ``store_gb_per_gpu`` > 0) for the cached prefix of ``d``'s
    workload on one GPU of its layout, and the seconds recomputing it takes (``recompute_s``; 0 without reuse)."""
    model, gpu, layout, prec, workload = d.model, d.gpu, d.layout, d.precision, d.workload
    budget = amount("kv_budget_bytes_per_gpu", kv_budget_bytes_per_gpu, 0.0, 1e15)
    host_gb = amount("host_gb_per_node", host_gb_per_node, 0.0, 1e7)
    store_gb = amount("store_gb_per_gpu", store_gb_per_gpu, 0.0, 1e9)
    cached = workload.cached_prompt_tokens
    tp, pp = layout.attention_tp, layout.pp
    # one GPU's share of a prefix: its attention-TP rank's heads of every layer, over the pipeline stages
    everything = range(model.num_layers)
    prefix = float(
        memory.kv_bytes_per_sequence_on_gpu(model, max(cached, 1), prec.kv_cache, tp, everything, layout.dcp)
    )
    prefix /= pp
    name, host_gbps = host_link(gpu)
    tiers = [("hbm", "HBM: the KV budget beside the weights (resident)", budget, 0.0)]
    tiers.append(("host", f"host DRAM over {name}", host_gb * 1e9 / max(1, gpu.gpus_per_node), host_gbps))
    if store_gb > 0:
        tiers.append(
            (
                "store",
                f"distributed KV store over {gpu.scale_out_link or 'the NIC'}",
                store_gb * 1e9,
                gpu.scale_out_bw_gbps,
            )
        )
    out = []
    for tier, where, capacity, gbps in tiers:
        load = 0.0 if tier == "hbm" or not cached else TIER_LATENCY_S[tier] + prefix / (gbps * 1e9 * LINK_EFF)
        out.append(KVTier(tier, where, capacity, gbps, load, capacity / prefix if cached else 0.0))
    recompute = 0.0
    if cached:
        cfg = perf.StepConfig("prefill", cached / tp, cached, redundant_experts=d.redundant_experts)
        recompute = perf.step_time(d, cfg).latency_s
    return tuple(out), recompute
