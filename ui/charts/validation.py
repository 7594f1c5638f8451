"""Validation (Validation page): the step-time model's leave-one-out predictions against published measurements."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ui.charts._spec import Datasets, Spec, enc, layered, mark
from ui.charts._style import INK, SERIES_SHAPES, style_spec


def predicted_vs_measured_chart(cases: pd.DataFrame, *, title: str, subtitle: str = "") -> Spec:
    """Every case as a point, leave-one-out prediction vs measurement on shared log axes (``cases``: case,
    family, measured, leave-one-out, leave-one-out error (%), unit), over the y = x diagonal (dashed) and a
    shaded ±15% band. Each family has its own colour and marker shape, shown together in one legend, so the
    chart reads in greyscale. Built as a dict (``ui.charts._spec``)."""
    ds = Datasets()
    lo, hi = (
        float(min(cases["measured"].min(), cases["leave-one-out"].min())) * 0.7,
        float(max(cases["measured"].max(), cases["leave-one-out"].max())) * 1.4,
    )
    line = pd.DataFrame({"x": np.geomspace(lo, hi, 50)})
    band = ds.ref(line.assign(y=line["x"], lo=line["x"] * 0.85, hi=line["x"] * 1.15))
    scale = {"type": "log", "domain": [lo, hi], "nice": False}
    shade = {
        "data": band,
        "mark": mark("area", opacity=0.15, color="#2ca02c"),
        "encoding": {"x": enc("x:Q", scale=scale), "y": enc("lo:Q", scale=scale), "y2": {"field": "hi"}},
    }
    diag = {
        "data": band,
        "mark": mark("line", color=INK, strokeDash=[4, 3]),
        "encoding": {"x": enc("x:Q"), "y": enc("y:Q")},
    }
    families = sorted(cases["family"].unique())
    family_legend = {"orient": "top", "columns": 3, "symbolSize": 110}
    pts = {
        "data": ds.ref(cases),
        "mark": mark("point", size=110, filled=True, opacity=0.9),
        "encoding": {
            "x": enc("measured:Q", title="measured (each metric in its own unit)", scale=scale),
            "y": enc("leave-one-out:Q", title="predicted, leave-one-out", scale=scale),
            "color": enc("family:N", title=None, legend=family_legend, scale={"domain": families}),
            "shape": enc(
                "family:N",
                title=None,
                legend=family_legend,
                scale={"domain": families, "range": SERIES_SHAPES[: len(families)]},
            ),
            "tooltip": [
                enc("case:N"),
                enc("measured:Q"),
                enc("leave-one-out:Q"),
                enc("leave-one-out error (%):Q", format="+.1f"),
                enc("unit:N"),
            ],
        },
    }
    return Spec(style_spec(layered([shade, diag, pts], ds, title=title, subtitle=subtitle), height=420))
