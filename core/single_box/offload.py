"""Single-box planning: routed experts in host RAM beside one or two PCIe GPUs, or one unified pool.

The llama.cpp way (``--n-cpu-moe N``, also ktransformers): attention, shared experts, dense layers, router,
norms, embeddings and the KV cache stay on the GPU; the routed experts of the first ``N`` layers (the
flag counts all layers, dense ones included) live in host RAM and are computed there. A unified-memory
machine (Apple M-series, AMD Strix Halo, NVIDIA GB10) holds everything in one pool its GPU reads.

Decode is memory-bound at batch 1, so each part costs the bytes it reads per token over the bandwidth
it reads them at, and the parts run one after the other (layer by layer):

    t_token = bytes_on_gpu_per_token / (gpu_bw x eff_gpu) + bytes_on_host_per_token / (host_bw x eff_host)

where host bytes per token = offloaded MoE layers x top_k x expert params x bytes per weight (the router
picks top_k of each layer's experts). Prompt processing is compute-bound instead: the host experts are
either computed by the CPU (``cpu_tflops``) or, as llama.cpp does for batches of 32+ tokens, streamed
over PCIe to the GPU once per micro-batch; the faster path is reported.

The efficiencies are stated assumptions (``core.hardware.offload_efficiency.OffloadEfficiency``); ``host_bandwidth`` is fitted to the
ktransformers DeepSeek-V3 measurement in ``catalogs/offload_cases.yaml`` and the page shows
the error on every case.

The factors' values, each with its provenance, are in ``catalogs/offload_efficiency.yaml``. The box itself (model,
host, GPU, quantisation, context, factors) is one value, :class:`core.single_box.box.Box`; ``Placement``
lives in ``core.single_box.placement``, the what-ifs (``speed_vs_offload``, ``single_box_options``,
``upgrades``) in ``core.single_box.options`` and the published-case check (``validate_cases``) in
``core.single_box.cases``; they import from here, never the other way round.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core import memory
from core.deployment.specs import Precision
from core.hardware import GPUSpec, precision_support
from core.model import ModelSpec, params
from core.single_box.box import Box
from core.single_box.placement import GB, Placement

__all__ = [
    "Placement",
    "best_n_cpu_moe",
    "bytes_per_token",
    "layer_map",
    "moe_layer_indices",
    "offloaded_moe_layers",
    "placement",
    "text_weights_bytes",
]


def moe_layer_indices(model: ModelSpec) -> list[int]:
    """Indices of the layers that hold routed experts."""
    if not model.is_moe:
        return []
    no_moe = set(model.dense_layers) | set(model.ffn_free_layers)
    return [i for i in range(model.num_layers) if i not in no_moe]


def offloaded_moe_layers(model: ModelSpec, n_cpu_moe: int) -> int:
    """MoE layers whose routed experts go to the host under ``--n-cpu-moe n_cpu_moe`` (the first
    ``n_cpu_moe`` layers, dense layers included in the count)."""
    if n_cpu_moe < 0:
        raise ValueError(f"n_cpu_moe must be >= 0, got {n_cpu_moe}")
    return sum(1 for i in moe_layer_indices(model) if i < n_cpu_moe)


@dataclass(frozen=True)
class _Bytes:
    """Weight bytes of one model under one precision (text model; a vision tower is left out)."""

    non_routed: float  # everything that stays on the GPU whatever N is
    routed_per_layer: float  # all routed experts of one MoE layer
    active_non_routed_per_token: float  # non-routed weights one token reads (embedding row excluded)
    routed_per_layer_per_token: float  # top_k experts of one layer
    active_non_routed_params: float
    routed_per_layer_per_token_params: float


def _bytes(model: ModelSpec, precision: Precision) -> _Bytes:
    comp = memory.weight_bytes_by_component(model, precision)
    dt = memory.component_dtypes(precision)
    n_moe = max(model.num_moe_layers, 1)
    routed_total = comp["routed_experts"]
    non_routed = sum(v for k, v in comp.items() if k not in ("routed_experts", "vision"))
    act = params.active_breakdown(model, "excl_input_embedding").as_dict()
    act_nr_params = sum(v for k, v in act.items() if k not in ("routed_experts", "vision", "mtp", "embedding"))
    act_nr_bytes = sum(
        act[k] * memory.bytes_per_param(dt[k]) for k in act if k not in ("routed_experts", "vision", "mtp", "embedding")
    )
    top_k = model.moe.top_k if model.moe else 0
    per_tok_params = top_k * params.expert_params(model) if model.moe else 0
    return _Bytes(
        non_routed=non_routed,
        routed_per_layer=routed_total / n_moe if model.is_moe else 0.0,
        active_non_routed_per_token=act_nr_bytes,
        routed_per_layer_per_token=per_tok_params * memory.bytes_per_param(dt["routed_experts"]),
        active_non_routed_params=act_nr_params,
        routed_per_layer_per_token_params=per_tok_params,
    )


def text_weights_bytes(model: ModelSpec, precision: Precision | str) -> float:
    """All weights of the text model (a vision tower left out) under ``precision``, scales included."""
    b = _bytes(model, Precision.of(precision))
    return b.non_routed + model.num_moe_layers * b.routed_per_layer


def bytes_per_token(model: ModelSpec, precision: Precision | str, offloaded_layers: int) -> tuple[float, float]:
    """Weight bytes one decoded token reads (GPU side, host side) with ``offloaded_layers`` MoE layers'
    routed experts on the host. The KV cache a step reads is added by ``placement``."""
    p = Precision.of(precision)
    b = _bytes(model, p)
    n_moe = model.num_moe_layers
    if not (0 <= offloaded_layers <= n_moe):
        raise ValueError(f"offloaded_layers must be 0-{n_moe}, got {offloaded_layers}")
    gpu = b.active_non_routed_per_token + (n_moe - offloaded_layers) * b.routed_per_layer_per_token
    return gpu, offloaded_layers * b.routed_per_layer_per_token


def _kv_bytes(model: ModelSpec, context_len: int, kv_dtype: str) -> float:
    """The cache one sequence stores (what the GPU or pool must hold)."""
    return float(memory.kv_bytes_per_sequence(model, context_len, kv_dtype))


def _kv_read_bytes(model: ModelSpec, context_len: int, kv_dtype: str) -> float:
    """The cache one decode step reads for one sequence (the mixers' own account: a sparse layer reads its
    top-k tokens and scans its index keys, a sliding window its window), which is what a token's time pays."""
    return float(memory.decode_read_bytes_per_sequence(model, context_len, kv_dtype))


def placement(box: Box, n_cpu_moe: int | None = None) -> Placement:
    """Place ``box.model`` on ``box`` and estimate batch-1 decode and prompt-processing speed.

    Discrete host: ``box.gpu`` (x ``box.n_gpus``, layers split across them) plus host RAM; ``n_cpu_moe`` None picks
    the best value (``best_n_cpu_moe``: the fewest layers on the host that fit the GPU). Unified host: everything
    shares the pool's GPU share (``n_cpu_moe`` does not apply).
    """
    if not isinstance(box, Box):
        raise ValueError(f"box must be a Box, got {type(box).__name__}")
    model, host, gpu, p, eff = box.model, box.host, box.gpu, box.precision, box.eff
    n_gpus, context_len = box.n_gpus, box.context_len
    b = _bytes(model, p)
    kv = _kv_bytes(model, context_len, p.kv_cache)
    kv_read = _kv_read_bytes(model, context_len, p.kv_cache)
    kv_note = f"KV cache {kv / GB:,.2f} GB at {context_len:,} tokens ({p.kv_cache}); batch 1"
    if kv_read < 0.99 * kv:
        kv_note += f"; a decoded token reads {kv_read / GB:,.2f} GB of it"
    notes = [kv_note]
    if model.vision_params:
        notes.append("vision tower left out (llama.cpp loads it as a separate mmproj file)")

    if not box.discrete:
        n_moe = model.num_moe_layers
        weights = b.non_routed + n_moe * b.routed_per_layer
        gpu_bytes_tok, _ = bytes_per_token(model, p, 0)
        bw = host.peak_bandwidth_gbps * 1e9 * eff.unified_bandwidth
        decode_s = (gpu_bytes_tok + kv_read) / bw
        flops = 2 * (b.active_non_routed_params + n_moe * b.routed_per_layer_per_token_params)
        pp = host.igpu_tflops * 1e12 * eff.gpu_compute / flops
        share = host.gpu_share or 1.0
        notes.append(f"one pool: the GPU may use {share:.0%} of {host.memory_gb:,.0f} GB")
        return Placement(
            kind="unified",
            model_id=model.id,
            gpu_id=None,
            n_gpus=1,
            host_id=host.id,
            precision=p.label,
            context_len=context_len,
            n_cpu_moe=0,
            offloaded_layers=0,
            gpu_weights_bytes=weights,
            gpu_routed_bytes=n_moe * b.routed_per_layer,
            gpu_kv_bytes=kv,
            gpu_buffer_bytes=eff.compute_buffer_gb * GB,
            gpu_capacity_bytes=host.memory_bytes * share,
            host_weights_bytes=0.0,
            host_reserve_bytes=eff.host_reserve_gb * GB,
            host_capacity_bytes=host.memory_bytes * (1 - share) + (eff.host_reserve_gb * GB if share >= 1 else 0.0),
            decode_gpu_s=decode_s,
            decode_host_s=0.0,
            prefill_tokens_per_s=pp,
            prefill_path="integrated GPU",
            notes=tuple(notes),
        )

    if n_cpu_moe is None:
        n_cpu_moe = best_n_cpu_moe(box)
        if n_cpu_moe is None:  # even all experts on the host do not fit the GPU: show that placement
            n_cpu_moe = model.num_layers
    if isinstance(n_cpu_moe, bool) or not (0 <= n_cpu_moe <= model.num_layers):
        raise ValueError(f"n_cpu_moe must be 0-{model.num_layers} (the model's layers), got {n_cpu_moe}")
    off = offloaded_moe_layers(model, n_cpu_moe)
    n_moe = model.num_moe_layers
    gpu_w = b.non_routed + (n_moe - off) * b.routed_per_layer
    host_w = off * b.routed_per_layer
    gpu_tok, host_tok = bytes_per_token(model, p, off)
    gpu_s = (gpu_tok + kv_read) / (gpu.hbm_bandwidth_gbps * 1e9 * eff.gpu_bandwidth)
    host_mem_s = host_tok / (host.peak_bandwidth_gbps * 1e9 * eff.host_bandwidth)
    host_flops_tok = 2 * off * b.routed_per_layer_per_token_params
    host_cpu_s = host_flops_tok / (host.cpu_tflops * 1e12 * eff.cpu_compute)
    host_s = max(host_mem_s, host_cpu_s)

    # prompt processing, per token
    compute_dtype = precision_support(gpu, p.expert_dtype).compute_dtype
    gpu_flops = gpu.tflops(compute_dtype) * 1e12 * eff.gpu_compute
    gpu_part = 2 * (b.active_non_routed_params + (n_moe - off) * b.routed_per_layer_per_token_params) / gpu_flops
    cpu_path = host_flops_tok / (host.cpu_tflops * 1e12 * eff.cpu_compute)
    pcie_gbps = min(host.pcie_gbps or 0.0, _gpu_pcie_gbps(gpu))
    stream_path = (host_w / (pcie_gbps * 1e9 * eff.pcie)) / eff.ubatch_tokens + host_flops_tok / gpu_flops
    if off == 0:
        pp, path = 1.0 / gpu_part, "all on GPU"
    elif stream_path < cpu_path:
        pp, path = (
            1.0 / (gpu_part + stream_path),
            f"host experts streamed over PCIe ({pcie_gbps:,.0f} GB/s) per {eff.ubatch_tokens}-token micro-batch",
        )
    else:
        pp, path = 1.0 / (gpu_part + cpu_path), "host experts computed on the CPU"
    if host_cpu_s > host_mem_s:
        notes.append("host part is CPU-compute-bound, not bandwidth-bound, at this size")
    lead_dense = sum(1 for i in model.dense_layers if i < n_cpu_moe)
    if off:
        notes.append(
            f"llama.cpp: --n-cpu-moe {n_cpu_moe} puts {off} MoE layers' experts on the host"
            + (f" (the first {lead_dense} layers are dense and count in the flag)" if lead_dense else "")
        )
    if n_gpus > 1:
        notes.append(
            f"{n_gpus} GPUs split the layers (llama.cpp -sm layer): capacity adds up, decode bandwidth does not"
        )
    return Placement(
        kind="discrete",
        model_id=model.id,
        gpu_id=gpu.id,
        n_gpus=n_gpus,
        host_id=host.id,
        precision=p.label,
        context_len=context_len,
        n_cpu_moe=n_cpu_moe,
        offloaded_layers=off,
        gpu_weights_bytes=gpu_w,
        gpu_routed_bytes=(n_moe - off) * b.routed_per_layer,
        gpu_kv_bytes=kv,
        gpu_buffer_bytes=n_gpus * eff.compute_buffer_gb * GB,
        gpu_capacity_bytes=n_gpus * float(gpu.runtime_memory_bytes or gpu.hbm_capacity_gb * GB),
        host_weights_bytes=host_w,
        host_reserve_bytes=eff.host_reserve_gb * GB,
        host_capacity_bytes=host.memory_bytes,
        decode_gpu_s=gpu_s,
        decode_host_s=host_s,
        prefill_tokens_per_s=pp,
        prefill_path=path,
        notes=tuple(notes),
    )


def _gpu_pcie_gbps(gpu: GPUSpec) -> float:
    """The GPU's host link: its scale-up figure when that is PCIe, else PCIe 5.0 x16 (64 GB/s)."""
    return gpu.scale_up_bw_gbps if (gpu.scale_up_link or "").startswith("pcie") else 64.0


def best_n_cpu_moe(box: Box) -> int | None:
    """The smallest ``--n-cpu-moe`` value whose GPU side of ``box`` fits (fewest experts on the slow host side,
    so the fastest decode); None when even every routed expert on the host leaves the GPU short."""
    if not isinstance(box, Box):
        raise ValueError(f"box must be a Box, got {type(box).__name__}")
    if not box.discrete:
        raise ValueError(f"{box.host.name} is a unified-memory machine: nothing goes to host RAM (no --n-cpu-moe)")
    model, gpu, n_gpus, p, eff = box.model, box.gpu, box.n_gpus, box.precision, box.eff
    b = _bytes(model, p)
    kv = _kv_bytes(model, box.context_len, p.kv_cache)
    cap = n_gpus * float(gpu.runtime_memory_bytes or gpu.hbm_capacity_gb * GB)
    fixed = b.non_routed + kv + n_gpus * eff.compute_buffer_gb * GB
    idx = moe_layer_indices(model)
    n_moe = len(idx)
    spare = cap - fixed
    if spare < 0:
        return None
    on_gpu = min(n_moe, math.floor(spare / b.routed_per_layer)) if b.routed_per_layer else n_moe
    k = n_moe - on_gpu  # MoE layers that must go to the host
    return 0 if k == 0 else idx[k - 1] + 1


def layer_map(model: ModelSpec, pl: Placement) -> list[dict]:
    """Where each layer's tensors live under a placement: rows of layer, group, where."""
    moe_layers = set(moe_layer_indices(model))
    on_host = {i for i in moe_layers if i < pl.n_cpu_moe} if pl.kind == "discrete" else set()
    gpu = "unified pool" if pl.kind == "unified" else "GPU memory"
    rows = []
    for i in range(model.num_layers):
        rows.append({"layer": i, "group": "attention + KV cache", "where": gpu})
        ffn = "shared experts + router" if i in moe_layers else "dense FFN"
        rows.append({"layer": i, "group": "dense FFN / shared experts", "where": gpu, "what": ffn})
        rows.append(
            {
                "layer": i,
                "group": "routed experts",
                "where": ("host RAM" if i in on_host else gpu) if i in moe_layers else "not in this layer",
            }
        )
    return rows
