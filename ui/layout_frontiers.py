"""The Layouts page's throughput-vs-interactivity section: each of the top decode layouts (one replica of the page's
deployment, with the overlap it was scored with) swept over its clients, colocated or as a decode pool; the
SLO section (:mod:`ui.slo`) times the same plans under load."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import serving
from ui.charts import frontier_chart
from ui.format import md_escape
from ui.render import chart

__all__ = ["show_layout_frontiers", "top_costs", "top_layouts"]


@st.cache_resource(show_spinner=False, max_entries=32)
def top_costs(d, top: list) -> list[tuple[str, serving.ReplicaCosts]]:
    """(label, one replica's step costs) of each plan in ``top`` (``core.serving.replica_costs`` of ``d`` on the
    plan's layout, one replica, its redundant experts and the two-batch overlap it was scored with), shared by the
    Layouts page's frontier and SLO sections; ``d`` is the page's search deployment (its workload, memory
    assumptions, scale-up domain, the stack's served step and the scenario's calibration)."""
    from core.serving.operating_point import layout_label

    dense = d.model.moe is None
    return [
        (
            layout_label(p.layout, dense),
            serving.replica_costs(
                d.with_layout(p.layout.model_copy(update={"dp": 1}), p.redundant_experts), overlap=p.overlap
            ),
        )
        for p in top
    ]


def top_layouts(plans: list, most: int = 3) -> list:
    """The best plans of distinct layouts (data-parallel copies of one replica are one layout)."""
    top, seen = [], set()
    for p in plans:
        key = p.layout.model_copy(update={"dp": 1})
        if key not in seen:
            seen.add(key)
            top.append(p)
        if len(top) == most:
            break
    return top


def show_layout_frontiers(d, plans: list, prefill_ttft_s: float | None) -> None:
    """The Layouts page's section: each of the top decode layouts (one replica) swept over its clients."""
    if not plans:
        return
    model, gpu, workload = d.model, d.gpu, d.workload
    st.subheader("Throughput vs interactivity: the top decode layouts")
    top = top_layouts(plans)
    modes = ["prefill on the same GPUs (chunked)", "prefill in another pool (a decode pool)"]
    mode = st.radio(
        "Serving",
        modes,
        horizontal=True,
        key="frontier_mode",
        help="Colocated: one engine prefills and decodes, prompt chunks sharing the steps. A decode pool: "
        "a prefill pool sends each prompt's KV; its clients wait the best prefill plan's TTFT first.",
    )
    ttft = prefill_ttft_s if mode == modes[1] else None
    if mode == modes[1] and ttft is None:
        st.info("No prefill plan meets the TTFT target: the decode pool cannot be timed.")
        return
    with st.spinner("Sweeping the clients of each layout…"):
        try:
            costs = top_costs(d, top)
        except ValueError as err:
            st.info(f"The sweep cannot run: {md_escape(err)}")
            return
        curves = [(label, serving.serving_sweep(c, workload, ttft_s=ttft)) for label, c in costs]
    data = pd.DataFrame(
        [
            {
                "deployment": label,
                "clients": p.concurrency,
                "user": p.tokens_per_s_per_user,
                "gpu": p.output_tokens_per_s_per_gpu,
            }
            for label, pts in curves
            for p in pts
        ]
    )
    chart(
        frontier_chart,
        data,
        None,
        y_title="output tokens/s per GPU",
        title=f"{model.name} ({d.precision.label}) on {gpu.short_name}: output tokens/s per GPU vs "
        "per user, one replica of each layout",
        subtitle=(
            f"{workload.input_len:,} / {workload.output_len:,} tokens"
            + (f", {workload.prefix_reuse:.0%} prefix hits" if workload.prefix_reuse else "")
            + "; clients 1, 2, 4, … up to what the KV cache holds; "
            + mode
        ),
    )
    rows = [
        {
            "layout": label,
            "clients": p.concurrency,
            "tok/s per user": p.tokens_per_s_per_user,
            "output tok/s per GPU": p.output_tokens_per_s_per_gpu,
            "TTFT (s)": p.ttft_s,
            "what limits it": p.regime,
        }
        for label, pts in curves
        for p in serving.pareto(pts)
    ]
    with st.expander(f"The frontier points ({len(rows)})"):
        num = st.column_config.NumberColumn
        st.dataframe(
            pd.DataFrame(rows),
            hide_index=True,
            width="stretch",
            column_config={
                "tok/s per user": num(format="%.1f"),
                "output tok/s per GPU": num(format="%,.0f"),
                "TTFT (s)": num(format="%.2f"),
            },
        )
    st.caption(
        "Each layout's clients send their next request when the last one finishes (a benchmark's closed loop). "
        "Colocated, prompt chunks share each step's token budget with the decodes and stretch them; a decode pool "
        "has no prompts to compute. The Validation page sets this model beside published frontiers."
    )
