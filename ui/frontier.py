"""Throughput vs interactivity sections: the published frontiers beside the planner's model of each deployment
(Validation page, :mod:`core.frontier`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import frontier
from ui.charts import frontier_chart
from ui.format import md_escape
from ui.render import chart, table_height

__all__ = ["show_published_frontiers"]

KIND_TITLE = {
    "output": "output tokens/s per GPU",
    "total": "prompt + output tokens/s per GPU",
    "computed": "computed prompt + output tokens/s per GPU",
    "mixed": "tokens/s per GPU (each point's own kind)",
}


@st.cache_resource(show_spinner=False, max_entries=16)
def _modelled(case_id: str) -> frontier.CaseModel:
    return frontier.model_case(case_id)


def _ratio(x: float | None) -> str:
    return "–" if x is None else f"×{x:.2f}"


def show_published_frontiers() -> None:
    """The section: pick a case, see each deployment's modelled frontier, the published points and the gaps."""
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
            "clients": num("clients (concurrency)", format="%d"),
            "published tok/s/GPU": num(format="%,.0f"),
            "modelled tok/s/GPU": num(format="%,.0f"),
            "throughput gap": num("throughput gap (×)", format="%.2f"),
            "published tok/s/user": num(format="%.1f"),
            "modelled tok/s/user": num(format="%.1f"),
            "per-user gap": num("per-user gap (×)", format="%.2f"),
            "modelled TTFT (s)": num(format="%.2f"),
        },
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
