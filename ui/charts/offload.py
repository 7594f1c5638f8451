"""Single-box offload (Single box page): which pool holds each layer's tensors, and each pool's fill."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui.charts._style import INK, segment_labels, style

PLACE_COLORS = {
    "GPU memory": "#2171b5",
    "host RAM": "#f16913",
    "unified pool": "#6a51a3",
    "not in this layer": "#eeeeee",
}


def placement_chart(cells: pd.DataFrame, *, title: str, subtitle: str = "") -> alt.TopLevelMixin:
    """Which pool holds each layer's tensors (``cells``: layer, group, where). Host cells also carry an
    "H", so the diagram reads in greyscale."""
    domain = [w for w in PLACE_COLORS if w in set(cells["where"])]
    groups = list(dict.fromkeys(cells["group"]))
    chart = (
        alt.Chart(cells)
        .mark_rect(stroke="white", strokeWidth=0.6)
        .encode(
            x=alt.X(
                "layer:O",
                title="layer index",
                axis=alt.Axis(
                    labelAngle=0, values=sorted(set(cells["layer"]))[:: max(1, len(set(cells["layer"])) // 16)]
                ),
            ),
            y=alt.Y("group:N", title=None, sort=groups),
            color=alt.Color(
                "where:N",
                title="held in",
                scale=alt.Scale(domain=domain, range=[PLACE_COLORS[w] for w in domain]),
                legend=alt.Legend(orient="top"),
            ),
            tooltip=[
                alt.Tooltip("layer:O", title="layer"),
                alt.Tooltip("group:N", title="tensors"),
                alt.Tooltip("where:N", title="held in"),
            ],
        )
    )
    # the letter is computed from "where" in the spec, so the tests can see that it encodes the same field
    letters = (
        alt.Chart(cells)
        .transform_filter("datum.where == 'host RAM'")
        .transform_calculate(letter="datum.where == 'host RAM' ? 'H' : ''")
        .mark_text(fontSize=10, color="white", fontWeight="bold")
        .encode(x="layer:O", y=alt.Y("group:N", sort=groups), text="letter:N")
    )
    layered = alt.layer(chart, letters).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return style(layered, height=34 * len(groups) + 10)


def pool_bars_chart(rows: pd.DataFrame, *, title: str, subtitle: str = "") -> alt.TopLevelMixin:
    """One stacked bar per memory pool (``rows``: pool, part, gb, order) with each pool's capacity as a
    labelled tick (``rows`` also carries capacity_gb per pool). Segments stack in legend order and carry
    their name where it fits, so the chart reads in greyscale."""
    parts = list(dict.fromkeys(rows.sort_values("order")["part"]))
    palette = ["#2171b5", "#006d2c", "#f16913", "#969696", "#d94801", "#bdbdbd"]
    cap = rows.groupby("pool", sort=False)["capacity_gb"].first().reset_index()
    cap["label"] = cap["capacity_gb"].map(lambda g: f"capacity {g:,.0f} GB")
    xmax = float(max(cap["capacity_gb"].max(), rows.groupby("pool")["gb"].sum().max())) * 1.18
    bars = (
        alt.Chart(rows)
        .mark_bar(stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("sum(gb):Q", title="memory (GB)", scale=alt.Scale(domain=[0, xmax], nice=False)),
            y=alt.Y("pool:N", title=None, sort=list(dict.fromkeys(rows["pool"]))),
            color=alt.Color(
                "part:N",
                title=None,
                sort=parts,
                scale=alt.Scale(domain=parts, range=palette[: len(parts)]),
                legend=alt.Legend(orient="bottom", columns=3),
            ),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("pool:N"), alt.Tooltip("part:N"), alt.Tooltip("gb:Q", title="GB", format=",.1f")],
        )
    )
    names = segment_labels(
        rows,
        bar="pool",
        part="part",
        colors=dict(zip(parts, palette, strict=False)),
        xmax=xmax,
        bar_sort=list(dict.fromkeys(rows["pool"])),
    )
    ticks = (
        alt.Chart(cap)
        .mark_tick(color=INK, thickness=3, size=46)
        .encode(x="capacity_gb:Q", y=alt.Y("pool:N", sort=list(dict.fromkeys(rows["pool"]))))
    )
    text = (
        alt.Chart(cap)
        .mark_text(align="left", dx=6, fontSize=13, color=INK)
        .encode(x="capacity_gb:Q", y=alt.Y("pool:N", sort=list(dict.fromkeys(rows["pool"]))), text="label:N")
    )
    chart = alt.layer(bars, names, ticks, text).properties(
        title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined)
    )
    return style(chart, height=70 * rows["pool"].nunique() + 20)
