"""Layout search: every TP / DP-attention / EP / expert-TP / PP / DP layout engines run on a cluster, each
at its best operating point (:mod:`core.serving.operating_point`), ranked, each with the reason for its rank.

Decode is scored as deployments are sized: the largest batch per GPU whose KV cache fits at the full
context and whose step meets the TPOT target, with or without two-batch overlap, and the output tokens/s
per GPU it reaches. Prefill: the prompt chunk per GPU with the most input tokens/s whose time to first
token (through every pipeline stage, chunk by chunk) meets the TTFT target.

Only what the engines' commands start is ranked (:mod:`core.serving.placement`: replicas on whole nodes or
dividing one, tiling the scale-up domains, vLLM's DP engines keeping a stage's EP group inside one); the rest
is returned with the reason.

Tiers come from the step-time model's measured error (:func:`error_distribution`: the leave-one-out |error| of
the whole-step validation cases of the phase, ``catalogs/step_error.yaml``). Plans within its median of the best
form the first tier: the model cannot tell them apart, so what separates them is said instead (memory headroom,
the GPUs one replica spans, traffic over the network). Plans within its 90th percentile form the second: the
model ranks them lower but one time in ten errs by more than the gap. The rest form the third.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from core import memory
from core.deployment import parallel
from core.deployment.bundle import Deployment
from core.deployment.parallel import check_layout
from core.deployment.specs import ParallelLayout, Scenario, Workload
from core.hardware import ClusterSpec
from core.hardware.efficiency import STACK_NAMES
from core.hardware.served_step import served_step_for
from core.model import ModelSpec
from core.serving.batch_search import GRID_TOLERANCE
from core.serving.launch.spec import overlaps_two_batches
from core.serving.operating_point import Plan, operating_point, per_gpu_text, unspeculated
from core.serving.placement import placement_problems
from core.serving.tiers import ErrorSpread, error_distribution, model_error

if TYPE_CHECKING:
    from core.catalog import Catalog

__all__ = [
    "DEFAULT_TARGETS",
    "ErrorSpread",
    "Plan",
    "crosses_domain",
    "decision_rule",
    "engine_problems",
    "enumerate_layouts",
    "error_distribution",
    "fewest_gpus",
    "model_error",
    "placement_problems",
    "rank_of",
    "recommend",
    "recommend_with_rejections",
    "search_deployment",
]

Phase = Literal["prefill", "decode"]
# Published large-MoE deployments the Layouts page locates in its ranking: (phase, attention TP, EP, source).
REFERENCE_DEPLOYMENTS: tuple[tuple[str, int, int, str], ...] = (
    ("prefill", 1, 32, "DeepSeek-V3 inference system (EP32 prefill, 4 nodes) and LMSYS's SGLang deployment on H100"),
    ("decode", 1, 72, "LMSYS's SGLang decode on 9 x 8 H100 with DP-attention x EP72"),
    ("decode", 1, 144, "DeepSeek-V3 inference system: EP144 decode on 18 nodes"),
)
DEFAULT_TARGETS = {"decode": 0.100, "prefill": 3.0}  # TPOT (s per output token), TTFT (s per prompt)


def _redundant(model: ModelSpec, ep: int) -> int | None:
    """Redundant expert slots needed for EP to divide the experts (EPLB fills them), None if too many."""
    if model.moe is None:
        return 0 if ep == 1 else None
    n = model.moe.n_routed_experts
    extra = (-n) % ep
    return extra if extra <= max(n // 4, ep // 2) else None


def engine_problems(stack: str, model: ModelSpec, layout: ParallelLayout) -> list[str]:
    """Why the serving ``stack`` cannot run ``layout`` (empty: it can), from the engines' documentation and
    issue trackers:

    * vLLM splits a stage's experts one way only: EP over all its GPUs (``--enable-expert-parallel``) or
      TP over all of them (the default "(DP x TP)-sized tensor parallel group", docs: Data Parallel
      Deployment); no mixed expert TP x EP;
    * SGLang does not combine DP-attention with pipeline stages (``--enable-dp-attention`` with
      ``--pp-size`` > 1 crashes on the first request: sgl-project/sglang#9805, open);
    * TensorRT-LLM's ``enable_attention_dp`` runs attention data-parallel over all its tensor-parallel
      ranks (docs: features/parallel-strategy.md): no attention TP x DP mix. It runs every product of
      ``moe_tensor_parallel_size`` x ``moe_expert_parallel_size``."""
    out = []
    if stack == "vllm" and model.moe is not None and 1 < layout.expert_tp < layout.gpus_per_stage:
        out.append(
            f"vLLM cannot run expert TP {layout.expert_tp} x EP {layout.ep}: its experts are split by EP or by TP "
            "over the whole stage"
        )
    if stack == "trtllm" and model.moe is not None and layout.attention_tp > 1 and layout.attention_dp > 1:
        out.append(
            f"TensorRT-LLM runs attention either TP or DP over the stage, not TP {layout.attention_tp} x "
            f"DP {layout.attention_dp} (enable_attention_dp)"
        )
    if stack == "sglang" and layout.attention_dp > 1 and layout.pp > 1:
        out.append("SGLang cannot combine DP-attention with pipeline stages (sgl-project/sglang#9805)")
    if stack != "vllm" and layout.dcp > 1:
        out.append(
            "decode context parallelism is vLLM's (--decode-context-parallel-size); TensorRT-LLM's Helix is not modelled"
        )
    return out


def search_deployment(
    scenario: Scenario, catalog: Catalog, model: ModelSpec | None = None, workload: Workload | None = None
) -> Deployment:
    """What the layout search starts from for ``scenario`` (``model``: an imported one, else the catalog's): its
    model, GPU, cluster, precision, workload (``workload`` where given), memory assumptions, speculative config and
    draft, and the efficiency of its GPU under its serving stack, on a one-GPU placeholder layout that every model
    runs (the search varies the layout; the scenario's own may not run the model). Raises ValueError for an unknown
    id."""
    model = model if model is not None else catalog.model(scenario.model_id)
    gpu = catalog.gpu(scenario.gpu_id)
    return Deployment(
        model,
        gpu,
        ParallelLayout(),
        scenario.precision,
        catalog.efficiency_for(gpu.id, scenario.serving_stack),
        cluster=ClusterSpec(gpu=gpu, num_nodes=scenario.num_nodes, gpus_per_node=scenario.gpus_per_node),
        workload=workload if workload is not None else scenario.workload,
        assumptions=scenario.memory,
        spec=scenario.spec,
        draft=catalog.draft_model_for(scenario.spec),
        calibration=scenario.calibration,  # every page plans with one's own calibration (issue 36)
        served_step=served_step_for(scenario.serving_stack, scenario.spec.method),  # served per-step costs (#35)
    )


def _cluster(d: Deployment) -> ClusterSpec:
    if d.cluster is None:
        raise ValueError("the layout search needs the deployment's cluster (Deployment.cluster)")
    return d.cluster


def enumerate_layouts(
    d: Deployment, *, max_tp: int | None = None, dcp: bool = False
) -> list[tuple[ParallelLayout, int]]:
    """Every layout engines run for ``d``'s model on its cluster that respects divisibility: attention TP divides
    the heads (and the KV heads divide it or it divides them) and stays inside the scale-up domain (72 GPUs on an
    NVL72 rack, a node on HGX); the rest of a stage's GPUs are attention data-parallel ranks; the experts
    split as expert TP x EP in any product equal to the stage (SGLang's ``--ep-size`` below ``--tp-size``,
    TensorRT-LLM's ``moe_tensor_parallel_size`` x ``moe_expert_parallel_size``), expert TP inside the
    scale-up domain; EP divides the experts (with redundant slots filling a small gap, as DeepSeek's EP72 /
    EP144 deployments do); PP at most the number of nodes; splits ``d``'s quantised weights can run
    (:func:`core.deployment.parallel.quant_split_problems`); with ``dcp`` also each decode-context-parallel size the
    attention TP group allows (:func:`core.deployment.parallel.dcp_problems`). Returns (layout, redundant experts)."""
    model, cluster, prec = d.model, _cluster(d), d.precision
    g = cluster.total_gpus
    domain = cluster.scale_up_domain_gpus
    max_tp = max_tp or domain
    out = []
    for pp in parallel.divisors(g):
        if pp > cluster.num_nodes or pp > model.num_layers:
            continue
        for dp in parallel.divisors(g // pp):
            stage = g // (pp * dp)
            for etp in parallel.divisors(stage):
                ep = stage // etp
                if (model.moe is None and ep != 1) or (ep > 1 and etp > domain):
                    continue
                red = _redundant(model, ep)
                if red is None:
                    continue
                for tp in parallel.divisors(stage):
                    if tp > max_tp:
                        break
                    lay = ParallelLayout(attention_tp=tp, attention_dp=stage // tp, ep=ep, expert_tp=etp, pp=pp, dp=dp)
                    if check_layout(model, lay, red, prec):
                        continue
                    out.append((lay, red))
                    for k in parallel.divisors(tp)[1:] if dcp else ():
                        if not parallel.dcp_problems(model, tp, k):
                            out.append((lay.model_copy(update={"dcp": k}), red))
    return out


def crosses_domain(layout: ParallelLayout, domain_gpus: int) -> str:
    """What of a layout's traffic leaves the scale-up domain: "" (none), or which collective does."""
    if layout.gpus_per_stage > domain_gpus and (layout.ep > 1 or layout.expert_tp > 1 or layout.attention_tp > 1):
        return "all-to-all" if layout.ep > 1 and layout.expert_tp == 1 else "expert / tensor-parallel collectives"
    if layout.pp > 1 and layout.gpus_per_stage * layout.pp > domain_gpus:
        return "pipeline sends"
    return ""


def _binds(p: Plan, target_s: float) -> str:
    """The operating point and what stops a larger one (review 3 M6): KV memory, the latency target, or the largest
    prefill chunk tried."""
    kind = "TPOT" if p.phase == "decode" else "TTFT"
    lat, goal = f"{1e3 * p.latency_s:,.0f} ms", f"{1e3 * target_s:,.0f} ms"
    what = (
        f"{per_gpu_text(p.tokens_per_gpu)} sequences per GPU"
        if p.phase == "decode"
        else f"{per_gpu_text(p.tokens_per_gpu)} prompt tokens per GPU per step"
    )
    if p.bound == "memory":
        held = "all its cache holds at the full context" if p.phase == "decode" else "the largest chunk that fits"
        return f"{what}, limited by {'KV ' if p.phase == 'decode' else ''}memory ({held}): {kind} {lat} against the {goal} target"
    if p.bound == "grid":
        return f"{what}, the largest chunk tried: {kind} {lat} against the {goal} target"
    room = f"; the KV cache holds {per_gpu_text(p.capacity)}" if p.phase == "decode" else ""
    larger = "batch" if p.phase == "decode" else "chunk"
    return (
        f"{what}, limited by the {kind} target: {lat} of {goal} (a larger {larger} gains at most "
        f"{100 * GRID_TOLERANCE:.0f}% before it misses{room})"
    )


def _reason(p: Plan, best: Plan, domain: int, cache_note: str, target_s: float, stack: str) -> str:
    cat = p.breakdown
    total = sum(cat.values()) or 1.0
    top = max(cat, key=cat.get)
    bits = [_binds(p, target_s)]
    share = f"{100 * cat[top] / total:.0f}% of the step's time before overlap"
    if top == "fitted overhead":  # no kernel to name (layouts review 3, M5)
        bits.append(f"the fitted overhead is the largest part ({share}): time fitted to measured steps, not a kernel")
    else:
        bits.append(f"{top} dominates ({share})")
    none = (
        "no overlap (it would not pay)"
        if overlaps_two_batches(stack)
        else f"no overlap ({STACK_NAMES[stack]} has none)"
    )
    bits.append("two-batch overlap pays" if p.overlap == "two_batch" else none)
    net = crosses_domain(p.layout, domain)
    if net:
        bits.append(f"{net} over the network (the stage spans more than the {domain}-GPU scale-up domain)")
    elif p.ep > 1:
        bits.append(f"EP {p.ep} stays inside the {domain}-GPU scale-up domain")
    if p.pp > 1:
        bits.append(
            f"{p.pp} stages, {p.microbatches:.0f} micro-batches in flight: the busiest stage sets the pace"
            + (f", a chunk crosses them all in {1e3 * p.latency_s:,.0f} ms" if p.phase == "prefill" else "")
        )
    if p.tp > 1 and p.layout.attention_dp == 1 and p.phase == "decode" and cache_note and p.layout.dcp == 1:
        bits.append(f"TP attention: {cache_note}")
    if p.layout.dcp > 1:
        merge = p.breakdown.get("context-parallel merge", 0.0)
        bits.append(
            f"DCP {p.layout.dcp} shards the cache along the sequence: {p.layout.dcp}x the sequences per GPU's cache, "
            f"{100 * merge / total:.0f}% of the kernel time merging partial attention outputs"
        )
    if p is not best:
        below = 100 * p.below(best)
        if p.tier == 1:
            diff = [
                f"{p.headroom_gb - best.headroom_gb:+.1f} GB headroom",
                f"{p.replica_gpus} GPUs per replica (best: {best.replica_gpus})",
            ]
            lead = f"equivalent to the best within the model's ±{100 * p.tolerance:.0f}% ({below:.0f}% below); "
            bits.insert(0, lead + "differs by " + ", ".join(diff))
        elif p.tier == 2:
            bits.insert(
                0,
                f"{below:.0f}% below the best, within the model's 90th-percentile error ({100 * p.tolerance_p90:.0f}%): "
                "not ruled out",
            )
        else:
            bits.insert(0, f"{below:.0f}% below the best, beyond the model's 90th-percentile error")
    return "; ".join(bits)


def recommend(
    d: Deployment, phase: Phase, *, catalog: Catalog, target_s: float | None = None, max_plans: int | None = None
) -> list[Plan]:
    """Ranked plans for ``phase`` (best first) of ``d``'s model on its cluster, for its workload, precision, memory
    assumptions and serving stack (``d.efficiency``); ``d``'s own layout is not used (the search varies it). Each
    Plan carries tp, ep, dp, pp, its operating point and predicted tokens/s per GPU, and why it ranks where it does
    (tiers from the ``catalog``'s measured step-time error). Layouts with no feasible operating point are left out;
    :func:`recommend_with_rejections` also returns why."""
    plans, _ = recommend_with_rejections(d, phase, catalog=catalog, target_s=target_s)
    return plans[:max_plans] if max_plans else plans


def recommend_with_rejections(
    d: Deployment, phase: Phase, *, catalog: Catalog, target_s: float | None = None
) -> tuple[list[Plan], list[tuple[ParallelLayout, str]]]:
    if phase not in ("prefill", "decode"):
        raise ValueError(f"phase must be prefill or decode, got {phase!r}")
    target = DEFAULT_TARGETS[phase] if target_s is None else target_s
    if not (math.isfinite(target) and target > 0):
        raise ValueError("the latency target must be > 0 seconds")
    base = unspeculated(d)  # plans are scored without speculative decoding (once here, not per layout)
    model, cluster, stack, domain = base.model, _cluster(base), base.stack, base.domain
    plans, rejected = [], []
    seen: dict[tuple, Plan | str] = {}
    for lay, red in enumerate_layouts(base, dcp=phase == "decode" and stack == "vllm"):
        engine = engine_problems(stack, model, lay) or placement_problems(stack, lay, cluster)
        if engine:
            rejected.append((lay, engine[0]))
            continue
        # data-parallel replicas change nothing per GPU: score each stage configuration once
        key = (lay.attention_tp, lay.attention_dp, lay.ep, lay.expert_tp, lay.pp, lay.dcp, red)
        if key not in seen:
            seen[key] = operating_point(base.with_layout(lay, red), phase, target_s=target)
        result = seen[key]
        if isinstance(result, Plan):
            plans.append(replace(result, layout=lay))
        else:
            rejected.append((lay, result))
    # best first; among equal throughput the simpler plan (fewer stages, smaller replica, no overlap)
    plans.sort(key=lambda p: (-p.tokens_per_s_per_gpu, p.pp, p.replica_gpus, p.tp, p.layout.dcp, p.overlap != "none"))
    if not plans:
        return [], rejected
    spread = error_distribution(phase, catalog)
    tol, tol90, top = spread.median, spread.p90, plans[0].tokens_per_s_per_gpu

    def tier(p: Plan) -> int:
        return (
            1 if p.tokens_per_s_per_gpu >= (1 - tol) * top else 2 if p.tokens_per_s_per_gpu >= (1 - tol90) * top else 3
        )

    tiered = [replace(p, tier=tier(p), tolerance=tol, tolerance_p90=tol90) for p in plans]
    note = memory.cache_split_note(model)
    ranked = [
        replace(p, rank=i + 1, reason=_reason(p, tiered[0], domain, note, target, stack)) for i, p in enumerate(tiered)
    ]
    one = fewest_gpus(ranked)
    if one is not None and one.replica_gpus < ranked[0].replica_gpus:
        why = _fewest_note(base, one, ranked[0])
        ranked[one.rank - 1] = replace(one, reason=f"{one.reason}; {why}")
    return ranked, rejected


def fewest_gpus(plans: list[Plan]) -> Plan | None:
    """The best-ranked plan among those whose replica spans the fewest GPUs (review 3 M7: eight one-GPU replicas of
    gpt-oss-120b on 8 x B200), which the Layouts page always shows beside the best; None without plans."""
    if not plans:
        return None
    least = min(p.replica_gpus for p in plans)
    return next(p for p in plans if p.replica_gpus == least)


def _fewest_note(d: Deployment, one: Plan, best: Plan) -> str:
    """What separates the smallest replicas from the best: the weights each GPU holds (so the cache beside them), and
    the all-to-all and routing balance they do without."""

    def weights_gb(p: Plan) -> float:
        lay = d.with_layout(p.layout.model_copy(update={"dp": 1}), p.redundant_experts)
        return memory.per_gpu_memory(lay, Workload(batch=1, input_len=1, output_len=1)).weights_bytes / 1e9

    out = (
        f"replicas on the fewest GPUs that hold the model ({one.replica_gpus}): {weights_gb(one):,.1f} GB of weights "
        f"per GPU against {weights_gb(best):,.1f} GB for the best"
    )
    if one.phase == "decode":
        out += (
            f", so {per_gpu_text(one.tokens_per_gpu)} sequences per GPU where the best runs "
            f"{per_gpu_text(best.tokens_per_gpu)}"
        )
    if one.ep == 1 and best.ep > 1:
        out += "; no all-to-all and no routing imbalance (the best's EP assumes perfectly balanced routing)"
    return out


def decision_rule(d: Deployment) -> tuple[str, str]:
    """Which row of the sources' quick decision table ``d``'s model on its cluster at its precision falls under:
    (case, recommendation)."""
    model, cluster, precision = d.model, _cluster(d), d.precision
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
    if cluster.total_gpus <= cluster.scale_up_domain_gpus:
        return (
            "Large MoE (DeepSeek-V3) inside one scale-up domain",
            "DP-attention x EP over its GPUs (SGLang's DeepSeek guide: DP attention with DeepEP on 8 GPUs)",
        )
    return (
        "Large MoE (DeepSeek-V3) on a multi-node cluster",
        "DP-attention x EP across nodes, as DeepSeek and LMSYS deploy it: EP32 prefill, EP72-144 decode",
    )


def rank_of(plans: list[Plan], *, tp: int, ep: int, pp: int = 1, dcp: int = 1) -> Plan | None:
    """The best-ranked plan with the given attention TP, EP, PP and decode context parallelism (to see where a
    known deployment lands)."""
    return next((p for p in plans if p.tp == tp and p.ep == ep and p.pp == pp and p.layout.dcp == dcp), None)
