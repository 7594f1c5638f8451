"""What every chart shares: the slide-legible ``style_spec()``, the palettes, the second cues (dashes, shapes), the ink
that follows the theme, the highlight colour and the helpers that draw segment names and highlighted markers.

Accessibility (issue 13): no chart tells series or categories apart by colour alone. Lines also differ by dash
pattern, grouped bars and scatter points by marker shape, stacked-bar segments carry their name inside the segment
(when it fits) and stack in legend order, hot experts carry a marker, and contour bands use a ramp whose lightness
rises with the value. Annotation text and rules use ``INK``, which follows the chart's background, so they stay
visible on Streamlit's dark theme as well as on the light one. ``tests/unit/test_charts_a11y.py`` checks all this on
every builder's spec.

The helpers here (``cycle``, ``text_on``, ``segment_labels``, ``marker_marks``, ``style_spec``)
have public names because the chart modules import them (house rule: no private name is imported across modules);
the module itself is private to ``ui.charts``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ui.charts._spec import SCHEMA_URL, Datasets

# the scenario's point, hot experts, the GEMMs on the roofline: one red that reads on both themes
HIGHLIGHT = "#d62728"

# high-contrast categorical colours (Streamlit's theme would otherwise pick pale blues)
SERIES_COLORS = ["#1f5fa8", HIGHLIGHT, "#2ca02c", "#7b3fa0", "#ff7f0e", "#6b4226", "#e377c2", "#17becf"]
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
    "wedge",
    "arrow",
]
# Annotation text and rules follow the chart's background, which Streamlit's chart theme sets to the app's
# (light or dark): Vega's `background` signal picks dark ink on a light background and light ink on a dark
# one. It works in the SVG on the page, in the toolbar's PNG download and in vl-convert exports (no
# background there: dark ink). A fixed grey would vanish on one of the two themes.
DARK_BG = "isString(background) && luminance(background) < 0.3"
INK = {"expr": f"{DARK_BG} ? '#e8e6e3' : '#262626'"}
INK_MUTED = {"expr": f"{DARK_BG} ? '#b4b1ab' : '#555555'"}  # subtitles


def cycle(values: list, n: int) -> list:
    return [values[i % len(values)] for i in range(n)]


def text_on(hex_color: str) -> str:
    """Black or white, whichever reads better on ``hex_color`` (WCAG relative luminance)."""
    rgb = [int(hex_color.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "black" if (lum + 0.05) / 0.05 > 1.05 / (lum + 0.05) else "white"


def segment_labels(
    ds: Datasets,
    data: pd.DataFrame,
    *,
    bar: str,
    part: str,
    colors: dict[str, str],
    xmax: float,
    bar_sort: list | None = None,
) -> dict:
    """Each stacked segment's name, centred in the segment, in black or white for contrast with its fill;
    drawn only where the segment is wide enough for the text at the chart's current width (``width`` is
    the plot's width in pixels, the x scale runs 0..``xmax``). A dict layer (``ui.charts._spec``) whose data
    ``ds`` keeps."""
    seg = data.groupby([bar, part, "order"], as_index=False, sort=False)["gb"].sum()
    seg["ink"] = seg[part].map(lambda c: text_on(colors.get(c, "#808080")))
    fits = f"(datum.x1 - datum.x0) * width / {xmax:.6g} >= length(datum['{part}']) * 6.6 + 10"
    return {
        "data": ds.ref(seg),
        "transform": [
            {"stack": "gb", "groupby": [bar], "as": ["x0", "x1"], "sort": [{"field": "order"}]},
            {"calculate": "(datum.x0 + datum.x1) / 2", "as": "mid"},
        ],
        "mark": {"type": "text", "fontSize": 12, "baseline": "middle"},
        "encoding": {
            "x": {"field": "mid", "type": "quantitative"},
            "y": {"field": bar, "type": "nominal", "sort": bar_sort},
            "text": {"condition": {"test": fits, "field": part, "type": "nominal"}, "value": ""},
            "fill": {"field": "ink", "type": "nominal", "scale": None, "legend": None},  # not "color": no legend
        },
    }


def stacked_bars(
    ds: Datasets,
    rows: pd.DataFrame,
    *,
    bar: str,
    part: str,
    x_title: str,
    xmax: float,
    bar_sort: list | None,
    color_scale: dict,
    color: dict,
    tooltip: list,
    stack_zero: bool = False,
) -> dict:
    """Horizontal bars of ``rows`` (``bar``, ``part``, gb, order) stacked by ``part`` in ``order`` on a 0..``xmax``
    GB axis, white seams between segments (a dict layer, ``ui.charts._spec``). ``color``: the colour channel's
    other properties (title, sort, legend)."""
    x = {"field": "gb", "aggregate": "sum", "type": "quantitative", "title": x_title}
    if stack_zero:
        x["stack"] = "zero"
    x["scale"] = {"domain": [0, xmax], "nice": False}
    return {
        "data": ds.ref(rows),
        "mark": {"type": "bar", "stroke": "white", "strokeWidth": 0.5},
        "encoding": {
            "x": x,
            "y": {"field": bar, "type": "nominal", "title": None, "sort": bar_sort},
            "color": {"field": part, "type": "nominal", **color, "scale": color_scale},
            "order": {"field": "order", "type": "quantitative"},
            "tooltip": tooltip,
        },
    }


def marker_marks(
    *,
    size: int,
    shape: str | None = "diamond",
    outline: bool = False,
    align: str = "left",
    dx: int = 9,
    dy: int | None = -9,
    bold: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The mark properties of highlighted points (``HIGHLIGHT``, a diamond unless ``shape`` says otherwise; None
    keeps Vega-Lite's circle; ``outline`` rings the marker in white over a coloured surface) and of the label
    beside each, in the same red: the point's and the text's."""
    point: dict[str, Any] = {"size": size, "filled": True, "color": HIGHLIGHT}
    if shape is not None:
        point["shape"] = shape
    if outline:
        point.update(stroke="white", strokeWidth=1.5)
    text: dict[str, Any] = {"align": align, "dx": dx, "fontSize": 13, "color": HIGHLIGHT}
    if dy is not None:
        text["dy"] = dy
    if bold:
        text["fontWeight"] = "bold"
    return point, text


# slide-legible fonts (style_spec())
AXIS_CONFIG = {"labelFontSize": 13, "titleFontSize": 14, "labelLimit": 260}
LEGEND_CONFIG = {"labelFontSize": 13, "titleFontSize": 13, "symbolSize": 160, "labelLimit": 260}
TITLE_CONFIG = {"fontSize": 16, "anchor": "start", "subtitleFontSize": 13, "subtitleColor": INK_MUTED}
VIEW_CONFIG = {"strokeWidth": 0}


def style_spec(spec: dict, *, width: int | str = "container", height: int = 320) -> dict:
    """Slide-legible fonts, per chart (a global theme would leak into other sessions). ``height`` is the
    plot area's: the title, axes and legend are added around it (autosize fit-x, not fit)."""
    return {
        "$schema": SCHEMA_URL,
        **spec,
        "width": width,
        "height": height,
        "autosize": {"type": "fit-x", "contains": "padding"},
        "config": {
            "view": {"continuousWidth": 300, "continuousHeight": 300, **VIEW_CONFIG},  # Altair's default theme
            "axis": AXIS_CONFIG,
            "legend": LEGEND_CONFIG,
            "title": TITLE_CONFIG,
        },
    }
