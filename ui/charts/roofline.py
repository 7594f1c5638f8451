"""The roofline (Intensity page): attainable TFLOP/s per GPU vs arithmetic intensity, with the GEMMs on it."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui.charts._style import SERIES_COLORS, SERIES_DASHES, cycle, marker_layer, style


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
                scale=alt.Scale(domain=order, range=cycle(SERIES_COLORS, len(order))),
            ),
            strokeDash=alt.StrokeDash(
                "gpu:N",
                title=None,
                sort=order,
                legend=legend,
                scale=alt.Scale(domain=order, range=cycle(SERIES_DASHES, len(order))),
            ),
            tooltip=[
                alt.Tooltip("gpu:N"),
                alt.Tooltip("intensity:Q", format=",.1f"),
                alt.Tooltip("tflops:Q", format=",.1f"),
            ],
        )
    )
    # the GEMMs: round points (not the scenario's diamond), labelled to their left
    pts, labels = marker_layer(
        points,
        x="intensity:Q",
        y="tflops:Q",
        size=120,
        shape=None,
        align="right",
        dx=-8,
        dy=-8,
        bold=True,
        tooltip=[
            alt.Tooltip("label:N"),
            alt.Tooltip("intensity:Q", format=",.1f"),
            alt.Tooltip("tflops:Q", format=",.1f"),
        ],
    )
    chart = alt.layer(roof, pts, labels).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return style(chart, height=360)
