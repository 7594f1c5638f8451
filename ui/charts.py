"""Altair chart builders: plain functions from data to ``alt.Chart`` (no ``st.*``).

Every chart states its scenario in the title, carries units on both axes, and uses font sizes that
stay legible in a PNG pasted into a slide.

Accessibility (issue 13): no chart tells series or categories apart by colour alone. Lines also differ
by dash pattern, grouped bars and scatter points by marker shape, stacked-bar segments carry their name
inside the segment (when it fits) and stack in legend order, hot experts carry a marker, and contour
bands use a ramp whose lightness rises with the value. Annotation text and rules use ``INK``, which
follows the chart's background, so they stay visible on Streamlit's dark theme as well as on the light
one. ``tests/unit/test_charts_a11y.py`` checks all this on every builder's spec.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

__all__ = [
    "COMPONENT_COLORS",
    "COMPONENT_LABELS",
    "expert_load_chart",
    "grouped_bars_chart",
    "heatmap_chart",
    "lines_chart",
    "max_sequences_chart",
    "memory_stack_chart",
    "placement_chart",
    "pool_bars_chart",
    "roofline_chart",
    "style",
]

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


# high-contrast categorical colours (Streamlit's theme would otherwise pick pale blues)
SERIES_COLORS = ["#1f5fa8", "#d62728", "#2ca02c", "#7b3fa0", "#ff7f0e", "#6b4226", "#e377c2", "#17becf"]
# the second cue per series, in the same order: dash patterns for lines (solid, long dash, dots, dash-dot,
# short dash, dash-dot-dot, sparse dots, long-short) and marker shapes for bars and points
SERIES_DASHES = [[1, 0], [9, 4], [2, 3], [12, 3, 3, 3], [5, 2], [10, 3, 2, 3, 2, 3], [1, 6], [16, 4, 6, 4]]
SERIES_SHAPES = [
    "circle",
    "square",
    "triangle-up",
    "diamond",
    "cross",
    "triangle-down",
    "triangle-right",
    "triangle-left",
]
# Annotation text and rules follow the chart's background, which Streamlit's chart theme sets to the app's
# (light or dark): Vega's `background` signal picks dark ink on a light background and light ink on a dark
# one. It works in the SVG on the page, in the toolbar's PNG download and in vl-convert exports (no
# background there: dark ink). A fixed grey would vanish on one of the two themes.
_DARK_BG = "isString(background) && luminance(background) < 0.3"
INK = {"expr": f"{_DARK_BG} ? '#e8e6e3' : '#262626'"}
INK_MUTED = {"expr": f"{_DARK_BG} ? '#b4b1ab' : '#555555'"}  # subtitles


def _cycle(values: list, n: int) -> list:
    return [values[i % len(values)] for i in range(n)]


def _text_on(hex_color: str) -> str:
    """Black or white, whichever reads better on ``hex_color`` (WCAG relative luminance)."""
    rgb = [int(hex_color.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "black" if (lum + 0.05) / 0.05 > 1.05 / (lum + 0.05) else "white"


def _segment_labels(
    data: pd.DataFrame, *, bar: str, part: str, colors: dict[str, str], xmax: float, bar_sort: list | None = None
) -> alt.Chart:
    """Each stacked segment's name, centred in the segment, in black or white for contrast with its fill;
    drawn only where the segment is wide enough for the text at the chart's current width (``width`` is
    the plot's width in pixels, the x scale runs 0..``xmax``)."""
    seg = data.groupby([bar, part, "order"], as_index=False, sort=False)["gb"].sum()
    seg["ink"] = seg[part].map(lambda c: _text_on(colors.get(c, "#808080")))
    fits = f"(datum.x1 - datum.x0) * width / {xmax:.6g} >= length(datum['{part}']) * 6.6 + 10"
    return (
        alt.Chart(seg)
        .transform_stack(stack="gb", groupby=[bar], as_=["x0", "x1"], sort=[alt.SortField("order")])
        .transform_calculate(mid="(datum.x0 + datum.x1) / 2")
        .mark_text(fontSize=12, baseline="middle")
        .encode(
            x=alt.X("mid:Q"),
            y=alt.Y(f"{bar}:N", sort=bar_sort),
            text=alt.condition(fits, alt.Text(f"{part}:N"), alt.value("")),
            fill=alt.Fill("ink:N", scale=None, legend=None),  # not "color": no legend to merge with the bars
        )
    )


def style(chart: alt.TopLevelMixin, *, width: int | str = "container", height: int = 320) -> alt.TopLevelMixin:
    """Slide-legible fonts, per chart (a global theme would leak into other sessions). ``height`` is the
    plot area's: the title, axes and legend are added around it (autosize fit-x, not fit)."""
    return (
        chart.properties(width=width, height=height, autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
        .configure_axis(labelFontSize=13, titleFontSize=14, labelLimit=260)
        .configure_legend(labelFontSize=13, titleFontSize=13, symbolSize=160, labelLimit=260)
        .configure_title(fontSize=16, anchor="start", subtitleFontSize=13, subtitleColor=INK_MUTED)
        .configure_view(strokeWidth=0)
    )


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
    names = _segment_labels(rows, bar="bar", part="component", colors=COMPONENT_COLORS, xmax=xmax)
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
                scale=alt.Scale(domain=series, range=_cycle(SERIES_DASHES, len(series))),
            ),
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip("context_tokens:Q", title="context (tokens)", format=","),
                alt.Tooltip("sequences:Q", title="sequences", format=","),
            ],
        )
    )
    point = (
        alt.Chart(marker)
        .mark_point(size=140, filled=True, color="#d62728", shape="diamond")
        .encode(x="context_tokens:Q", y="sequences:Q")
    )
    label = (
        alt.Chart(marker)
        .mark_text(align="left", dx=9, dy=-9, fontSize=13, color="#d62728")
        .encode(x="context_tokens:Q", y="sequences:Q", text="label:N")
    )
    chart = alt.layer(line, point, label).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return style(chart, height=340)


def lines_chart(
    data: pd.DataFrame,
    *,
    x: str,
    y: str,
    series: str,
    x_title: str,
    y_title: str,
    title: str,
    subtitle: str = "",
    log_x: bool = True,
    log_y: bool = True,
    hrules: pd.DataFrame | None = None,
    vrules: pd.DataFrame | None = None,
    markers: pd.DataFrame | None = None,
    bands: pd.DataFrame | None = None,
    height: int = 340,
    y_format: str = ",",
) -> alt.TopLevelMixin:
    """Lines per ``series`` with optional labelled horizontal rules (``hrules``: value, label),
    vertical rules (``vrules``: value, label) and labelled points (``markers``: x, y, label).
    Each series also gets its own dash pattern (shown in the legend), so the chart reads in greyscale. ``bands`` (start,
    end, label) shade x ranges behind the lines, e.g. production zones."""
    order = list(dict.fromkeys(data[series]))
    legend = alt.Legend(orient="top", columns=3, symbolStrokeWidth=2.5)  # one legend: colour and dash
    xs = alt.Scale(type="log", nice=False) if log_x else alt.Scale(zero=False)
    ys = alt.Scale(type="log") if log_y else alt.Scale(zero=True)
    base = (
        alt.Chart(data)
        .mark_line(strokeWidth=2.5)
        .encode(
            x=alt.X(f"{x}:Q", title=x_title, scale=xs),
            y=alt.Y(f"{y}:Q", title=y_title, scale=ys, axis=alt.Axis(format=y_format)),
            color=alt.Color(
                f"{series}:N",
                title=None,
                sort=order,
                legend=legend,
                scale=alt.Scale(domain=order, range=_cycle(SERIES_COLORS, len(order))),
            ),
            strokeDash=alt.StrokeDash(
                f"{series}:N",
                title=None,
                sort=order,
                legend=legend,
                scale=alt.Scale(domain=order, range=_cycle(SERIES_DASHES, len(order))),
            ),
            tooltip=[
                alt.Tooltip(f"{series}:N"),
                alt.Tooltip(f"{x}:Q", title=x_title, format=","),
                alt.Tooltip(f"{y}:Q", title=y_title, format=",.3~f"),
            ],
        )
    )
    layers: list = [base]
    if bands is not None and len(bands):
        shade = alt.Chart(bands).mark_rect(opacity=0.13, color="#2ca02c").encode(x="start:Q", x2="end:Q")
        band_text = (
            alt.Chart(bands)
            .mark_text(align="left", baseline="top", dx=4, dy=4, fontSize=12, color=INK)
            .encode(x="start:Q", y=alt.value(0), text="label:N")
        )
        layers = [shade, band_text, base]
    if hrules is not None and len(hrules):
        # labels staggered from the right edge so that close rules (similar ridges) stay readable
        hr = hrules.reset_index(drop=True).assign(slot=lambda d: d.index)
        layers.append(alt.Chart(hr).mark_rule(color=INK, strokeDash=[4, 3], opacity=0.8).encode(y="value:Q"))
        for slot, part in hr.groupby("slot"):
            layers.append(
                alt.Chart(part)
                .mark_text(align="right", baseline="bottom", dy=-3, fontSize=12, color=INK)
                .encode(y="value:Q", x=alt.value(alt.expr(f"width * {max(0.2, 1 - 0.24 * slot):.2f}")), text="label:N")
            )
    if vrules is not None and len(vrules):
        layers.append(alt.Chart(vrules).mark_rule(color=INK, strokeDash=[2, 2], opacity=0.8).encode(x="value:Q"))
        layers.append(
            alt.Chart(vrules)
            .mark_text(align="left", baseline="top", dx=4, dy=4, fontSize=12, color=INK)
            .encode(x="value:Q", y=alt.value(0), text="label:N")
        )
    if markers is not None and len(markers):
        layers.append(
            alt.Chart(markers)
            .mark_point(size=130, filled=True, color="#d62728", shape="diamond")
            .encode(x=f"{x}:Q", y=f"{y}:Q")
        )
        layers.append(
            alt.Chart(markers)
            .mark_text(align="left", dx=9, dy=-9, fontSize=13, color="#d62728")
            .encode(x=f"{x}:Q", y=f"{y}:Q", text="label:N")
        )
    chart = alt.layer(*layers).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return style(chart, height=height)


def roofline_chart(roofs: pd.DataFrame, points: pd.DataFrame, *, title: str, subtitle: str = "") -> alt.TopLevelMixin:
    """Attainable TFLOP/s vs arithmetic intensity (log-log), one roof per GPU (``roofs``: intensity,
    tflops, gpu), with GEMMs as labelled points (``points``: intensity, tflops, label)."""
    order = list(dict.fromkeys(roofs["gpu"]))
    legend = alt.Legend(orient="top", columns=2, symbolStrokeWidth=2.5)  # one legend: colour and dash
    roof = (
        alt.Chart(roofs)
        .mark_line(strokeWidth=2.5)
        .encode(
            x=alt.X("intensity:Q", title="arithmetic intensity (FLOP/byte)", scale=alt.Scale(type="log", nice=False)),
            y=alt.Y("tflops:Q", title="attainable TFLOP/s", scale=alt.Scale(type="log")),
            color=alt.Color(
                "gpu:N",
                title=None,
                sort=order,
                legend=legend,
                scale=alt.Scale(domain=order, range=_cycle(SERIES_COLORS, len(order))),
            ),
            strokeDash=alt.StrokeDash(
                "gpu:N",
                title=None,
                sort=order,
                legend=legend,
                scale=alt.Scale(domain=order, range=_cycle(SERIES_DASHES, len(order))),
            ),
            tooltip=[
                alt.Tooltip("gpu:N"),
                alt.Tooltip("intensity:Q", format=",.1f"),
                alt.Tooltip("tflops:Q", format=",.1f"),
            ],
        )
    )
    pts = (
        alt.Chart(points)
        .mark_point(size=120, filled=True, color="#d62728")
        .encode(
            x="intensity:Q",
            y="tflops:Q",
            tooltip=[
                alt.Tooltip("label:N"),
                alt.Tooltip("intensity:Q", format=",.1f"),
                alt.Tooltip("tflops:Q", format=",.1f"),
            ],
        )
    )
    labels = (
        alt.Chart(points)
        .mark_text(align="right", dx=-8, dy=-8, fontSize=13, fontWeight="bold", color="#d62728")
        .encode(x="intensity:Q", y="tflops:Q", text="label:N")
    )
    chart = alt.layer(roof, pts, labels).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return style(chart, height=360)


def heatmap_chart(
    cells: pd.DataFrame,
    *,
    x: str,
    y: str,
    band: str,
    band_order: list[str],
    x_title: str,
    y_title: str,
    title: str,
    subtitle: str = "",
    ridge: pd.DataFrame | None = None,
    marker: pd.DataFrame | None = None,
    cell_px: tuple[int, int] = (44, 9),
) -> alt.TopLevelMixin:
    """A surface as rect cells (``cells``: x, y, band label, value), coloured by labelled contour bands
    (ordinal, so the legend reads "1.5-2.0x"), with an optional ridge line (``ridge``: x, y) and the
    scenario's point (``marker``: x, y, label). Integer pixel steps avoid seams between cells. The bands'
    ramp darkens monotonically with the value, so the surface reads in greyscale too."""
    colors = [
        "#f7fbff",
        "#deebf7",
        "#c6dbef",
        "#9ecae1",
        "#6baed6",
        "#4292c6",
        "#2171b5",
        "#08519c",
        "#08306b",
        "#041c40",
        "#020e20",
    ]
    value_col = next(c for c in cells.columns if c not in (x, y, band))
    rect = (
        alt.Chart(cells)
        .mark_rect()
        .encode(
            x=alt.X(f"{x}:O", title=x_title, axis=alt.Axis(labelAngle=0)),
            y=alt.Y(f"{y}:O", title=y_title, sort="descending", axis=alt.Axis(values=list(cells[y].unique()[::5]))),
            color=alt.Color(
                f"{band}:O",
                title="speedup",
                sort=band_order,
                scale=alt.Scale(domain=band_order, range=colors[: len(band_order)]),
                legend=alt.Legend(orient="right"),
            ),
            tooltip=[
                alt.Tooltip(f"{y}:O", title=y_title),
                alt.Tooltip(f"{x}:O", title=x_title),
                alt.Tooltip(f"{value_col}:Q", title="speedup", format=".2f"),
            ],
        )
        .properties(width=alt.Step(cell_px[0]), height=alt.Step(cell_px[1]))
    )
    layers: list = [rect]
    if ridge is not None and len(ridge):
        layers.append(
            alt.Chart(ridge)
            .mark_line(color="#ff7f0e", strokeWidth=3)
            .encode(x=f"{x}:O", y=alt.Y(f"{y}:O", sort="descending"))
        )
        layers.append(
            alt.Chart(ridge)
            .mark_point(color="#ff7f0e", filled=True, size=30)
            .encode(x=f"{x}:O", y=alt.Y(f"{y}:O", sort="descending"))
        )
    if marker is not None and len(marker):
        layers.append(
            alt.Chart(marker)
            .mark_point(shape="diamond", size=220, filled=True, color="#d62728", stroke="white", strokeWidth=1.5)
            .encode(x=f"{x}:O", y=alt.Y(f"{y}:O", sort="descending"))
        )
        layers.append(
            alt.Chart(marker)
            .mark_text(align="left", dx=10, fontSize=13, fontWeight="bold", color="#d62728")
            .encode(x=f"{x}:O", y=alt.Y(f"{y}:O", sort="descending"), text="label:N")
        )
    chart = alt.layer(*layers).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return (
        chart.configure_axis(labelFontSize=13, titleFontSize=14)
        .configure_legend(labelFontSize=13, titleFontSize=13)
        .configure_title(fontSize=16, anchor="start", subtitleFontSize=13, subtitleColor=INK_MUTED)
        .configure_view(strokeWidth=0)
    )


def expert_load_chart(
    loads: pd.DataFrame,
    *,
    mean: float,
    threshold: float,
    title: str,
    subtitle: str = "",
    x_title: str = "expert",
    y_title: str = "share of assignments (%)",
) -> alt.TopLevelMixin:
    """Bars per item (``loads``: item, value, hot (bool)) with the mean and the alert threshold as
    labelled rules; hot items in red, with a marker above each, so they stand out without colour too."""
    n = len(loads)
    hot_scale = alt.Scale(domain=["hot", "normal"], range=["#d62728", "#6b8fb5"])
    bars = (
        alt.Chart(loads)
        .mark_bar()
        .encode(
            x=alt.X(
                "item:O",
                title=x_title,
                sort=None,
                axis=alt.Axis(labelAngle=0, values=list(loads["item"][:: max(1, n // 32)])),
            ),
            y=alt.Y("value:Q", title=y_title),
            color=alt.Color("hot:N", title=None, scale=hot_scale, legend=alt.Legend(orient="top")),
            opacity=alt.condition("datum.hot == 'hot'", alt.value(1.0), alt.value(0.85)),
            tooltip=[alt.Tooltip("item:O", title=x_title), alt.Tooltip("value:Q", format=",.3f", title=y_title)],
        )
    )
    rules = pd.DataFrame(
        {
            "value": [mean, threshold],
            "label": [f"mean {mean:,.3g}", f"alert {threshold:,.3g}"],
            "dash": ["mean", "alert"],
        }
    )
    # one marker above each hot bar; its shape legend merges with the colour legend ("hot" gets the triangle)
    marks = (
        alt.Chart(loads)
        .transform_filter("datum.hot == 'hot'")
        .mark_point(filled=True, size=45, yOffset=-8, opacity=1)
        .encode(
            x=alt.X("item:O", sort=None),
            y="value:Q",
            color=alt.Color("hot:N", title=None, scale=hot_scale, legend=alt.Legend(orient="top")),
            shape=alt.Shape(
                "hot:N",
                title=None,
                scale=alt.Scale(domain=["hot", "normal"], range=["triangle-down", "square"]),
                legend=alt.Legend(orient="top"),
            ),
        )
    )
    rule = (
        alt.Chart(rules)
        .mark_rule(strokeWidth=2, color=INK)
        .encode(
            y="value:Q",
            strokeDash=alt.StrokeDash(
                "dash:N", scale=alt.Scale(domain=["mean", "alert"], range=[[1, 0], [6, 3]]), legend=None
            ),
        )
    )
    text = (
        alt.Chart(rules)
        .mark_text(align="right", dy=-5, fontSize=12, color=INK)
        .encode(y="value:Q", x=alt.value("width"), text="label:N")
    )
    chart = alt.layer(bars, marks, rule, text).properties(
        title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined)
    )
    return style(chart, height=280)


def grouped_bars_chart(
    data: pd.DataFrame,
    *,
    x: str,
    y: str,
    series: str,
    x_title: str,
    y_title: str,
    title: str,
    subtitle: str = "",
    hrule: float | None = None,
    hrule_label: str = "",
    x_in_order: bool = False,
) -> alt.TopLevelMixin:
    """Side-by-side bars per x for each series (e.g. per-GPU load before / after EPLB). ``x_in_order``:
    keep the x values in the order of ``data`` instead of sorting them. Each bar carries its series'
    marker shape on top (the legend shows colour and shape together), so the chart reads in greyscale."""
    order = list(dict.fromkeys(data[series]))
    x_sort = list(dict.fromkeys(data[x])) if x_in_order else "ascending"
    legend = alt.Legend(orient="top", columns=min(len(order), 4), symbolSize=110)
    color = alt.Color(
        f"{series}:N",
        title=None,
        sort=order,
        scale=alt.Scale(domain=order, range=_cycle(SERIES_COLORS, len(order))),
        legend=legend,
    )
    x_enc = alt.X(f"{x}:O", title=x_title, axis=alt.Axis(labelAngle=0), sort=x_sort)
    x_off = alt.XOffset(f"{series}:N", sort=order)
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=x_enc,
            xOffset=x_off,
            y=alt.Y(f"{y}:Q", title=y_title),
            color=color,
            tooltip=[
                alt.Tooltip(f"{series}:N"),
                alt.Tooltip(f"{x}:O", title=x_title),
                alt.Tooltip(f"{y}:Q", format=",.3f"),
            ],
        )
    )
    tops = (
        alt.Chart(data)
        .mark_point(filled=True, size=55, yOffset=-8, opacity=1)
        .encode(
            x=x_enc,
            xOffset=x_off,
            y=f"{y}:Q",
            color=color,
            shape=alt.Shape(
                f"{series}:N",
                title=None,
                sort=order,
                legend=legend,
                scale=alt.Scale(domain=order, range=_cycle(SERIES_SHAPES, len(order))),
            ),
        )
    )
    layers: list = [bars, tops]
    if hrule is not None:
        r = pd.DataFrame({"value": [hrule], "label": [hrule_label]})
        layers.append(alt.Chart(r).mark_rule(color=INK, strokeWidth=2).encode(y="value:Q"))
        layers.append(
            alt.Chart(r)
            .mark_text(align="right", dy=-5, fontSize=12, color=INK)
            .encode(y="value:Q", x=alt.value("width"), text="label:N")
        )
    chart = alt.layer(*layers).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return style(chart, height=280)


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
    names = _segment_labels(
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
