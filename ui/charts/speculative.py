"""Speculative-decoding charts (Speculative page, report): the speedup surface over (draft length, acceptance)
as contour bands, and speedup-vs-acceptance curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from ui.charts._spec import SCHEMA_URL, Datasets, Spec, enc, layered, mark, records_of
from ui.charts._style import INK_MUTED, marker_marks
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
) -> Spec:
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
    ds = Datasets()
    x_enc = enc(f"{x}:O")
    y_enc = enc(f"{y}:O", sort="descending")
    rect = {
        "data": ds.ref(cells),
        "mark": mark("rect"),
        "encoding": {
            "x": enc(f"{x}:O", title=x_title, axis={"labelAngle": 0}),
            "y": enc(f"{y}:O", title=y_title, sort="descending", axis={"values": records_of(cells[y].unique()[::5])}),
            "color": enc(
                f"{band}:O",
                title="speedup",
                sort=band_order,
                scale={"domain": band_order, "range": colors[: len(band_order)]},
                legend={"orient": "right"},
            ),
            "tooltip": [
                enc(f"{y}:O", title=y_title),
                enc(f"{x}:O", title=x_title),
                enc(f"{value_col}:Q", title="speedup", format=".2f"),
            ],
        },
    }
    layers: list[dict] = [rect]
    if ridge is not None and len(ridge):
        ridge_data = ds.ref(ridge)
        where = {"x": x_enc, "y": y_enc}
        layers.append({"data": ridge_data, "mark": mark("line", color="#ff7f0e", strokeWidth=3), "encoding": where})
        layers.append(
            {"data": ridge_data, "mark": mark("point", color="#ff7f0e", filled=True, size=30), "encoding": where}
        )
    if marker is not None and len(marker):
        point, text = marker_marks(size=220, outline=True, dx=10, dy=None, bold=True)
        marker_data = ds.ref(marker)
        layers.append({"data": marker_data, "mark": mark("point", **point), "encoding": {"x": x_enc, "y": y_enc}})
        layers.append(
            {
                "data": marker_data,
                "mark": mark("text", **text),
                "encoding": {"x": x_enc, "y": y_enc, "text": enc("label:N")},
            }
        )
    spec = layered(layers, ds, title=title, subtitle=subtitle, width={"step": cell_px[0]}, height={"step": cell_px[1]})
    return Spec(
        {
            "$schema": SCHEMA_URL,
            **spec,
            "config": {
                "view": {"continuousWidth": 300, "continuousHeight": 300, "strokeWidth": 0},  # Altair's default theme
                "axis": {"labelFontSize": 13, "titleFontSize": 14},
                "legend": {"labelFontSize": 13, "titleFontSize": 13},
                "title": {"fontSize": 16, "anchor": "start", "subtitleFontSize": 13, "subtitleColor": INK_MUTED},
            },
        }
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
) -> Spec:
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
