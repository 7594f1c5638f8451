"""Layout search: every valid TP / DP-attention / EP / expert-TP / PP / DP layout of a cluster, scored
for prefill or decode with the step-time model, ranked, each with the reason for its rank.

Decode is scored as deployments are sized: the largest batch per GPU that fits the KV cache and meets
the TPOT target, and the output tokens/s per GPU it reaches. Prefill: the largest chunk of prompt
tokens per GPU that fits and meets the TTFT target, and the input tokens/s per GPU.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from core import memory, parallel, perf
from core.specs import ClusterSpec, GPUSpec, MemoryAssumptions, ModelSpec, ParallelLayout, Precision, Workload

__all__ = [
    "DEFAULT_TARGETS",
    "Plan",
    "decision_rule",
    "enumerate_layouts",
    "rank_of",
    "recommend",
    "recommend_with_rejections",
]

Phase = Literal["prefill", "decode"]
# Published large-MoE deployments the Layouts page locates in its ranking: (phase, attention TP, EP, source).
REFERENCE_DEPLOYMENTS: tuple[tuple[str, int, int, str], ...] = (
    ("prefill", 1, 32, "DeepSeek-V3 inference system (EP32 prefill, 4 nodes) and LMSYS's SGLang deployment on H100"),
    ("decode", 1, 72, "LMSYS's SGLang decode on 9 x 8 H100 with DP-attention x EP72"),
    ("decode", 1, 144, "DeepSeek-V3 inference system: EP144 decode on 18 nodes"),
)
DEFAULT_TARGETS = {"decode": 0.100, "prefill": 3.0}  # TPOT (s per output token), TTFT (s per prompt chunk)
_DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)
_PREFILL_TOKENS = (1024, 2048, 4096, 8192, 16384, 32768)


@dataclass(frozen=True)
class Plan:
    """One layout with its score. ``tp`` is attention TP, ``ep`` expert parallel, ``dp`` data-parallel
    replicas, ``pp`` pipeline stages (``dp_attention`` and ``expert_tp`` complete the layout)."""

    layout: ParallelLayout
    phase: Phase
    redundant_experts: int
    tokens_per_gpu: float  # decode: sequences per GPU; prefill: prompt tokens per GPU per step
    step_s: float
    tokens_per_s_per_gpu: float
    headroom_gb: float
    reason: str = ""
    breakdown: dict[str, float] = field(default_factory=dict)
    rank: int = 0
    dense: bool = False

    @property
    def tp(self) -> int:
        return self.layout.attention_tp

    @property
    def ep(self) -> int:
        return self.layout.ep

    @property
    def dp(self) -> int:
        return self.layout.dp

    @property
    def pp(self) -> int:
        return self.layout.pp

    @property
    def label(self) -> str:
        lay = self.layout
        parts = [
            f"TP{lay.attention_tp}" if lay.attention_tp > 1 else "",
            f"DP-attn{lay.attention_dp}" if lay.attention_dp > 1 else "",
            f"EP{lay.ep}" if lay.ep > 1 else "",
            (f"FFN-TP{lay.expert_tp}" if self.dense else f"expert-TP{lay.expert_tp}") if lay.expert_tp > 1 else "",
            f"PP{lay.pp}" if lay.pp > 1 else "",
            f"DP{lay.dp}" if lay.dp > 1 else "",
        ]
        return " · ".join(p for p in parts if p) or "1 GPU"


def _redundant(model: ModelSpec, ep: int) -> int | None:
    """Redundant expert slots needed for EP to divide the experts (EPLB fills them), None if too many."""
    if model.moe is None:
        return 0 if ep == 1 else None
    n = model.moe.n_routed_experts
    extra = (-n) % ep
    return extra if extra <= max(n // 4, ep // 2) else None


def enumerate_layouts(
    model: ModelSpec, cluster: ClusterSpec, *, max_tp: int | None = None, precision: Precision | str | None = None
) -> list[tuple[ParallelLayout, int]]:
    """Every layout of the cluster that respects divisibility: attention TP divides the heads (and the
    KV heads divide it or it divides them) and stays inside the scale-up domain; EP divides the experts
    (with redundant slots filling a small gap, as DeepSeek's EP72 / EP144 deployments do); PP at most
    the number of nodes; with ``precision``, splits its quantised weights can run
    (:func:`core.parallel.quant_split_problems`). Returns (layout, redundant experts)."""
    prec = Precision.of(precision) if precision is not None else None
    g = cluster.total_gpus
    domain = cluster.scale_up_domain_gpus
    max_tp = max_tp or min(domain, 16)
    out = []
    for pp in parallel.divisors(g):
        if pp > cluster.num_nodes or pp > model.num_layers:
            continue
        for dp in parallel.divisors(g // pp):
            stage = g // (pp * dp)
            for tp in parallel.divisors(stage):
                if tp > max_tp:
                    continue
                for etp in parallel.divisors(stage):
                    ep = stage // etp
                    if model.moe is None and ep != 1:
                        continue
                    if model.moe is not None and etp > 1 and ep > 1 and etp != tp:
                        continue  # mixed expert TP x EP only in the common TP=expert-TP form
                    red = _redundant(model, ep)
                    if red is None:
                        continue
                    lay = ParallelLayout(attention_tp=tp, attention_dp=stage // tp, ep=ep, expert_tp=etp, pp=pp, dp=dp)
                    if memory.check_layout(model, lay, red, prec):
                        continue
                    out.append((lay, red))
    return out


def _category(parts: Mapping[str, float]) -> dict[str, float]:
    return {
        "attention": parts.get("attention_projections", 0.0) + parts.get("attention_scores", 0.0),
        "dense & shared FFN": parts.get("dense_ffn", 0.0)
        + parts.get("shared_experts", 0.0)
        + parts.get("parallel_mlp", 0.0)
        + parts.get("router", 0.0)
        + parts.get("lm_head", 0.0),
        "routed experts": parts.get("routed_experts", 0.0),
        "all-to-all": parts.get("dispatch", 0.0) + parts.get("combine", 0.0),
        "all-reduce & expert-TP": parts.get("allreduce", 0.0)
        + parts.get("expert_tp_comm", 0.0)
        + parts.get("pp_send", 0.0),
        "overhead": parts.get("layer_overhead", 0.0),
    }


@dataclass(frozen=True)
class _Search:
    """What every layout of one search is scored against (built once per search)."""

    model: ModelSpec
    gpu: GPUSpec
    precision: Precision
    phase: Phase
    workload: Workload
    target_s: float
    efficiency: perf.Efficiency
    assumptions: MemoryAssumptions
    domain_gpus: int


def _score(s: _Search, lay: ParallelLayout, redundant: int) -> Plan | str:
    """The best operating point of one layout, or the reason it has none."""
    model, gpu, prec, wl = s.model, s.gpu, s.precision, s.workload
    with_red = s.assumptions.model_copy(update={"redundant_experts": redundant})
    one_token = Workload(batch=1, input_len=1, output_len=1)
    if s.phase == "decode":
        ctx = wl.decode_context_len
        seqs = memory.max_concurrent_sequences(model, gpu, lay, prec, ctx, assumptions=with_red)
        if seqs < lay.attention_dp * lay.dp:
            mem = memory.per_gpu_memory(model, gpu, lay, prec, one_token, assumptions=with_red)
            return (
                f"does not fit: {mem.weights_bytes / 1e9:,.1f} GB of weights per GPU against "
                f"{mem.usable_bytes / 1e9:,.1f} GB usable"
                if mem.kv_budget_bytes <= 0
                else f"not one {ctx:,}-token sequence per attention rank fits the KV cache"
            )
        cap = seqs / (lay.gpus_per_stage * lay.dp)  # sequences per GPU the KV cache holds
        candidates = [b for b in _DECODE_BATCHES if b <= cap] or [cap]
    else:
        candidates = list(_PREFILL_TOKENS)
        # memory with a one-token activation peak; a chunk of b tokens adds (b - 1) x hidden x 2 B x factor
        mem1 = memory.per_gpu_memory(
            model, gpu, lay, prec, one_token, assumptions=with_red.model_copy(update={"max_num_batched_tokens": 1})
        )
        per_token_act = model.hidden_size * 2 * s.assumptions.activation_factor

    def evaluate(b):
        if s.phase == "prefill":
            if mem1.kv_budget_bytes - (b - 1) * per_token_act < mem1.kv_required_bytes:
                return None
            cfg = perf.StepConfig("prefill", float(b), wl.input_len, overlap="two_batch", redundant_experts=redundant)
        else:
            cfg = perf.StepConfig(
                "decode", float(b), wl.decode_context_len, overlap="two_batch", redundant_experts=redundant
            )
        return perf.step_time(model, gpu, lay, prec, cfg, s.efficiency, domain_gpus=s.domain_gpus)

    # the largest operating point that fits and meets the target wins; step time grows with the batch,
    # so a binary search over the candidates finds it
    best = last = None
    lo, hi = 0, len(candidates) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        b = candidates[mid]
        st = evaluate(b)
        if st is not None and st.step_s <= s.target_s:
            best = (b, st)
            lo = mid + 1
        else:
            if st is not None and (last is None or b < last[0]):
                last = (b, st)
            hi = mid - 1
    if best is None:
        if last is None:
            return "does not fit even the smallest prefill chunk in memory"
        b, st = last
        kind = "TPOT" if s.phase == "decode" else "TTFT"
        return f"misses the {kind} target: {st.step_s * 1e3:,.0f} ms even at {b:,.0f} tokens per GPU"
    b, st = best
    wl_b = Workload(
        batch=max(1, round(b * lay.gpus_per_stage * lay.dp)) if s.phase == "decode" else 1,
        input_len=wl.input_len,
        output_len=wl.output_len,
    )
    mem = memory.per_gpu_memory(model, gpu, lay, prec, wl_b, assumptions=with_red)
    return Plan(
        lay,
        s.phase,
        redundant,
        float(b),
        st.step_s,
        st.tokens_per_s_per_gpu,
        mem.headroom_bytes / 1e9,
        breakdown=_category(st.components),
        dense=model.moe is None,
    )


def _reason(p: Plan, best: Plan, domain: int, cache_note: str) -> str:
    cat = p.breakdown
    total = sum(cat.values()) or 1.0
    top = max(cat, key=cat.get)
    bits = [
        f"{p.tokens_per_gpu:,.0f} {'sequences' if p.phase == 'decode' else 'prompt tokens'} per GPU meet the target"
    ]
    bits.append(f"{top} is {100 * cat[top] / total:.0f}% of the kernel time")
    if p.ep > domain:
        bits.append(f"EP {p.ep} crosses the {domain}-GPU scale-up domain: all-to-all over the network")
    elif p.ep > 1:
        bits.append(f"EP {p.ep} stays inside the {domain}-GPU NVLink domain")
    if p.tp > 1 and p.layout.attention_dp == 1 and p.phase == "decode" and cache_note:
        bits.append(f"TP attention: {cache_note}")
    if p is not best:
        bits.insert(0, f"{100 * (1 - p.tokens_per_s_per_gpu / best.tokens_per_s_per_gpu):.0f}% below the best")
    return "; ".join(bits)


def recommend(
    model: ModelSpec,
    cluster: ClusterSpec,
    workload: Workload,
    phase: Phase,
    *,
    precision: Precision | str = "fp8",
    target_s: float | None = None,
    assumptions: MemoryAssumptions | None = None,
    profiles: Mapping | None = None,
    max_plans: int | None = None,
    stack: str = "sglang",
) -> list[Plan]:
    """Ranked plans for ``phase`` (best first). Each Plan carries tp, ep, dp, pp, its operating point and
    predicted tokens/s per GPU, and why it ranks where it does. Layouts with no feasible operating
    point are left out; :func:`recommend_with_rejections` also returns why."""
    plans, _ = recommend_with_rejections(
        model,
        cluster,
        workload,
        phase,
        precision=precision,
        target_s=target_s,
        assumptions=assumptions,
        profiles=profiles,
        stack=stack,
    )
    return plans[:max_plans] if max_plans else plans


def recommend_with_rejections(
    model: ModelSpec,
    cluster: ClusterSpec,
    workload: Workload,
    phase: Phase,
    *,
    precision: Precision | str = "fp8",
    target_s: float | None = None,
    assumptions: MemoryAssumptions | None = None,
    profiles: Mapping | None = None,
    stack: str = "sglang",
) -> tuple[list[Plan], list[tuple[ParallelLayout, str]]]:
    if phase not in ("prefill", "decode"):
        raise ValueError(f"phase must be prefill or decode, got {phase!r}")
    target = DEFAULT_TARGETS[phase] if target_s is None else target_s
    if not (math.isfinite(target) and target > 0):
        raise ValueError("the latency target must be > 0 seconds")
    from core.catalog import load_catalog

    search = _Search(
        model,
        cluster.gpu,
        Precision.of(precision),
        phase,
        workload,
        target,
        load_catalog().efficiency_for(cluster.gpu.id, stack, profiles),
        assumptions or MemoryAssumptions(),
        cluster.scale_up_domain_gpus,
    )
    plans, rejected = [], []
    seen: dict[tuple, Plan | str] = {}
    for lay, red in enumerate_layouts(model, cluster, precision=search.precision):
        # data-parallel replicas change nothing per GPU: score each stage configuration once
        key = (lay.attention_tp, lay.attention_dp, lay.ep, lay.expert_tp, lay.pp, red)
        if key not in seen:
            seen[key] = _score(search, lay, red)
        result = seen[key]
        if isinstance(result, Plan):
            plans.append(replace(result, layout=lay))
        else:
            rejected.append((lay, result))
    plans.sort(key=lambda p: (-p.tokens_per_s_per_gpu, p.layout.pp, p.layout.attention_tp))
    note = memory.cache_split_note(model)
    ranked = [
        replace(p, rank=i + 1, reason=_reason(p, plans[0], search.domain_gpus, note)) for i, p in enumerate(plans)
    ]
    return ranked, rejected


def decision_rule(model: ModelSpec, cluster: ClusterSpec, precision: Precision | str = "fp8") -> tuple[str, str]:
    """Which row of the sources' quick decision table the case falls under: (case, recommendation)."""
    gpu = cluster.gpu
    if model.moe is None:
        return ("Dense model", "TP inside a node (PP or DP across nodes); expert parallelism does not apply")
    try:
        need = memory.min_gpus(model, gpu, precision)
    except ValueError:
        need = math.inf
    if cluster.scale_up_domain_gpus >= 72 and (need > gpu.gpus_per_node or model.total_params >= 300e9):
        return ("Large MoE with NVL72 available", "Wide-EP = 72 for decode, EP = 32 for prefill")
    if need <= gpu.gpus_per_node and model.total_params < 150e9:
        return ("Small MoE that fits in 1 node (Mixtral 8x7B, Llama 4 Scout)", "TP only, or EP = 2 inside the node")
    if need <= 2 * gpu.gpus_per_node and model.total_params < 300e9:
        return ("Medium MoE (Mixtral 8x22B, Qwen3-235B) on 1-2 nodes", "EP = 8 inside the node, optionally TP = 2")
    return (
        "Large MoE (DeepSeek-V3) on a multi-node cluster",
        "TP x EP across nodes (e.g. TP = 4 x EP = 8 on 32 GPUs); DeepSeek and LMSYS deploy EP32 prefill, EP72-144 decode",
    )


def rank_of(plans: list[Plan], *, tp: int, ep: int, pp: int = 1) -> Plan | None:
    """The best-ranked plan with the given attention TP, EP and PP (to see where a known deployment lands)."""
    return next((p for p in plans if p.tp == tp and p.ep == ep and p.pp == pp), None)
