"""The Layouts page's SLO section (core.serving.slo): each top decode layout, colocated, under random arrivals; its TTFT and
TPOT at the chosen percentile as the request rate grows, and its goodput against the page's targets."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.serving import slo
from ui.charts import lines_chart
from ui.format import md_escape
from ui.frontier import show_layout_frontiers, top_costs, top_layouts
from ui.render import chart, table_height

__all__ = ["queue_note", "show_slo_goodput", "show_under_load"]


def show_slo_goodput(
    model, gpu, plans: list, precision, workload, stack: str, assumptions, domain: int, ttft_s: float, tpot_s: float
) -> None:
    """The section (nothing without decode plans)."""
    if not plans:
        return
    st.subheader("SLOs under load: goodput of the top layouts")
    pick = st.radio(
        "Percentile the targets hold at",
        list(slo.PERCENTILES),
        index=2,
        horizontal=True,
        key="slo_percentile",
        help="A target at P99 must hold for 99 of 100 requests: the tail of the prompt queue and the decode steps "
        "that carry a prompt chunk set it, not the mean.",
    )
    q = slo.PERCENTILES[pick]
    top = top_layouts(plans)
    try:
        costs = top_costs(model, gpu, top, precision, workload, stack, assumptions, domain)
    except ValueError as err:
        st.info(f"The load model cannot run: {md_escape(err)}")
        return
    rows, curves = [], []
    for label, c in costs:
        g = slo.goodput(c, workload, ttft_s, tpot_s, q)
        at = g.at
        rows.append(
            {
                "layout": label,
                "goodput (requests/s per GPU)": g.rate / c.gpus,
                "output tok/s per GPU at goodput": g.tokens_per_s_per_gpu(),
                f"{pick} TTFT (s)": at.ttft_s if at else None,
                f"{pick} TPOT (ms)": 1e3 * at.tpot_s if at else None,
                f"{pick} gap between tokens (ms)": 1e3 * at.itl_s if at else None,
                "what binds": {"none met": "not met even at a light load"}.get(g.binding, g.binding),
            }
        )
        for p in slo.rate_sweep(c, workload, q, points=16):
            curves.append({"layout": label, "rate": p.rate / c.gpus, "ttft": p.ttft_s, "tpot": 1e3 * p.tpot_s})
    num = st.column_config.NumberColumn
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        width="stretch",
        height=table_height(len(rows)),
        column_config={
            "goodput (requests/s per GPU)": num(format="%.3g"),
            "output tok/s per GPU at goodput": num(format="%,.0f"),
            f"{pick} TTFT (s)": num(format="%.2f"),
            f"{pick} TPOT (ms)": num(format="%.1f"),
            f"{pick} gap between tokens (ms)": num(format="%.1f"),
        },
    )
    data = pd.DataFrame(curves)
    sub = (
        f"{workload.input_len:,} / {workload.output_len:,} tokens"
        + (f", {workload.prefix_reuse:.0%} prefix hits" if workload.prefix_reuse else "")
        + "; random (Poisson) arrivals; colocated, chunked prefill"
    )
    panels = (  # (column, what, unit, target, log y): TTFT spans seconds to minutes, TPOT stays in ms
        ("ttft", "TTFT", "time to first token (s)", ttft_s, f"{ttft_s:g} s", True),
        ("tpot", "TPOT", "time per output token (ms)", 1e3 * tpot_s, f"{1e3 * tpot_s:g} ms", False),
    )
    for col, (y, kind, axis, target, label, log_y) in zip(st.columns(2), panels, strict=True):
        with col:
            chart(
                lines_chart,
                data,
                x="rate",
                y=y,
                series="layout",
                x_title="requests/s per GPU",
                y_title=f"{pick} {axis}",
                title=f"{pick} {kind} as the load grows",
                subtitle=sub,
                log_x=False,
                log_y=log_y,
                y_format="," if log_y else ",.0f",
                hrules=pd.DataFrame({"value": [target], "label": [f"target {label}"]}),
            )
    st.caption(
        "Goodput: the most requests per second whose TTFT and TPOT both meet the targets at the percentile "
        "(DistServe's measure). Assumed: requests arrive at random (Poisson), all with this workload's lengths; a "
        "prompt waits for the token budget the decodes leave (an M/D/1 queue, its tail taken as exponential) and "
        "the decode steps that carry a prompt chunk are longer (chunked-prefill interference; a request's TPOT is "
        "its mean over its tokens). The tables above rank layouts at one operating point; this is the same layouts "
        "under load."
    )


def queue_note(plan, miss, load: float = 0.7) -> str:
    """What a prefix-cache miss does to traffic sized for the hits (``load`` of the hit capacity, random arrivals):
    a replica of ``plan``'s P99 TTFT with the hits, and on a miss (``miss``: core.serving.operating_point.CacheMiss)."""
    gpus = plan.replica_gpus
    hit_cap, miss_cap = miss.prompts_per_s_hit * gpus, miss.prompts_per_s_miss * gpus
    rate = load * hit_cap
    warm = slo.queued_ttft_s(miss.lone_ttft_hit_s, hit_cap, rate)
    cold = slo.queued_ttft_s(miss.lone_ttft_miss_s, miss_cap, rate)
    head = (
        f"Traffic at {100 * load:.0f}% of a replica's capacity with the hits ({rate:,.2f} prompts/s, random arrivals) "
        f"waits {warm:,.2f} s at P99 for its first token"
    )
    if cold == float("inf"):
        return (
            f"{head}; on a miss that traffic is {rate / miss_cap:,.1f}× what the replica computes: the queue grows "
            "without bound until the cache warms up or traffic is shed."
        )
    return f"{head}; on a miss, {cold:,.2f} s."


def show_under_load(
    model, gpu, results: dict, precision, workload, stack: str, assumptions, domain: int, ttft_s: float, tpot_s: float
) -> None:
    """The Layouts page's two sections on its top decode layouts: the frontier over clients (a decode pool waits the
    best prefill plan's TTFT) and the SLO percentiles and goodput under random arrivals."""
    decode, prefill = results.get("decode", []), results.get("prefill", [])
    prefill_ttft = prefill[0].latency_s if prefill else None
    show_layout_frontiers(model, gpu, decode, precision, workload, stack, assumptions, domain, prefill_ttft)
    show_slo_goodput(model, gpu, decode, precision, workload, stack, assumptions, domain, ttft_s, tpot_s)
