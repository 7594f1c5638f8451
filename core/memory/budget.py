"""Per-GPU memory under a layout: weights, draft, activations, runtime reserve and the KV cache against
vLLM's budget (``gpu_memory_utilization x device memory``); fit verdicts, the most sequences or the longest
context that fit, the fewest GPUs that hold a model.

Each budget takes a :class:`core.deployment.bundle.Deployment` (its layout already checked) and what varies (a
workload, context lengths, a batch); the stated, editable assumptions are its
:class:`core.deployment.specs.MemoryAssumptions`. The KV cache of the workload's sequences is split over attention-DP
ranks and DP replicas; each GPU holds its stage's share (:mod:`.kv`). :func:`min_gpus` keeps DESIGN's signature
(model, GPU, precision): it builds a deployment for each GPU count it tries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core._util.checks import whole
from core.deployment.bundle import Deployment, InvalidLayout
from core.deployment.parallel import default_layout, pipeline_stages, stage_counts
from core.deployment.specs import MemoryAssumptions, Precision, Workload
from core.hardware import GPUSpec, precision_support
from core.memory.kv import kv_bytes_per_sequence_on_gpu
from core.memory.weights import draft_weights_and_kv, stage_weights, weights_bytes
from core.model import DEFAULT_TIER, ModelSpec

__all__ = [
    "MAX_CLUSTER_GPUS",
    "MIN_GPU_PRECISIONS",
    "GPUMemory",
    "gpu_count_candidates",
    "max_concurrent_sequences",
    "max_context_len",
    "min_gpus",
    "min_gpus_table",
    "per_gpu_memory",
    "scenario_notes",
    "stage_memories",
]


@dataclass(frozen=True)
class GPUMemory:
    """Memory of the most loaded GPU (the worst pipeline stage) under a layout, in bytes."""

    components: dict[str, float]  # weights per component, draft, activations, runtime reserve, kv_cache
    capacity_bytes: float  # device memory
    usable_bytes: float  # gpu_memory_utilization x capacity
    kv_budget_bytes: float  # usable minus everything but the KV cache
    kv_required_bytes: float  # the workload's KV cache on this GPU
    kv_bytes_per_sequence: float  # one sequence at the workload's context, on this GPU
    sequences_per_gpu: int  # the workload's sequences held by this GPU
    stage: int
    num_stages: int
    replicas: int  # attention-DP ranks x DP replicas: the sequences are split this many ways

    @property
    def weights_bytes(self) -> float:
        return sum(
            v
            for k, v in self.components.items()
            if k not in ("activations", "runtime_reserve", "kv_cache", "draft_kv_cache")
        )

    @property
    def total_bytes(self) -> float:
        return sum(self.components.values())

    @property
    def fits(self) -> bool:
        return self.kv_budget_bytes >= self.kv_required_bytes and self.kv_budget_bytes > 0

    @property
    def status(self) -> str:
        """``"fits"``; ``"kv_short"``: the weights, activations and reserve fit but the workload's KV cache
        does not; ``"weights_short"``: not even those fit (no KV budget at all)."""
        if self.fits:
            return "fits"
        return "kv_short" if self.kv_budget_bytes > 0 else "weights_short"

    @property
    def headroom_bytes(self) -> float:
        """usable - (weights + activations + reserve + the workload's KV): negative when it does not fit."""
        return self.kv_budget_bytes - self.kv_required_bytes


def _stage_memory(d: Deployment):
    """Per stage: (non-KV components in bytes, ctx -> KV bytes per sequence on one GPU, a key per make-up)."""
    model, layout, prec, a, spec, redundant = d.model, d.layout, d.precision, d.assumptions, d.spec, d.redundant_experts
    usable_extra = {
        "activations": a.max_num_batched_tokens * model.hidden_size * 2 * a.activation_factor,
        "runtime_reserve": a.runtime_reserve_gb * 1e9,
    }
    draft_w, draft_kv = draft_weights_and_kv(model, layout, prec, spec, d.draft, redundant)
    # the model's extras (core.model.extras) in the tier the planner keeps them: host DRAM for lookup tables, so
    # nothing on the GPU today; an extra kept in HBM would be charged here
    extras_hbm = model.extra_hbm_bytes_per_rank(DEFAULT_TIER, layout.attention_tp)
    stages, out, cache = pipeline_stages(model.num_layers, layout.pp), [], {}
    for s, stage in enumerate(stages):
        first, last = s == 0, s == len(stages) - 1
        # stages with the same make-up (first/last, layers, dense layers, K/V layers) hold the same bytes
        key = (first, last, stage_counts(model, stage))
        if key not in cache:
            cache[key] = stage_weights(model, layout, prec, stage, first, last, redundant)
        comp, with_draft = dict(cache[key]), last and spec.enabled
        comp.update({"draft_weights": draft_w} if with_draft else {}, **usable_extra)
        if first and extras_hbm:  # the extras' stored bytes a GPU holds (their rows feed the first stage)
            comp["model_extras"] = extras_hbm

        def kv(ctx, stage=stage, with_draft=with_draft):
            own = kv_bytes_per_sequence_on_gpu(model, ctx, prec.kv_cache, layout.attention_tp, stage, layout.dcp)
            return (own, draft_kv(ctx) if with_draft else np.zeros_like(own))

        out.append((comp, kv, (key, with_draft)))
    return out


def _workload(d: Deployment, workload: Workload | None) -> Workload:
    if workload is None:
        return d.workload
    if not isinstance(workload, Workload):
        raise ValueError(f"workload must be a Workload, got {type(workload).__name__}")
    return workload


def stage_memories(d: Deployment, workload: Workload | None = None) -> list[GPUMemory]:
    """Memory of one GPU of each pipeline stage of deployment ``d`` serving ``workload`` (default the
    deployment's), with its draft model, speculative config, memory assumptions and redundant-expert slots.

    KV budget = ``gpu_memory_utilization x device memory - weights - draft - activations - reserve``
    (vLLM's definition); the workload needs ``ceil(batch / (attention_dp x dp))`` sequences of
    ``input_len + output_len (+ speculative tokens)`` on each GPU.
    """
    workload, layout, a, spec = _workload(d, workload), d.layout, d.assumptions, d.spec
    replicas = layout.attention_dp * layout.dp
    seqs = math.ceil(workload.batch / replicas)
    ctx = workload.context_len + (spec.num_speculative_tokens if spec.enabled else 0)
    capacity = float(d.gpu.memory_bytes)
    usable = a.gpu_memory_utilization * capacity
    stages = _stage_memory(d)
    results = []
    for s, (comp, kv, _) in enumerate(stages):
        own, draft = (float(x) for x in kv(ctx))
        budget = usable - sum(comp.values())
        comp = {**comp, "kv_cache": seqs * own}
        if draft:
            comp["draft_kv_cache"] = seqs * draft
        results.append(
            GPUMemory(
                components=comp,
                capacity_bytes=capacity,
                usable_bytes=usable,
                kv_budget_bytes=budget,
                kv_required_bytes=seqs * (own + draft),
                kv_bytes_per_sequence=own + draft,
                sequences_per_gpu=seqs,
                stage=s,
                num_stages=len(stages),
                replicas=replicas,
            )
        )
    return results


def per_gpu_memory(d: Deployment, workload: Workload | None = None) -> GPUMemory:
    """The most loaded GPU (least headroom over the pipeline stages); see :func:`stage_memories`."""
    return min(stage_memories(d, workload), key=lambda r: r.headroom_bytes)


def max_concurrent_sequences(d: Deployment, context_lens):
    """How many sequences of each context length deployment ``d`` can hold in its KV cache:
    ``min over stages floor(kv_budget / kv_bytes_per_sequence)`` per GPU, times the attention-DP x DP
    replicas. 0 where not even one fits. Scalar in, int out; array in, array out."""
    ctx = np.atleast_1d(np.asarray(context_lens, dtype=np.float64))
    if np.any(ctx < 1) or not np.all(np.isfinite(ctx)):
        raise ValueError("context lengths must be finite and >= 1 token")
    usable = d.assumptions.gpu_memory_utilization * d.gpu.memory_bytes
    total_ctx = ctx + (d.spec.num_speculative_tokens if d.spec.enabled else 0)
    per_gpu, seen = None, set()
    for comp, kv, key in _stage_memory(d):
        if key in seen or seen.add(key):  # a stage like one already counted holds as many sequences
            continue
        budget = max(usable - sum(comp.values()), 0.0)
        own, draft = kv(total_ctx)
        per_seq = np.broadcast_to(np.asarray(own + draft, dtype=np.float64), ctx.shape)
        # a stage whose layers keep nothing per sequence (cross-layer KV sharing: Hunyuan-Large's odd layers, one to
        # a stage at PP 64) bounds no batch where its weights fit, and holds none where they do not
        n = np.where(per_seq > 0, np.floor(budget / np.where(per_seq > 0, per_seq, 1.0)), np.inf if budget > 0 else 0.0)
        per_gpu = n if per_gpu is None else np.minimum(per_gpu, n)
    if np.any(np.isinf(per_gpu)):
        raise ValueError(f"{d.model.name} keeps no per-sequence state on any pipeline stage: no batch bound to compute")
    out = per_gpu.astype(np.int64) * d.layout.attention_dp * d.layout.dp
    return int(out[0]) if np.ndim(context_lens) == 0 else out


def max_context_len(d: Deployment, batch: int) -> int:
    """The longest context (tokens, capped at the model's ``max_position_embeddings``) at which
    ``batch`` concurrent sequences fit on deployment ``d``; 0 if not even one token does."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    cap = d.model.max_position_embeddings
    grid = np.unique(np.clip(np.round(np.geomspace(1, cap, 400)), 1, cap))
    n = max_concurrent_sequences(d, grid)
    ok = grid[n >= batch]
    if ok.size == 0:
        return 0
    lo = int(ok.max())
    hi = int(grid[grid > lo].min()) if np.any(grid > lo) else lo
    while hi - lo > 1:  # refine between grid points (per-sequence bytes grow monotonically)
        mid = (lo + hi) // 2
        if max_concurrent_sequences(d, mid) >= batch:
            lo = mid
        else:
            hi = mid
    return lo


MAX_CLUSTER_GPUS = 65_536  # the largest cluster a scenario can describe (ClusterSpec)


def _max_gpus(v) -> int:
    return whole("max_gpus", v, 1, MAX_CLUSTER_GPUS)


def gpu_count_candidates(gpu: GPUSpec, max_gpus: int = 4096) -> list[int]:
    """1, 2, 4 ... up to a node, then whole nodes: the counts a deployment is built from."""
    max_gpus = _max_gpus(max_gpus)
    node = gpu.gpus_per_node
    out = [c for c in (1, 2, 4, 8, 16, 32, 64) if c < node]
    out += list(range(node, max_gpus + 1, node))
    return out


def min_gpus(
    model: ModelSpec,
    gpu: GPUSpec | str,
    precision: Precision | str = "bf16",
    *,
    workload: Workload | None = None,
    assumptions: MemoryAssumptions | None = None,
    max_gpus: int = 4096,
) -> int:
    """The fewest GPUs of type ``gpu`` (a GPUSpec or a catalog id) that hold ``model`` at ``precision``.

    Counts tried: powers of two up to a node, then whole nodes (``gpu_count_candidates``), each with
    :func:`default_layout` (TP inside a node, PP across nodes, EP = TP). It holds when the KV budget of
    every GPU is >= the KV of ``workload`` (default: one sequence of one token, i.e. the weights,
    activations and runtime reserve fit under ``gpu_memory_utilization``). Raises ``ValueError`` if
    nothing up to ``max_gpus`` holds it.
    """
    if isinstance(gpu, str):
        from core.catalog import load_catalog

        gpu = load_catalog().gpu(gpu)
    wl = workload or Workload(batch=1, input_len=1, output_len=1)
    a = assumptions or MemoryAssumptions()
    prec = Precision.of(precision)
    # a quick lower bound skips counts that cannot hold even the weights
    floor_gpus = weights_bytes(model, prec) / (a.gpu_memory_utilization * gpu.memory_bytes)
    # a GPU's memory depends on its replica's shape and the sequences each replica holds, not on the replica count:
    # beyond TP x the most pipeline stages only replicas are added, and a shape that did not fit is not tried again
    tried: set[tuple] = set()
    for n in gpu_count_candidates(gpu, max_gpus):
        if n < floor_gpus:
            continue
        layout = default_layout(model, n, gpu.gpus_per_node, prec)
        key = (layout.model_copy(update={"dp": 1}), math.ceil(wl.batch / (layout.attention_dp * layout.dp)))
        if key in tried:
            continue
        tried.add(key)
        try:
            d = Deployment(model, gpu, layout, prec, assumptions=a)
        except InvalidLayout:
            continue
        if per_gpu_memory(d, wl).fits:
            return n
    raise ValueError(f"{model.name} at {prec.label} does not fit on {max_gpus:,} or fewer {gpu.name} GPUs")


# The columns of the minimum-GPU table: each precision a checkpoint of these models is published in (bf16, FP8,
# INT8 W8A8, AWQ/GPTQ INT4 whole or experts only as Kimi-K2.5 ships, NVIDIA's NVFP4, OCP MXFP4 as gpt-oss ships).
MIN_GPU_PRECISIONS: dict[str, Precision | str] = {
    "bf16": "bf16",
    "fp8": "fp8",
    "int8": "int8",
    "int4 experts + bf16": Precision(weights="bf16", routed_experts="int4"),
    "int4": "int4",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
}


def min_gpus_table(
    model: ModelSpec,
    gpus: list[GPUSpec],
    precisions: dict[str, Precision | str],
    *,
    workload: Workload | None = None,
    assumptions: MemoryAssumptions | None = None,
    max_gpus: int = 4096,
) -> list[dict]:
    """Rows of ``gpu x precision`` -> fewest GPUs (``None`` beyond ``max_gpus``) and how the GPU runs that
    precision (``native`` / ``weight_only`` / ``emulated``, from its lowest-precision part), for the
    "minimum GPUs" table. ``precisions`` maps a column label to a Precision or a dtype name."""
    max_gpus = _max_gpus(max_gpus)
    rows = []
    for g in gpus:
        row: dict = {"gpu_id": g.id, "gpu": g.name, "memory_gb": g.memory_gb}
        for label, p in precisions.items():
            prec = Precision.of(p)
            try:
                row[label] = min_gpus(model, g, prec, workload=workload, assumptions=assumptions, max_gpus=max_gpus)
            except ValueError:
                row[label] = None
            statuses = {precision_support(g, prec.weights).status, precision_support(g, prec.expert_dtype).status}
            row[f"{label}_support"] = next(st for st in ("emulated", "weight_only", "native") if st in statuses)
        rows.append(row)
    return rows


def scenario_notes(d: Deployment) -> list[tuple[str, str]]:
    """(level, message) pairs about deployment ``d``: "error" for what the model cannot do (a context beyond
    its positions), "warning" for precisions the GPU only emulates, "info" for weight-only formats."""
    model, gpu, prec, workload, spec = d.model, d.gpu, d.precision, d.workload, d.spec
    notes: list[tuple[str, str]] = []
    ctx = workload.context_len + (spec.num_speculative_tokens if spec.enabled else 0)
    if ctx > model.max_position_embeddings:
        notes.append(
            (
                "error",
                f"Context of {ctx:,} tokens ({workload.input_len:,} in + {workload.output_len:,} out"
                + (f" + {spec.num_speculative_tokens} speculative" if spec.enabled else "")
                + f") exceeds {model.name}'s {model.max_position_embeddings:,} positions "
                "(max_position_embeddings in its config.json). Shorten the workload.",
            )
        )
    ckpt = model.checkpoint_precision
    if ckpt and (ckpt.get("weights"), ckpt.get("routed_experts")) != (prec.weights, prec.expert_dtype):
        w, ex = ckpt.get("weights"), ckpt.get("routed_experts")
        notes.append(
            (
                "info",
                f"{model.name}'s published checkpoint stores its weights in {w}"
                + (f" and its routed experts in {ex}" if ex and ex != w else "")
                + f" (its quantization_config); this scenario uses {prec.label.split(', KV')[0]}. Weights {w}"
                + (f", routed experts {ex}" if ex and ex != w else "")
                + " reproduce the checkpoint.",
            )
        )
    seen = set()
    for what, dt in (("weights", prec.weights), ("routed experts", prec.expert_dtype)):
        if dt in seen:
            continue
        seen.add(dt)
        s = precision_support(gpu, dt)
        if s.status == "emulated":
            notes.append(("warning", f"Emulated precision ({what}): {s.message}."))
        elif s.status == "weight_only":
            notes.append(("info", f"{what.capitalize()}: {s.message}."))
    if prec.kv_cache == "fp8" and not gpu.supports("fp8"):
        notes.append(
            (
                "warning",
                f"Emulated precision (KV cache): {gpu.name} stores an fp8 KV cache but computes attention in bf16.",
            )
        )
    return notes
