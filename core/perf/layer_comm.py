"""Communication of one layer in a step, by layout kind: the TP all-reduces, and what an MoE layer moves
beyond them (all-to-all dispatch / combine, or the DP-attention all-gather / reduce-scatter), each byte once.
Collectives are timed from the GPU's measured tables where it has them (:mod:`core.hardware.collectives`).

Unchecked, and so in no ``__all__``: for :mod:`core.perf.kernels`, whose deployment, step and token counts are
validated where they are made; the checked primitives are :mod:`core.comms`, :mod:`core.hardware.collectives`
and :mod:`core.perf.dispatch`'s public functions."""

from __future__ import annotations

from core.deployment.bundle import Deployment
from core.hardware import GPUSpec, collectives
from core.hardware.efficiency import Efficiency
from core.perf.dispatch import alltoall_call_s_unchecked
from core.perf.step_config import StepConfig

__all__: list[str] = []


def collective(eff: Efficiency, gpu: GPUSpec, phase: str, op: str, nbytes: float, n: int, domain: int) -> float:
    """One collective of the stack (CUDA graphs in decode, eager in prefill), measured where the GPU's
    table has it (:mod:`core.hardware.collectives`)."""
    return collectives.collective_s_unchecked(
        op,
        nbytes,
        n,
        table=eff.collectives,
        stack=eff.stack,
        graph=phase == "decode",
        scale_up_gbps=gpu.scale_up_bw_gbps,
        scale_out_gbps=gpu.scale_out_bw_gbps,
        domain_gpus=domain,
        link=eff["allreduce"],
    )


def moe_comm_s(
    d: Deployment, cfg: StepConfig, tokens_per_gpu: float, path: str, eff: Efficiency | None = None
) -> dict[str, float]:
    """Communication of one MoE layer beyond the TP all-reduces, by layout kind (each byte moved once):

    * attention not data-parallel (TP attention, any EP / expert TP): every GPU of the stage already holds
      every token, and the all-reduce after the MoE block sums the experts' partial outputs: nothing more;
    * data-parallel attention, experts by EP alone on an all-to-all path (DeepEP, TensorRT-LLM's): one
      dispatch and one combine of each GPU's own tokens (low-latency kernels: TensorRT-LLM's NVLink all-to-all
      timed with its path's ``alltoall_low_latency`` factors where the GPU's profiles have them);
    * data-parallel attention otherwise (fused MoE, DeepGEMM without DeepEP, or expert TP): the stage's tokens are
      all-gathered to every GPU before the experts and their outputs reduce-scattered back (SGLang's DP-attention
      gather).

    ``eff`` (default: the deployment's) gives the link factors."""
    model, gpu, layout, domain_gpus = d.model, d.gpu, d.layout, d.domain
    eff = d.efficiency if eff is None else eff
    if layout.attention_dp == 1:
        return {}
    if path not in ("fused", "deepgemm") and layout.ep > 1 and layout.expert_tp == 1:
        kernel = cfg.kernel
        link = eff["alltoall_normal"]
        if kernel == "low_latency":  # TensorRT-LLM's own NVLink all-to-all where its path has factors, else DeepEP's
            link = eff.kernel("alltoall_low_latency", "trtllm") if path == "trtllm" else eff["alltoall_low_latency"]
        return {
            "dispatch": alltoall_call_s_unchecked(d, tokens_per_gpu, d.precision.dispatch, kernel, link),
            "combine": alltoall_call_s_unchecked(d, tokens_per_gpu, "bf16", kernel, link),
        }
    n = layout.gpus_per_stage
    nbytes = tokens_per_gpu * n * model.hidden_size * 2.0  # the stage's tokens, bf16
    return {
        "expert_tp_comm": collective(eff, gpu, cfg.phase, "all_gather", nbytes, n, domain_gpus)
        + collective(eff, gpu, cfg.phase, "reduce_scatter", nbytes, n, domain_gpus)
    }


def dcp_merge_s(d: Deployment, phase: str, t_attn: float, eff: Efficiency | None = None) -> float:
    """One layer's decode-context-parallel exchange over the ``dcp`` ranks, as vLLM runs it: all-gather the query,
    attend over the local shard, then ``cp_lse_ag_out_rs``: all-gather the log-sum-exps (fp32), rescale the partial
    outputs and reduce-scatter them. For ``t_attn`` query tokens of the attention group: each rank runs the group's
    ``heads x dcp / tp`` query heads over its slice of the cache. 0 without DCP."""
    model, gpu, layout, domain = d.model, d.gpu, d.layout, d.domain
    eff = d.efficiency if eff is None else eff
    dcp = layout.dcp
    if dcp == 1:
        return 0.0
    mx = model.head_mixer
    q, o = mx.dcp_exchange_elements_per_head()
    heads = t_attn * getattr(mx, "num_heads", 0) * dcp / layout.attention_tp  # query heads x tokens on a rank
    return (
        collective(eff, gpu, phase, "all_gather", heads * q * 2.0, dcp, domain)
        + collective(eff, gpu, phase, "all_gather", heads * 4.0, dcp, domain)
        + collective(eff, gpu, phase, "reduce_scatter", heads * o * 2.0, dcp, domain)
    )
