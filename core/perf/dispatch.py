"""MoE dispatch and combine on one GPU: bytes per token copy on the wire, how many GPUs and nodes a token
goes to, and the time of one all-to-all call with DeepEP's low-latency or normal kernels (link factors from
``catalogs/efficiency.yaml``).

The functions in ``__all__`` check the numbers they are given (the pages and the validation cases pass raw ones)
and call the arithmetic unchecked; :func:`alltoall_call_s_unchecked` is that arithmetic for the step model, whose
tokens and deployment are validated where they are made."""

from __future__ import annotations

from core import comms
from core._util.checks import amount, whole
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout
from core.hardware.efficiency import LinkFactors
from core.model import ModelSpec, MoESpec

__all__ = ["alltoall_call_s", "alltoall_call_split", "normal_kernel_fanout", "token_copy_bytes"]


def _moe(model: ModelSpec):
    if model.moe is None:
        raise ValueError(f"{model.name} is a dense model: it has no routed experts")
    return model.moe


def token_copy_bytes(d_model: int, dtype: str) -> float:
    """Bytes of one token's hidden state on the wire: bf16 2 B per element; fp8 1 B plus one fp32 scale
    per 128 channels (DeepEP); nvfp4 half a byte plus one FP8 scale per 16 elements."""
    return _token_copy_bytes(whole("d_model", d_model, 1, 10_000_000), dtype)


def _token_copy_bytes(d_model: int, dtype: str) -> float:
    if dtype == "fp8":
        return d_model + comms.fp8_scale_bytes_unchecked(d_model)
    if dtype == "nvfp4":
        return d_model * 0.5 + d_model / 16
    if dtype in ("bf16", "fp16"):
        return 2.0 * d_model
    raise ValueError(f"unknown all-to-all dtype {dtype!r}; allowed: bf16, fp8, nvfp4")


def _touch(n_experts: int, top_k: int, bins: float, groups: tuple[int, int]) -> float:
    """P(one token touches a given bin); uniform routing when the bins do not split the experts evenly."""
    if bins <= 1:
        return 1.0
    if float(bins).is_integer() and n_experts % int(bins) == 0:
        return comms.bin_touch_probability_unchecked(n_experts, top_k, int(bins), *groups)
    return 1.0 - (1.0 - 1.0 / bins) ** top_k


def _checked_groups(model: ModelSpec, routing_groups) -> tuple[int, int] | None:
    """``routing_groups`` as whole numbers (None: the model's groups); how they fit the experts is checked with the
    touch probability."""
    _moe(model)
    if not routing_groups:
        return None
    if not (isinstance(routing_groups, (tuple, list)) and len(routing_groups) == 2):
        raise ValueError("routing_groups must be (groups, groups per token)")
    return whole("n_groups", routing_groups[0], 1, 100_000), whole("topk_groups", routing_groups[1], 1, 100_000)


def normal_kernel_fanout(
    model: ModelSpec, ep: int, domain_gpus: int, routing_groups: tuple[int, int] | None = None
) -> tuple[float, float]:
    """Per token, DeepEP normal kernels' (distinct GPUs, distinct nodes) it is sent to, counting its own:
    a token goes once to each GPU (or, across nodes, once to each node) holding any of its experts,
    not once per expert. Routing is limited to the model's expert groups unless ``routing_groups``
    gives (groups, groups per token)."""
    groups = _checked_groups(model, routing_groups)
    ep, domain_gpus = whole("ep", ep, 1, 100_000), whole("domain_gpus", domain_gpus, 1, 100_000)
    return _fanout(model.moe, ep, domain_gpus, groups)


def _fanout(e: MoESpec, ep: int, domain_gpus: int, routing_groups: tuple[int, int] | None) -> tuple[float, float]:
    groups = routing_groups or (e.n_groups, e.topk_groups)
    d = min(ep, domain_gpus)
    nodes = ep / d
    gpus = ep * _touch(e.n_routed_experts, e.top_k, ep, groups)
    return gpus, nodes * _touch(e.n_routed_experts, e.top_k, nodes, groups)


def alltoall_call_s(
    d: Deployment,
    tokens_per_gpu: float,
    dtype: str,
    kind: str,
    f: LinkFactors,
    *,
    routing_groups: tuple[int, int] | None = None,
) -> float:
    """One dispatch or combine of one MoE layer on one GPU of the deployment (:func:`alltoall_call_split`'s bytes
    over the links at ``f``'s efficiencies, plus its latency), across its scale-up domain; 0 without EP."""
    tokens_per_gpu = _checked_call(kind, tokens_per_gpu)
    if kind == "normal" and d.layout.ep > 1:
        routing_groups = _checked_groups(d.model, routing_groups)
    return alltoall_call_s_unchecked(d, tokens_per_gpu, dtype, kind, f, routing_groups=routing_groups)


def alltoall_call_s_unchecked(
    d: Deployment,
    tokens_per_gpu: float,
    dtype: str,
    kind: str,
    f: LinkFactors,
    *,
    routing_groups: tuple[int, int] | None = None,
) -> float:
    """:func:`alltoall_call_s`, unchecked: for callers with validated inputs (a step's tokens, ``kind``
    ``low_latency`` or ``normal``, ``routing_groups`` None or whole numbers)."""
    gpu = d.gpu
    split = _alltoall_call_split(d.model, d.layout, tokens_per_gpu, dtype, kind, d.domain, routing_groups)
    if split is None:
        return 0.0
    return comms.alltoall_time_s_unchecked(
        split,
        gpu.scale_up_bw_gbps,
        gpu.scale_out_bw_gbps,
        scale_up_eff=f.scale_up_eff,
        scale_out_eff=f.scale_out_eff,
        latency_s=f.latency_us * 1e-6,
    )


def alltoall_call_split(
    model: ModelSpec,
    layout: ParallelLayout,
    tokens_per_gpu: float,
    dtype: str,
    kind: str,
    domain_gpus: int,
    routing_groups: tuple[int, int] | None = None,
) -> comms.AllToAllSplit | None:
    """The bytes of one dispatch or combine of one MoE layer on one GPU with token copies in ``dtype``, on
    each link (None without EP).

    Low-latency kernels send every top-k copy straight to its expert's GPU. Normal kernels (DeepEP's
    NVLink-RDMA forwarding) send a token once per distinct GPU inside the scale-up domain; across
    nodes once per distinct remote node over the network (to the GPU with the same local rank), which
    forwards it over NVLink to the GPUs there that need it. With G distinct GPUs and N distinct nodes
    per token (:func:`normal_kernel_fanout`): network bytes ``T x copy x (N - P(own node))``, scale-up
    bytes ``T x copy x G x (D - 1) / D`` (every GPU forwards as much as it originates)."""
    tokens_per_gpu = _checked_call(kind, tokens_per_gpu)
    domain_gpus = whole("domain_gpus", domain_gpus, 1, 100_000)
    if kind == "normal" and layout.ep > 1:
        routing_groups = _checked_groups(model, routing_groups)
    return _alltoall_call_split(model, layout, tokens_per_gpu, dtype, kind, domain_gpus, routing_groups)


def _checked_call(kind: str, tokens_per_gpu) -> float:
    if kind not in ("low_latency", "normal"):
        raise ValueError(f"kind must be low_latency or normal, got {kind!r}")
    return amount("tokens_per_gpu", tokens_per_gpu, 0, 1e12)


def _alltoall_call_split(
    model: ModelSpec,
    layout: ParallelLayout,
    tokens_per_gpu: float,
    dtype: str,
    kind: str,
    domain_gpus: int,
    routing_groups: tuple[int, int] | None,
) -> comms.AllToAllSplit | None:
    if layout.ep <= 1:
        return None
    e = _moe(model)
    h, k = model.hidden_size, e.top_k
    per_copy = _token_copy_bytes(h, dtype)
    ep = layout.ep
    d = min(ep, domain_gpus)
    if kind == "low_latency":
        split = comms.alltoall_split_unchecked(tokens_per_gpu * k * per_copy, ep, domain_gpus)
    else:
        gpus, nodes_touched = _fanout(e, ep, domain_gpus, routing_groups)
        nodes = ep / d
        remote_nodes = nodes_touched * (nodes - 1) / nodes  # by symmetry P(own node) = touched / nodes
        scale_out = tokens_per_gpu * per_copy * remote_nodes
        scale_up = tokens_per_gpu * per_copy * gpus * (d - 1) / d
        split = comms.AllToAllSplit(tokens_per_gpu * per_copy * gpus / ep, scale_up, scale_out)
    return split
