"""Single-box offload (Single box page): which pool holds each layer's tensors, and each pool's fill."""

from __future__ import annotations

import pandas as pd

from ui.charts._spec import Datasets, Spec, enc, layered, mark, records_of
from ui.charts._style import INK, segment_labels, stacked_bars, style_spec

PLACE_COLORS = {
    "GPU memory": "#2171b5",
    "host RAM": "#f16913",
    "unified pool": "#6a51a3",
    "not in this layer": "#eeeeee",
}


def placement_chart(cells: pd.DataFrame, *, title: str, subtitle: str = "") -> Spec:
    """Which pool holds each layer's tensors (``cells``: layer, group, where). Host cells also carry an
    "H", so the diagram reads in greyscale. Built as a dict (``ui.charts._spec``)."""
    ds = Datasets()
    domain = [w for w in PLACE_COLORS if w in set(cells["where"])]
    groups = list(dict.fromkeys(cells["group"]))
    layers_shown = sorted(set(cells["layer"]))
    values = ds.ref(cells)
    chart = {
        "data": values,
        "mark": mark("rect", stroke="white", strokeWidth=0.6),
        "encoding": {
            "x": enc(
                "layer:O",
                title="layer index",
                axis={"labelAngle": 0, "values": records_of(layers_shown[:: max(1, len(layers_shown) // 16)])},
            ),
            "y": enc("group:N", title=None, sort=groups),
            "color": enc(
                "where:N",
                title="held in",
                scale={"domain": domain, "range": [PLACE_COLORS[w] for w in domain]},
                legend={"orient": "top"},
            ),
            "tooltip": [
                enc("layer:O", title="layer"),
                enc("group:N", title="tensors"),
                enc("where:N", title="held in"),
            ],
        },
    }
    # the letter is computed from "where" in the spec, so the tests can see that it encodes the same field
    letters = {
        "data": values,
        "transform": [
            {"filter": "datum.where == 'host RAM'"},
            {"calculate": "datum.where == 'host RAM' ? 'H' : ''", "as": "letter"},
        ],
        "mark": mark("text", fontSize=10, color="white", fontWeight="bold"),
        "encoding": {"x": enc("layer:O"), "y": enc("group:N", sort=groups), "text": enc("letter:N")},
    }
    return Spec(style_spec(layered([chart, letters], ds, title=title, subtitle=subtitle), height=34 * len(groups) + 10))


def pool_bars_chart(rows: pd.DataFrame, *, title: str, subtitle: str = "") -> Spec:
    """One stacked bar per memory pool (``rows``: pool, part, gb, order) with each pool's capacity as a
    labelled tick (``rows`` also carries capacity_gb per pool). Segments stack in legend order and carry
    their name where it fits, so the chart reads in greyscale. Built as a dict (``ui.charts._spec``)."""
    ds = Datasets()
    parts = list(dict.fromkeys(rows.sort_values("order")["part"]))
    palette = ["#2171b5", "#006d2c", "#f16913", "#969696", "#d94801", "#bdbdbd"]
    cap = rows.groupby("pool", sort=False)["capacity_gb"].first().reset_index()
    cap["label"] = cap["capacity_gb"].map(lambda g: f"capacity {g:,.0f} GB")
    xmax = float(max(cap["capacity_gb"].max(), rows.groupby("pool")["gb"].sum().max())) * 1.18
    pools = list(dict.fromkeys(rows["pool"]))
    bars = stacked_bars(
        ds,
        rows,
        bar="pool",
        part="part",
        x_title="memory (GB)",
        xmax=xmax,
        bar_sort=pools,
        color_scale={"domain": parts, "range": palette[: len(parts)]},
        color={"title": None, "sort": parts, "legend": {"orient": "bottom", "columns": 3}},
        tooltip=[enc("pool:N"), enc("part:N"), enc("gb:Q", title="GB", format=",.1f")],
    )
    names = segment_labels(
        ds, rows, bar="pool", part="part", colors=dict(zip(parts, palette, strict=False)), xmax=xmax, bar_sort=pools
    )
    capacity = ds.ref(cap)
    where = {"x": enc("capacity_gb:Q"), "y": enc("pool:N", sort=pools)}
    ticks = {"data": capacity, "mark": mark("tick", color=INK, thickness=3, size=46), "encoding": where}
    text = {
        "data": capacity,
        "mark": mark("text", align="left", dx=6, fontSize=13, color=INK),
        "encoding": {**where, "text": enc("label:N")},
    }
    layers = [bars, names, ticks, text]
    return Spec(
        style_spec(layered(layers, ds, title=title, subtitle=subtitle), height=70 * rows["pool"].nunique() + 20)
    )
