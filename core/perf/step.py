"""The step-time model: one forward step of decode or prefill on the most loaded GPU, and its roofline.

Both sum the same per-layer accounting (:mod:`core.perf.kernels`): every layer's mixer, FFN or MoE block, the LM
head, communication. The step time times each kernel as ``floor + max(FLOPs / (peak x compute_eff),
bytes / (HBM bandwidth x mem_eff))`` with its family's factors from ``catalogs/efficiency.yaml`` (per GPU
type and serving stack, inherited from the closest relative where a GPU has none), adds communication
(all-to-all, TP all-reduce, expert-TP, pipeline sends) and a fixed overhead per layer (norms, RoPE, router
top-k, their launches). The roofline is the same works with every factor at 1, no floors, no overheads and
no communication: a lower bound.

Two-batch overlap splits the step into two micro-batches: every kernel runs twice on half the tokens
(weights are read twice) and communication hides under compute up to ``overlap_eff``.

A model's extras (:mod:`core.model.extras`) enter through their interface: the layers from the model's
``split_layer`` on run ``token_share`` of a step's tokens (a causal encoder-decoder's prefill: DeepSeek-V4.1's
decoder replays each prompt's last 128 tokens), and the rows the extras' lookups read (off-GPU tables, fetched as
the kernels' accounting carries them) hold the first stage for what the compute before their consumer layers does
not hide.

Pipeline stages hold their own layers (the dense FFN layers where the model puts them, the LM head on the
last stage) and each sends its activations to the next; the busiest stage sets the pace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from core._util.checks import amount
from core._util.memo import by_identity
from core.deployment import parallel
from core.deployment.bundle import Deployment
from core.deployment.specs import ParallelLayout
from core.hardware.dsa_prefill import indexer_prefill_cost
from core.hardware.efficiency import IDEAL
from core.hardware.gdn_prefill import gdn_prefill_cost
from core.hardware.served_step import step_overhead_s
from core.memory.host_tables import Fetches
from core.model import ModelSpec
from core.perf.dispatch import alltoall_call_s, normal_kernel_fanout, token_copy_bytes
from core.perf.kernels import (
    StepConfig,
    attention_work,
    dense_gemm_work,
    grouped_gemm_s,
    layer_costs,
    routed_experts_work,
)
from core.perf.work import Work, kernel_s

__all__ = [
    "COMM_PARTS",
    "Roofline",
    "StepConfig",
    "StepTime",
    "Work",
    "alltoall_call_s",
    "attention_work",
    "decode_roofline",
    "dense_gemm_work",
    "grouped_gemm_s",
    "kernel_s",
    "normal_kernel_fanout",
    "replayed_fraction",
    "routed_experts_work",
    "served_step_s",
    "step_time",
    "token_copy_bytes",
]

Phase = Literal["decode", "prefill"]
COMM_PARTS = ("dispatch", "combine", "allreduce", "expert_tp_comm", "dcp_merge", "pp_send")


@dataclass(frozen=True)
class StepTime:
    """One step on the most loaded GPU: seconds per component (summed over every layer, all stages) and
    totals; ``stage_s`` is each pipeline stage's time for its micro-batch."""

    components: dict[str, float]
    compute_s: float
    comm_s: float
    step_s: float
    tokens_per_gpu: float
    phase: Phase
    stage_s: tuple[float, ...] = field(default=())
    microbatches: float = 1.0  # pipeline micro-batches in flight (1 without PP)

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.tokens_per_gpu / self.step_s

    @property
    def latency_s(self) -> float:
        """One micro-batch's way through every pipeline stage (the step itself without PP)."""
        return sum(self.stage_s) if self.stage_s else self.step_s


def _checked(d: Deployment, redundant: int) -> None:
    """The deployment's layout was checked for its own redundant-expert slots; a step with other slots is
    checked for them (the layout search times EP over the routed experts plus redundant ones)."""
    if redundant != d.redundant_experts:
        problems = parallel.check_layout(d.model, d.layout, redundant, d.precision)
        if problems:
            raise ValueError("invalid layout for " + d.model.name + ": " + "; ".join(problems))


@by_identity(1024)
def _stage_plan(model: ModelSpec, pp: int) -> tuple[tuple[tuple[parallel.StageCounts, bool], ...], tuple[int, ...]]:
    """The distinct stage kinds (what a stage holds, is it the last) and each stage's kind: stages with the
    same layers cost the same, so each kind is costed once (cached: the layout search asks thousands of
    times)."""
    kinds, index = _split_plan(model, pp, model.num_layers)
    return tuple((full, last) for full, _, last in kinds), index


@by_identity(1024)
def _split_plan(
    model: ModelSpec, pp: int, split: int
) -> tuple[tuple[tuple[parallel.StageCounts, parallel.StageCounts, bool], ...], tuple[int, ...]]:
    """:func:`_stage_plan` with each stage's layers cut at layer ``split``: (the layers before it, the layers
    from it on, is it the last stage). A causal encoder-decoder's prefill runs every prompt token through the
    first part and only the replayed tokens through the second."""
    stages = parallel.pipeline_stages(model.num_layers, pp)
    kinds: dict[tuple[parallel.StageCounts, parallel.StageCounts, bool], int] = {}
    index = []
    for i, st in enumerate(stages):
        cut = max(st.start, min(st.stop, split))
        kind = (parallel.stage_counts(model, range(st.start, cut)), parallel.stage_counts(model, range(cut, st.stop)))
        index.append(kinds.setdefault((*kind, i == pp - 1), len(kinds)))
    return tuple(kinds), tuple(index)


def replayed_fraction(model: ModelSpec, cfg: StepConfig) -> float:
    """The share of a step's tokens the layers from the model's ``split_layer`` on run (its extras'
    ``token_share``: DeepSeek-V4.1's causal encoder replays each prompt's last 128 tokens through the decoder, 1.56%
    of an 8,192-token prompt); 1 for decode and for a model without such an extra."""
    return model.token_share(cfg.phase, cfg.computed_len)


def step_time(d: Deployment, cfg: StepConfig) -> StepTime:
    """One step of ``cfg.phase`` on the most loaded GPU of deployment ``d`` (its layout, precision, efficiency
    factors and scale-up domain).

    Per stage, with compute C and communication M: ``C + M``, or with two-batch overlap
    ``max(C, M) + (1 - overlap_eff) x min(C, M)``. One stage: the step is that. ``pp`` stages (the engines'
    pipeline schedule: vLLM / SGLang keep one micro-batch per stage in flight): the replica's
    ``tokens_per_gpu x GPUs per stage x pp`` tokens form ``M = min(pp, sequences)`` micro-batches, each crosses
    every stage in turn, and a stage serves the micro-batches one after another, so a sequence's next step
    comes after ``max(sum of stage times, M x busiest stage)`` (the decode roofline's rule): the busiest
    stage sets the pace, fewer sequences than stages leave stages idle (the bubble). ``latency_s`` is one
    micro-batch's way through every stage (a prompt chunk's time to first token)."""
    _checked(d, cfg.redundant_experts)
    model, gpu, layout, eff = d.model, d.gpu, d.layout, d.efficiency
    halves = 2.0 if cfg.overlap == "two_batch" else 1.0
    micro = _microbatches(layout, cfg.tokens_per_gpu / cfg.tokens_per_sequence)
    per_gpu = cfg.tokens_per_gpu * layout.pp / micro  # one micro-batch's tokens on each GPU of a stage
    costs = layer_costs(d, cfg, tokens_per_gpu=per_gpu / halves)
    bw, system = gpu.hbm_bytes_per_s, eff["system"]

    def work_s(w: Work) -> float:
        return kernel_s(w, bw, eff.kernel(w.family, w.path))

    # the layers from the extras' split layer on see only their share of the tokens (a causal encoder's decoder)
    replayed = replayed_fraction(model, cfg)
    split = model.split_layer if replayed < 1.0 else model.num_layers
    kinds, index = _split_plan(model, layout.pp, split)
    tail = layer_costs(d, cfg, tokens_per_gpu=replayed * per_gpu / halves) if replayed < 1.0 else costs
    times, computes, comms = [], [], []
    components: dict[str, float] = {}
    per_token_s = system.token_overhead_ps_per_channel * 1e-12 * model.hidden_size
    indexer_s = _indexer_prefill_layer_s(d, cfg, per_gpu / halves)  # per indexer layer, 0 where none runs
    scan_s = _scan_prefill_layer_s(d, cfg, per_gpu / halves)  # per layer of each mixer group: its GDN scan, or 0
    for j, (counts, tail_counts, last) in enumerate(kinds):
        overhead_s = system.layer_overhead_us * 1e-6 + per_token_s * per_gpu / halves
        parts = costs.stage_parts(counts, last, not last, work_s, overhead_s)
        if tail_counts.layers:
            tail_overhead_s = system.layer_overhead_us * 1e-6 + per_token_s * replayed * per_gpu / halves
            for k, v in tail.stage_parts(tail_counts, False, False, work_s, tail_overhead_s).items():
                parts[k] = parts.get(k, 0.0) + v
        if indexer_s:
            parts["indexer_prefill"] = indexer_s * _indexer_layers(model, cfg.context_len, counts, tail_counts)
        if scan_s:
            parts["linear_prefill"] = sum(
                s * c.per_group[i] for c in (counts, tail_counts) if c.layers for i, s in scan_s
            )
        m = halves * sum(parts.get(k, 0.0) for k in COMM_PARTS)
        c = halves * sum(v for k, v in parts.items() if k not in COMM_PARTS)
        times.append(max(c, m) + (1.0 - system.overlap_eff) * min(c, m) if halves > 1 else c + m)
        computes.append(c)
        comms.append(m)
        n = index.count(j)
        for k, v in parts.items():
            components[k] = components.get(k, 0.0) + n * halves * v
    compute, comm = sum(computes[j] for j in index), sum(comms[j] for j in index)
    exposed = _extras_s(model, costs.extras.scaled(halves), compute, replayed)
    if costs.extras.seconds:
        components["host_tables"] = exposed
    served = served_step_s(d, cfg)
    if served:  # scheduling, sampling, graph replay: after the last stage, once per step
        components["engine_step"] = served
        times = [t + (served if index[-1] == j else 0.0) for j, t in enumerate(times)]
    stage_s, total = _pipeline([times[j] for j in index], micro, exposed)
    k = d.calibration.step_scale(cfg.phase) if d.calibration is not None else 1.0
    if k != 1.0:  # one's own cluster, calibrated: every part of the step in proportion (core.deployment.calibration)
        components = {name: v * k for name, v in components.items()}
        compute, comm, total, stage_s = compute * k, comm * k, total * k, tuple(v * k for v in stage_s)
    return StepTime(components, compute, comm, total, cfg.tokens_per_gpu, cfg.phase, stage_s, micro)


def served_step_s(d: Deployment, cfg: StepConfig) -> float:
    """Seconds a served decode step of ``d`` pays beyond its kernels (``d.served_step``: ``fixed_s`` or, with attention
    DP, ``dp_attention_s``, ``+ per_layer_s x layers + per_indexer_s x indexer layers``, ``+ rocm_s`` on an AMD GPU,
    fitted per stack on published batch-1 and low-concurrency steps, :mod:`core.hardware.served_step`); 0 in prefill
    and for a kernel-level deployment (no served cost). Draft passes are priced where the drafts are (the speculative
    step)."""
    if d.served_step is None or cfg.phase != "decode":
        return 0.0
    return step_overhead_s(d.served_step, d.model, attention_dp=d.layout.attention_dp, vendor=d.gpu.vendor)


def _indexer_groups(model: ModelSpec, context_len: int) -> tuple[int, ...]:
    """The mixer groups whose layers run a DSA indexer of their own in prefill, on prompts longer than its top-k."""
    tops = [g.mixer.prefill_indexer_topk() for g in model.mixers]
    return tuple(i for i, k in enumerate(tops) if 0 < k < context_len)


def _indexer_layers(model: ModelSpec, context_len: int, *counts: parallel.StageCounts) -> int:
    groups = _indexer_groups(model, context_len)
    return sum(c.per_group[i] for c in counts if c.layers for i in groups)


def _indexer_prefill_layer_s(d: Deployment, cfg: StepConfig, tokens_per_gpu: float) -> float:
    """Seconds one DSA indexer layer adds to a prefill pass whose prompts outgrow the indexer's top-k
    (:mod:`core.hardware.dsa_prefill`, measured): over the tokens each attention group processes (a TP group's
    ranks each score every token: the indexer's weights are replicated). 0 in decode, for shorter prompts (they
    run dense attention) and for a model without one."""
    if cfg.phase != "prefill" or not _indexer_groups(d.model, cfg.context_len):
        return 0.0
    lay = d.layout
    return indexer_prefill_cost(d.gpu).layer_s(tokens_per_gpu * lay.gpus_per_stage / lay.attention_dp)


def _scan_prefill_layer_s(d: Deployment, cfg: StepConfig, tokens_per_gpu: float) -> tuple[tuple[int, float], ...]:
    """(mixer group, seconds one of its layers adds to a prefill pass) for the groups that run a chunked gated
    delta-rule scan (Gated DeltaNet: the causal conv and the chunked delta rule, :mod:`core.hardware.gdn_prefill`,
    measured per stack): over the tokens each attention group processes, on the value heads a rank holds. Empty in
    decode (the recurrent update is the state traffic the mixer's work already reads and writes)."""
    if cfg.phase != "prefill":
        return ()
    lay = d.layout
    heads = [g.mixer.prefill_scan_heads_per_rank(lay.attention_tp) for g in d.model.mixers]
    if not any(heads):
        return ()
    cost, tokens = gdn_prefill_cost(d.gpu, d.stack), tokens_per_gpu * lay.gpus_per_stage / lay.attention_dp
    return tuple((i, cost.layer_s(tokens, h)) for i, h in enumerate(heads) if h)


def _extras_s(model: ModelSpec, fetches: Fetches, compute_s: float, replayed: float = 1.0) -> float:
    """Seconds a micro-batch waits for the rows its extras' lookups read (off-GPU tables: Engram / n-gram,
    :mod:`core.memory.host_tables`: tier, link, overlap with ``compute_s``); 0 for a model whose extras read none."""
    return fetches.read(model, compute_s, replayed)[1]


def _pipeline(stage_s: list[float], micro: float, tables_s: float) -> tuple[tuple[float, ...], float]:
    """The one pipeline rule of the timed step and the roofline: the tables feed early layers, so the first
    stage waits ``tables_s``; a sequence's next step comes after ``max(sum of stage times, micro-batches x
    busiest stage)``. Returns (the stage times, the step)."""
    stages = (stage_s[0] + tables_s, *stage_s[1:])
    return stages, max(sum(stages), micro * max(stages))


def _microbatches(layout: ParallelLayout, sequences_per_gpu: float) -> float:
    """Micro-batches a pipeline keeps in flight: one per stage, fewer when the replica holds fewer sequences
    (or prompt chunks) than stages."""
    sequences = sequences_per_gpu * layout.gpus_per_stage * layout.pp
    return float(min(layout.pp, max(1.0, sequences)))


@dataclass(frozen=True)
class Roofline:
    """The decode roofline of one replica: the step-time model's works with every factor at 1, no floors,
    no overheads, no communication. ``weight_bytes``, ``cache_bytes``, ``flops`` and the times are per GPU of
    the busiest pipeline stage for one micro-batch's pass; ``step_s`` is each sequence's time per token."""

    tokens: float  # query tokens per step in the replica (all micro-batches)
    microbatches: float  # min(pp, sequences): micro-batches in flight
    stage: int  # the busiest stage
    num_stages: int
    weight_bytes: float
    cache_bytes: float
    flops: float
    memory_s: float  # (weight + cache bytes) / HBM bandwidth
    compute_s: float  # each kernel's FLOPs at its dtype's dense peak
    stage_s: float  # sum over kernels of max(memory, compute)
    step_s: float  # max(one micro-batch's way through every stage, micro-batches x busiest stage)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.step_s


def decode_roofline(
    d: Deployment, tokens: float, context_len: int, *, tokens_per_sequence: float = 1.0, redundant_experts: int = 0
) -> Roofline:
    """The roofline of a decode step with ``tokens`` query tokens in one replica (``tokens_per_sequence`` per
    sequence) at ``context_len`` cached tokens. With ``pp`` stages the sequences form ``min(pp, sequences)``
    micro-batches, each crossing every stage: a sequence gets its next token every
    ``max(sum of stage times, micro-batches x busiest stage)``."""
    _checked(d, redundant_experts)
    model, gpu, layout = d.model, d.gpu, d.layout
    tokens = amount("tokens", tokens, 0, 1e12)
    cfg = StepConfig(
        "decode",
        max(tokens, 1e-9),
        context_len,
        tokens_per_sequence=tokens_per_sequence,
        redundant_experts=redundant_experts,
    )
    micro = _microbatches(layout, tokens / tokens_per_sequence / (layout.gpus_per_stage * layout.pp))
    per_gpu = cfg.tokens_per_gpu / micro / layout.gpus_per_stage
    costs = layer_costs(d, cfg, tokens_per_gpu=per_gpu, eff=IDEAL)
    bw = gpu.hbm_bytes_per_s
    totals = []
    kinds, index = _stage_plan(model, layout.pp)
    for i, (counts, last) in enumerate(kinds[j] for j in index):
        wb = cb = flops = compute = stage = 0.0
        for n, _, w in costs.stage_works(counts, last):
            if n:
                wb, cb, flops = wb + n * w.weight_bytes, cb + n * w.cache_bytes, flops + n * w.flops
                compute += n * w.flops / w.peak_flops
                stage += n * kernel_s(w, bw, IDEAL[w.family])
        totals.append((stage, i, {"weight_bytes": wb, "cache_bytes": cb, "flops": flops, "compute_s": compute}))
    tables = _extras_s(model, costs.extras, sum(t[0] for t in totals))
    stages, step = _pipeline([t[0] for t in totals], micro, tables)
    busiest = max(range(len(stages)), key=stages.__getitem__)
    stage_s, sums = stages[busiest], totals[busiest][2]
    return Roofline(
        float(tokens),
        micro,
        busiest,
        layout.pp,
        sums["weight_bytes"],
        sums["cache_bytes"],
        sums["flops"],
        (sums["weight_bytes"] + sums["cache_bytes"]) / bw,
        sums["compute_s"],
        stage_s,
        step,
    )
