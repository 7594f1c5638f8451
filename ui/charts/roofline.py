"""The roofline (Intensity page): attainable TFLOP/s per GPU vs arithmetic intensity, with the GEMMs on it."""

from __future__ import annotations

import pandas as pd

from ui.charts._spec import Datasets, Spec, enc, layered, mark
from ui.charts._style import SERIES_COLORS, SERIES_DASHES, cycle, marker_marks, style_spec


def roofline_chart(roofs: pd.DataFrame, points: pd.DataFrame, *, title: str, subtitle: str = "") -> Spec:
    """Attainable TFLOP/s vs arithmetic intensity (log-log), one roof per GPU (``roofs``: intensity,
    tflops, gpu), with GEMMs as labelled points (``points``: intensity, tflops, label). Built as a dict
    (``ui.charts._spec``)."""
    ds = Datasets()
    order = list(dict.fromkeys(roofs["gpu"]))
    legend = {"orient": "top", "columns": 2, "symbolStrokeWidth": 2.5}  # one legend: colour and dash
    roof = {
        "data": ds.ref(roofs),
        "mark": mark("line", strokeWidth=2.5),
        "encoding": {
            "x": enc("intensity:Q", title="arithmetic intensity (FLOP/byte)", scale={"type": "log", "nice": False}),
            "y": enc("tflops:Q", title="attainable TFLOP/s", scale={"type": "log"}),
            "color": enc(
                "gpu:N",
                title=None,
                sort=order,
                legend=legend,
                scale={"domain": order, "range": cycle(SERIES_COLORS, len(order))},
            ),
            "strokeDash": enc(
                "gpu:N",
                title=None,
                sort=order,
                legend=legend,
                scale={"domain": order, "range": cycle(SERIES_DASHES, len(order))},
            ),
            "tooltip": [enc("gpu:N"), enc("intensity:Q", format=",.1f"), enc("tflops:Q", format=",.1f")],
        },
    }
    # the GEMMs: round points (not the scenario's diamond), labelled to their left
    point, text = marker_marks(size=120, shape=None, align="right", dx=-8, dy=-8, bold=True)
    where = {"x": enc("intensity:Q"), "y": enc("tflops:Q")}
    gemms = ds.ref(points)
    tooltip = [enc("label:N"), enc("intensity:Q", format=",.1f"), enc("tflops:Q", format=",.1f")]
    layers = [
        roof,
        {"data": gemms, "mark": mark("point", **point), "encoding": {**where, "tooltip": tooltip}},
        {"data": gemms, "mark": mark("text", **text), "encoding": {**where, "text": enc("label:N")}},
    ]
    return Spec(style_spec(layered(layers, ds, title=title, subtitle=subtitle), height=360))
