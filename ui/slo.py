"""The Layouts page's SLO section: each top decode layout, colocated, under random (Poisson) arrivals, run through
the engine simulator (core.serving.engine_sim: continuous batching, chunked prefill); its TTFT and TPOT at the chosen
percentile as the request rate grows, and its goodput against the page's targets. The analytical queue of
core.serving.slo made every prompt wait a full token-budget step (numbers audit 3 B3.7) and is no longer drawn."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.serving import engine_sim as sim
from core.serving import slo
from ui.charts import lines_chart
from ui.format import md_escape
from ui.layout_frontiers import show_layout_frontiers, top_costs, top_layouts
from ui.render import chart, table_height

__all__ = ["queue_note", "show_slo_goodput", "show_under_load"]

BINDS = {
    "none met": "not met even at a light load",
    "unstable": "capacity (the queue grows)",
    "sweep end": "the sweep's last rate",
}


@st.cache_resource(show_spinner=False, max_entries=64)
def _sweep(costs, lengths, knobs) -> list:
    """One layout's open-loop sweep (core.serving.engine_sim.load_sweep), shared by every session."""
    return sim.load_sweep(costs, lengths, knobs)


@st.cache_resource(show_spinner=False, max_entries=256)
def _goodput(costs, lengths, knobs, ttft_s: float, tpot_s: float, q: float):
    return sim.sweep_goodput(costs, lengths, _sweep(costs, lengths, knobs), ttft_s, tpot_s, q, knobs)


def _lengths_text(workload, lengths) -> str:
    prof = sim.workload_profile(workload)
    if prof is None:
        text = f"{workload.input_len:,} / {workload.output_len:,} tokens"
    else:
        text = (
            f"{prof.name}: prompts median {lengths.input_median:,} / p90 {lengths.input_p90:,}, outputs "
            f"{lengths.output_median:,} / {lengths.output_p90:,} tokens (lognormal)"
        )
    return text + (f", {workload.prefix_reuse:.0%} prefix hits" if workload.prefix_reuse else "")


def show_slo_goodput(d, plans: list, ttft_s: float, tpot_s: float) -> None:
    """The section (nothing without decode plans)."""
    if not plans:
        return
    st.subheader("SLOs under load: goodput of the top layouts")
    pick = st.radio(
        "Percentile the targets hold at",
        list(sim.PERCENTILES),
        index=2,
        horizontal=True,
        key="slo_percentile",
        help="A target at P99 must hold for 99 of 100 requests: the tail of the prompt queue and the decode steps "
        "that carry a prompt chunk set it, not the mean.",
    )
    q = sim.PERCENTILES[pick]
    top = top_layouts(plans)
    workload = d.workload
    lengths, knobs = sim.workload_lengths(workload), sim.workload_knobs(workload)
    light = f"{sim.SWEEP_SHARES[0]:.0%}"
    with st.spinner("Simulating each layout under load…"):
        try:
            costs = top_costs(d, top)
            runs = [
                (label, c, _sweep(c, lengths, knobs), _goodput(c, lengths, knobs, ttft_s, tpot_s, q))
                for label, c in costs
            ]
        except ValueError as err:
            st.info(f"The engine simulator cannot run: {md_escape(err)}")
            return
    rows, curves = [], []
    for label, c, sweep, g in runs:
        at = g.at
        rows.append(
            {
                "layout": label,
                "goodput (requests/s per GPU)": g.load / c.gpus,
                "output tok/s per GPU at goodput": g.output_tokens_per_s_per_gpu,
                f"{pick} TTFT (s)": at.percentile("ttft", q) if at else None,
                f"{pick} TPOT (ms)": 1e3 * at.percentile("tpot", q) if at else None,
                f"{pick} gap between tokens (ms)": 1e3 * at.percentile("itl", q) if at else None,
                "what binds": BINDS.get(g.binding, g.binding),
                "light load: P50 TTFT (s)": sweep[0].percentile("ttft", 0.5),
            }
        )
        curves += [
            {
                "layout": label,
                "rate": r.load / c.gpus,
                "ttft": r.percentile("ttft", q),
                "tpot": 1e3 * r.percentile("tpot", q),
            }
            for r in sweep
            if r.stable
        ]
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
            "light load: P50 TTFT (s)": num(
                format="%.3f",
                help=f"The median time to first token at {light} of the layout's capacity: a prompt mostly alone, "
                "waiting its own prefill (and the decode step in flight), not a full token budget.",
            ),
        },
    )
    data = pd.DataFrame(curves)
    sub = (
        f"{_lengths_text(workload, lengths)}; engine simulator: continuous batching, chunked prefill, Poisson "
        f"arrivals, {sim.SWEEP_REQUESTS:,} requests per point"
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
    shares = ", ".join(f"{s:.0%}" for s in sim.SWEEP_SHARES)
    paced = sorted({c.mixed_step_scale for _, c, _, _ in runs if c.mixed_step_scale > 1})
    pacing = (
        " With attention data parallelism the ranks wait at every MoE layer for the one carrying a prompt chunk, so "
        f"each step that carries one runs {' / '.join(f'{x:.2f}' for x in paced)}× longer than the ranking's "
        "balanced step (TensorRT-LLM tech blog 10 measured 1.54× at 8 ranks; SGLang and vLLM are assumed alike, their "
        "own reports putting it at 1.13-1.63×)."
        if paced
        else ""
    )
    st.caption(
        "Goodput: the most requests per second whose TTFT and TPOT both meet the targets at the percentile "
        "(DistServe's measure), from the simulated requests' own percentiles. Each point is one run of the engine "
        "simulator (core.serving.engine_sim): requests arrive at random (Poisson) at a rate; the run starts with the "
        "sequences that rate keeps running already decoding and measures "
        f"{sim.SWEEP_REQUESTS:,} requests after a short warm-up, the engine decoding every running sequence each "
        "step and filling the token budget left with prompt chunks (chunked prefill), the step times of the "
        f"ranking above. Rates: {shares} of what the layout can take (its prompts' prefill plus its decode steps at "
        "the most sequences it runs); a rate whose queue grows through the run is left off the lines, and goodput "
        "is refined between the last rate that meets the targets and the first that misses. The tables above rank "
        "layouts at one operating point; this is the same layouts under load." + pacing
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


def show_under_load(d, results: dict, ttft_s: float, tpot_s: float) -> None:
    """The Layouts page's two sections on its top decode layouts: the frontier over clients (a decode pool waits the
    best prefill plan's TTFT) and the SLO percentiles and goodput under random arrivals."""
    decode, prefill = results.get("decode", []), results.get("prefill", [])
    prefill_ttft = prefill[0].latency_s if prefill else None
    show_layout_frontiers(d, decode, prefill_ttft)
    show_slo_goodput(d, decode, ttft_s, tpot_s)
