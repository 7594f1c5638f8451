"""Memory charts (Fit page, report): memory per GPU stacked by component, and max sequences vs context."""

from __future__ import annotations

import pandas as pd

from ui.charts._spec import Datasets, Spec, enc, layered, mark
from ui.charts._style import INK, SERIES_DASHES, cycle, marker_marks, segment_labels, stacked_bars, style_spec

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
) -> Spec:
    """Stacked horizontal bars of memory per GPU by component (``rows``: bar, component, gb, order),
    with the usable budget (gpu_memory_utilization x memory) and the device memory as labelled rules.
    Segments stack in legend order and carry their name where it fits, so the chart reads in greyscale.
    Built as a dict (``ui.charts._spec``)."""
    ds = Datasets()
    domain = sorted(
        (c for c in COMPONENT_COLORS if c in set(rows["component"])),
        key=lambda c: float(rows.loc[rows["component"] == c, "order"].min()),
    )
    xmax = max(capacity_gb, float(rows.groupby("bar")["gb"].sum().max())) * 1.16
    bars = stacked_bars(
        ds,
        rows,
        bar="bar",
        part="component",
        x_title="memory per GPU (GB)",
        xmax=xmax,
        bar_sort=None,
        color_scale={"domain": domain, "range": [COMPONENT_COLORS[c] for c in domain]},
        color={"title": "component", "legend": {"orient": "bottom", "columns": 5}},
        tooltip=[enc("bar:N", title="GPU"), enc("component:N"), enc("gb:Q", title="GB", format=",.2f")],
        stack_zero=True,
    )
    lines = pd.DataFrame(
        {
            "gb": [usable_gb, capacity_gb],
            "label": [f"usable {usable_gb:,.1f} GB", f"device {capacity_gb:,.1f} GB"],
            "dash": ["usable", "device"],
            "align": ["right", "left"],
        }
    )
    rules = {
        "data": ds.ref(lines),
        "mark": mark("rule", strokeWidth=2, color=INK),
        "encoding": {
            "x": enc("gb:Q"),
            "strokeDash": enc("dash:N", scale={"domain": ["usable", "device"], "range": [[6, 3], [1, 0]]}, legend=None),
        },
    }

    # the usable label sits left of its rule, the device label right of its own: they never overlap
    def label(i: int, align: str, dx: int) -> dict:
        return {
            "data": ds.ref(lines.iloc[[i]]),
            "mark": mark("text", align=align, baseline="top", dx=dx, dy=4, fontSize=13, color=INK),
            "encoding": {"x": enc("gb:Q"), "y": {"value": 0}, "text": enc("label:N")},
        }

    names = segment_labels(ds, rows, bar="bar", part="component", colors=COMPONENT_COLORS, xmax=xmax)
    layers = [bars, names, rules, label(0, "right", -5), label(1, "left", 5)]
    return Spec(style_spec(layered(layers, ds, title=title, subtitle=subtitle), height=56 * rows["bar"].nunique() + 24))


def max_sequences_chart(curves: pd.DataFrame, *, marker: pd.DataFrame, title: str, subtitle: str = "") -> Spec:
    """Max concurrent sequences vs context length (log-log), one line per series (``curves``:
    context_tokens, sequences, series), and the scenario's point (``marker``: context_tokens,
    sequences, label). Built as a dict (``ui.charts._spec``)."""
    ds = Datasets()
    data = curves[curves["sequences"] > 0]
    series = list(dict.fromkeys(data["series"]))
    line = {
        "data": ds.ref(data),
        "mark": mark("line", strokeWidth=2.5),
        "encoding": {
            "x": enc(
                "context_tokens:Q",
                title="context per sequence (tokens)",
                scale={
                    "type": "log",
                    "domain": [float(data["context_tokens"].min()), float(data["context_tokens"].max())],
                    "nice": False,
                },
            ),
            "y": enc("sequences:Q", title="max concurrent sequences", scale={"type": "log"}),
            "color": enc("series:N", title=None, sort=series, legend={"orient": "top"}),
            # the same legend as the colour's: one merged legend showing colour and dash
            "strokeDash": enc(
                "series:N",
                title=None,
                sort=series,
                legend={"orient": "top"},
                scale={"domain": series, "range": cycle(SERIES_DASHES, len(series))},
            ),
            "tooltip": [
                enc("series:N"),
                enc("context_tokens:Q", title="context (tokens)", format=","),
                enc("sequences:Q", title="sequences", format=","),
            ],
        },
    }
    point, text = marker_marks(size=140)
    where = {"x": enc("context_tokens:Q"), "y": enc("sequences:Q")}
    marked = ds.ref(marker)
    layers = [
        line,
        {"data": marked, "mark": mark("point", **point), "encoding": where},
        {"data": marked, "mark": mark("text", **text), "encoding": {**where, "text": enc("label:N")}},
    ]
    return Spec(style_spec(layered(layers, ds, title=title, subtitle=subtitle), height=340))
