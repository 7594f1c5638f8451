"""One layout's operating point: the batch (decode) or prompt chunk (prefill) per GPU at which it serves
best within the latency target and the memory, with and without two-batch overlap, and what it delivers.

Decode: the largest number of sequences per GPU whose KV cache fits at the *full* context (prompt + every
output token) and whose step (the time per output token, TPOT) meets the target; the step is timed at the
mean context. Prefill: of the prompt chunks per GPU that fit (activations of the chunk, and the KV of the
prompts in flight: one chunk per pipeline stage), the one with the highest input tokens/s whose time to
first token meets the target. A prompt longer than a chunk is prefilled chunk by chunk (chunked prefill;
through a pipeline, SGLang's chunked pipeline parallelism): ``TTFT = one chunk's way through every stage +
(chunks - 1) x step``.

Each is tried without and with two-batch overlap (when the layout communicates at all and the serving stack has
it: ``catalogs/engines.yaml``, TensorRT-LLM has none) and the better kept, saying which: overlap hides
communication under compute but runs every kernel on half the tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from core import memory, perf
from core.deployment.bundle import Deployment
from core.deployment.specs import SpecDecodeConfig, Workload
from core.serving.batch_search import largest_meeting, refine
from core.serving.launch.spec import overlaps_two_batches
from core.serving.plan import OVERLAP_LABELS, Plan, layout_label

__all__ = [
    "DECODE_BATCHES",
    "OVERLAP_LABELS",
    "PREFILL_TOKENS",
    "CacheMiss",
    "Plan",
    "cold_prefill",
    "layout_label",
    "operating_point",
    "per_gpu_text",
    "time_categories",
]

Phase = Literal["prefill", "decode"]
# sequences per GPU tried in decode (below one: a tensor-parallel group or a pipeline holds fewer sequences
# than it has GPUs) and prompt tokens per GPU per step in prefill
DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)
PREFILL_TOKENS = (1024, 2048, 4096, 8192, 16384, 32768)


def unspeculated(d: Deployment) -> Deployment:
    """``d`` without speculative decoding (its config off, no draft model): the layout search scores its plans and
    sizes their memory without it (the launch commands say so where they add it)."""
    if not d.spec.enabled and d.draft is None:
        return d
    return d.with_(spec=SpecDecodeConfig(), draft=None)


def replica(d: Deployment) -> Deployment:
    """One replica of ``d`` (its layout's ``dp`` set to 1, the same redundant-expert slots)."""
    if d.layout.dp == 1:
        return d
    return d.with_layout(d.layout.model_copy(update={"dp": 1}), d.redundant_experts)


def _replica_headroom_gb(d: Deployment, batch: int) -> float:
    """Memory headroom per GPU (GB) with ``batch`` sequences in ONE replica of ``d`` (every replica holds the same):
    sized on the replica alone, so a cluster's sequences never pass a Workload's limit; a replica holding more
    than that limit is extrapolated from two batches below it (KV grows linearly with the sequences per
    attention rank, both batches whole multiples of the ranks)."""
    one = replica(d)

    def room(n: int) -> float:
        return memory.per_gpu_memory(one, d.workload.model_copy(update={"batch": n})).headroom_bytes

    if batch <= _MAX_BATCH:
        return room(batch) / 1e9
    ranks = max(1, d.layout.attention_dp)
    b1 = ranks * max(1, _MAX_BATCH // (2 * ranks))
    r1, r2 = room(b1), room(2 * b1)
    return (r1 + (r2 - r1) * (batch - b1) / b1) / 1e9


_MAX_BATCH = 1_000_000  # Workload.batch's upper bound


def per_gpu_text(amount: float) -> str:
    """Sequences or tokens per GPU as text: whole numbers from 1 up, two significant digits below (a TP group
    or a pipeline holding fewer sequences than GPUs: 0.12)."""
    if not (isinstance(amount, (int, float)) and math.isfinite(amount) and amount >= 0):
        raise ValueError(f"amount must be a finite number >= 0, got {amount!r}")
    return f"{amount:,.0f}" if amount >= 1 else f"{amount:.2g}"


def time_categories(parts: Mapping[str, float]) -> dict[str, float]:
    """A step's components (:data:`core.perf.kernels` names, seconds) gathered into the categories the pages show."""
    for k, v in parts.items():
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"step component {k!r} must be a finite number of seconds >= 0, got {v!r}")
    g = parts.get
    tables = {"off-GPU table reads": g("host_tables", 0.0)} if "host_tables" in parts else {}
    merge = {"context-parallel merge": g("dcp_merge", 0.0)} if parts.get("dcp_merge") else {}
    return (
        tables
        | {
            # + the measured prefill modules of a DSA indexer and of a Gated DeltaNet scan (core.perf.step)
            "attention": g("attention_projections", 0.0)
            + g("attention_scores", 0.0)
            + g("indexer_prefill", 0.0)
            + g("linear_prefill", 0.0),
            "dense & shared FFN": g("dense_ffn", 0.0)
            + g("shared_experts", 0.0)
            + g("parallel_mlp", 0.0)
            + g("router", 0.0)
            + g("lm_head", 0.0),
            "routed experts": g("routed_experts", 0.0),
            "all-to-all": g("dispatch", 0.0) + g("combine", 0.0),
            "all-reduce & expert-TP": g("allreduce", 0.0) + g("expert_tp_comm", 0.0),
            "pipeline sends": g("pp_send", 0.0),
            # not a kernel: per-layer time fitted to measured steps (norms, quantisation, launches) + the engine's step
            "fitted overhead": g("layer_overhead", 0.0) + g("engine_step", 0.0),
        }
        | merge
    )


def _prefill_ttft_s(st: perf.StepTime, computed_tokens: int, chunk_tokens: float) -> float:
    """A prompt's time to first token when a prefill step ``st`` takes ``chunk_tokens`` prompt tokens per attention
    rank: its ``computed_tokens`` in chunks, the first chunk crossing every pipeline stage (``latency_s``), each
    later chunk one step behind."""
    return st.latency_s + (math.ceil(computed_tokens / chunk_tokens) - 1) * st.step_s


@dataclass(frozen=True)
class CacheMiss:
    """A prefill plan chosen with prefix reuse, with its prefix cache warm and cold (:func:`cold_prefill`)."""

    lone_ttft_hit_s: float  # one prompt alone on the replica, its cached share served
    lone_ttft_miss_s: float  # the same prompt computed whole
    prompts_per_s_hit: float  # per GPU at the plan's chunk
    prompts_per_s_miss: float


def cold_prefill(d: Deployment, plan: Plan) -> CacheMiss:
    """What a prefill ``plan`` chosen for the workload's prefix reuse (``d``'s, on ``d``'s GPU, precision and
    efficiency; the plan's layout) gives when the cache hits and when it misses: the time to first token of one
    prompt alone on the replica (its computed tokens in chunks of at most the plan's chunk), and the prompts per
    second per GPU at the plan's chunk, layout and overlap. (Under load a miss also queues prompts behind the lost
    capacity; queueing is not modelled here.)"""
    if not isinstance(plan, Plan) or plan.phase != "prefill":
        raise ValueError("plan must be a prefill Plan (core.serving.operating_point.operating_point)")
    workload, tp = d.workload, plan.layout.attention_tp
    cold = workload.model_copy(update={"prefix_reuse": 0.0})
    if plan.layout != d.layout or plan.redundant_experts != d.redundant_experts:
        d = d.with_layout(plan.layout, plan.redundant_experts)

    def step(wl: Workload, per_gpu: float) -> perf.StepTime:
        cfg = perf.StepConfig(
            "prefill",
            per_gpu,
            wl.input_len,
            overlap=plan.overlap,
            redundant_experts=plan.redundant_experts,
            cached_tokens=wl.cached_prompt_tokens,
        )
        return perf.step_time(d, cfg)

    def lone(wl: Workload) -> float:
        per_gpu = min(plan.tokens_per_gpu, wl.computed_prompt_tokens / tp)
        offset_s = d.calibration.ttft_offset_s if d.calibration else 0.0  # the served calibration's, per request
        return _prefill_ttft_s(step(wl, per_gpu), wl.computed_prompt_tokens, per_gpu * tp) + offset_s

    return CacheMiss(
        lone(workload),
        lone(cold),
        workload.prompts_per_s(plan.tokens_per_s_per_gpu),
        cold.prompts_per_s(step(cold, plan.tokens_per_gpu).tokens_per_s_per_gpu),
    )


def operating_point(d: Deployment, phase: Phase, *, target_s: float) -> Plan | str:
    """The best operating point of ``d``'s layout (with its redundant-expert slots) for ``phase`` of its workload
    under ``target_s`` (decode: TPOT, prefill: TTFT, seconds), or a sentence saying why it has none. Scored without
    speculative decoding (:func:`unspeculated`)."""
    if phase not in ("prefill", "decode"):
        raise ValueError(f"phase must be prefill or decode, got {phase!r}")
    if not (isinstance(target_s, (int, float)) and math.isfinite(target_s) and 0 < target_s <= 3600):
        raise ValueError(f"target_s must be a latency in (0, 3600] seconds, got {target_s!r}")
    d = unspeculated(d)
    model, layout, workload, a, redundant_experts = d.model, d.layout, d.workload, d.assumptions, d.redundant_experts
    gps, pp, tp = layout.gpus_per_stage, layout.pp, layout.attention_tp

    cached = workload.cached_prompt_tokens if phase == "prefill" else 0

    def step(b: float, overlap: str, ctx: int) -> perf.StepTime:
        cfg = perf.StepConfig(
            phase, float(b), ctx, overlap=overlap, redundant_experts=redundant_experts, cached_tokens=cached
        )
        return perf.step_time(d, cfg)

    if phase == "decode":
        full = workload.context_len
        seqs = memory.max_concurrent_sequences(d, full)
        if seqs < layout.attention_dp * layout.dp:
            one = memory.per_gpu_memory(d, Workload(batch=1, input_len=1, output_len=1))
            if one.kv_budget_bytes <= 0:
                return (
                    f"does not fit: {one.weights_bytes / 1e9:,.1f} GB of weights per GPU against "
                    f"{one.usable_bytes / 1e9:,.1f} GB usable"
                )
            return f"not one {full:,}-token sequence (prompt + output) per attention rank fits the KV cache"
        cap = seqs / (gps * pp * layout.dp)  # sequences per GPU the KV cache holds at the full context
        least = 1.0 / (tp * pp)  # one sequence per attention rank
        # the grid below the KV capacity and the capacity itself (engines fill the cache they have)
        candidates = sorted({least, *(b for b in DECODE_BATCHES if least <= b <= cap), max(least, cap)})

        def run(overlap):
            def evaluate(b: float) -> tuple[perf.StepTime, float]:
                st = step(b, overlap, workload.decode_context_len)
                return st, st.step_s

            # the grid, then the batch between the winner and the next grid point that misses (batch_search)
            best, miss = largest_meeting(candidates, evaluate, target_s)
            if best is not None and miss is not None:
                best = refine(best, miss[0], evaluate, target_s, least)
            return best, miss

        headroom = None
    else:
        prompt = workload.input_len
        computed = prompt - cached  # a warm prefix cache serves the rest (Workload.prefix_reuse)
        one_token = a.model_copy(update={"max_num_batched_tokens": 1})
        per_rank = Workload(batch=layout.attention_dp * layout.dp, input_len=prompt, output_len=1)
        mem1 = memory.per_gpu_memory(d.with_(assumptions=one_token), per_rank)
        if mem1.kv_budget_bytes <= 0:
            return (
                f"does not fit: {mem1.weights_bytes / 1e9:,.1f} GB of weights per GPU against "
                f"{mem1.usable_bytes / 1e9:,.1f} GB usable"
            )
        act = model.hidden_size * 2 * a.activation_factor  # bytes per token of a chunk in flight

        def need(b: float) -> float:
            chunk = b * tp  # prompt tokens per attention rank per micro-batch
            return (chunk - 1) * act + pp * chunk / (computed + 1) * mem1.kv_bytes_per_sequence

        candidates = [b for b in PREFILL_TOKENS if need(b) <= mem1.kv_budget_bytes]
        if not candidates:
            return f"not even a {PREFILL_TOKENS[0]:,}-token prompt chunk per GPU fits beside the weights"
        unit = 1.0 / tp  # one prompt token per attention rank
        # the largest chunk whose activations and prompts in flight fit (need() is linear in the chunk)
        fits = (mem1.kv_budget_bytes + act) / (tp * (act + pp * mem1.kv_bytes_per_sequence / (computed + 1)))
        larger = [b for b in PREFILL_TOKENS if b > candidates[-1]]
        beyond = min(larger[0], math.floor(fits / unit + 1e-9) * unit + unit) if larger else None

        def ttft(st: perf.StepTime, b: float) -> float:
            return _prefill_ttft_s(st, computed, b * tp) + (d.calibration.ttft_offset_s if d.calibration else 0.0)

        def run(overlap):
            # throughput per GPU grows with the chunk (each step's fixed costs spread over more tokens) but
            # TTFT is not monotone in it (fewer chunks per prompt, longer steps): the largest chunk that
            # meets the target is the best, found from the top
            # then the chunk between it and the next one tried (which missed, or did not fit: batch_search)
            def evaluate(b: float) -> tuple[perf.StepTime, float]:
                st = step(b, overlap, prompt)
                return st, ttft(st, b)

            miss, above = None, beyond
            for b in reversed(candidates):
                st, lat = evaluate(b)
                if lat <= target_s:
                    best = (b, st, lat)
                    return (best if above is None else refine(best, above, evaluate, target_s, unit)), miss
                if miss is None or lat < miss[2]:
                    miss = (b, st, lat)
                above = b
            return None, miss

        def headroom(b):
            return (mem1.kv_budget_bytes - need(b)) / 1e9

    best, miss = run("none")
    mode = "none"
    communicates = (best or miss)[1].comm_s > 0
    if communicates and overlaps_two_batches(d.stack):  # a stack without two-batch overlap is scored without it
        best2, miss2 = run("two_batch")
        if best2 is not None and (best is None or best2[1].tokens_per_s_per_gpu > best[1].tokens_per_s_per_gpu):
            best, mode = best2, "two_batch"
        if best is None and miss2 is not None and (miss is None or miss2[2] < miss[2]):
            miss = miss2
    if best is None:
        b, st, lat = miss
        kind = "TPOT" if phase == "decode" else "TTFT"
        what = "sequences" if phase == "decode" else "prompt tokens"
        return f"misses the {kind} target: {lat * 1e3:,.0f} ms even at {per_gpu_text(b)} {what} per GPU"
    b, st, lat = best
    if headroom is None:
        room = _replica_headroom_gb(d, max(1, round(b * gps * pp)))
        capacity, bound = cap, "memory" if b >= cap * (1 - 1e-9) else "target"
    else:
        room = headroom(b)
        capacity = fits  # the largest chunk per GPU that fits
        bound = "memory" if b + unit > fits * (1 + 1e-9) else "grid" if b >= PREFILL_TOKENS[-1] else "target"
    return Plan(
        layout,
        phase,
        redundant_experts,
        float(b),
        st.step_s,
        st.tokens_per_s_per_gpu,
        room,
        breakdown=time_categories(st.components),
        dense=model.moe is None,
        overlap=mode,
        latency_s=lat,
        microbatches=st.microbatches,
        comm_s=st.comm_s,
        bound=bound,
        capacity=capacity,
    )
