"""Throughput vs interactivity sections: the published frontiers beside the planner's model of each deployment
(Validation page, :mod:`core.serving.frontier`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.serving import frontier, frontier_gaps
from ui.charts import frontier_chart
from ui.format import md_escape
from ui.render import chart, table_height

__all__ = ["show_frontier_gaps", "show_published_frontiers"]

KIND_TITLE = {
    "output": "output tokens/s per GPU",
    "total": "prompt + output tokens/s per GPU",
    "computed": "computed prompt + output tokens/s per GPU",
    "mixed": "tokens/s per GPU (each point's own kind)",
}


@st.cache_resource(show_spinner=False, max_entries=16)
def _modelled(case_id: str) -> frontier.CaseModel:
    from ui.state import catalog

    return frontier.model_case(case_id, catalog())


def _ratio(x: float | None) -> str:
    return "–" if x is None else f"×{x:.2f}"


@st.cache_resource(show_spinner=False, max_entries=4)
def _all_gaps() -> frontier_gaps.FrontierGaps:
    return frontier_gaps.frontier_gaps([_modelled(c.id) for c in frontier.load_frontier_cases()])


_BAND_NAME = {"low": "low (1-4 clients)", "mid": "mid (5-63 clients)", "high": "high (64+ clients)", "all": "all"}
_BAND_NAME["unstated"] = "unstated (peaks)"


def _stat_rows(stats, first: str, names=None) -> list[dict]:
    return [
        {
            first: (names or {}).get(s.group, s.group),
            "points": s.points,
            "tok/s/GPU median |error| (%)": 100 * s.throughput_median,
            "tok/s/GPU P90 |error| (%)": 100 * s.throughput_p90,
            "tok/s/GPU bias (%)": 100 * s.throughput_bias,
            "points with tok/s/user": s.user_points,
            "tok/s/user median |error| (%)": None if s.user_median is None else 100 * s.user_median,
            "tok/s/user P90 |error| (%)": None if s.user_p90 is None else 100 * s.user_p90,
            "tok/s/user bias (%)": None if s.user_bias is None else 100 * s.user_bias,
        }
        for s in stats
    ]


_PCT = {
    f"tok/s/{w} {k} (%)": st.column_config.NumberColumn(format="%.0f%%")
    for w in ("GPU", "user")
    for k in ("median |error|", "P90 |error|", "bias")
}

# the band table in one slide's width: short labels over the same columns
_BAND_COLUMNS = {
    f"tok/s/{w} {k} (%)": st.column_config.NumberColumn(f"{label} {short}", format="%.0f%%")
    for w, label in (("GPU", "tok/s/GPU"), ("user", "tok/s/user"))
    for k, short in (("median |error|", "median"), ("P90 |error|", "P90"), ("bias", "bias"))
}
_BAND_COLUMNS["points with tok/s/user"] = st.column_config.NumberColumn("user points")
_BAND_COLUMNS["points counted"] = st.column_config.TextColumn("curves")
_BAND_ORDER = ("points counted", "concurrency band", "points", "issue target")
_BAND_ORDER += tuple(f"tok/s/{w} {k} (%)" for w in ("GPU", "user") for k in ("median |error|", "P90 |error|"))
_BAND_ORDER += ("points with tok/s/user", "tok/s/GPU bias (%)", "tok/s/user bias (%)")


def show_frontier_gaps() -> None:
    """Every published point of every case against its model: the gap per concurrency band, per curve, per point."""
    g = _all_gaps()
    st.subheader("Published frontiers: the gap at every point")
    srcs = sorted({p.source.split(",")[0].split("(")[0].strip() for p in g.points})
    st.markdown(
        f"**{len(g.points)} published points** in {len(g.cases)} cases ({len(g.curves)} curves), each modelled at "
        "its own deployment and concurrency. Error = modelled / published − 1 for tokens/s per GPU (in the point's "
        "own count: output, total or computed) and per-user output tokens/s; the tables give the median and 90th "
        "percentile of |error|, and the bias (median signed error: above 0 the planner is optimistic). Targets "
        "(issue 35): median ≤ 15%, P90 ≤ 35% at low and at high concurrency. Median and P90 are of |error|."
    )
    sets = (("judged", g.band_table("target")), ("current versions", g.band_table("current")))
    sets += (("every point", g.band_table("every")),)
    rows = []
    for name, stats in sets:  # the judged points first: the targets are judged on them
        for row, s in zip(_stat_rows(stats, "concurrency band", _BAND_NAME), stats, strict=True):
            judged = name == "judged" and s.group in frontier_gaps.TARGET_BANDS
            rows.append(
                {
                    "points counted": name,
                    **row,
                    "issue target": ("met" if s.within_target else "not met") if judged else "–",
                }
            )
    st.dataframe(
        pd.DataFrame(rows).astype({c: float for c in _PCT}),  # no per-user speed: an empty cell, not "None"
        hide_index=True,
        width="stretch",
        height=table_height(len(rows)),
        column_config=_BAND_COLUMNS,
        column_order=_BAND_ORDER,
        key="frontier_band_table",
    )
    left = {c.id: c.not_in_target for c in frontier.load_frontier_cases() if c.not_in_target}
    st.caption(
        f"*judged*: the current versions without the cases the targets are not judged on ({g.target_points} points; "
        f"{g.current_points - g.target_points} left out: {', '.join(left) or 'none'}, reason below); "
        f"*current versions*: the curves on the engine version the served step is fitted for "
        f"({g.current_points} points; {len(g.points) - g.current_points} on curves tagged as an older version left "
        f"out); *every point*: all {len(g.points)}. Issue target (low and high bands): median |error| ≤ "
        f"{frontier_gaps.TARGET_MEDIAN:.0%} and P90 ≤ {frontier_gaps.TARGET_P90:.0%}, for tok/s per GPU and per user. "
        "Unstated: peaks published without their concurrency, modelled at the most clients the KV cache holds."
    )
    for case_id, why in left.items():
        st.caption(f"**{case_id}**, not judged: {why}")
    with st.expander(f"Per curve ({len(g.curves)} deployments) and per accelerator and stack"):
        for title, stats, first in (
            ("curve", g.curves, "case: deployment"),
            ("accelerator", g.gpus, "accelerator"),
            ("stack", g.stacks, "serving stack"),
        ):
            st.dataframe(
                pd.DataFrame(_stat_rows(stats, first)),
                hide_index=True,
                width="stretch",
                height=table_height(len(stats)),
                column_config=_PCT,
                key=f"frontier_{title}_table",
            )
    with st.expander(f"Every point ({len(g.points)})"):
        rows = [
            {
                "point": r.point_id,
                "curve": r.curve,
                "clients": r.concurrency,
                "band": r.band,
                "published tok/s/GPU": r.published_tokens_per_s_per_gpu,
                "modelled tok/s/GPU": r.modelled_tokens_per_s_per_gpu,
                "counts": r.throughput_kind,
                "tok/s/GPU error (%)": 100 * r.throughput_error,
                "published tok/s/user": r.published_tokens_per_s_per_user,
                "modelled tok/s/user": r.modelled_tokens_per_s_per_user,
                "tok/s/user error (%)": None if r.user_error is None else 100 * r.user_error,
                "source": r.source,
            }
            for r in g.points
        ]
        num = st.column_config.NumberColumn
        st.dataframe(
            pd.DataFrame(rows),
            hide_index=True,
            width="stretch",
            height=table_height(len(rows)),
            column_config={
                **_point_columns(),
                "tok/s/GPU error (%)": num(format="%+.0f%%"),
                "tok/s/user error (%)": num(format="%+.0f%%"),
            },
            key="frontier_point_table",
        )
    st.caption(
        "Sources: " + "; ".join(md_escape(s) for s in srcs) + ". Points and deployments: the catalog's "
        "frontier_points.yaml and frontier_cases.yaml (the points no case models are listed there with why)."
    )


def _point_columns() -> dict:
    """The columns every table of published points shares: clients, and tok/s per GPU and per user, published
    beside modelled."""
    num = st.column_config.NumberColumn
    return {
        "clients": num("clients (concurrency)", format="%d"),
        "published tok/s/GPU": num(format="%,.0f"),
        "modelled tok/s/GPU": num(format="%,.0f"),
        "published tok/s/user": num(format="%.1f"),
        "modelled tok/s/user": num(format="%.1f"),
    }


def show_published_frontiers() -> None:
    """The section: every point's gap (:func:`show_frontier_gaps`), then pick a case, see each deployment's modelled
    frontier, the published points and the gaps."""
    show_frontier_gaps()
    st.subheader("Throughput vs interactivity: published frontiers")
    cases = frontier.load_frontier_cases()
    titles = {c.id: c.title for c in cases}
    pick = st.selectbox("Published case", list(titles), format_func=titles.get, key="frontier_case")
    with st.spinner("Modelling every deployment of the case…"):
        m = _modelled(pick)
    case, kind = m.case, m.kind
    y_title = KIND_TITLE[kind]

    def rate(p) -> float:
        return {
            "output": p.output_tokens_per_s_per_gpu,
            "computed": p.computed_tokens_per_s_per_gpu,
        }.get(kind, p.total_tokens_per_s_per_gpu)

    curves = pd.DataFrame(
        [
            {"deployment": label, "clients": p.concurrency, "user": p.tokens_per_s_per_user, "gpu": rate(p)}
            for label, pts in m.curves
            for p in pts
        ]
    )
    published = pd.DataFrame(
        [
            {
                "deployment": g.deployment,
                "user": g.point.tokens_per_s_per_user,
                "gpu": g.point.tokens_per_s_per_gpu,
                "label": f"c{g.point.concurrency:,}" if g.point.concurrency else "peak",
            }
            for g in m.gaps
            if g.point.tokens_per_s_per_user is not None
        ]
    )
    t, u = m.median_ratio("throughput"), m.median_ratio("user")
    spec = case.speculative
    chart(
        frontier_chart,
        curves,
        published if len(published) else None,
        y_title=y_title,
        title=case.title,
        subtitle=(
            f"lines: modelled per deployment ({case.isl:,} / {case.osl:,} tokens"
            + (f", {case.prefix_reuse:.0%} prefix hits" if case.prefix_reuse else "")
            + (f", MTP {spec.draft_tokens} draft, {spec.accepted_length:g} accepted" if spec else "")
            + "); squares: published"
        ),
    )
    st.markdown(
        f"**Gap, modelled / published (median over {len(m.gaps)} points):** throughput {_ratio(t)}, "
        f"per-user speed {_ratio(u)}. Above ×1 the planner is more optimistic than the measurement."
    )
    rows = [
        {
            "point": g.point.id,
            "deployment": g.deployment,
            "clients": g.point.concurrency,
            "published tok/s/GPU": g.point.tokens_per_s_per_gpu,
            "modelled tok/s/GPU": g.modelled_tokens_per_s_per_gpu,
            "throughput gap": g.throughput_ratio,
            "published tok/s/user": g.point.tokens_per_s_per_user,
            "modelled tok/s/user": g.modelled.tokens_per_s_per_user,
            "per-user gap": g.user_ratio,
            "modelled TTFT (s)": g.modelled.ttft_s,
            "what limits it": g.modelled.regime,
            "prompt tok/s the point implies": g.implied_prompt_tokens_per_s,
            "modelled prefill ceiling": g.prefill_ceiling_tokens_per_s,
            "counts": g.point.throughput_kind,
            "source": g.point.source,
        }
        for g in m.gaps
    ]
    num = st.column_config.NumberColumn
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        width="stretch",
        height=table_height(len(rows)),
        column_config={
            **_point_columns(),
            "throughput gap": num("throughput gap (×)", format="%.2f"),
            "per-user gap": num("per-user gap (×)", format="%.2f"),
            "modelled TTFT (s)": num(format="%.2f"),
            "prompt tok/s the point implies": num(
                "prompt tok/s the point implies (≥)",
                format="%,.0f",
                help="Computed prompt tokens/s, whole deployment: published tok/s/GPU × GPUs − clients × tok/s/user "
                "(the most output the clients can take); for 'total' points × (1 − prefix hits).",
            ),
            "modelled prefill ceiling": num(
                "modelled prefill ceiling (prompt tok/s)",
                format="%,.0f",
                help="The prompt tokens/s the modelled deployment computes at the case's length doing nothing else.",
            ),
        },
    )
    beyond = [g for g in m.gaps if g.beyond_prefill_ceiling]
    if beyond:
        st.markdown(
            f"**{len(beyond)} of {len(m.gaps)} points need more computed prompt tokens per second than the modelled "
            f"deployment can prefill at {case.isl:,} tokens doing nothing else** (e.g. {beyond[-1].point.id}: "
            f"≥ {beyond[-1].implied_prompt_tokens_per_s:,.0f} against {beyond[-1].prefill_ceiling_tokens_per_s:,.0f} "
            "prompt tok/s). Their gap is in the prefill (faster kernels than the measured ones the planner times, "
            "or computed tokens that attend to shorter contexts than the case's one length), not in the decode."
        )
    notes = [f"**Reading of the source:** {md_escape(case.reading)}"] if case.reading else []
    if spec:
        notes.append(f"**Speculative decoding:** {md_escape(spec.source)}")
    notes.append(
        "Throughput counts: output = generated tokens; total = every prompt token + output; computed = the prompt "
        "tokens the engine computed (cache hits excluded) + output. Each point is modelled at its own deployment and "
        "concurrency (closed loop, chunked prefill when colocated; a prefill pool feeding a decode pool when "
        "disaggregated). Points and deployments: the catalog's frontier_points.yaml and frontier_cases.yaml."
    )
    st.caption("  \n".join(notes))
