"""Where a layout's replicas go on the cluster's nodes, and whether an engine can start them there (review 3 W5,
W7): the layout search ranks only what the engines' commands launch, and says why it drops the rest.

* A replica on fewer GPUs than a node divides the node (3-GPU replicas on 4-GPU trays fit once per tray: 18
  replicas on 72 GPUs, not 24); one on more GPUs fills whole nodes (9 GPUs on 4-GPU trays: no engine command
  starts 2.25 trays).
* Where the scale-up domain spans several nodes (a GB200 NVL72 rack: 18 trays of 4, one NVLink domain), replicas
  tile the domains: a replica inside a domain divides it (three 48-GPU replicas on two racks would put one
  across both, its traffic on the network where the plan times NVLink); a larger one is whole domains.
* vLLM keeps each data-parallel engine's TP x PP GPUs together (``--data-parallel-size-local`` engines per node;
  docs: Data Parallel Deployment), so with DP-attention and pipeline stages each stage's EP group is spread
  over the whole replica. Where the replica spans more than one domain but the plan times the stage inside
  one, that all-to-all really crosses the network: rejected. SGLang and TensorRT-LLM place a stage's GPUs
  together (TP ranks innermost), as the step model assumes.
"""

from __future__ import annotations

import math

from core.deployment.specs import ParallelLayout
from core.hardware import ClusterSpec

__all__ = ["placement_problems"]


def _unit(cluster: ClusterSpec) -> str:
    """What a node is called: a tray where the GPU's scale-up domain spans several of them (NVL72 and its kin)."""
    return "tray" if cluster.gpu.scale_up_domain_gpus > cluster.gpu.gpus_per_node else "node"


def placement_problems(stack: str, layout: ParallelLayout, cluster: ClusterSpec) -> list[str]:
    """Why ``layout``'s replicas cannot be placed on ``cluster`` as the ``stack``'s commands start them and the
    step model times them (empty: they can). Each sentence names the numbers, e.g. "9 GPUs do not fill whole
    4-GPU trays"."""
    out = []
    r, n, d = layout.gpus_per_stage * layout.pp, cluster.gpus_per_node, cluster.scale_up_domain_gpus
    unit = _unit(cluster)
    if r < n and n % r:
        out.append(
            f"{r} GPUs do not divide a {n}-GPU {unit}: {n // r} such replica{'s' if n // r > 1 else ''} per {unit}, "
            f"{n % r} GPU{'s' if n % r > 1 else ''} of each idle"
        )
    elif r > n and r % n:
        out.append(f"{r} GPUs do not fill whole {n}-GPU {unit}s")
    elif d > n and cluster.total_gpus > d:
        if r < d and d % r:
            out.append(
                f"{r}-GPU replicas do not tile the {d}-GPU scale-up domains: one would straddle two, its traffic on "
                "the network"
            )
        elif r > d and r % d:
            out.append(f"{r} GPUs do not fill whole {d}-GPU scale-up domains")
    spread = layout.attention_dp > 1 and layout.pp > 1 and layout.gpus_per_stage > 1
    if stack == "vllm" and spread and layout.gpus_per_stage <= d < r and (layout.ep > 1 or layout.expert_tp > 1):
        group = f"EP {layout.ep}" if layout.ep > 1 else f"expert-TP {layout.expert_tp}"
        out.append(
            f"vLLM places each DP engine's TP x PP = {layout.attention_tp * layout.pp} GPUs together, so each stage's "
            f"{group} group spans {math.ceil(r / d)} scale-up domains of {d} GPUs: its "
            f"{'all-to-all' if layout.ep > 1 else 'collectives'} would cross the network, which the plan times "
            "inside one domain"
        )
    return out
