"""Expert balance (Balance page): load per expert with the mean and the alert threshold, hot experts marked."""

from __future__ import annotations

import pandas as pd

from ui.charts._spec import Datasets, Spec, enc, layered, mark, records_of
from ui.charts._style import HIGHLIGHT, INK, style_spec


def expert_load_chart(
    loads: pd.DataFrame,
    *,
    mean: float,
    threshold: float,
    title: str,
    subtitle: str = "",
    x_title: str = "expert",
    y_title: str = "share of assignments (%)",
) -> Spec:
    """Bars per item (``loads``: item, value, hot (bool)) with the mean and the alert threshold as
    labelled rules; hot items in red, with a marker above each, so they stand out without colour too.
    Built as a dict (``ui.charts._spec``)."""
    ds = Datasets()
    n = len(loads)
    hot_scale = {"domain": ["hot", "normal"], "range": [HIGHLIGHT, "#6b8fb5"]}
    hot_color = enc("hot:N", title=None, scale=hot_scale, legend={"orient": "top"})
    values = ds.ref(loads)
    bars = {
        "data": values,
        "mark": mark("bar"),
        "encoding": {
            "x": enc(
                "item:O",
                title=x_title,
                sort=None,
                axis={"labelAngle": 0, "values": records_of(loads["item"][:: max(1, n // 32)])},
            ),
            "y": enc("value:Q", title=y_title),
            "color": hot_color,
            "opacity": {"condition": {"test": "datum.hot == 'hot'", "value": 1.0}, "value": 0.85},
            "tooltip": [enc("item:O", title=x_title), enc("value:Q", format=",.3f", title=y_title)],
        },
    }
    rules = pd.DataFrame(
        {
            "value": [mean, threshold],
            "label": [f"mean {mean:,.3g}", f"alert {threshold:,.3g}"],
            "dash": ["mean", "alert"],
        }
    )
    # one marker above each hot bar; its shape legend merges with the colour legend ("hot" gets the triangle)
    marks = {
        "data": values,
        "transform": [{"filter": "datum.hot == 'hot'"}],
        "mark": mark("point", filled=True, size=45, yOffset=-8, opacity=1),
        "encoding": {
            "x": enc("item:O", sort=None),
            "y": enc("value:Q"),
            "color": hot_color,
            "shape": enc(
                "hot:N",
                title=None,
                scale={"domain": ["hot", "normal"], "range": ["triangle-down", "square"]},
                legend={"orient": "top"},
            ),
        },
    }
    rule_data = ds.ref(rules)
    rule = {
        "data": rule_data,
        "mark": mark("rule", strokeWidth=2, color=INK),
        "encoding": {
            "y": enc("value:Q"),
            "strokeDash": enc("dash:N", scale={"domain": ["mean", "alert"], "range": [[1, 0], [6, 3]]}, legend=None),
        },
    }
    text = {
        "data": rule_data,
        "mark": mark("text", align="right", dy=-5, fontSize=12, color=INK),
        "encoding": {"y": enc("value:Q"), "x": {"value": "width"}, "text": enc("label:N")},
    }
    return Spec(style_spec(layered([bars, marks, rule, text], ds, title=title, subtitle=subtitle), height=280))
