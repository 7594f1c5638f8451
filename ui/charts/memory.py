"""Memory charts (Fit page, report): memory per GPU stacked by component, and max sequences vs context."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui.charts._style import INK, SERIES_DASHES, cycle, marker_layer, segment_labels, style

COMPONENT_LABELS: dict[str, str] = {
    "embedding": "Embedding",
    "lm_head": "LM head",
    "attention": "Attention",
    "dense_ffn": "Dense FFN",
    "parallel_mlp": "Parallel MLP",
    "shared_experts": "Shared experts",
    "routed_experts": "Routed experts",
    "router": "Router",
    "norms": "Norms",
    "vision": "Vision tower",
    "draft_weights": "Draft weights",
    "activations": "Activations",
    "runtime_reserve": "Runtime reserve",
    "kv_cache": "KV cache",
    "draft_kv_cache": "Draft KV cache",
}

# weights in blues/teals, the draft in purples, overheads in greys, the KV cache in orange
COMPONENT_COLORS: dict[str, str] = {
    "Embedding": "#9ecae1",
    "LM head": "#6baed6",
    "Attention": "#2171b5",
    "Dense FFN": "#08519c",
    "Parallel MLP": "#4292c6",
    "Shared experts": "#41ab5d",
    "Routed experts": "#006d2c",
    "Router": "#a1d99b",
    "Norms": "#c7e9c0",
    "Vision tower": "#74c476",
    "Draft weights": "#6a51a3",
    "Activations": "#969696",
    "Runtime reserve": "#bdbdbd",
    "KV cache": "#f16913",
    "Draft KV cache": "#9e9ac8",
}


def memory_stack_chart(
    rows: pd.DataFrame, *, usable_gb: float, capacity_gb: float, title: str, subtitle: str = ""
) -> alt.TopLevelMixin:
    """Stacked horizontal bars of memory per GPU by component (``rows``: bar, component, gb, order),
    with the usable budget (gpu_memory_utilization x memory) and the device memory as labelled rules.
    Segments stack in legend order and carry their name where it fits, so the chart reads in greyscale."""
    domain = sorted(
        (c for c in COMPONENT_COLORS if c in set(rows["component"])),
        key=lambda c: float(rows.loc[rows["component"] == c, "order"].min()),
    )
    xmax = max(capacity_gb, float(rows.groupby("bar")["gb"].sum().max())) * 1.16
    bars = (
        alt.Chart(rows)
        .mark_bar(stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X(
                "sum(gb):Q", title="memory per GPU (GB)", stack="zero", scale=alt.Scale(domain=[0, xmax], nice=False)
            ),
            y=alt.Y("bar:N", title=None, sort=None),
            color=alt.Color(
                "component:N",
                title="component",
                scale=alt.Scale(domain=domain, range=[COMPONENT_COLORS[c] for c in domain]),
                legend=alt.Legend(orient="bottom", columns=5),
            ),
            order=alt.Order("order:Q"),
            tooltip=[
                alt.Tooltip("bar:N", title="GPU"),
                alt.Tooltip("component:N"),
                alt.Tooltip("gb:Q", title="GB", format=",.2f"),
            ],
        )
    )
    lines = pd.DataFrame(
        {
            "gb": [usable_gb, capacity_gb],
            "label": [f"usable {usable_gb:,.1f} GB", f"device {capacity_gb:,.1f} GB"],
            "dash": ["usable", "device"],
            "align": ["right", "left"],
        }
    )
    rules = (
        alt.Chart(lines)
        .mark_rule(strokeWidth=2, color=INK)
        .encode(
            x="gb:Q",
            strokeDash=alt.StrokeDash(
                "dash:N", scale=alt.Scale(domain=["usable", "device"], range=[[6, 3], [1, 0]]), legend=None
            ),
        )
    )
    # the usable label sits left of its rule, the device label right of its own: they never overlap
    text_usable = (
        alt.Chart(lines.iloc[[0]])
        .mark_text(align="right", baseline="top", dx=-5, dy=4, fontSize=13, color=INK)
        .encode(x="gb:Q", y=alt.value(0), text="label:N")
    )
    text_device = (
        alt.Chart(lines.iloc[[1]])
        .mark_text(align="left", baseline="top", dx=5, dy=4, fontSize=13, color=INK)
        .encode(x="gb:Q", y=alt.value(0), text="label:N")
    )
    names = segment_labels(rows, bar="bar", part="component", colors=COMPONENT_COLORS, xmax=xmax)
    chart = alt.layer(bars, names, rules, text_usable, text_device).properties(
        title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined)
    )
    return style(chart, height=56 * rows["bar"].nunique() + 24)


def max_sequences_chart(
    curves: pd.DataFrame, *, marker: pd.DataFrame, title: str, subtitle: str = ""
) -> alt.TopLevelMixin:
    """Max concurrent sequences vs context length (log-log), one line per series (``curves``:
    context_tokens, sequences, series), and the scenario's point (``marker``: context_tokens,
    sequences, label)."""
    data = curves[curves["sequences"] > 0]
    series = list(dict.fromkeys(data["series"]))
    line = (
        alt.Chart(data)
        .mark_line(strokeWidth=2.5)
        .encode(
            x=alt.X(
                "context_tokens:Q",
                title="context per sequence (tokens)",
                scale=alt.Scale(
                    type="log",
                    domain=[float(data["context_tokens"].min()), float(data["context_tokens"].max())],
                    nice=False,
                ),
            ),
            y=alt.Y("sequences:Q", title="max concurrent sequences", scale=alt.Scale(type="log")),
            color=alt.Color("series:N", title=None, sort=series, legend=alt.Legend(orient="top")),
            # the same legend as the colour's: one merged legend showing colour and dash
            strokeDash=alt.StrokeDash(
                "series:N",
                title=None,
                sort=series,
                legend=alt.Legend(orient="top"),
                scale=alt.Scale(domain=series, range=cycle(SERIES_DASHES, len(series))),
            ),
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip("context_tokens:Q", title="context (tokens)", format=","),
                alt.Tooltip("sequences:Q", title="sequences", format=","),
            ],
        )
    )
    point, label = marker_layer(marker, x="context_tokens:Q", y="sequences:Q", size=140)
    chart = alt.layer(line, point, label).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return style(chart, height=340)
