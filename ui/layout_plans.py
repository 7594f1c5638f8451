"""The Layouts page's words and tables for a phase's ranked plans: the banner of the best plan, which says which
throughput it is (a prefill or a decode pool) and what the other phase costs (review 3 W6, M1, M13,
:mod:`core.serving.headline`), and the plans' table with the columns a reader needs first (M6, M14)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.deployment.specs import Workload
from core.serving.headline import PoolHeadline, pool_headline
from core.serving.operating_point import OVERLAP_LABELS, Plan, per_gpu_text

__all__ = ["COMMAND_ROLES", "TABLE_COLUMNS", "best_banner", "plans_table", "split_banner"]

TIER_LABELS = {1: "1 equivalent", 2: "2 not ruled out", 3: "3 below"}
BOUND_LABELS = {
    ("decode", "memory"): "KV memory",
    ("decode", "target"): "TPOT target",
    ("prefill", "memory"): "memory",
    ("prefill", "target"): "TTFT target",
    ("prefill", "grid"): "largest chunk tried",
}
# the role each phase's best plan is launched in, and its words: a decode plan has no prompt in its steps, so its
# command is the decode worker of a prefill / decode pair, not aggregated serving (review 3 M1)
COMMAND_ROLES = {
    "prefill": ("prefill", "the prefill worker of a disaggregated pair"),
    "decode": ("decode", "the decode worker of a PD pair"),
}


def best_banner(
    phase: str, best: Plan, h: PoolHeadline | None, workload: Workload, prefill: Plan | None, *, split: bool = False
) -> str:
    """The success banner of ``phase``'s best plan: its throughput per GPU named as a prefill or a decode pool's,
    and with ``h`` (both phases' best plans) what the cluster gives with the other phase paid. ``split``: the
    phases run on their own nodes, and :func:`split_banner` says what the pair serves."""
    overlap, lat = OVERLAP_LABELS[best.overlap], f"{best.latency_s * 1e3:,.0f} ms"
    if phase == "prefill":
        kind = "computed prompt" if workload.prefix_reuse else "input"
        text = (
            f"**Best for prefill: {best.label}** ({overlap}) — {best.tokens_per_s_per_gpu:,.0f} {kind} tokens/s per "
            f"GPU **as a prefill pool** at {per_gpu_text(best.tokens_per_gpu)} prompt tokens per GPU per step, "
            f"TTFT {lat}."
        )
        if h is not None:
            text += (
                f" All {h.gpus:,} GPUs prefilling: {h.prefill_pool_tok_s:,.0f} prompt tokens/s, the prompts of "
                f"{h.prefill_feeds_tok_s:,.0f} output tokens/s at {workload.input_len:,} in / {workload.output_len:,} "
                "out."
            )
        return text
    text = (
        f"**Best for decode: {best.label}** ({overlap}) — {best.tokens_per_s_per_gpu:,.0f} output tokens/s per GPU "
        f"**as a decode pool** (no prompt in its steps) at {per_gpu_text(best.tokens_per_gpu)} sequences per GPU, "
        f"TPOT {lat}."
    )
    if split:
        return text + " Its prompts come from the prefill nodes: the split's banner above says what the pair serves."
    if h is None or prefill is None:
        return text + " It needs a prefill pool beside it: no prefill plan fits to size one."
    return text + (
        f" The {h.gpus:,} GPUs as a decode pool give {h.decode_pool_tok_s:,.0f} output tokens/s, which **needs a "
        f"prefill pool of {h.prefill_gpus:,.1f} more GPUs** to feed it ({h.prompt_tok_s_needed:,.0f} prompt tokens/s "
        f"at {prefill.tokens_per_s_per_gpu:,.0f} per GPU with {prefill.label}; {h.prefill_gpus_whole:,} GPUs in whole "
        f"replicas). With prefill paid, as a PD pair or colocated at best (each GPU's time shared between the phases; "
        f"the Serving chart below adds their interference): **{h.with_prefill_tok_s_per_gpu:,.0f} output tokens/s per "
        f"GPU**, {h.colocated_bound_tok_s:,.0f} for these {h.gpus:,} GPUs. Each phase is searched over the whole "
        "cluster: set *Prefill nodes* above to split it, or size the two pools on the Disaggregation page."
    )


def split_banner(prefill: Plan | None, decode: Plan | None, workload: Workload, nodes: dict, gpn: int) -> str:
    """What a cluster split into a prefill pool (``nodes["prefill"]`` nodes of ``gpn`` GPUs) and a decode pool (the
    rest) serves with each pool's best plan: the output tokens/s of the pool that binds (review 3 M13)."""
    gp, gd = nodes["prefill"] * gpn, nodes["decode"] * gpn
    where = (
        f"**Split: prefill on {nodes['prefill']:,} nodes ({gp:,} GPUs), decode on {nodes['decode']:,} nodes "
        f"({gd:,} GPUs).**"
    )
    if prefill is None or decode is None:
        return f"{where} No {'prefill' if prefill is None else 'decode'} plan fits on its nodes."
    hp, hd = pool_headline(prefill, decode, workload, gp), pool_headline(prefill, decode, workload, gd)
    feeds, decodes = hp.prefill_feeds_tok_s, hd.decode_pool_tok_s
    served = min(feeds, decodes)
    return (
        f"{where} {prefill.label} prefills {hp.prefill_pool_tok_s:,.0f} prompt tokens/s, the prompts of "
        f"{feeds:,.0f} output tokens/s at {workload.input_len:,} in / {workload.output_len:,} out; {decode.label} "
        f"decodes up to {decodes:,.0f} output tokens/s. Together: **{served:,.0f} output tokens/s**, "
        f"{served / (gp + gd):,.0f} per GPU of the {gp + gd:,}; the **{'prefill' if feeds < decodes else 'decode'} "
        f"pool binds**. This decode pool needs {hd.prefill_gpus:,.1f} prefill GPUs at this workload "
        f"({hd.prefill_gpus_whole:,} in whole replicas of {prefill.label}); the Disaggregation page sizes both pools "
        "for a request rate."
    )


TABLE_COLUMNS = {
    "tokens per GPU": st.column_config.NumberColumn(
        format="localized", help="Whole tokens per GPU from 1 up; below 1 a TP group or a pipeline shares a sequence"
    ),
    "sequences per replica": st.column_config.NumberColumn(format="%,.0f"),
    "step (ms)": st.column_config.NumberColumn(format="%,.1f"),
    "TPOT (ms)": st.column_config.NumberColumn(format="%,.1f"),
    "TTFT (ms)": st.column_config.NumberColumn(format="%,.0f"),
    "tokens/s per GPU": st.column_config.NumberColumn(
        format="%,.0f",
        help="Prefill: prompt tokens/s per GPU of a prefill pool. Decode: output tokens/s per GPU of a decode pool "
        "(no prompt in its steps; the banner says what prefill costs)",
    ),
    "KV headroom (GB/GPU)": st.column_config.NumberColumn(format="%.1f"),
}


def plans_table(plans: list[Plan]) -> pd.DataFrame:
    """One row per plan: what a reader compares first (rank, tier, layout, throughput, latency, operating point and
    what limits it, headroom, replica size, why), then the layout's sizes."""
    return pd.DataFrame(
        [
            {
                "rank": p.rank,
                "tier": TIER_LABELS.get(p.tier, ""),
                "layout": p.label,
                "tokens/s per GPU": p.tokens_per_s_per_gpu,
                ("TPOT (ms)" if p.phase == "decode" else "TTFT (ms)"): 1e3 * p.latency_s,
                "tokens per GPU": p.tokens_per_gpu,
                "limited by": BOUND_LABELS.get((p.phase, p.bound), ""),
                "KV headroom (GB/GPU)": p.headroom_gb,
                "GPUs per replica": p.replica_gpus,
                "overlap": OVERLAP_LABELS[p.overlap],
                "why": p.reason,
                "attention TP": p.tp,
                "attention DP": p.layout.attention_dp,
                "EP": p.ep,
                "expert TP": p.layout.expert_tp,
                "DCP": p.layout.dcp,
                "PP": p.pp,
                "DP": p.dp,
                "redundant experts": p.redundant_experts,
                "sequences per replica": p.sequences_per_replica if p.phase == "decode" else None,
                "step (ms)": 1e3 * p.step_s,
            }
            for p in plans
        ]
    )
