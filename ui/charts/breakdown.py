"""Where the time goes (Layouts page, review 3 M11): one stacked bar per plan of GPU time per token, by kernel
category, largest first, with the step per token ticked and labelled (``core.serving.breakdown``)."""

from __future__ import annotations

import pandas as pd

from core.serving.breakdown import IDLE, TokenTime
from ui.charts._spec import Datasets, Spec, enc, layered, mark
from ui.charts._style import INK, style_spec, text_on

# compute in blues and greens, communication in oranges, what is no kernel in greys
TIME_COLORS: dict[str, str] = {
    "routed experts": "#006d2c",
    "attention": "#2171b5",
    "dense & shared FFN": "#6baed6",
    "all-to-all": "#d94801",
    "all-reduce & expert-TP": "#fd8d3c",
    "pipeline sends": "#fdd0a2",
    "context-parallel merge": "#9e9ac8",
    "off-GPU table reads": "#6a51a3",
    "fitted overhead": "#969696",
    IDLE: "#d9d9d9",
}


def _name(bar: TokenTime) -> str:
    return f"#{bar.rank} {bar.label}" + (f" (+{len(bar.alike)} alike)" if bar.alike else "")


def token_time_chart(bars: list[TokenTime], *, per: str, title: str, subtitle: str = "") -> Spec:
    """Horizontal bars, one per plan (``bars``, best first), of GPU microseconds per ``per`` ("output token",
    "prompt token") stacked by category in order of their total size (the legend's order); each segment carries
    its name where it fits, a tick marks the step per token (below the bar's end where two-batch overlap hides
    communication) and a label gives it with the step itself. Built as a dict (``ui.charts._spec``)."""
    ds = Datasets()
    names = [_name(b) for b in bars]
    rows = pd.DataFrame(
        [{"plan": n, "part": k, "us": v} for n, b in zip(names, bars, strict=True) for k, v in b.parts_us.items()]
    )
    sizes = rows.groupby("part")["us"].sum().sort_values(ascending=False)
    domain = [p for p in sizes.index if p != IDLE] + ([IDLE] if IDLE in sizes.index else [])
    rows["order"] = rows["part"].map({p: i for i, p in enumerate(domain)})
    rows["ink"] = rows["part"].map(lambda p: text_on(TIME_COLORS.get(p, "#808080")))
    totals = pd.DataFrame(
        [
            {
                "plan": n,
                "step": b.step_us,
                "end": max(b.step_us, sum(b.parts_us.values())),
                "label": f"{b.step_us:,.0f} µs · step {b.step_ms:,.{0 if b.step_ms >= 100 else 1}f} ms"
                + (f" · overlap hides {b.hidden_us:,.0f} µs" if b.hidden_us >= 0.5 else ""),
                "alike": ", ".join(b.alike) or "none",
            }
            for n, b in zip(names, bars, strict=True)
        ]
    )
    xmax = float(totals["end"].max()) * 1.5
    y = enc("plan:N", title=None, sort=names)
    data = ds.ref(rows)
    stacked = {
        "data": data,
        "mark": mark("bar", stroke="white", strokeWidth=0.5),
        "encoding": {
            "x": enc(
                "us:Q", aggregate="sum", stack="zero", title=f"GPU time per {per} (µs)", scale={"domain": [0, xmax]}
            ),
            "y": y,
            "color": enc(
                "part:N",
                title=None,
                sort=domain,
                scale={"domain": domain, "range": [TIME_COLORS.get(p, "#808080") for p in domain]},
                legend={"orient": "bottom", "columns": 4},
            ),
            "order": enc("order:Q"),
            "tooltip": [enc("plan:N"), enc("part:N"), enc("us:Q", title=f"µs per {per}", format=",.1f")],
        },
    }
    fits = f"(datum.x1 - datum.x0) * width / {xmax:.6g} >= length(datum.part) * 6.6 + 10"
    segment_names = {
        "data": data,
        "transform": [
            {"stack": "us", "groupby": ["plan"], "as": ["x0", "x1"], "sort": [{"field": "order"}]},
            {"calculate": "(datum.x0 + datum.x1) / 2", "as": "mid"},
        ],
        "mark": mark("text", fontSize=12, baseline="middle"),
        "encoding": {
            "x": enc("mid:Q"),
            "y": y,
            "text": {"condition": {"test": fits, "field": "part", "type": "nominal"}, "value": ""},
            "fill": {"field": "ink", "type": "nominal", "scale": None, "legend": None},
        },
    }
    total = ds.ref(totals)
    tick = {
        "data": total,
        "mark": mark("tick", color=INK, thickness=3, size=34),
        "encoding": {
            "x": enc("step:Q"),
            "y": y,
            "tooltip": [enc("label:N", title="step"), enc("alike:N", title="alike layouts")],
        },
    }
    label = {
        "data": total,
        "mark": mark("text", align="left", baseline="middle", dx=8, fontSize=13, color=INK),
        "encoding": {"x": enc("end:Q"), "y": y, "text": enc("label:N")},
    }
    spec = layered([stacked, segment_names, tick, label], ds, title=title, subtitle=subtitle)
    return Spec(style_spec(spec, height=52 * len(bars) + 10))
