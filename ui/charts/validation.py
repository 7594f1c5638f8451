"""Validation (Validation page): the step-time model's leave-one-out predictions against published measurements."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from ui.charts._style import INK, SERIES_SHAPES, style


def predicted_vs_measured_chart(cases: pd.DataFrame, *, title: str, subtitle: str = "") -> alt.TopLevelMixin:
    """Every case as a point, leave-one-out prediction vs measurement on shared log axes (``cases``: case,
    family, measured, leave-one-out, leave-one-out error (%), unit), over the y = x diagonal (dashed) and a
    shaded ±15% band. Each family has its own colour and marker shape, shown together in one legend, so the
    chart reads in greyscale."""
    lo, hi = (
        float(min(cases["measured"].min(), cases["leave-one-out"].min())) * 0.7,
        float(max(cases["measured"].max(), cases["leave-one-out"].max())) * 1.4,
    )
    line = pd.DataFrame({"x": np.geomspace(lo, hi, 50)})
    band = line.assign(y=line["x"], lo=line["x"] * 0.85, hi=line["x"] * 1.15)
    scale = alt.Scale(type="log", domain=[lo, hi], nice=False)
    shade = (
        alt.Chart(band)
        .mark_area(opacity=0.15, color="#2ca02c")
        .encode(x=alt.X("x:Q", scale=scale), y=alt.Y("lo:Q", scale=scale), y2="hi:Q")
    )
    diag = alt.Chart(band).mark_line(color=INK, strokeDash=[4, 3]).encode(x="x:Q", y="y:Q")
    families = sorted(cases["family"].unique())
    family_legend = alt.Legend(orient="top", columns=3, symbolSize=110)
    pts = (
        alt.Chart(cases)
        .mark_point(size=110, filled=True, opacity=0.9)
        .encode(
            x=alt.X("measured:Q", title="measured (each metric in its own unit)", scale=scale),
            y=alt.Y("leave-one-out:Q", title="predicted, leave-one-out", scale=scale),
            color=alt.Color("family:N", title=None, legend=family_legend, scale=alt.Scale(domain=families)),
            shape=alt.Shape(
                "family:N",
                title=None,
                legend=family_legend,
                scale=alt.Scale(domain=families, range=SERIES_SHAPES[: len(families)]),
            ),
            tooltip=[
                "case",
                "measured",
                "leave-one-out",
                alt.Tooltip("leave-one-out error (%):Q", format="+.1f"),
                "unit",
            ],
        )
    )
    chart = alt.layer(shade, diag, pts).properties(title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined))
    return style(chart, height=420)
