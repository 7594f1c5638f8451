"""Speculative-decoding charts (Speculative page, report): the speedup surface over (draft length, acceptance)
as contour bands, and speedup-vs-acceptance curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import pandas as pd

from ui.charts._style import INK_MUTED, marker_layer
from ui.charts.series import lines_chart


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
        layers.extend(
            marker_layer(
                marker,
                x=f"{x}:O",
                y=alt.Y(f"{y}:O", sort="descending"),
                size=220,
                outline=True,
                dx=10,
                dy=None,
                bold=True,
            )
        )
    chart = alt.layer(*layers).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return (
        chart.configure_axis(labelFontSize=13, titleFontSize=14)
        .configure_legend(labelFontSize=13, titleFontSize=13)
        .configure_title(fontSize=16, anchor="start", subtitleFontSize=13, subtitleColor=INK_MUTED)
        .configure_view(strokeWidth=0)
    )


def speedup_vs_alpha_chart(
    alphas: Sequence[float],
    curves: Mapping,
    *,
    c: float,
    now: tuple[float, float],
    now_label: str,
    zones: Sequence[tuple[str, float, float]] = (),
    height: int = 340,
) -> alt.TopLevelMixin:
    """Speedup (×) over the acceptance rate α, one line per draft length γ (``curves``: γ -> speedups on
    ``alphas``), the scenario's point ``now`` (α, speedup), break-even at 1× and shaded acceptance ``zones``
    (label, from, to)."""
    data = pd.concat(
        [pd.DataFrame({"alpha": list(alphas), "speedup": list(v), "series": f"γ = {g}"}) for g, v in curves.items()]
    )
    bands = (
        pd.DataFrame(
            {
                "start": [z[1] for z in zones],
                "end": [z[2] for z in zones],
                "label": [f"{z[0]} {z[1]:g}–{z[2]:g}" for z in zones],
            }
        )
        if zones
        else None
    )
    return lines_chart(
        data,
        x="alpha",
        y="speedup",
        series="series",
        x_title="acceptance rate α",
        y_title="speedup (×)",
        log_x=False,
        log_y=False,
        y_format=".1f",
        title=f"Speedup vs α at c = {c:g}",
        subtitle="shaded: production acceptance zones (chapter)" if zones else "",
        bands=bands,
        markers=pd.DataFrame({"alpha": [now[0]], "speedup": [now[1]], "label": [now_label]}),
        hrules=pd.DataFrame({"value": [1.0], "label": ["break-even"]}),
        height=height,
    )
