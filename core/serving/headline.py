"""What a phase's best plan means for the cluster (review 3 W6, M1, M13): each phase is searched over the whole
cluster, so a decode plan's output tokens/s per GPU is a decode pool's (no prompt in its steps) and a prefill
plan's prompt tokens/s per GPU a prefill pool's. A headline for the cluster says which, and what the other phase
costs:

* the cluster as a decode pool needs a prefill pool to feed it: ``decode_pool x computed prompt tokens / output
  tokens`` prompt tokens/s, at the prefill plan's rate per GPU;
* per GPU of such a pair, and as the bound of colocated serving (each GPU spends ``r / P`` seconds prefilling and
  ``1 / D`` decoding per output token, ``r`` computed prompt tokens per output token): ``1 / (r / P + 1 / D)``
  output tokens/s. Interference between the two phases (the Serving chart's colocated model) only lowers it.

Hand check, DeepSeek-V3 FP8 on 8 x H200, 2,048 in / 512 out: D = 3,215, P = 9,693: the 8 GPUs as a decode pool give
25,720 output tok/s and need 102,882 prompt tok/s, 10.6 prefill GPUs; 1 / (4 / 9,693 + 1 / 3,215) = 1,382 per GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.deployment.specs import Workload
from core.serving.plan import Plan

__all__ = ["PoolHeadline", "pool_headline"]


@dataclass(frozen=True)
class PoolHeadline:
    """The cluster's ``gpus`` under the best prefill and decode plans, in tokens/s (see the module's docstring)."""

    gpus: int
    decode_pool_tok_s: float  # output tokens/s, every GPU decoding
    prompt_tok_s_needed: float  # computed prompt tokens/s that feed it
    prefill_gpus: float  # GPUs of the prefill plan that compute them
    prefill_gpus_whole: int  # the same in whole replicas of the prefill plan
    with_prefill_tok_s_per_gpu: float  # output tokens/s per GPU once prefill is paid (a PD pair, or colocated at best)
    colocated_bound_tok_s: float  # the same for the cluster's GPUs
    prefill_pool_tok_s: float  # computed prompt tokens/s, every GPU prefilling
    prefill_feeds_tok_s: float  # the output tokens/s those prompts become


def pool_headline(prefill: Plan, decode: Plan, workload: Workload, total_gpus: int) -> PoolHeadline:
    """The cluster's headline figures from the best ``prefill`` and ``decode`` plans of ``workload`` on
    ``total_gpus`` GPUs. Raises ValueError for plans of the wrong phase, a rate that is not above zero or a GPU
    count below one."""
    for name, plan, phase in (("prefill", prefill, "prefill"), ("decode", decode, "decode")):
        if not isinstance(plan, Plan) or plan.phase != phase:
            raise ValueError(f"{name} must be a {phase} plan (core.serving.layout.recommend)")
        rate = plan.tokens_per_s_per_gpu
        if not (isinstance(rate, (int, float)) and math.isfinite(rate) and 0 < rate <= 1e12):
            raise ValueError(f"the {phase} plan's tokens/s per GPU must be in (0, 1e12], got {rate!r}")
    if not isinstance(workload, Workload):
        raise ValueError(f"workload must be a Workload, got {type(workload).__name__}")
    if not (isinstance(total_gpus, int) and not isinstance(total_gpus, bool) and 1 <= total_gpus <= 10_000_000):
        raise ValueError(f"total_gpus must be a whole number from 1 to 10,000,000, got {total_gpus!r}")
    per_output = workload.computed_prompt_tokens / workload.output_len  # prompt tokens prefilled per output token
    d, p = decode.tokens_per_s_per_gpu, prefill.tokens_per_s_per_gpu
    pool = d * total_gpus
    need = pool * per_output
    gpus = need / p
    replica = prefill.replica_gpus
    per_gpu = 1.0 / (per_output / p + 1.0 / d)
    return PoolHeadline(
        gpus=total_gpus,
        decode_pool_tok_s=pool,
        prompt_tok_s_needed=need,
        prefill_gpus=gpus,
        prefill_gpus_whole=math.ceil(gpus / replica - 1e-9) * replica,
        with_prefill_tok_s_per_gpu=per_gpu,
        colocated_bound_tok_s=per_gpu * total_gpus,
        prefill_pool_tok_s=p * total_gpus,
        prefill_feeds_tok_s=p * total_gpus / per_output,
    )
