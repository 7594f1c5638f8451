"""Multi-series charts shared by most pages: lines per series (with rules, markers and shaded bands) and grouped
bars per series."""

from __future__ import annotations

import pandas as pd

from ui.charts._spec import Datasets, Spec, enc, layered, mark, records_of
from ui.charts._style import (
    INK,
    SERIES_COLORS,
    SERIES_DASHES,
    SERIES_SHAPES,
    cycle,
    marker_marks,
    style_spec,
)


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
) -> Spec:
    """Lines per ``series`` with optional labelled horizontal rules (``hrules``: value, label),
    vertical rules (``vrules``: value, label) and labelled points (``markers``: x, y, label).
    Each series also gets its own dash pattern (shown in the legend), so the chart reads in greyscale. ``bands`` (start,
    end, label) shade x ranges behind the lines, e.g. production zones. Built as a dict (``ui.charts._spec``: the
    chart most pages draw several times)."""
    ds = Datasets()
    order = list(dict.fromkeys(data[series]))
    legend = {"orient": "top", "columns": 3, "symbolStrokeWidth": 2.5}  # one legend: colour and dash
    xs = {"type": "log", "nice": False} if log_x else {"zero": False}
    ys = {"type": "log"} if log_y else {"zero": True}
    base = {
        "data": ds.ref(data),
        "mark": mark("line", strokeWidth=2.5),
        "encoding": {
            "x": enc(f"{x}:Q", title=x_title, scale=xs),
            "y": enc(f"{y}:Q", title=y_title, scale=ys, axis={"format": y_format}),
            "color": enc(
                f"{series}:N",
                title=None,
                sort=order,
                legend=legend,
                scale={"domain": order, "range": cycle(SERIES_COLORS, len(order))},
            ),
            "strokeDash": enc(
                f"{series}:N",
                title=None,
                sort=order,
                legend=legend,
                scale={"domain": order, "range": cycle(SERIES_DASHES, len(order))},
            ),
            "tooltip": [
                enc(f"{series}:N"),
                enc(f"{x}:Q", title=x_title, format=","),
                enc(f"{y}:Q", title=y_title, format=",.3~f"),
            ],
        },
    }
    layers: list[dict] = [base]
    if bands is not None and len(bands):
        band_data = ds.ref(bands)
        shade = {
            "data": band_data,
            "mark": mark("rect", opacity=0.13, color="#2ca02c"),
            "encoding": {"x": enc("start:Q"), "x2": {"field": "end"}},
        }
        band_text = {
            "data": band_data,
            "mark": mark("text", align="left", baseline="top", dx=4, dy=4, fontSize=12, color=INK),
            "encoding": {"x": enc("start:Q"), "y": {"value": 0}, "text": enc("label:N")},
        }
        layers = [shade, band_text, base]
    if hrules is not None and len(hrules):
        # labels staggered from the right edge so that close rules (similar ridges) stay readable
        hr = hrules.reset_index(drop=True).assign(slot=lambda d: d.index)
        layers.append(
            {
                "data": ds.ref(hr),
                "mark": mark("rule", color=INK, strokeDash=[4, 3], opacity=0.8),
                "encoding": {"y": enc("value:Q")},
            }
        )
        for slot in range(len(hr)):
            layers.append(
                {
                    "data": ds.ref(hr.iloc[[slot]]),
                    "mark": mark("text", align="right", baseline="bottom", dy=-3, fontSize=12, color=INK),
                    "encoding": {
                        "y": enc("value:Q"),
                        "x": {"value": {"expr": f"width * {max(0.2, 1 - 0.24 * slot):.2f}"}},
                        "text": enc("label:N"),
                    },
                }
            )
    if vrules is not None and len(vrules):
        rule_data = ds.ref(vrules)
        layers.append(
            {
                "data": rule_data,
                "mark": mark("rule", color=INK, strokeDash=[2, 2], opacity=0.8),
                "encoding": {"x": enc("value:Q")},
            }
        )
        layers.append(
            {
                "data": rule_data,
                "mark": mark("text", align="left", baseline="top", dx=4, dy=4, fontSize=12, color=INK),
                "encoding": {"x": enc("value:Q"), "y": {"value": 0}, "text": enc("label:N")},
            }
        )
    if markers is not None and len(markers):
        point, text = marker_marks(size=130)
        where = {"x": enc(f"{x}:Q"), "y": enc(f"{y}:Q")}
        marker_data = ds.ref(markers)
        layers.append({"data": marker_data, "mark": mark("point", **point), "encoding": where})
        layers.append(
            {"data": marker_data, "mark": mark("text", **text), "encoding": {**where, "text": enc("label:N")}}
        )
    return Spec(style_spec(layered(layers, ds, title=title, subtitle=subtitle), height=height))


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
) -> Spec:
    """Side-by-side bars per x for each series (e.g. per-GPU load before / after EPLB). ``x_in_order``:
    keep the x values in the order of ``data`` instead of sorting them. Each bar carries its series'
    marker shape on top (the legend shows colour and shape together), so the chart reads in greyscale.
    Built as a dict (``ui.charts._spec``)."""
    ds = Datasets()
    order = list(dict.fromkeys(data[series]))
    x_sort = records_of(list(dict.fromkeys(data[x]))) if x_in_order else "ascending"
    legend = {"orient": "top", "columns": min(len(order), 4), "symbolSize": 110}
    color = enc(
        f"{series}:N",
        title=None,
        sort=order,
        scale={"domain": order, "range": cycle(SERIES_COLORS, len(order))},
        legend=legend,
    )
    x_enc = enc(f"{x}:O", title=x_title, axis={"labelAngle": 0}, sort=x_sort)
    x_off = enc(f"{series}:N", sort=order)
    values = ds.ref(data)
    bars = {
        "data": values,
        "mark": mark("bar"),
        "encoding": {
            "x": x_enc,
            "xOffset": x_off,
            "y": enc(f"{y}:Q", title=y_title),
            "color": color,
            "tooltip": [enc(f"{series}:N"), enc(f"{x}:O", title=x_title), enc(f"{y}:Q", format=",.3f")],
        },
    }
    tops = {
        "data": values,
        "mark": mark("point", filled=True, size=55, yOffset=-8, opacity=1),
        "encoding": {
            "x": x_enc,
            "xOffset": x_off,
            "y": enc(f"{y}:Q"),
            "color": color,
            "shape": enc(
                f"{series}:N",
                title=None,
                sort=order,
                legend=legend,
                scale={"domain": order, "range": cycle(SERIES_SHAPES, len(order))},
            ),
        },
    }
    layers: list[dict] = [bars, tops]
    if hrule is not None:
        rule = ds.ref(pd.DataFrame({"value": [hrule], "label": [hrule_label]}))
        layers.append({"data": rule, "mark": mark("rule", color=INK, strokeWidth=2), "encoding": {"y": enc("value:Q")}})
        layers.append(
            {
                "data": rule,
                "mark": mark("text", align="right", dy=-5, fontSize=12, color=INK),
                "encoding": {"y": enc("value:Q"), "x": {"value": "width"}, "text": enc("label:N")},
            }
        )
    return Spec(style_spec(layered(layers, ds, title=title, subtitle=subtitle), height=280))
