"""Expert balance (Balance page): load per expert with the mean and the alert threshold, hot experts marked."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ui.charts._style import HIGHLIGHT, INK, style


def expert_load_chart(
    loads: pd.DataFrame,
    *,
    mean: float,
    threshold: float,
    title: str,
    subtitle: str = "",
    x_title: str = "expert",
    y_title: str = "share of assignments (%)",
) -> alt.TopLevelMixin:
    """Bars per item (``loads``: item, value, hot (bool)) with the mean and the alert threshold as
    labelled rules; hot items in red, with a marker above each, so they stand out without colour too."""
    n = len(loads)
    hot_scale = alt.Scale(domain=["hot", "normal"], range=[HIGHLIGHT, "#6b8fb5"])
    bars = (
        alt.Chart(loads)
        .mark_bar()
        .encode(
            x=alt.X(
                "item:O",
                title=x_title,
                sort=None,
                axis=alt.Axis(labelAngle=0, values=list(loads["item"][:: max(1, n // 32)])),
            ),
            y=alt.Y("value:Q", title=y_title),
            color=alt.Color("hot:N", title=None, scale=hot_scale, legend=alt.Legend(orient="top")),
            opacity=alt.condition("datum.hot == 'hot'", alt.value(1.0), alt.value(0.85)),
            tooltip=[alt.Tooltip("item:O", title=x_title), alt.Tooltip("value:Q", format=",.3f", title=y_title)],
        )
    )
    rules = pd.DataFrame(
        {
            "value": [mean, threshold],
            "label": [f"mean {mean:,.3g}", f"alert {threshold:,.3g}"],
            "dash": ["mean", "alert"],
        }
    )
    # one marker above each hot bar; its shape legend merges with the colour legend ("hot" gets the triangle)
    marks = (
        alt.Chart(loads)
        .transform_filter("datum.hot == 'hot'")
        .mark_point(filled=True, size=45, yOffset=-8, opacity=1)
        .encode(
            x=alt.X("item:O", sort=None),
            y="value:Q",
            color=alt.Color("hot:N", title=None, scale=hot_scale, legend=alt.Legend(orient="top")),
            shape=alt.Shape(
                "hot:N",
                title=None,
                scale=alt.Scale(domain=["hot", "normal"], range=["triangle-down", "square"]),
                legend=alt.Legend(orient="top"),
            ),
        )
    )
    rule = (
        alt.Chart(rules)
        .mark_rule(strokeWidth=2, color=INK)
        .encode(
            y="value:Q",
            strokeDash=alt.StrokeDash(
                "dash:N", scale=alt.Scale(domain=["mean", "alert"], range=[[1, 0], [6, 3]]), legend=None
            ),
        )
    )
    text = (
        alt.Chart(rules)
        .mark_text(align="right", dy=-5, fontSize=12, color=INK)
        .encode(y="value:Q", x=alt.value("width"), text="label:N")
    )
    chart = alt.layer(bars, marks, rule, text).properties(
        title=alt.TitleParams(title, subtitle=subtitle or alt.Undefined)
    )
    return style(chart, height=280)
