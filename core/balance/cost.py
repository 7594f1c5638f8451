"""What expert-load imbalance and EPLB's redundant experts cost, priced by the step-time model.

A MoE layer waits for its busiest GPU, but what the busiest GPU pays depends on the regime: at a
memory-bound decode batch its time follows the expert weights it reads (every local expert is touched
either way), so a 3x token imbalance costs little; at a compute-bound prefill chunk its time follows its
tokens, and the same imbalance costs nearly its full share of the expert phase. Both are the step-time
model's routed-expert work with the busiest GPU's load (``StepConfig.imbalance``: max / mean per-GPU load,
averaged over the MoE layers).

Redundant experts are whole extra expert replicas on every GPU of the EP group: ``redundant / EP`` more
per GPU per MoE layer, which :mod:`core.memory` counts like any other weight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core import memory, perf
from core.balance.metrics import PlacementPlan
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout, Precision
from core.model import ModelSpec, ffn

__all__ = [
    "ImbalanceCost",
    "RedundantMemory",
    "cold_expert_memory",
    "imbalance_cost",
    "max_fitting_redundant",
    "mean_gpu_imbalance",
    "redundant_memory",
]


def mean_gpu_imbalance(gpu_loads) -> float:
    """Max / mean of the per-GPU loads of each layer (``[layers, gpus]``), averaged over the layers."""
    a = np.atleast_2d(np.asarray(gpu_loads, dtype=np.float64))
    if a.size == 0 or a.ndim != 2 or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("per-GPU loads must be a non-empty [layers, gpus] array of finite numbers >= 0")
    mean = a.mean(axis=1)
    if np.any(mean <= 0):
        raise ValueError("every layer needs some load to measure its imbalance")
    return float(np.mean(a.max(axis=1) / mean))


@dataclass(frozen=True)
class ImbalanceCost:
    """One phase's step with balanced experts, with the loads as placed contiguously, and after EPLB."""

    phase: str
    tokens_per_gpu: float
    imbalance_before: float
    imbalance_after: float
    balanced_s: float
    before_s: float
    after_s: float

    @property
    def lost_before(self) -> float:
        """Share of the balanced throughput lost to imbalance with contiguous placement."""
        return 1.0 - self.balanced_s / self.before_s

    @property
    def lost_after(self) -> float:
        return 1.0 - self.balanced_s / self.after_s


def imbalance_cost(
    d: Deployment,
    plan: PlacementPlan,
    phase: str,
    tokens_per_gpu: float,
    context_len: int,
    redundant_experts: int = 0,
) -> ImbalanceCost:
    """The step of deployment ``d`` in ``phase`` at ``tokens_per_gpu`` with balanced experts, with ``plan``'s
    contiguous placement (no redundant experts) and with its EPLB placement (``redundant_experts`` extra
    replicas; the layout is checked for them)."""
    if not isinstance(plan, PlacementPlan):
        raise ValueError(f"plan must be a PlacementPlan, got {type(plan).__name__}")
    if phase not in ("decode", "prefill"):
        raise ValueError(f"phase must be decode or prefill, got {phase!r}")
    before, after = mean_gpu_imbalance(plan.gpu_before), mean_gpu_imbalance(plan.gpu_after)

    def step(imbalance: float, redundant: int) -> float:
        cfg = perf.StepConfig(phase, tokens_per_gpu, context_len, imbalance=imbalance, redundant_experts=redundant)
        return perf.step_time(d, cfg).step_s

    return ImbalanceCost(
        phase, float(tokens_per_gpu), before, after, step(1.0, 0), step(before, 0), step(after, redundant_experts)
    )


@dataclass(frozen=True)
class RedundantMemory:
    """The memory ``redundant`` extra expert replicas add per GPU, and what is left for the KV cache."""

    redundant: int
    extra_bytes: float
    kv_budget_bytes: float
    kv_required_bytes: float

    @property
    def fits(self) -> bool:
        return self.kv_budget_bytes > 0 and self.kv_budget_bytes >= self.kv_required_bytes


def redundant_memory(d: Deployment, redundant: int) -> RedundantMemory:
    """Per GPU of the most loaded stage of deployment ``d``: the bytes ``redundant`` EPLB replicas add
    (``redundant / EP`` expert slots per MoE layer) and the KV budget left beside them against the deployment's
    workload's KV cache."""
    base = memory.per_gpu_memory(d.with_(redundant_experts=0))
    more = memory.per_gpu_memory(d.with_(redundant_experts=redundant))
    return RedundantMemory(
        redundant, more.weights_bytes - base.weights_bytes, more.kv_budget_bytes, more.kv_required_bytes
    )


def max_fitting_redundant(d: Deployment, limit: int | None = None) -> int:
    """The most redundant experts (a multiple of EP, at most ``limit``, default the routed-expert count) whose
    memory still leaves deployment ``d``'s workload's KV cache room: each EP-wide round of replicas adds one expert
    slot per GPU per MoE layer, the same bytes every round."""
    model = d.model
    if model.moe is None:
        raise ValueError(f"{model.name} is a dense model: it has no experts to replicate")
    ep = d.layout.ep
    limit = model.moe.n_routed_experts if limit is None else int(limit)
    one = redundant_memory(d, ep)
    if one.extra_bytes <= 0:
        return (limit // ep) * ep
    room = one.kv_budget_bytes + one.extra_bytes - max(one.kv_required_bytes, 1.0)  # budget with none, minus need
    rounds = int(max(0.0, room) // one.extra_bytes)
    return min(rounds, limit // ep) * ep


def cold_expert_memory(
    model: ModelSpec, layout: ParallelLayout, precision: Precision | str, fractions, share: float = 0.1
) -> tuple[float, float]:
    """The dead weight of cold experts: per MoE layer, the fewest experts holding the least load that together
    serve at most ``share`` of the assignments (averaged over the layers of ``fractions``, ``[layers,
    experts]``), and the bytes they occupy on each GPU of the EP group over all MoE layers (each expert split
    over expert TP). Returns (cold experts per layer, bytes per GPU)."""
    if model.moe is None:
        raise ValueError(f"{model.name} is a dense model: it has no experts")
    if not (isinstance(share, (int, float)) and 0 < share < 1):
        raise ValueError(f"share must be between 0 and 1 (exclusive), got {share!r}")
    f = np.atleast_2d(np.asarray(fractions, dtype=np.float64))
    if f.ndim != 2 or f.shape[1] != model.moe.n_routed_experts or not np.all(np.isfinite(f)) or np.any(f < 0):
        raise ValueError(f"fractions must be [layers, {model.moe.n_routed_experts}] finite loads >= 0")
    totals = f.sum(axis=1, keepdims=True)
    if np.any(totals <= 0):
        raise ValueError("every layer needs some load")
    cum = np.cumsum(np.sort(f / totals, axis=1), axis=1)
    cold = float(np.mean((cum <= share + 1e-12).sum(axis=1)))
    per_expert = ffn.expert_params(model) * memory.bytes_per_param(Precision.of(precision).expert_dtype)
    return cold, cold / layout.ep * model.num_moe_layers * per_expert / layout.expert_tp
