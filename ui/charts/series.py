"""Multi-series charts shared by most pages: lines per series (with rules, markers and shaded bands) and grouped
bars per series."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui.charts._style import INK, SERIES_COLORS, SERIES_DASHES, SERIES_SHAPES, cycle, marker_layer, style


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
                scale=alt.Scale(domain=order, range=cycle(SERIES_COLORS, len(order))),
            ),
            strokeDash=alt.StrokeDash(
                f"{series}:N",
                title=None,
                sort=order,
                legend=legend,
                scale=alt.Scale(domain=order, range=cycle(SERIES_DASHES, len(order))),
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
        layers.extend(marker_layer(markers, x=f"{x}:Q", y=f"{y}:Q", size=130))
    chart = alt.layer(*layers).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return style(chart, height=height)


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
        scale=alt.Scale(domain=order, range=cycle(SERIES_COLORS, len(order))),
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
                scale=alt.Scale(domain=order, range=cycle(SERIES_SHAPES, len(order))),
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
