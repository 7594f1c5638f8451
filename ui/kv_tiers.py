"""The Fit page's prefix-cache tiers (core.serving.kv_tiers): for a workload with prefix reuse, where each request's cached
prefix can live, what loading it costs against recomputing it, and how many sessions' prefixes each tier keeps."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.deployment.bundle import Deployment
from core.serving import kv_tiers
from ui.render import table_height

__all__ = ["show_kv_tiers"]


def show_kv_tiers(d: Deployment, kv_budget_bytes_per_gpu: float) -> None:
    """The section for deployment ``d``'s workload (nothing when it has no prefix reuse; a message instead of the
    table when the weights leave no KV budget on the GPU: the tiers hold prefixes in, or load them into, that
    budget)."""
    workload, layout = d.workload, d.layout
    if not workload.cached_prompt_tokens:
        return
    st.subheader("Prefix cache: where a session's prefix lives")
    if kv_budget_bytes_per_gpu <= 0:  # the weights do not fit: a verdict (shown above), not a table to draw
        st.info(
            f"**No KV budget left on the GPU:** the weights, activations and runtime reserve take "
            f"{-kv_budget_bytes_per_gpu / 1e9:,.1f} GB more than the usable memory of each GPU (the verdict above), so "
            "no session's prefix can be cached in HBM, nor loaded from host DRAM or a store into it. The prefix tiers "
            "need a KV budget above 0 GB per GPU: more GPUs, a lower-precision checkpoint, a higher "
            "gpu_memory_utilization or a smaller runtime reserve would leave one."
        )
        return
    c = st.columns(2)
    host_gb = c[0].number_input(
        "Host DRAM for the KV cache per node (GB)",
        0.0,
        100_000.0,
        1024.0,
        128.0,
        help="An assumption: the DRAM an engine's CPU offload (vLLM, SGLang HiCache, LMCache) may use; an 8-GPU "
        "HGX / DGX server has 2 TB (DGX H100) to 4 TB (DGX B200), half of it taken here.",
    )
    store_gb = c[1].number_input(
        "Distributed KV store per GPU (GB, 0 = none)",
        0.0,
        1_000_000.0,
        0.0,
        256.0,
        help="Mooncake / LMCache / HiCache storage reached over the scale-out NIC, per GPU.",
    )
    tiers, recompute_s = kv_tiers.prefix_tiers(
        d, kv_budget_bytes_per_gpu=kv_budget_bytes_per_gpu, host_gb_per_node=host_gb, store_gb_per_gpu=store_gb
    )
    # a session's prefix is split over its attention group's TP ranks and pipeline stages: the sessions a tier holds
    # are counted per those GPUs together (per GPU under attention DP, per replica without it), never per GPU alone
    shared = layout.attention_tp * layout.pp
    held = "sessions' prefixes held " + (
        "per GPU" if shared == 1 else "per replica" if layout.attention_dp == 1 else f"per {shared}-GPU attention group"
    )
    rows = pd.DataFrame(
        [
            {
                "tier": t.tier,
                "capacity per GPU (GB)": t.capacity_bytes_per_gpu / 1e9,
                held: t.sessions_per_gpu,
                "load one prefix (ms)": 1e3 * t.load_s,
                "recompute it (ms)": 1e3 * recompute_s,
                "link (GB/s per direction)": t.link_gbps or None,
                "where": t.where,
            }
            for t in tiers
        ]
    )
    st.dataframe(
        rows,
        hide_index=True,
        width="stretch",
        height=table_height(len(rows)),
        column_config={
            "capacity per GPU (GB)": st.column_config.NumberColumn(format="%,.1f"),
            "link (GB/s per direction)": st.column_config.NumberColumn(format="%,.0f"),
            "load one prefix (ms)": st.column_config.NumberColumn(format="%,.2f"),
            "recompute it (ms)": st.column_config.NumberColumn(format="%,.1f"),
            held: st.column_config.NumberColumn(format="%,.1f"),
        },
    )
    st.caption(
        f"Each request finds {workload.cached_prompt_tokens:,} of its {workload.input_len:,} prompt tokens cached "
        f"({100 * workload.prefix_reuse:g}% hits). Loading a prefix from a tier pays when it is faster than "
        f"recomputing it ({1e3 * recompute_s:,.1f} ms of prefill on this layout); the sessions a tier holds are "
        "what it adds to the concurrency HBM alone allows at this context"
        + (
            ""
            if shared == 1
            else f" (each prefix is split over the {shared} GPUs of its attention group, so they are counted per "
            "group, not per GPU)"
        )
        + ". Link efficiency "
        f"{kv_tiers.LINK_EFF:.0%} and per-fetch latencies are stated assumptions (core/serving/kv_tiers.py)."
    )
