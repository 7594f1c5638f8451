"""Throughput vs interactivity (Validation and Layouts pages): tokens/s per GPU against tokens/s per user, a modelled
line per deployment and, where published, the measured points of the same deployment in the same colour."""

from __future__ import annotations

import pandas as pd

from ui.charts._spec import Datasets, Spec, enc, layered, mark
from ui.charts._style import INK, SERIES_COLORS, SERIES_DASHES, cycle, style_spec


def frontier_chart(
    curves: pd.DataFrame,
    published: pd.DataFrame | None = None,
    *,
    y_title: str,
    title: str,
    subtitle: str = "",
) -> Spec:
    """``curves``: user (tok/s per user), gpu (tok/s per GPU), deployment, clients; ``published``: user, gpu,
    deployment, label (e.g. "c64"). Lines with a dot per modelled concurrency; published points as large squares
    outlined in ink, labelled. Linear axes from zero, as the benchmarks draw them."""
    ds = Datasets()
    order = list(dict.fromkeys(curves["deployment"]))
    colors = {"domain": order, "range": cycle(SERIES_COLORS, len(order))}
    legend = {"orient": "top", "columns": 1, "symbolType": "stroke", "symbolStrokeWidth": 2.5, "labelLimit": 700}
    x = enc("user:Q", title="interactivity (output tokens/s per user)", scale={"zero": True}, axis={"format": ",.0f"})
    y = enc("gpu:Q", title=y_title, scale={"zero": True}, axis={"format": ",.0f"})
    line = {
        "data": ds.ref(curves),
        "mark": mark("line", strokeWidth=2.5, point={"size": 40, "filled": True}),
        "encoding": {
            "x": x,
            "y": y,
            "order": enc("clients:Q"),
            "color": enc("deployment:N", title=None, sort=order, legend=legend, scale=colors),
            "strokeDash": enc(
                "deployment:N",
                title=None,
                sort=order,
                legend=legend,
                scale={"domain": order, "range": cycle(SERIES_DASHES, len(order))},
            ),
            "tooltip": [
                enc("deployment:N", title="modelled"),
                enc("clients:Q", title="clients", format=","),
                enc("user:Q", title="tok/s per user", format=",.1f"),
                enc("gpu:Q", title=y_title, format=",.0f"),
            ],
        },
    }
    layers = [line]
    if published is not None and len(published):
        pts = ds.ref(published)
        where = {"x": x, "y": y}
        layers.append(
            {
                "data": pts,
                "mark": mark("point", shape="square", size=170, filled=True, stroke=INK, strokeWidth=1.5),
                "encoding": {
                    **where,
                    "color": enc("deployment:N", sort=order, legend=None, scale=colors),
                    "tooltip": [
                        enc("deployment:N", title="published"),
                        enc("label:N", title="point"),
                        enc("user:Q", title="tok/s per user", format=",.1f"),
                        enc("gpu:Q", title=y_title, format=",.0f"),
                    ],
                },
            }
        )
        layers.append(
            {
                "data": pts,
                "mark": mark("text", align="left", dx=9, dy=-9, fontSize=12, color=INK),
                "encoding": {**where, "text": enc("label:N")},
            }
        )
    return Spec(style_spec(layered(layers, ds, title=title, subtitle=subtitle), height=380))
