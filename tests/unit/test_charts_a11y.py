"""Charts keep their meaning without colour and on both themes (issue 13, part 5).

Each builder in ``ui.charts`` (and the Validation page's scatter) is built with representative data and its
Vega-Lite spec checked:

- every field that picks a colour from a categorical scale is also encoded by a second channel (marker shape,
  dash pattern or text), with enough distinct shapes / dashes for the categories; sequential ramps must darken
  monotonically (they read in greyscale by lightness);
- annotation marks (rules, ticks, labels) and subtitles are drawn in ``INK`` / ``INK_MUTED`` (an expression
  on the chart's background: dark ink on the light theme, light ink on the dark one) or in an accent that
  contrasts with both Streamlit themes' backgrounds, never in a fixed grey that vanishes on one of them.

``test_checker_flags_colour_only_chart`` keeps the checker honest: a colour-only chart must fail it.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import pytest

from ui import charts as C

ROOT = Path(__file__).resolve().parents[2]
LIGHT_BG, DARK_BG = "#ffffff", "#171614"  # Streamlit 1.67's default light / dark backgrounds
SECOND_CHANNELS = ("shape", "strokeDash")


# ---- colour maths


def _luminance(color: str) -> float:
    h = color.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    rgb = [int(h[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


_NAMED = {"white": "#ffffff", "black": "#000000"}


def _hex(color: str) -> str:
    return _NAMED.get(color, color)


# ---- spec walking


def _layers(spec: dict) -> list[dict]:
    """Every unit view (a spec with a mark) in a (possibly layered / concatenated) spec."""
    out = []
    if "mark" in spec:
        out.append(spec)
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in spec.get(key, []):
            out.extend(_layers(child))
    if "spec" in spec:
        out.extend(_layers(spec["spec"]))
    return out


def _mark(layer: dict) -> dict:
    m = layer["mark"]
    return {"type": m} if isinstance(m, str) else m


def _field(enc: dict | None) -> str | None:
    if not isinstance(enc, dict):
        return None
    if "field" in enc:
        return enc["field"]
    cond = enc.get("condition")
    if isinstance(cond, dict):
        return cond.get("field")
    return None


def _derived_from(layer: dict, name: str) -> set[str]:
    """Fields a layer's ``calculate`` transforms compute ``name`` from (``datum.x`` / ``datum['x']``)."""
    src: set[str] = set()
    for t in layer.get("transform", []):
        if t.get("as") == name and "calculate" in t:
            expr = t["calculate"]
            src |= set(re.findall(r"datum\.([A-Za-z_]\w*)", expr)) | set(
                re.findall(r"datum\[['\"]([^'\"]+)['\"]\]", expr)
            )
    return src


def _second_cues(layers: list[dict], field: str) -> set[str]:
    """The non-colour channels that encode ``field`` anywhere in the chart."""
    cues = set()
    for lay in layers:
        enc = lay.get("encoding", {})
        for ch in SECOND_CHANNELS:
            if _field(enc.get(ch)) == field:
                cues.add(ch)
        text = _field(enc.get("text"))
        if text == field or (text and field in _derived_from(lay, text)):
            cues.add("text")
    return cues


def colour_only_fields(spec: dict) -> list[str]:
    """Fields told apart by a categorical colour scale and nothing else (should be empty)."""
    layers = _layers(spec)
    bad = []
    for lay in layers:
        color = lay.get("encoding", {}).get("color")
        field = _field(color)
        if not field or color.get("scale", {}) is None:  # scale=None: a literal colour per datum (label ink)
            continue
        if color.get("type") in ("ordinal", "quantitative"):
            continue  # a ramp: checked by test_sequential_ramps_darken_monotonically
        if not _second_cues(layers, field):
            bad.append(field)
    return bad


def _check_second_channel_scales(spec: dict) -> None:
    """Enough distinct shapes / dashes for the categories, and the shape shown in the legend."""
    for lay in _layers(spec):
        enc = lay.get("encoding", {})
        for ch in SECOND_CHANNELS:
            e = enc.get(ch)
            if not isinstance(e, dict) or "scale" not in e or not e["scale"]:
                continue
            dom, rng = e["scale"].get("domain"), e["scale"].get("range")
            if dom and rng:
                assert len(rng) >= len(dom), (ch, dom, rng)
                values = [json.dumps(v) for v in rng[: len(dom)]]
                assert len(set(values)) == len(dom), f"{ch}: repeated {values} for {dom}"
            if (
                ch == "shape"
                and _field(enc.get("color")) == e.get("field")
                and enc["color"].get("legend", {}) is not None
            ):
                assert e.get("legend", {}) is not None, "the shape must show in the legend next to the colour"


def _check_annotation_colours(spec: dict) -> None:
    """Rules, ticks and labels: INK, or a colour readable on both themes (or one picked per segment)."""
    layers = _layers(spec)
    coloured_xy = {
        (_field(lay["encoding"].get("x")), _field(lay["encoding"].get("y")))
        for lay in layers
        if _field(lay.get("encoding", {}).get("color")) and _mark(lay)["type"] in ("rect", "bar")
    }
    for lay in layers:
        mark = _mark(lay)
        if mark["type"] not in ("text", "rule", "tick"):
            continue
        enc = lay.get("encoding", {})
        if mark["type"] == "text" and (_field(enc.get("x")), _field(enc.get("y"))) in coloured_xy:
            continue  # a letter inside a coloured cell: contrast with the cell, checked below
        for key in ("color", "fill", "stroke"):
            c = mark.get(key)
            if c is None or c in (C.INK, C.INK_MUTED):
                continue
            assert isinstance(c, str) and c.startswith("#"), (mark, "annotation colour must be INK or a hex accent")
            assert min(_contrast(c, LIGHT_BG), _contrast(c, DARK_BG)) >= 3, (
                f"{mark['type']} in {c} vanishes on one theme (contrast {_contrast(c, LIGHT_BG):.1f} light, "
                f"{_contrast(c, DARK_BG):.1f} dark): use ui.charts.INK"
            )
    sub = spec.get("config", {}).get("title", {}).get("subtitleColor")
    assert sub in (None, C.INK, C.INK_MUTED), f"subtitleColor {sub} is fixed: it vanishes on one theme"


# ---- representative data for every builder


def _memory_rows() -> pd.DataFrame:
    parts = [
        ("Embedding", 1.8),
        ("LM head", 1.8),
        ("Attention", 0.6),
        ("Routed experts", 82.0),
        ("Shared experts", 1.5),
        ("Activations", 2.5),
        ("Runtime reserve", 4.0),
        ("KV cache", 20.0),
    ]
    order = list(C.COMPONENT_LABELS.values())
    return pd.DataFrame(
        [{"bar": b, "component": c, "gb": g, "order": order.index(c)} for b in ("stage 1", "stage 2") for c, g in parts]
    )


def _series_lines(n: int = 5) -> pd.DataFrame:
    a = np.linspace(0.5, 1, 30)
    return pd.concat(
        [pd.DataFrame({"alpha": a, "speedup": 1 + a**g * g / 3, "series": f"γ = {g}"}) for g in range(1, n + 1)]
    )


def _band_cells() -> tuple[pd.DataFrame, list[str]]:
    bands = ["1.0–1.5×", "1.5–2.0×", "2.0–2.5×", "2.5–3.0×", "3.0–4.0×", "4.0–5.0×", "5.0–6.0×", "6.0–8.0×", "8.0–12×"]
    cells = pd.DataFrame(
        [
            {"gamma": g, "alpha": round(al, 2), "band": bands[min(len(bands) - 1, int(al * g))], "speedup": al * g}
            for g in range(1, 12)
            for al in np.linspace(0.5, 1, 11)
        ]
    )
    return cells, bands


def _token_bars() -> list:
    from core.serving.breakdown import IDLE, TokenTime

    parts = {
        "routed experts": 150.3,
        "attention": 83.6,
        "all-to-all": 45.5,
        "fitted overhead": 17.6,
        "dense & shared FFN": 14,
    }
    tbo = {**parts, "all-to-all": 60.0}
    pipe = {"routed experts": 16.7, "fitted overhead": 15.8, "attention": 7.6, IDLE: 1.6, "pipeline sends": 0.3}
    return [
        TokenTime("DP-attn8 · EP8", 1, (), parts, 311.0, 311.0, 0.0, 0.0, 51.6, 166.0),
        TokenTime("DP-attn72 · EP72", 2, ("DP-attn36 · EP36 · DP2",), tbo, 325.5, 300.0, 25.5, 0.0, 90.0, 300.0),
        TokenTime("PP12 · DP6", 3, (), pipe, 40.4, 42.0, 0.0, 1.6, 1400.0, 32768.0),
    ]


def _charts() -> dict[str, alt.TopLevelMixin]:
    ctx = np.geomspace(128, 163840, 40)
    curves = pd.concat(
        [
            pd.DataFrame({"context_tokens": ctx, "sequences": (2e6 / ctx * k).round(), "series": s})
            for k, s in [(1, "this layout"), (2, "2 nodes"), (4, "4 nodes")]
        ]
    )
    intensity = np.geomspace(1, 2000, 30)
    roofs = pd.concat(
        [
            pd.DataFrame({"intensity": intensity, "tflops": np.minimum(intensity * bw, peak), "gpu": g})
            for g, bw, peak in [("H200", 4.8, 989), ("B200", 8, 2250), ("MI355X", 8, 2500)]
        ]
    )
    cells, bands = _band_cells()
    loads = np.random.default_rng(0).dirichlet(np.ones(64)) * 100
    per_gpu = pd.DataFrame(
        [
            {"gpu": g, "load": 12.5 + d, "placement": p}
            for g in range(8)
            for p, d in [("contiguous", (g % 3) - 1), ("EPLB", 0.0), ("EPLB + replicas", 0.3)]
        ]
    )
    placement = pd.DataFrame(
        [
            {
                "layer": layer,
                "group": grp,
                "where": (
                    "not in this layer"
                    if grp == "routed experts" and layer < 3
                    else "host RAM"
                    if grp == "routed experts" and layer > 40
                    else "GPU memory"
                ),
            }
            for layer in range(61)
            for grp in ("attention + KV cache", "routed experts")
        ]
    )
    pools = pd.DataFrame(
        [
            {"pool": "GPU", "part": "weights", "gb": 14, "order": 0, "capacity_gb": 24},
            {"pool": "GPU", "part": "KV cache", "gb": 4, "order": 2, "capacity_gb": 24},
            {"pool": "GPU", "part": "compute buffer / OS", "gb": 1.5, "order": 3, "capacity_gb": 24},
            {"pool": "host RAM", "part": "routed experts", "gb": 300, "order": 1, "capacity_gb": 512},
            {"pool": "host RAM", "part": "compute buffer / OS", "gb": 8, "order": 3, "capacity_gb": 512},
        ]
    )
    return {
        "memory_stack": C.memory_stack_chart(
            _memory_rows(), usable_gb=126.9, capacity_gb=141.0, title="Memory", subtitle="s"
        ),
        "max_sequences": C.max_sequences_chart(
            curves, marker=pd.DataFrame({"context_tokens": [2560], "sequences": [259], "label": ["259"]}), title="Seq"
        ),
        "lines": C.lines_chart(
            _series_lines(8),
            x="alpha",
            y="speedup",
            series="series",
            x_title="α",
            y_title="speedup",
            title="Lines",
            subtitle="s",
            log_x=False,
            log_y=False,
            hrules=pd.DataFrame({"value": [1.0], "label": ["break-even"]}),
            vrules=pd.DataFrame({"value": [0.7], "label": ["node"]}),
            markers=pd.DataFrame({"alpha": [0.87], "speedup": [1.8], "label": ["1.80×"]}),
            bands=pd.DataFrame({"start": [0.65], "end": [0.82], "label": ["chat"]}),
        ),
        "frontier": C.frontier_chart(
            pd.DataFrame(
                {
                    "deployment": ["TP8"] * 3 + ["TP8 · DCP8"] * 3,
                    "clients": [16, 32, 64] * 2,
                    "user": [40, 23, 18, 42, 27, 17],
                    "gpu": [1400, 1650, 1770, 1480, 1950, 2470],
                }
            ),
            pd.DataFrame(
                {"deployment": ["TP8", "TP8 · DCP8"], "user": [11, 22.5], "gpu": [1863, 3750], "label": ["c64"] * 2}
            ),
            y_title="tokens/s per GPU",
            title="Frontier",
            subtitle="s",
        ),
        "roofline": C.roofline_chart(
            roofs,
            pd.DataFrame({"intensity": [8, 300], "tflops": [38, 900], "label": ["decode", "prefill"]}),
            title="Roof",
        ),
        "heatmap": C.heatmap_chart(
            cells,
            x="gamma",
            y="alpha",
            band="band",
            band_order=bands,
            x_title="γ",
            y_title="α",
            title="Heat",
            subtitle="s",
            ridge=pd.DataFrame({"gamma": [3, 4], "alpha": [0.5, 0.6]}),
            marker=pd.DataFrame({"gamma": [1], "alpha": [0.85], "label": ["1.8×"]}),
        ),
        "speedup_vs_alpha": C.speedup_vs_alpha_chart(
            [0.5, 0.75, 1.0],
            {3: [1.2, 1.9, 3.6], 5: [1.1, 2.0, 5.0]},
            c=0.1,
            now=(0.75, 1.9),
            now_label="1.90×",
            zones=(("chat", 0.65, 0.82),),
        ),
        "expert_load": C.expert_load_chart(
            pd.DataFrame(
                {"item": np.arange(64), "value": loads, "hot": np.where(loads > 2 * loads.mean(), "hot", "normal")}
            ),
            mean=float(loads.mean()),
            threshold=float(2 * loads.mean()),
            title="Experts",
        ),
        "grouped_bars": C.grouped_bars_chart(
            per_gpu,
            x="gpu",
            y="load",
            series="placement",
            x_title="GPU",
            y_title="%",
            title="Per GPU",
            hrule=12.5,
            hrule_label="ideal",
        ),
        "placement": C.placement_chart(placement, title="Placement"),
        "token_time": C.token_time_chart(_token_bars(), per="output token", title="Time per token", subtitle="s"),
        "pool_bars": C.pool_bars_chart(pools, title="Pools"),
        "predicted_vs_measured": C.predicted_vs_measured_chart(
            pd.DataFrame(
                {
                    "case": ["a", "b", "c", "d"],
                    "family": ["system", "system", "alltoall_low_latency", "grouped_gemm_decode"],
                    "measured": [2000.0, 8500.0, 77.0, 0.13],
                    "leave-one-out": [2300.0, 7900.0, 80.0, 0.12],
                    "leave-one-out error (%)": [15.0, -7.1, 3.9, -7.7],
                    "unit": ["tok/s/GPU", "tok/s/GPU", "us", "ms"],
                }
            ),
            title="Predicted vs measured",
        ),
    }


BUILT = _charts()


def test_every_builder_is_covered():
    builders = {n for n in C.__all__ if n.endswith("_chart")}
    assert len(builders) == len(BUILT), f"add the new builder(s) to _charts(): {sorted(builders)}"


@pytest.mark.parametrize("name", sorted(BUILT))
def test_colour_is_never_the_only_cue(name):
    spec = BUILT[name].to_dict()
    assert colour_only_fields(spec) == [], f"{name}: colour-only fields"
    _check_second_channel_scales(spec)


@pytest.mark.parametrize("name", sorted(BUILT))
def test_annotations_read_on_light_and_dark(name):
    _check_annotation_colours(BUILT[name].to_dict())


@pytest.mark.parametrize(
    "name,field,cue",
    [
        ("memory_stack", "component", "text"),
        ("pool_bars", "part", "text"),
        ("lines", "series", "strokeDash"),
        ("max_sequences", "series", "strokeDash"),
        ("roofline", "gpu", "strokeDash"),
        ("grouped_bars", "placement", "shape"),
        ("expert_load", "hot", "shape"),
        ("placement", "where", "text"),
        ("token_time", "part", "text"),
    ],
)
def test_expected_second_cue(name, field, cue):
    assert cue in _second_cues(_layers(BUILT[name].to_dict()), field)


def test_stacked_segments_stack_in_legend_order():
    """Unlabelled (narrow) segments are found by position: the legend lists them in stack order."""
    spec = BUILT["memory_stack"].to_dict()
    bars = next(lay for lay in _layers(spec) if _mark(lay)["type"] == "bar")
    domain = bars["encoding"]["color"]["scale"]["domain"]
    rows = _memory_rows()
    by_order = list(dict.fromkeys(rows.sort_values("order")["component"]))
    assert domain == by_order and bars["encoding"]["order"]["field"] == "order"


def test_segment_label_ink_contrasts_with_every_segment_colour():
    for colour in [
        *list(C.COMPONENT_COLORS.values()),
        "#2171b5",
        "#006d2c",
        "#f16913",
        "#969696",
        "#d94801",
        "#bdbdbd",
    ]:
        ink = C.text_on(colour)
        assert _contrast(_hex(ink), colour) >= 4.5 or (ink == "white" and _contrast("#ffffff", colour) >= 3.5), (
            colour,
            ink,
        )


def test_series_cues_are_distinct():
    assert len({json.dumps(d) for d in C.SERIES_DASHES}) == len(C.SERIES_DASHES) >= len(C.SERIES_COLORS)
    assert len(set(C.SERIES_SHAPES)) == len(C.SERIES_SHAPES) >= len(C.SERIES_COLORS)


def test_sequential_ramps_darken_monotonically():
    """Ordinal colour ramps (the contour bands) carry the order in their lightness, so greyscale keeps it."""
    checked = 0
    for name, chart in BUILT.items():
        for lay in _layers(chart.to_dict()):
            color = lay.get("encoding", {}).get("color", {})
            if color.get("type") == "ordinal" and color.get("scale", {}).get("range"):
                lum = [_luminance(c) for c in color["scale"]["range"]]
                assert all(a > b for a, b in itertools.pairwise(lum)), (name, color["scale"]["range"])
                checked += 1
    assert checked >= 1


def test_checker_flags_colour_only_chart():
    """A regression (dropping the dashes / shapes / labels) must fail the checks above."""
    df = _series_lines(3)
    plain = alt.Chart(df).mark_line().encode(x="alpha:Q", y="speedup:Q", color="series:N")
    assert colour_only_fields(plain.to_dict()) == ["series"]
    bars = alt.Chart(df).mark_bar().encode(x="alpha:O", y="sum(speedup):Q", color="series:N")
    assert colour_only_fields(
        alt.layer(bars, alt.Chart(df).mark_text().encode(x="alpha:O", text="speedup:Q")).to_dict()
    ) == ["series"]
    grey_rule = alt.layer(
        plain.encode(strokeDash="series:N"), alt.Chart(df).mark_rule(color="#222").encode(y="speedup:Q")
    )
    with pytest.raises(AssertionError, match="vanishes on one theme"):
        _check_annotation_colours(grey_rule.to_dict())


def test_validation_page_scatter_has_shapes_in_its_legend():
    """The Validation page draws its own scatter: families differ by colour and by a shape shown in the legend.
    The page reads the shipped leave-one-out table (catalogs/validation/loo_predictions.csv), no refit."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    try:
        at = AppTest.from_file(str(ROOT / "pages/6_Validation.py"), default_timeout=60)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    finally:
        st.cache_resource.clear()
        st.cache_data.clear()
    assert colour_only_fields(spec) == []
    _check_second_channel_scales(spec)
    _check_annotation_colours(spec)
    pts = next(lay for lay in _layers(spec) if _mark(lay)["type"] == "point")
    assert pts["encoding"]["shape"]["field"] == pts["encoding"]["color"]["field"] == "family"
    assert pts["encoding"]["shape"].get("legend") is not None


@pytest.mark.parametrize(
    "background,ink,muted",
    [(LIGHT_BG, "#262626", "#555555"), (DARK_BG, "#e8e6e3", "#b4b1ab"), (None, "#262626", "#555555")],
)
def test_ink_follows_the_chart_background(background, ink, muted):
    """Rendered by Vega (vl-convert): the ink expression picks the colour for the background Streamlit's theme
    gives the chart (none in a plain export), and that colour contrasts with it."""
    import vl_convert

    df = pd.DataFrame({"x": [1, 2], "label": ["annotation", "b"]})
    chart = (
        alt.Chart(df)
        .mark_text(color=C.INK)
        .encode(x="x:Q", text="label:N")
        .properties(title=alt.TitleParams("t", subtitle="subtitle"), width=200, height=50)
        .configure_title(subtitleColor=C.INK_MUTED)
    )
    spec = chart.to_dict()
    if background:
        spec["background"] = background
    svg = vl_convert.vegalite_to_svg(spec)
    text_fills = set(re.findall(r'<text[^>]*fill="(#[0-9a-fA-F]{6})"[^>]*>annotation<', svg))
    sub_fills = set(re.findall(r'<text[^>]*fill="(#[0-9a-fA-F]{6})"[^>]*>subtitle<', svg))
    assert text_fills == {ink} and sub_fills == {muted}, (text_fills, sub_fills)
    assert _contrast(ink, background or LIGHT_BG) >= 7 and _contrast(muted, background or LIGHT_BG) >= 4.5


def bad_chart():
    """A chart whose spec the Vega-Lite schema rejects (an opacity of 'high', set past Altair's argument checks)."""
    c = alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x:Q")
    c.mark = {"type": "point", "opacity": "high"}
    return c


def test_served_charts_skip_validation_tests_do_not(monkeypatch):
    """ui.render validates each chart spec against the schema where PLANNER_VALIDATE_CHARTS=1 (the suite sets it,
    tests/conftest.py, so every page's charts are checked here) and skips it in a served page (speed)."""
    import os

    from ui import render

    assert os.environ.get(render.VALIDATE_ENV) == "1"
    build = render._spec.__wrapped__ if hasattr(render._spec, "__wrapped__") else render._spec
    with pytest.raises(Exception, match="high"):
        build(__name__, "bad_chart", (), {})
    monkeypatch.delenv(render.VALIDATE_ENV)
    assert build(__name__, "bad_chart", (), {})["mark"]["opacity"] == "high"
